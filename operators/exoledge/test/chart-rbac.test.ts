/**
 * The chart's RBAC is enough: its objects, rendered by helm, applied to a real apiserver,
 * and the operator run in this process as the chart's ServiceAccount (impersonated) with
 * leader election on, through every path that writes: a source in each channel, a switch
 * of channel, two deletions (the cleanup's deletecollection), an EdgeSite applied with
 * every owned kind, a switch turned off and the site deleted, the Events, the Lease, a
 * secure scrape of /metrics (TokenReview, SubjectAccessReview). Not one request is
 * refused (the client's own request counter, by status code).
 *
 * The plane is private because it runs the OwnerReferencesPermissionEnforcement
 * admission plugin, as hardened clusters do: shards that name their source as owner with
 * blockOwnerDeletion need `update` on `blocklistsources/finalizers`, and only that plugin
 * checks it. The helm test's commands are run with the real kubectl as the helm test's
 * ServiceAccount: they pass while a replica leads, and fail once the Lease is released.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { type GroupVersionKind, KubeClient, type KubeObject } from '@operators/kit';
import { Registry } from 'prom-client';
import { BLOCKLIST_SOURCE, type BlocklistSource } from '../src/api/blocklist-source.ts';
import { CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY, CONFIG_MAP } from '../src/api/cilium.ts';
import { EDGE_SITE, type EdgeSite } from '../src/api/edge-site.ts';
import { discoverEdgeKinds } from '../src/controllers/edge-site.ts';
import { createOperator, LEASE_NAME } from '../src/operator.ts';
import { type ListServer, startListServer } from '../src/sample/list-server.ts';
import { applyAll, httpsGet, kubectlAs, renderChart } from './chart-support.ts';
import { EDGE_OPTIONS } from './support/edge-site-options.ts';

let env: TestEnv;
let helm: string;
let kubectl: string;
let server: ListServer;

before(async () => {
  env = await privateTestEnv({
    apiserverFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  });
  await env.installThirdParty('cilium', 'certManager', 'gatewayApi', 'istio');
  ({ helm, kubectl } = await resolveBinaries(() => {}));
  server = await startListServer();
});

after(async () => {
  await server.close();
  await env.close();
});

/** `count` /24s that never merge (every other one). */
function list24(count: number): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(`10.${(i * 2) >> 8}.${(i * 2) & 255}.0/24`);
  return `${lines.join('\n')}\n`;
}

/** Requests the client sent, by status code, from its `rest_client_requests_total`. */
async function requestsAnswered(registry: Registry, code: string): Promise<number> {
  const metric = await registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.code === code).reduce((sum, v) => sum + v.value, 0);
}

/** The `kubectl` arguments of each container of the helm test pod, init containers first. */
function helmTestCommands(pod: KubeObject): string[][] {
  const spec = pod.spec as { initContainers?: { args: string[] }[]; containers: { args: string[] }[] };
  return [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.args);
}

/** kubectl as `user` on the plane the chart is installed on. */
const kubectlAsUser = (user: string, args: readonly string[]) =>
  kubectlAs(kubectl, env.kubeconfigPath, user, args);

describe("the chart's RBAC on a real apiserver", () => {
  it('is enough for every write the operator makes, run as the chart ServiceAccount with leader election: no request refused', async (t) => {
    const release = await env.namespace(t, 'exoledge');
    const decider = await env.namespace(t, 'exoledge-decider');
    const { objects, crds, tests } = await renderChart(helm, {
      namespace: release,
      values: { deciderNamespace: decider },
    });
    await env.installCrds(crds);
    await applyAll(env.admin, t, objects);

    // The operator's client is `env.asServiceAccount(release, 'exoledge')`, built here on
    // a transport of its own so that its requests are counted by status code.
    const registry = new Registry();
    const admin = await KubeClient.load(env.kubeconfigPath, { registry });
    t.after(() => admin.transport.close());
    const client = admin.impersonate({ user: `system:serviceaccount:${release}:exoledge` });
    // Every DELETE the operator sends, with its path and label selector.
    const deletes: { path: string; selector: string }[] = [];
    const { transport } = client;
    const send = transport.request.bind(transport);
    transport.request = <T>(opts: Parameters<typeof send>[0]): Promise<T> => {
      if (opts.method === 'DELETE') {
        deletes.push({ path: opts.path, selector: String(opts.query?.labelSelector ?? '') });
      }
      return send<T>(opts);
    };
    const { manager } = createOperator({
      client,
      deciderNamespace: decider,
      edgeSites: {
        edge: { ...EDGE_OPTIONS, shardNamespace: decider },
        notServed: await discoverEdgeKinds(client),
      },
      leaderElection: { namespace: release },
      healthPort: 0,
      metrics: { port: 0, host: '127.0.0.1', secure: {} },
      registry,
    });
    manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
    await manager.start();
    let stopped = false;
    t.after(async () => {
      if (!stopped) await manager.stop();
    });
    await eventually('a replica holds the Lease', async () => {
      const lease = await env.admin.find<KubeObject & { spec?: { holderIdentity?: string } }>(
        { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
        LEASE_NAME,
        release,
      );
      return lease?.spec?.holderIdentity ? true : undefined;
    });

    const create = async (name: string, enforce: boolean): Promise<void> => {
      server.serve(`/${name}.txt`, { body: list24(25) });
      await env.admin.create<BlocklistSource>({
        ...BLOCKLIST_SOURCE,
        metadata: { name },
        spec: {
          url: server.url(`/${name}.txt`),
          kind: 'Certain',
          shardSize: 10,
          ...(enforce ? { enforce: true, podSelector: {} } : {}),
        },
      });
      t.after(async () => {
        await env.admin
          .patch(BLOCKLIST_SOURCE, name, undefined, {
            type: 'merge',
            body: { metadata: { finalizers: null } },
          })
          .catch(() => undefined);
        await env.admin.delete(BLOCKLIST_SOURCE, name).catch(() => undefined);
      });
    };
    const ready = (name: string, channel: string): Promise<BlocklistSource> =>
      eventually(`${name} Ready in ${channel}`, async () => {
        const s = await env.admin.get<BlocklistSource>(BLOCKLIST_SOURCE, name);
        const c = s.status?.conditions?.find((x) => x.type === 'Ready');
        return c?.status === 'True' &&
          c.observedGeneration === s.metadata.generation &&
          s.status?.channel === channel
          ? s
          : undefined;
      });
    const count = async (gvk: GroupVersionKind, name: string, namespace?: string): Promise<number> =>
      (
        await env.admin.listAll(gvk, {
          labelSelector: `edge.exoledge.io/source=${name}`,
          ...(namespace ? { namespace } : {}),
        })
      ).items.length;
    const published = async (name: string): Promise<[number, number, number]> => [
      await count(CILIUM_CIDR_GROUP, name),
      await count(CILIUM_CLUSTERWIDE_NETWORK_POLICY, name),
      await count(CONFIG_MAP, name, decider),
    ];
    const cleanedUp = (name: string): Promise<string[]> =>
      eventually(`${name} deleted, with its CleanedUp event`, async () => {
        if (await env.admin.find(BLOCKLIST_SOURCE, name)) return undefined;
        const { items } = await env.admin.listAll<KubeObject & { reason?: string; note?: string }>(
          { apiVersion: 'events.k8s.io/v1', kind: 'Event' },
          { namespace: 'default', fieldSelector: `regarding.name=${name}` },
        );
        const notes = items.filter((e) => e.reason === 'CleanedUp').map((e) => e.note ?? '');
        return notes.length > 0 ? notes : undefined;
      });

    // Both channels: Cilium's shards and policy (enforce), the decider's ConfigMaps.
    const cilium = `rbac-cilium-${process.pid}`;
    const deciding = `rbac-decider-${process.pid}`;
    await create(cilium, true);
    await create(deciding, false);
    await ready(cilium, 'CiliumPolicy');
    await ready(deciding, 'Decider');
    assert.deepEqual(await published(cilium), [3, 1, 0]);
    assert.deepEqual(await published(deciding), [0, 0, 1]);

    // A switch of channel: the decider source now enforces, its ConfigMap deleted.
    await env.admin.patch(BLOCKLIST_SOURCE, deciding, undefined, {
      type: 'merge',
      body: { spec: { enforce: true, podSelector: {} } },
    });
    await ready(deciding, 'CiliumPolicy');
    await eventually('the decider ConfigMap deleted', async () =>
      (await count(CONFIG_MAP, deciding, decider)) === 0 ? true : undefined,
    );
    assert.deepEqual(await published(deciding), [3, 1, 0]);

    // Deletion: one deletecollection per kind, selected by the source's label, never an
    // object by name (a cleanup may run twice on a stale read; it is idempotent), and the
    // event counts what the apiserver says it deleted.
    const deletesBefore = deletes.length;
    await env.admin.delete(BLOCKLIST_SOURCE, cilium);
    assert.ok((await cleanedUp(cilium)).includes('deleted 4 published objects'));
    const ofCilium = deletes
      .slice(deletesBefore)
      .filter((d) => d.path.includes(cilium) || d.selector.includes(cilium));
    assert.ok(ofCilium.length >= 3, JSON.stringify(ofCilium));
    assert.deepEqual(
      new Set(ofCilium.map((d) => `${d.path}?${d.selector}`)),
      new Set([
        `/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies?edge.exoledge.io/source=${cilium}`,
        `/apis/cilium.io/v2/ciliumcidrgroups?edge.exoledge.io/source=${cilium}`,
        `/api/v1/namespaces/${decider}/configmaps?edge.exoledge.io/source=${cilium}`,
      ]),
    );
    assert.deepEqual(await published(cilium), [0, 0, 0]);
    await env.admin.patch(BLOCKLIST_SOURCE, deciding, undefined, {
      type: 'merge',
      body: { spec: { enforce: false } },
    });
    await ready(deciding, 'Decider');
    await env.admin.delete(BLOCKLIST_SOURCE, deciding);
    assert.ok((await cleanedUp(deciding)).includes('deleted 1 published objects'));
    assert.deepEqual(await published(deciding), [0, 0, 0]);

    // An EdgeSite through its life: every owned kind applied, its grant in the decider
    // namespace, a switch turned off (a delete by name), and its deletion (the finalizer's
    // lists and deletes), with Events in the site's namespace.
    const siteNs = await env.namespace(t, 'exoledge-site');
    await env.admin.create<EdgeSite>({
      ...EDGE_SITE,
      metadata: { name: 'shop', namespace: siteNs },
      spec: {
        domains: ['shop.example.com'],
        upstream: { name: 'web', port: 80 },
        tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
        grpc: true,
      },
    });
    const siteReady = (what: string, pred: (s: EdgeSite) => boolean) =>
      eventually(`shop ${what}`, async () => {
        const s = await env.admin.get<EdgeSite>(EDGE_SITE, 'shop', siteNs);
        const c = s.status?.conditions?.find((x) => x.type === 'Ready');
        return c?.reason === 'Reconciled' && c.observedGeneration === s.metadata.generation && pred(s)
          ? s
          : undefined;
      });
    await siteReady('reconciled', (s) => (s.status?.features ?? []).every((f) => f.applied));
    await env.admin.patch(EDGE_SITE, 'shop', siteNs, {
      type: 'merge',
      body: { spec: { security: { waf: false } } },
    });
    await siteReady(
      'without its WAF',
      (s) => s.status?.features?.find((f) => f.name === 'waf')?.applied === false,
    );
    await env.admin.delete(EDGE_SITE, 'shop', siteNs);
    await eventually('shop deleted', async () =>
      (await env.admin.find(EDGE_SITE, 'shop', siteNs)) ? undefined : true,
    );

    // Secure metrics: a scraper bound to the chart's metrics-reader ClusterRole gets 200,
    // after the operator's TokenReview and SubjectAccessReview.
    await env.admin.create({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'scraper', namespace: release },
    });
    await applyAll(env.admin, t, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${release}-scraper` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: `${release}-exoledge-metrics-reader`,
        },
        subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: release }],
      } as KubeObject,
    ]);
    const token = await env.admin.transport.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${release}/serviceaccounts/scraper/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    const scrape = await httpsGet(manager.metricsEndpoint?.port ?? 0, '/metrics', token.status.token);
    assert.equal(scrape.status, 200, scrape.body);
    assert.match(scrape.body, /^leader_election_master_status\{[^}]*\} 1$/m);

    const requests = await requestsAnswered(registry, '200');
    assert.ok(requests > 0, 'the operator made requests');
    assert.equal(await requestsAnswered(registry, '403'), 0, 'no request was refused');

    // The helm test, as its own ServiceAccount: passes while a replica leads...
    const [pod, ...others] = tests;
    assert.ok(pod, 'a helm test pod');
    assert.equal(others.length, 0);
    const helmTestUser = `system:serviceaccount:${release}:exoledge-helm-test`;
    const commands = helmTestCommands(pod);
    assert.equal(commands.length, 2, 'the CRD served, then the Lease held');
    for (const args of commands) {
      const { code, output } = await kubectlAsUser(helmTestUser, args);
      assert.equal(code, 0, `kubectl ${args.join(' ')}: ${output}`);
    }
    // ...and fails once the Lease is released (checked once: --timeout=0s).
    await manager.stop();
    stopped = true;
    const leaseCheck = (commands[1] ?? []).map((a) => (a.startsWith('--timeout=') ? '--timeout=0s' : a));
    const released = await kubectlAsUser(helmTestUser, leaseCheck);
    assert.notEqual(released.code, 0, `a released Lease fails the helm test: ${released.output}`);
    assert.doesNotMatch(released.output, /forbidden/i);
  });
});
