/**
 * terdut-operator's installer chart (DESIGN §10) as the real helm renders it: `helm lint`;
 * chart/crds/ is crds/ byte for byte; the RBAC is exactly the table below, each row with
 * the call that needs it (the other half, that it is enough, is chart-rbac.test.ts); the
 * Deployment's settings and hardening; the optional TerdutServer from values; the helm
 * test; and every rendered object accepted by a real apiserver (server-side dry-run).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { parseAllDocuments } from 'yaml';
import { LEASE_NAME } from '../src/operator.ts';
import {
  applyAll,
  BYO_DATABASE,
  bindingRows,
  byKind,
  CHART_DIR,
  helmTestCommands,
  names,
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

const LEASE = 'terdut-operator.terdut.ryuvia.com';
const CRD_NAMES = [
  'terdutservers.terdut.ryuvia.com',
  'terdutteams.terdut.ryuvia.com',
  'terdutescalationrules.terdut.ryuvia.com',
  'terdutdeadmanswitches.terdut.ryuvia.com',
  'terdutalertsources.terdut.ryuvia.com',
];
const withServer = (server: Record<string, unknown> = {}): Record<string, unknown> => ({
  server: { enabled: true, spec: { database: BYO_DATABASE }, ...server },
});

interface Container {
  readonly image: string;
  readonly args?: readonly string[];
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
  name: string | undefined;
  namespace: string | undefined;
  replicas: number;
  pod: PodSpec;
  container: Container;
} {
  const [d, ...others] = byKind(objects, 'Deployment');
  assert.ok(d, 'a Deployment');
  assert.equal(others.length, 0);
  const spec = d.spec as { replicas: number; template: { spec: PodSpec } };
  const [container, ...sidecars] = spec.template.spec.containers;
  assert.ok(container);
  assert.equal(sidecars.length, 0);
  return {
    name: d.metadata.name,
    namespace: d.metadata.namespace,
    replicas: spec.replicas,
    pod: spec.template.spec,
    container,
  };
}
const envOf = (c: Container): Record<string, unknown> =>
  Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));

type Server = KubeObject & { spec: Record<string, unknown> };
const servers = (objects: readonly KubeObject[]): Server[] => byKind(objects, 'TerdutServer') as Server[];

describe('the terdut-operator chart, rendered by helm', () => {
  it('passes helm lint, with defaults and with every optional part switched', async () => {
    await run(helm, ['lint', '--strict', CHART_DIR]);
    await run(helm, [
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'metrics.secure=false,helmTest.enabled=false,server.enabled=true,server.namespace=oncall',
      '--set',
      `server.spec.database.dsn=${BYO_DATABASE.dsn},server.adminKey.existingSecret=terdut-admin`,
    ]);
  });

  it('ships the CRDs generated from the types, byte for byte (chart/crds/ is a copy of crds/)', async () => {
    const generatedDir = join(CHART_DIR, '..', 'crds');
    const shippedDir = join(CHART_DIR, 'crds');
    const files = (await readdir(generatedDir)).sort();
    assert.deepEqual(
      (await readdir(shippedDir)).sort(),
      files,
      'chart/crds/ holds exactly the files of crds/: cp operators/terdut/crds/*.yaml operators/terdut/chart/crds/',
    );
    assert.equal(files.length, 5);
    for (const f of files) {
      const generated = await readFile(join(generatedDir, f));
      const shipped = await readFile(join(shippedDir, f));
      assert.ok(
        generated.equals(shipped),
        `chart/crds/${f} differs from crds/${f}: cp operators/terdut/crds/*.yaml operators/terdut/chart/crds/`,
      );
    }
    // What helm installs is those files, in full.
    const { crds } = await renderChart(helm, { namespace: 'ops' });
    assert.deepEqual(crds.map((c) => c.metadata.name).sort(), [...CRD_NAMES].sort());
    for (const f of files) {
      const [doc, ...more] = parseAllDocuments(await readFile(join(generatedDir, f), 'utf8'))
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => !!o);
      assert.equal(more.length, 0);
      assert.deepEqual(
        crds.find((c) => c.metadata.name === doc?.metadata.name),
        doc,
      );
    }
  });

  it('renders, with defaults, the operator and what it runs as, in the release namespace, and no TerdutServer', async () => {
    const { objects, tests } = await renderChart(helm, { namespace: 'ops' });
    assert.deepEqual(names(objects), [
      'ServiceAccount ops/terdut-operator-helm-test',
      'ServiceAccount ops/terdut-operator',
      'ClusterRole /ops-terdut-operator-helm-test',
      'ClusterRole /ops-terdut-operator',
      'ClusterRole /ops-terdut-operator-secrets',
      'ClusterRole /ops-terdut-operator-metrics-auth',
      'ClusterRole /ops-terdut-operator-metrics-reader',
      'ClusterRoleBinding /ops-terdut-operator-helm-test',
      'ClusterRoleBinding /ops-terdut-operator',
      'ClusterRoleBinding /ops-terdut-operator-secrets',
      'ClusterRoleBinding /ops-terdut-operator-metrics-auth',
      'Role ops/terdut-operator-helm-test',
      'Role ops/terdut-operator-leader-election',
      'RoleBinding ops/terdut-operator-helm-test',
      'RoleBinding ops/terdut-operator-leader-election',
      'Deployment ops/terdut-operator',
    ]);
    assert.deepEqual(names(tests), ['Pod ops/terdut-operator-lease-held']);
    // The operator's caches select its own objects by this label: the chart's must not carry it.
    for (const o of [...objects, ...tests]) {
      assert.notEqual(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'terdut-operator', names([o])[0]);
      assert.equal(o.metadata.labels?.['app.kubernetes.io/name'], 'terdut-operator', names([o])[0]);
    }
  });

  it('grants exactly what the code calls, each grant where it is used', async () => {
    assert.equal(LEASE_NAME, LEASE, 'the chart names the Lease the operator elects through');
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const kinds = 'terdutservers,terdutteams,terdutescalationrules,terdutdeadmanswitches,terdutalertsources';
    assert.deepEqual(ruleRows(objects), [
      // The helm test (templates/tests/lease-held.yaml): `kubectl wait` on the five CRDs by name.
      `ClusterRole /ops-terdut-operator-helm-test: apiextensions.k8s.io customresourcedefinitions[${CRD_NAMES.join(',')}] get,list,watch`,
      // list,watch: the informers (operator.ts shared servers and teams; each controller's
      // manager.cache.informer). patch: the finalizer terdut.ryuvia.com/finalizer added and
      // removed by the kit's finalizer() (a guarded JSON patch, never an update). No get:
      // nothing reads one of them but through the caches.
      `ClusterRole /ops-terdut-operator: terdut.ryuvia.com ${kinds} list,watch,patch`,
      // controllers/common.ts writeStatus(): client.applyStatus (server-side apply of status).
      'ClusterRole /ops-terdut-operator: terdut.ryuvia.com terdutservers/status,terdutteams/status,terdutescalationrules/status,terdutdeadmanswitches/status,terdutalertsources/status patch',
      // controllerReference() (blockOwnerDeletion) on the server's Deployment, Service and
      // credentials Secret, and on an alert source's webhook Secret: the
      // OwnerReferencesPermissionEnforcement admission plugin allows it only with this.
      'ClusterRole /ops-terdut-operator: terdut.ryuvia.com terdutservers/finalizers,terdutalertsources/finalizers update',
      // controllers/terdut-server.ts: the label-selected informers (.owns); ensure()
      // client.apply (server-side apply, create when new). No delete: garbage collection.
      'ClusterRole /ops-terdut-operator: apps deployments list,watch,create,patch',
      'ClusterRole /ops-terdut-operator: core services list,watch,create,patch',
      // connection.ts connect() and mirrors.ts syncMirrors(): one Get of a team's Namespace
      // (its labels, for allowedTeams from: Selector).
      'ClusterRole /ops-terdut-operator: core namespaces get',
      // terdut-server.ts: the informer and watch on Zalando's postgresql (optional CRD).
      'ClusterRole /ops-terdut-operator: acid.zalan.do postgresqls list,watch',
      // The kit's EventRecorder (manager.recorder): create, then patch a repeated Event's series.
      'ClusterRole /ops-terdut-operator: events.k8s.io events create,patch',
      // Cross-namespace Secret write (DESIGN §9), a ClusterRole of its own. list,watch: the
      // informers on managed-by=terdut-operator (operator.ts) and application=spilo
      // (terdut-server.ts, with Zalando); get: client.find of the credentials, admin-key,
      // password and webhook Secrets; create,patch: client.apply of the credentials Secret,
      // its mirrors and webhook Secrets, and removeFinalizer; delete: mirrors.ts deleteMirror.
      'ClusterRole /ops-terdut-operator-secrets: core secrets get,list,watch,create,patch,delete',
      // main.ts secure metrics (kit RequestAuthorizer): who is scraping, may they GET /metrics.
      'ClusterRole /ops-terdut-operator-metrics-auth: authentication.k8s.io tokenreviews create',
      'ClusterRole /ops-terdut-operator-metrics-auth: authorization.k8s.io subjectaccessreviews create',
      // Not the operator's: for the user to bind to its Prometheus.
      'ClusterRole /ops-terdut-operator-metrics-reader: /metrics get',
      // The helm test: `kubectl wait` on the Lease by name.
      `Role ops/terdut-operator-helm-test: coordination.k8s.io leases[${LEASE}] get,list,watch`,
      // The kit's LeaderElector in the release namespace: create the Lease once, then get
      // (client.find) and update (client.replace: renew, release) that one Lease.
      'Role ops/terdut-operator-leader-election: coordination.k8s.io leases create',
      `Role ops/terdut-operator-leader-election: coordination.k8s.io leases[${LEASE}] get,update`,
    ]);
    const operator = 'ServiceAccount ops/terdut-operator';
    const helmTest = 'ServiceAccount ops/terdut-operator-helm-test';
    assert.deepEqual(bindingRows(objects), [
      `ClusterRoleBinding /ops-terdut-operator-helm-test -> ClusterRole ops-terdut-operator-helm-test: ${helmTest}`,
      `ClusterRoleBinding /ops-terdut-operator -> ClusterRole ops-terdut-operator: ${operator}`,
      `ClusterRoleBinding /ops-terdut-operator-secrets -> ClusterRole ops-terdut-operator-secrets: ${operator}`,
      `ClusterRoleBinding /ops-terdut-operator-metrics-auth -> ClusterRole ops-terdut-operator-metrics-auth: ${operator}`,
      `RoleBinding ops/terdut-operator-helm-test -> Role terdut-operator-helm-test: ${helmTest}`,
      `RoleBinding ops/terdut-operator-leader-election -> Role terdut-operator-leader-election: ${operator}`,
    ]);

    // With a server from values, the helm test also reads that one server by name, where it is.
    const served = await renderChart(helm, {
      namespace: 'ops',
      values: withServer({ namespace: 'oncall' }),
    });
    assert.deepEqual(
      ruleRows(served.objects).filter((r) => !ruleRows(objects).includes(r)),
      [
        'Role oncall/terdut-operator-helm-test-server: terdut.ryuvia.com terdutservers[terdut] get,list,watch',
      ],
      'the operator is granted nothing more for a server of its own chart',
    );
    assert.deepEqual(
      bindingRows(served.objects).filter((r) => !bindingRows(objects).includes(r)),
      [
        `RoleBinding oncall/terdut-operator-helm-test-server -> Role terdut-operator-helm-test-server: ${helmTest}`,
      ],
    );

    // Insecure metrics need no review; no helm test, no identity for it.
    const bare = await renderChart(helm, {
      namespace: 'ops',
      values: { metrics: { secure: false }, helmTest: { enabled: false }, ...withServer() },
    });
    assert.deepEqual(
      ruleRows(bare.objects).filter((r) => /metrics|helm-test/.test(r)),
      [],
    );
    assert.deepEqual(bare.tests, []);
    assert.deepEqual(
      byKind(bare.objects, 'ServiceAccount').map((o) => o.metadata.name),
      ['terdut-operator'],
    );
  });

  it('runs the operator with two replicas, probes on /healthz and /readyz, hardened', async () => {
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const { name, namespace, replicas, pod, container } = deployment(objects);
    assert.equal(name, 'terdut-operator');
    assert.equal(namespace, 'ops');
    assert.equal(replicas, 2, 'two replicas: one leads, one waits');
    assert.equal(pod.serviceAccountName, 'terdut-operator');
    assert.equal(
      container.image,
      'ghcr.io/kube-operators-ts/terdut-operator:0.1.0',
      'the placeholder repository, tagged with appVersion',
    );
    assert.equal(container.args, undefined, 'the entrypoint runs main.ts; everything else is env');
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
    // Probed every 2 s, not the kubelet's default 10 s: a pod is Ready soon after /readyz
    // passes, so `helm install --wait` and each rollout step do not wait up to 10 s more.
    assert.deepEqual(container.readinessProbe, {
      httpGet: { path: '/readyz', port: 'health' },
      periodSeconds: 2,
    });
    assert.deepEqual(container.ports, [
      { name: 'health', containerPort: 8081 },
      { name: 'metrics', containerPort: 8443 },
    ]);
    assert.deepEqual(container.resources, {
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });

    const insecure = deployment(
      (await renderChart(helm, { namespace: 'ops', values: { metrics: { secure: false, port: 8080 } } }))
        .objects,
    );
    assert.deepEqual(
      insecure.container.ports,
      [{ name: 'health', containerPort: 8081 }],
      'insecure /metrics listens on loopback: no port to declare',
    );
    const tagged = deployment(
      (
        await renderChart(helm, {
          namespace: 'ops',
          values: { image: { repository: 'registry.example/terdut-operator', tag: 'dev' } },
        })
      ).objects,
    );
    assert.equal(tagged.container.image, 'registry.example/terdut-operator:dev');
  });

  it('passes its values to the operator as the environment main.ts reads', async () => {
    const defaults = envOf(deployment((await renderChart(helm, { namespace: 'ops' })).objects).container);
    assert.deepEqual(defaults, {
      // Leader election in the release namespace (main.ts: TERDUT_LEADER_ELECTION_NAMESPACE,
      // else POD_NAMESPACE), through the Lease terdut-operator.terdut.ryuvia.com.
      POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      TERDUT_LEADER_ELECTION_NAMESPACE: '$(POD_NAMESPACE)',
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      TERDUT_HEALTH_PORT: '8081',
      TERDUT_METRICS_PORT: '8443',
      TERDUT_METRICS_SECURE: 'true',
      TERDUT_RESYNC: '5m',
      TERDUT_API_TIMEOUT: '10s',
      TMPDIR: '/tmp',
    });
    const set = envOf(
      deployment(
        (
          await renderChart(helm, {
            namespace: 'ops',
            values: {
              healthPort: 9081,
              metrics: { port: 9443, secure: false },
              resync: '1m',
              apiTimeout: '30s',
            },
          })
        ).objects,
      ).container,
    );
    assert.deepEqual(
      [
        set.TERDUT_HEALTH_PORT,
        set.TERDUT_METRICS_PORT,
        set.TERDUT_METRICS_SECURE,
        set.TERDUT_RESYNC,
        set.TERDUT_API_TIMEOUT,
      ],
      ['9081', '9443', 'false', '1m', '30s'],
    );
  });

  it('renders one TerdutServer only when server.enabled: its spec as given, in the release namespace by default, kept on uninstall', async () => {
    assert.deepEqual(servers((await renderChart(helm, { namespace: 'ops' })).objects), []);

    const spec = {
      database: BYO_DATABASE,
      replicas: 1,
      networking: { hostname: 'terdut.example.com', servicePort: 8080 },
      allowedTeams: {
        namespaces: {
          from: 'Selector',
          selector: { matchLabels: { 'terdut.ryuvia.com/allowed-server': 'x' } },
        },
      },
    };
    const [server, ...others] = servers(
      (await renderChart(helm, { namespace: 'ops', values: { server: { enabled: true, spec } } })).objects,
    );
    assert.equal(others.length, 0);
    assert.ok(server);
    assert.equal(server.apiVersion, 'terdut.ryuvia.com/v1alpha1');
    assert.equal(server.metadata.name, 'terdut');
    assert.equal(server.metadata.namespace, 'ops');
    assert.deepEqual(server.spec, spec, 'the spec passes through untouched');
    assert.equal(server.metadata.annotations?.['helm.sh/resource-policy'], 'keep');

    // Elsewhere, another name, an admin key for a server bootstrapped by someone else.
    const [elsewhere] = servers(
      (
        await renderChart(helm, {
          namespace: 'ops',
          values: withServer({
            name: 'shared',
            namespace: 'oncall',
            spec: { database: BYO_DATABASE, credentials: { rotateEvery: '720h' } },
            adminKey: { existingSecret: 'terdut-admin' },
          }),
        })
      ).objects,
    );
    assert.equal(elsewhere?.metadata.name, 'shared');
    assert.equal(elsewhere?.metadata.namespace, 'oncall');
    assert.deepEqual(elsewhere?.spec, {
      database: BYO_DATABASE,
      credentials: { rotateEvery: '720h', adminKeySecretRef: { name: 'terdut-admin', key: 'apiKey' } },
    });
    const [otherKey] = servers(
      (
        await renderChart(helm, {
          namespace: 'ops',
          values: withServer({ adminKey: { existingSecret: 'terdut-admin', key: 'admin-key' } }),
        })
      ).objects,
    );
    assert.deepEqual(otherKey?.spec.credentials, {
      adminKeySecretRef: { name: 'terdut-admin', key: 'admin-key' },
    });
  });

  it('refuses server values that cannot work, saying which', async () => {
    await assert.rejects(
      renderChart(helm, { namespace: 'ops', values: { server: { enabled: true } } }),
      /server\.spec\.database: a TerdutServer needs its database/,
    );
    await assert.rejects(
      renderChart(helm, {
        namespace: 'ops',
        values: withServer({
          spec: { database: BYO_DATABASE, credentials: { adminKeySecretRef: { name: 'a' } } },
          adminKey: { existingSecret: 'b' },
        }),
      }),
      /server\.adminKey\.existingSecret and server\.spec\.credentials\.adminKeySecretRef: set one, not both/,
    );
    await assert.rejects(
      renderChart(helm, { namespace: 'ops', values: withServer({ name: 'terdut-operator' }) }),
      /server\.name: terdut-operator is the operator's own Deployment/,
    );
    // The same name in another namespace collides with nothing.
    await renderChart(helm, {
      namespace: 'ops',
      values: withServer({ name: 'terdut-operator', namespace: 'oncall' }),
    });
  });

  it('has a helm test that waits for the CRDs, then a replica holding the Lease and, with a server, its Ready', async () => {
    const [pod] = (await renderChart(helm, { namespace: 'ops' })).tests;
    assert.ok(pod);
    assert.equal(
      (pod.spec as { serviceAccountName: string }).serviceAccountName,
      'terdut-operator-helm-test',
    );
    const crdsServed = [
      'wait',
      '--for=condition=Established',
      ...CRD_NAMES.map((n) => `customresourcedefinitions.apiextensions.k8s.io/${n}`),
      '--timeout=120s',
    ];
    const leaseHeld = [
      'wait',
      '--for=jsonpath={.spec.holderIdentity}',
      '--namespace=ops',
      `leases.coordination.k8s.io/${LEASE}`,
      '--timeout=120s',
    ];
    assert.deepEqual(helmTestCommands(pod), [crdsServed, leaseHeld]);

    const [withIt] = (
      await renderChart(helm, { namespace: 'ops', values: withServer({ namespace: 'oncall' }) })
    ).tests;
    assert.ok(withIt);
    assert.deepEqual(helmTestCommands(withIt), [
      crdsServed,
      leaseHeld,
      [
        'wait',
        '--for=condition=Ready',
        '--namespace=oncall',
        'terdutservers.terdut.ryuvia.com/terdut',
        '--timeout=120s',
      ],
    ]);
  });
});

describe('the terdut-operator chart on a real apiserver', () => {
  it('every rendered object, CRDs, a TerdutServer and the helm test included, is accepted (server-side dry-run)', async (t) => {
    const release = await env.namespace(t, 'terdut-chart');
    const oncall = await env.namespace(t, 'terdut-oncall');
    const { objects, crds, tests } = await renderChart(helm, {
      namespace: release,
      values: withServer({ namespace: oncall, adminKey: { existingSecret: 'terdut-admin' } }),
    });
    assert.ok(objects.length > 15 && crds.length === 5 && tests.length === 1);
    // A TerdutServer is only validated against its CRD once the CRD is served: install the
    // chart's CRDs for real (the same bytes as crds/, which other tests install too).
    await env.installCrds(crds);
    // The dry-run goes through validation (schemas, CEL rules, RBAC's rules) and admission, then stops.
    await applyAll(env.admin, t, [...objects, ...tests], { dryRun: true });
    assert.equal(
      await env.admin.find({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'terdut-operator', release),
      undefined,
      'a dry-run writes nothing',
    );
  });
});
