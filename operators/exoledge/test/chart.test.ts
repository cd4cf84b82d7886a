/**
 * The chart as the real helm renders it: `helm lint`; the CRD is the generated one; the
 * RBAC is exactly the table below, each row with the call that needs it (the other half,
 * that it is enough, is chart-rbac.test.ts); the Deployment's hardening and settings;
 * and every rendered object accepted by a real apiserver (server-side dry-run).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import {
  applyAll,
  bindingRows,
  byKind,
  CHART_DIR,
  RBAC_KINDS,
  renderChart,
  ruleRows,
  run,
} from './chart-support.ts';

let env: TestEnv;
let helm: string;
before(async () => {
  env = await testEnv();
  helm = (await resolveBinaries(() => {})).helm;
});

interface Container {
  readonly env: { name: string; value?: string; valueFrom?: unknown }[];
  readonly securityContext: unknown;
  readonly livenessProbe: unknown;
  readonly readinessProbe: unknown;
  readonly ports: { name: string; containerPort: number }[];
  readonly volumeMounts: unknown;
  readonly resources: unknown;
}
interface PodSpec {
  readonly serviceAccountName: string;
  readonly securityContext: unknown;
  readonly containers: Container[];
  readonly volumes: unknown;
}
function deployment(objects: readonly KubeObject[]): {
  replicas: number;
  pod: PodSpec;
  container: Container;
} {
  return deploymentNamed(objects, 'exoledge');
}
function deploymentNamed(
  objects: readonly KubeObject[],
  name: string,
): { replicas: number; pod: PodSpec; container: Container } {
  const d = byKind(objects, 'Deployment').find((o) => o.metadata.name === name);
  assert.ok(d, `the Deployment ${name}`);
  const spec = d.spec as { replicas: number; template: { spec: PodSpec } };
  const [container] = spec.template.spec.containers;
  assert.ok(container);
  return { replicas: spec.replicas, pod: spec.template.spec, container };
}
const envOf = (c: Container): Record<string, unknown> =>
  Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));

describe('the exoledge chart, rendered by helm', () => {
  it('passes helm lint, with defaults and with every optional part switched', async () => {
    await run(helm, ['lint', CHART_DIR]);
    await run(helm, [
      'lint',
      CHART_DIR,
      '--set',
      'createDeciderNamespace=true,metrics.secure=false,helmTest.enabled=false',
    ]);
  });

  it('ships the CRDs generated from the types, byte for byte (chart/crds/ is a copy of crds/)', async () => {
    const files = ['blocklistsources.yaml', 'edgesites.yaml'];
    const generated = await Promise.all(files.map((f) => readFile(join(CHART_DIR, '..', 'crds', f), 'utf8')));
    for (const [i, f] of files.entries()) {
      const shipped = await readFile(join(CHART_DIR, 'crds', f), 'utf8');
      assert.ok(
        shipped === generated[i],
        `chart/crds/${f} differs from crds/${f}: cp operators/exoledge/crds/${f} operators/exoledge/chart/crds/`,
      );
    }
    const { crds } = await renderChart(helm, { namespace: 'ops' });
    assert.deepEqual(
      crds.map((c) => c.metadata.name),
      ['blocklistsources.edge.exoledge.io', 'edgesites.edge.exoledge.io'],
    );
    assert.deepEqual(
      crds,
      generated.map((g) => parse(g.replace(/^#.*\n---\n/, ''))),
    );
  });

  it('grants exactly what the code calls, each grant where it is used', async () => {
    const { objects } = await renderChart(helm, { namespace: 'ops', values: { deciderNamespace: 'edge' } });
    assert.deepEqual(ruleRows(objects), [
      // The helm test (templates/tests/lease-held.yaml): `kubectl wait` on the CRD by name.
      'ClusterRole /ops-exoledge-helm-test: apiextensions.k8s.io customresourcedefinitions[blocklistsources.edge.exoledge.io,edgesites.edge.exoledge.io] get,list,watch',
      // The controller's informer on sources (kit cache: watch-list, or list then watch);
      // patch: the finalizer edge.exoledge.io/finalizer added and removed (kit finalizer(), a JSON patch).
      'ClusterRole /ops-exoledge: edge.exoledge.io blocklistsources list,watch,patch',
      // controllers/blocklist-source.ts reconcileSource(): client.applyStatus.
      'ClusterRole /ops-exoledge: edge.exoledge.io blocklistsources/status patch',
      // publication.ts ownerOf(): blockOwnerDeletion on shards and policy, which the
      // OwnerReferencesPermissionEnforcement admission plugin allows only with this.
      'ClusterRole /ops-exoledge: edge.exoledge.io blocklistsources/finalizers update',
      // list,watch: the informers of addBlocklistSourceController (label edge.exoledge.io/source);
      // get: publish() client.find of a name not in the cache; create,patch: client.apply
      // (server-side apply, create when new); delete: publish() plan.delete (shards beyond
      // the count, the other channel); deletecollection: cleanup() on a source's deletion.
      'ClusterRole /ops-exoledge: cilium.io ciliumcidrgroups,ciliumclusterwidenetworkpolicies list,watch,get,create,patch,delete,deletecollection',
      // controllers/edge-site.ts: the primary informer (list,watch), client.find of the site
      // at the start of each reconcile (get), the finalizer edge.exoledge.io/finalizer (patch).
      'ClusterRole /ops-exoledge: edge.exoledge.io edgesites list,watch,get,patch',
      // writeStatus(): client.applyStatus.
      'ClusterRole /ops-exoledge: edge.exoledge.io edgesites/status patch',
      // domain/edge-site/owner.ts controllerReference(): blockOwnerDeletion on owned objects.
      'ClusterRole /ops-exoledge: edge.exoledge.io edgesites/finalizers update',
      // addEdgeSiteController: owns() informers (list,watch), ensure() client.find of a name
      // not in the cache (get), client.apply (create,patch), remove() of a stray or in
      // cleanup() (delete, by name and uid); Services also for status.origins.
      'ClusterRole /ops-exoledge: core serviceaccounts,configmaps,services list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: apps deployments list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: cert-manager.io certificates list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: gateway.networking.k8s.io gateways,httproutes list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: networking.istio.io envoyfilters,destinationrules list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: extensions.istio.io wasmplugins list,watch,get,create,patch,delete',
      'ClusterRole /ops-exoledge: security.istio.io authorizationpolicies list,watch,get,create,patch,delete',
      // status.origins: the EndpointSlice informer.
      'ClusterRole /ops-exoledge: discovery.k8s.io endpointslices list,watch',
      // The kit's EventRecorder (manager.recorder): create, then patch a repeated Event's
      // series; about a source in "default", about a site in its namespace.
      'ClusterRole /ops-exoledge: events.k8s.io events create,patch',
      // main.ts secure metrics (kit RequestAuthorizer): who is scraping, may they GET /metrics.
      'ClusterRole /ops-exoledge-metrics-auth: authentication.k8s.io tokenreviews create',
      'ClusterRole /ops-exoledge-metrics-auth: authorization.k8s.io subjectaccessreviews create',
      // Not the operator's: for the user to bind to its Prometheus.
      'ClusterRole /ops-exoledge-metrics-reader: /metrics get',
      // The helm test: `kubectl wait` on the Lease by name.
      'Role ops/exoledge-helm-test: coordination.k8s.io leases[exoledge-operator.edge.exoledge.io] get,list,watch',
      // The decider channel, as the Cilium objects above, in the decider namespace only.
      'Role edge/ops-exoledge-decider: core configmaps list,watch,get,create,patch,delete,deletecollection',
      // Each site's grant to read the shards (domain/edge-site/shard-access.ts), as its
      // owned objects are handled, in the shard namespace.
      'Role edge/ops-exoledge-decider: rbac.authorization.k8s.io roles,rolebindings list,watch,get,create,patch,delete',
      // The kit's LeaderElector in the release namespace: create the Lease once, then
      // get (client.find) and update (client.replace) that one Lease.
      'Role ops/exoledge-leader-election: coordination.k8s.io leases create',
      'Role ops/exoledge-leader-election: coordination.k8s.io leases[exoledge-operator.edge.exoledge.io] get,update',
    ]);
    const operator = 'ServiceAccount ops/exoledge';
    const helmTest = 'ServiceAccount ops/exoledge-helm-test';
    assert.deepEqual(bindingRows(objects), [
      `ClusterRoleBinding /ops-exoledge-helm-test -> ClusterRole ops-exoledge-helm-test: ${helmTest}`,
      `ClusterRoleBinding /ops-exoledge -> ClusterRole ops-exoledge: ${operator}`,
      `ClusterRoleBinding /ops-exoledge-metrics-auth -> ClusterRole ops-exoledge-metrics-auth: ${operator}`,
      `RoleBinding ops/exoledge-helm-test -> Role exoledge-helm-test: ${helmTest}`,
      `RoleBinding edge/ops-exoledge-decider -> Role ops-exoledge-decider: ${operator}`,
      `RoleBinding ops/exoledge-leader-election -> Role exoledge-leader-election: ${operator}`,
    ]);

    // Insecure metrics need no review; no helm test, no identity for it.
    const bare = await renderChart(helm, {
      namespace: 'ops',
      values: { metrics: { secure: false }, helmTest: { enabled: false } },
    });
    assert.deepEqual(
      ruleRows(bare.objects).filter((r) => /metrics|helm-test/.test(r)),
      [],
    );
    assert.deepEqual(bare.tests, []);
    assert.deepEqual(
      byKind(bare.objects, 'ServiceAccount').map((o) => o.metadata.name),
      ['exoledge'],
    );
  });

  it('runs the operator hardened: non-root, read-only root filesystem with /tmp, no privilege, no capability', async () => {
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const { replicas, pod, container } = deployment(objects);
    assert.equal(replicas, 2, 'two replicas: one leads, one waits');
    assert.equal(pod.serviceAccountName, 'exoledge');
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    assert.deepEqual(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    assert.deepEqual(pod.volumes, [{ name: 'tmp', emptyDir: {} }]);
    assert.deepEqual(container.livenessProbe, { httpGet: { path: '/healthz', port: 'health' } });
    // Probed every 2 s, not the default 10: the first probe comes before node has started,
    // and the next one decides when the pod (and `helm install --wait`) is Ready.
    assert.deepEqual(container.readinessProbe, {
      httpGet: { path: '/readyz', port: 'health' },
      periodSeconds: 2,
    });
    assert.deepEqual(container.ports, [
      { name: 'health', containerPort: 8081 },
      { name: 'metrics', containerPort: 8443 },
    ]);
    assert.deepEqual(container.resources, {
      requests: { cpu: '50m', memory: '256Mi' },
      limits: { memory: '1Gi' },
    });
  });

  it('passes its values to the operator as the environment main.ts reads', async () => {
    const { objects } = await renderChart(helm, {
      namespace: 'ops',
      values: {
        deciderNamespace: 'edge-decider',
        shortestPrefix: { ipv4: 16, ipv6: 48 },
        fetch: { timeout: '90s', maxListBytes: 1073741824 },
        metrics: { port: 9443 },
        edgeSites: { deciderImage: 'registry.example/decider:1', watchNamespaces: ['shop', 'blog'] },
      },
    });
    const { container } = deployment(objects);
    assert.deepEqual(envOf(container), {
      // Leader election in the release namespace (main.ts: POD_NAMESPACE).
      POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      EXOLEDGE_DECIDER_NAMESPACE: 'edge-decider',
      EXOLEDGE_SHORTEST_PREFIX_IPV4: '16',
      EXOLEDGE_SHORTEST_PREFIX_IPV6: '48',
      EXOLEDGE_FETCH_TIMEOUT: '90s',
      EXOLEDGE_MAX_LIST_BYTES: '1073741824',
      EXOLEDGE_HEALTH_PORT: '8081',
      EXOLEDGE_METRICS_PORT: '9443',
      EXOLEDGE_METRICS_SECURE: 'true',
      EXOLEDGE_DECIDER_IMAGE: 'registry.example/decider:1',
      EXOLEDGE_GATEWAY_CLASS: 'istio',
      EXOLEDGE_WATCH_NAMESPACES: 'shop,blog',
      EXOLEDGE_TRUSTED_HOPS: '0',
      // The chart's own Valkey (valkey.deploy), which the operator passes to every decider.
      EXOLEDGE_VALKEY_URL: 'redis://exoledge-valkey.ops.svc.cluster.local:6379',
      TMPDIR: '/tmp',
    });
    const defaults = envOf(deployment((await renderChart(helm, { namespace: 'ops' })).objects).container);
    assert.equal(defaults.EXOLEDGE_SHORTEST_PREFIX_IPV4, '8');
    assert.equal(defaults.EXOLEDGE_SHORTEST_PREFIX_IPV6, '32');
    assert.equal(defaults.EXOLEDGE_DECIDER_NAMESPACE, 'exoledge-system');
  });

  it('deploys Valkey for the deciders, hardened and reachable by decider pods only, unless told of another one', async () => {
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const { replicas, pod, container } = deploymentNamed(objects, 'exoledge-valkey');
    assert.equal(replicas, 1);
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 999,
      runAsGroup: 999,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    const service = byKind(objects, 'Service').find((o) => o.metadata.name === 'exoledge-valkey');
    assert.deepEqual((service?.spec as { ports?: unknown } | undefined)?.ports, [
      { name: 'valkey', port: 6379, targetPort: 'valkey', protocol: 'TCP' },
    ]);
    const [policy] = byKind(objects, 'NetworkPolicy');
    assert.deepEqual((policy?.spec as { ingress?: unknown } | undefined)?.ingress, [
      {
        from: [
          {
            namespaceSelector: {},
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'exoledge-decider' } },
          },
        ],
        ports: [{ port: 6379, protocol: 'TCP' }],
      },
    ]);

    const own = await renderChart(helm, {
      namespace: 'ops',
      values: { valkey: { url: 'rediss://cache.example:6380/2' } },
    });
    assert.equal(
      envOf(deployment(own.objects).container).EXOLEDGE_VALKEY_URL,
      'rediss://cache.example:6380/2',
    );
    assert.ok(!byKind(own.objects, 'Deployment').some((o) => o.metadata.name === 'exoledge-valkey'));
    const none = await renderChart(helm, { namespace: 'ops', values: { valkey: { deploy: false } } });
    assert.equal(envOf(deployment(none.objects).container).EXOLEDGE_VALKEY_URL, undefined);
    assert.deepEqual(byKind(none.objects, 'NetworkPolicy'), []);
  });

  it('runs the console bridge only when enabled, with create and patch on EdgeSites and nothing else', async () => {
    const off = await renderChart(helm, { namespace: 'ops' });
    assert.ok(!byKind(off.objects, 'Deployment').some((o) => o.metadata.name === 'exoledge-bridge'));
    const { objects } = await renderChart(helm, {
      namespace: 'ops',
      values: { bridge: { enabled: true, directoryConfigMap: 'console' } },
    });
    assert.deepEqual(
      ruleRows(objects).filter((r) => r.includes('bridge')),
      // bridge/apiserver-dry-run.ts: one server-side apply, dryRun=All (create when new).
      ['ClusterRole /ops-exoledge-bridge: edge.exoledge.io edgesites create,patch'],
    );
    const { pod, container } = deploymentNamed(objects, 'exoledge-bridge');
    assert.equal(pod.serviceAccountName, 'exoledge-bridge');
    assert.equal(envOf(container).EXOLEDGE_BRIDGE_DIRECTORY, '/etc/exoledge/console/directory.json');
    assert.deepEqual(container.readinessProbe, {
      httpGet: { path: '/healthz', port: 'http' },
      periodSeconds: 2,
    });
    assert.deepEqual(
      byKind(objects, 'ValidatingAdmissionPolicyBinding').map((o) => o.metadata.name),
      ['ops-exoledge-bridge-dry-run-only'],
    );
  });

  it('refuses values that cannot work, saying which', async () => {
    await assert.rejects(
      renderChart(helm, { namespace: 'ops', values: { shortestPrefix: { ipv4: 33, ipv6: 32 } } }),
      /shortestPrefix: ipv4 must be 0 to 32 and ipv6 0 to 128, got 33 and 32/,
    );
    await assert.rejects(
      renderChart(helm, {
        namespace: 'ops',
        values: { deciderNamespace: 'ops', createDeciderNamespace: true },
      }),
      /createDeciderNamespace: the decider namespace is the release namespace/,
    );
    await assert.rejects(
      renderChart(helm, { namespace: 'ops', values: { valkey: { url: 'http://cache:6379' } } }),
      /valkey.url: not a redis:\/\/ or rediss:\/\/ URL: http:\/\/cache:6379/,
    );
    await assert.rejects(
      renderChart(helm, { namespace: 'ops', values: { bridge: { enabled: true } } }),
      /bridge.directoryConfigMap: the ConfigMap holding the console's directory/,
    );
  });

  it('creates the decider namespace only when createDeciderNamespace is true', async () => {
    const rendered = async (create: boolean): Promise<string[]> =>
      byKind(
        (
          await renderChart(helm, {
            namespace: 'ops',
            values: { deciderNamespace: 'edge', createDeciderNamespace: create },
          })
        ).objects,
        'Namespace',
      ).map((o) => o.metadata.name ?? '');
    assert.deepEqual(await rendered(false), []);
    assert.deepEqual(await rendered(true), ['edge']);
  });
});

describe('the exoledge chart on a real apiserver', () => {
  it('every rendered object, CRD and helm test included, is accepted (server-side dry-run)', async (t) => {
    const release = await env.namespace(t, 'exoledge');
    const decider = await env.namespace(t, 'exoledge-decider');
    const { objects, crds, tests } = await renderChart(helm, {
      namespace: release,
      values: { deciderNamespace: decider },
    });
    assert.ok(objects.length > 10 && crds.length === 2 && tests.length === 1);
    // The dry-run goes through validation (schemas, RBAC's rules) and admission, then stops.
    await applyAll(env.admin, t, [...crds, ...objects, ...tests], { dryRun: true });
    assert.equal(
      await env.admin.find({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'exoledge', release),
      undefined,
      'a dry-run writes nothing',
    );
  });

  it("lets the bridge's ServiceAccount dry-run an EdgeSite and denies it a real write, by the chart's policy", async (t) => {
    const release = await env.namespace(t, 'exoledge');
    const { objects, crds } = await renderChart(helm, {
      namespace: release,
      values: { bridge: { enabled: true, directoryConfigMap: 'console' } },
    });
    await env.installCrds(crds);
    const bridgeObjects = objects.filter((o) => (o.metadata.name ?? '').includes('exoledge-bridge'));
    await applyAll(env.admin, t, bridgeObjects);
    const asBridge = env.admin.impersonate({ user: `system:serviceaccount:${release}:exoledge-bridge` });
    const site = {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'EdgeSite',
      metadata: { name: 'shop', namespace: release },
      spec: {
        domains: ['shop.example.com'],
        upstream: { name: 'shop', port: 8080 },
        tls: { issuerRef: { name: 'letsencrypt' } },
      },
    };
    // A new policy takes a moment to reach admission: until it denies, a probe site is
    // really written (and removed), so the assertions below run under the policy.
    const gvk = { apiVersion: 'edge.exoledge.io/v1alpha1', kind: 'EdgeSite' };
    await eventually('the policy to deny the bridge a real write', async () => {
      const probe = { ...site, metadata: { name: 'probe', namespace: release } };
      try {
        await asBridge.apply(probe, { fieldManager: 'bridge' });
      } catch (err) {
        if (/only validates EdgeSites/.test(String(err))) return true;
        throw err;
      }
      await env.admin.delete(gvk, 'probe', release).catch(() => undefined);
      return undefined;
    });
    await assert.rejects(asBridge.apply(site, { fieldManager: 'bridge' }), /only validates EdgeSites/);
    const checked = await asBridge.apply(site, { fieldManager: 'bridge', dryRun: true });
    assert.equal(checked.metadata.name, 'shop');
    assert.equal(await env.admin.find(gvk, 'shop', release), undefined, 'nothing was written');
  });

  it('with createDeciderNamespace, the namespace comes first and everything in it applies', async (t) => {
    const release = await env.namespace(t, 'exoledge');
    const decider = `${release}-decider`;
    const { objects } = await renderChart(helm, {
      namespace: release,
      values: { deciderNamespace: decider, createDeciderNamespace: true },
    });
    assert.equal(objects[0]?.kind, 'Namespace', 'helm installs the Namespace first');
    await applyAll(
      env.admin,
      t,
      objects.filter((o) => RBAC_KINDS.has(o.kind ?? '') || o.kind === 'Namespace'),
    );
    const role = await env.admin.find(
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
      `${release}-exoledge-decider`,
      decider,
    );
    assert.ok(role, 'the decider Role, in the namespace the chart created');
  });
});
