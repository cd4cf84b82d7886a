/**
 * gitops-reverser's installer chart as the real helm renders it (`helm template`, no
 * cluster): `helm lint`; chart/crds/ is crds/ byte for byte; the RBAC is exactly the table
 * below, each row with the call that needs it (the other half, that it is enough, is
 * chart-rbac.test.ts); what it may mirror (source.rules); the `default` ClusterProvider; the
 * Deployment's settings and hardening; the helm test.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import type { KubeObject } from '@operators/kit';
import { parseAllDocuments } from 'yaml';
import { LEASE_NAME } from '../src/operator.ts';
import {
  bindingRows,
  byKind,
  CHART_DIR,
  helmTestCommands,
  names,
  renderChart,
  ruleRows,
  run,
} from './chart-support.ts';

let helm: string;
before(async () => {
  helm = (await resolveBinaries(() => {})).helm;
});

const LEASE = 'gitops-reverser.configbutler.ai';
const CRD_NAMES = [
  'clusterproviders.configbutler.ai',
  'gitproviders.configbutler.ai',
  'gittargets.configbutler.ai',
  'watchrules.configbutler.ai',
  'clusterwatchrules.configbutler.ai',
  'commitrequests.configbutler.ai',
];

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

type ClusterProviderObj = KubeObject & { spec: Record<string, unknown> };
const clusterProviders = (objects: readonly KubeObject[]): ClusterProviderObj[] =>
  byKind(objects, 'ClusterProvider') as ClusterProviderObj[];

/** The chart's default source rules, written out here (not read from values.yaml). */
const DEFAULT_SOURCE_ROWS = [
  'ClusterRole /ops-gitops-reverser-source-reader: core configmaps,services,serviceaccounts list,watch',
  'ClusterRole /ops-gitops-reverser-source-reader: apps deployments,statefulsets,daemonsets list,watch',
];

describe('the gitops-reverser chart, rendered by helm', () => {
  it('passes helm lint, with defaults and with every optional part switched', async () => {
    await run(helm, ['lint', '--strict', CHART_DIR]);
    await run(helm, [
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'metrics.secure=false,helmTest.enabled=false,clusterProvider.createDefault=false,replicas=2',
      '--set',
      'workDir.emptyDir.sizeLimit=1Gi,source.rules=null',
    ]);
    await run(helm, ['lint', '--strict', CHART_DIR, '--set', 'clusterProvider.accessFrom.names={team-a}']);
  });

  it('ships the CRDs generated from the types, byte for byte (chart/crds/ is a copy of crds/)', async () => {
    const generatedDir = join(CHART_DIR, '..', 'crds');
    const shippedDir = join(CHART_DIR, 'crds');
    const files = (await readdir(generatedDir)).sort();
    assert.deepEqual(
      (await readdir(shippedDir)).sort(),
      files,
      'chart/crds/ holds exactly the files of crds/: cp operators/gitops-reverser/crds/*.yaml operators/gitops-reverser/chart/crds/',
    );
    assert.equal(files.length, 6);
    for (const f of files) {
      const generated = await readFile(join(generatedDir, f));
      const shipped = await readFile(join(shippedDir, f));
      assert.ok(
        generated.equals(shipped),
        `chart/crds/${f} differs from crds/${f}: cp operators/gitops-reverser/crds/*.yaml operators/gitops-reverser/chart/crds/`,
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

  it('renders, with defaults, the operator, what it runs as, and the ClusterProvider default', async () => {
    const { objects, tests } = await renderChart(helm, { namespace: 'ops' });
    assert.deepEqual(names(objects), [
      'ServiceAccount ops/gitops-reverser-helm-test',
      'ServiceAccount ops/gitops-reverser',
      'ClusterRole /ops-gitops-reverser-helm-test',
      'ClusterRole /ops-gitops-reverser',
      'ClusterRole /ops-gitops-reverser-secrets',
      'ClusterRole /ops-gitops-reverser-source-reader',
      'ClusterRole /ops-gitops-reverser-metrics-auth',
      'ClusterRole /ops-gitops-reverser-metrics-reader',
      'ClusterRoleBinding /ops-gitops-reverser-helm-test',
      'ClusterRoleBinding /ops-gitops-reverser',
      'ClusterRoleBinding /ops-gitops-reverser-secrets',
      'ClusterRoleBinding /ops-gitops-reverser-source-reader',
      'ClusterRoleBinding /ops-gitops-reverser-metrics-auth',
      'Role ops/gitops-reverser-helm-test',
      'Role ops/gitops-reverser-leader-election',
      'RoleBinding ops/gitops-reverser-helm-test',
      'RoleBinding ops/gitops-reverser-leader-election',
      'Deployment ops/gitops-reverser',
      'ClusterProvider /default',
    ]);
    assert.deepEqual(names(tests), ['Pod ops/gitops-reverser-lease-held']);
    for (const o of [...objects, ...tests]) {
      assert.equal(o.metadata.labels?.['app.kubernetes.io/name'], 'gitops-reverser', names([o])[0]);
      assert.equal(o.metadata.labels?.['app.kubernetes.io/instance'], 'gitops-reverser', names([o])[0]);
    }
  });

  it('grants exactly what the code calls, each grant where it is used, and no delete anywhere', async () => {
    assert.equal(LEASE_NAME, LEASE, 'the chart names the Lease the operator elects through');
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const rows = ruleRows(objects);
    assert.deepEqual(rows, [
      // The helm test (templates/tests/lease-held.yaml): `kubectl wait` on the six CRDs and on
      // the ClusterProvider default, each by name.
      `ClusterRole /ops-gitops-reverser-helm-test: apiextensions.k8s.io customresourcedefinitions[${CRD_NAMES.join(',')}] get,list,watch`,
      'ClusterRole /ops-gitops-reverser-helm-test: configbutler.ai clusterproviders[default] get,list,watch',
      // get: controllers/reads.ts liveAuthzReader() (the gate reads the ClusterProvider live).
      // list,watch: the clusterprovider controller and the .watches(CLUSTER_PROVIDER) mappings.
      'ClusterRole /ops-gitops-reverser: configbutler.ai clusterproviders get,list,watch',
      // list,watch: operator.ts's shared informers and each controller's .for; never a get.
      'ClusterRole /ops-gitops-reverser: configbutler.ai gitproviders,gittargets,watchrules,clusterwatchrules,commitrequests list,watch',
      // controllers/status.ts publish() -> kit applyStatusIfChanged() (server-side apply of status).
      'ClusterRole /ops-gitops-reverser: configbutler.ai clusterproviders/status,gitproviders/status,gittargets/status,watchrules/status,clusterwatchrules/status,commitrequests/status patch',
      // get: liveAuthzReader() namespaceLabels; list,watch: the metadata-only Namespace watches.
      'ClusterRole /ops-gitops-reverser: core namespaces get,list,watch',
      // The kit's EventRecorder: create, then patch a repeated Event's series.
      'ClusterRole /ops-gitops-reverser: events.k8s.io events create,patch',
      // compileReads secret() (client.find): Git credentials, known hosts, age identities,
      // kubeconfig Secrets. get only: no Secret cache, no write.
      'ClusterRole /ops-gitops-reverser-secrets: core secrets get',
      // What the streams of the local cluster may read (values source.rules).
      ...DEFAULT_SOURCE_ROWS,
      // main.ts secure metrics (kit RequestAuthorizer): who is scraping, may they GET /metrics.
      'ClusterRole /ops-gitops-reverser-metrics-auth: authentication.k8s.io tokenreviews create',
      'ClusterRole /ops-gitops-reverser-metrics-auth: authorization.k8s.io subjectaccessreviews create',
      // Not the operator's: for the user to bind to its Prometheus.
      'ClusterRole /ops-gitops-reverser-metrics-reader: /metrics get',
      // The helm test: `kubectl wait` on the Lease by name.
      `Role ops/gitops-reverser-helm-test: coordination.k8s.io leases[${LEASE}] get,list,watch`,
      // The kit's LeaderElector in the release namespace: create the Lease once, then get
      // (client.find) and update (client.replace: renew, release) that one Lease.
      'Role ops/gitops-reverser-leader-election: coordination.k8s.io leases create',
      `Role ops/gitops-reverser-leader-election: coordination.k8s.io leases[${LEASE}] get,update`,
    ]);
    assert.deepEqual(
      rows.filter((r) => / \S*(delete|deletecollection|\*)\S*$/.test(r)),
      [],
      'the operator deletes nothing in Kubernetes',
    );
    const operator = 'ServiceAccount ops/gitops-reverser';
    const helmTest = 'ServiceAccount ops/gitops-reverser-helm-test';
    assert.deepEqual(bindingRows(objects), [
      `ClusterRoleBinding /ops-gitops-reverser-helm-test -> ClusterRole ops-gitops-reverser-helm-test: ${helmTest}`,
      `ClusterRoleBinding /ops-gitops-reverser -> ClusterRole ops-gitops-reverser: ${operator}`,
      `ClusterRoleBinding /ops-gitops-reverser-secrets -> ClusterRole ops-gitops-reverser-secrets: ${operator}`,
      `ClusterRoleBinding /ops-gitops-reverser-source-reader -> ClusterRole ops-gitops-reverser-source-reader: ${operator}`,
      `ClusterRoleBinding /ops-gitops-reverser-metrics-auth -> ClusterRole ops-gitops-reverser-metrics-auth: ${operator}`,
      `RoleBinding ops/gitops-reverser-helm-test -> Role gitops-reverser-helm-test: ${helmTest}`,
      `RoleBinding ops/gitops-reverser-leader-election -> Role gitops-reverser-leader-election: ${operator}`,
    ]);

    // Insecure metrics need no review; no helm test, no identity for it; no default
    // ClusterProvider, nothing for the helm test to read about it.
    const bare = await renderChart(helm, {
      namespace: 'ops',
      values: {
        metrics: { secure: false },
        helmTest: { enabled: false },
        clusterProvider: { createDefault: false },
      },
    });
    assert.deepEqual(
      ruleRows(bare.objects).filter((r) => /metrics|helm-test/.test(r)),
      [],
    );
    assert.deepEqual(bare.tests, []);
    assert.deepEqual(
      byKind(bare.objects, 'ServiceAccount').map((o) => o.metadata.name),
      ['gitops-reverser'],
    );
    const noDefault = await renderChart(helm, {
      namespace: 'ops',
      values: { clusterProvider: { createDefault: false } },
    });
    assert.deepEqual(
      rows.filter((r) => !ruleRows(noDefault.objects).includes(r)),
      [
        'ClusterRole /ops-gitops-reverser-helm-test: configbutler.ai clusterproviders[default] get,list,watch',
      ],
    );
  });

  it('grants the streams exactly source.rules, as given, in a ClusterRole of their own', async () => {
    const sourceRows = (objects: readonly KubeObject[]): string[] =>
      ruleRows(objects).filter((r) => r.startsWith('ClusterRole /ops-gitops-reverser-source-reader:'));
    assert.deepEqual(
      sourceRows((await renderChart(helm, { namespace: 'ops' })).objects),
      DEFAULT_SOURCE_ROWS,
    );
    assert.ok(
      !DEFAULT_SOURCE_ROWS.some((r) => r.includes('secrets')),
      'Secrets are not listed cluster-wide by default',
    );

    const widened = await renderChart(helm, {
      namespace: 'ops',
      values: {
        source: {
          rules: [
            { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
            {
              apiGroups: ['rbac.authorization.k8s.io'],
              resources: ['roles', 'rolebindings'],
              verbs: ['list', 'watch'],
            },
          ],
        },
      },
    });
    assert.deepEqual(sourceRows(widened.objects), [
      'ClusterRole /ops-gitops-reverser-source-reader: core secrets list,watch',
      'ClusterRole /ops-gitops-reverser-source-reader: rbac.authorization.k8s.io roles,rolebindings list,watch',
    ]);
    // Nothing else moves when source.rules does.
    const others = (objects: readonly KubeObject[]): string[] =>
      ruleRows(objects).filter((r) => !r.startsWith('ClusterRole /ops-gitops-reverser-source-reader:'));
    assert.deepEqual(
      others(widened.objects),
      others((await renderChart(helm, { namespace: 'ops' })).objects),
    );

    const none = await renderChart(helm, { namespace: 'ops', values: { source: { rules: [] } } });
    assert.deepEqual(sourceRows(none.objects), [], 'no source rule: the streams read nothing');
  });

  it('renders the ClusterProvider default admitting every namespace by default, and none with createDefault=false', async () => {
    const [cp, ...others] = clusterProviders((await renderChart(helm, { namespace: 'ops' })).objects);
    assert.equal(others.length, 0);
    assert.ok(cp);
    assert.equal(cp.apiVersion, 'configbutler.ai/v1alpha3');
    assert.equal(cp.metadata.name, 'default');
    assert.equal(cp.metadata.namespace, undefined, 'cluster-scoped');
    assert.deepEqual(
      cp.spec,
      { accessFrom: { selector: {} } },
      "the operator's own cluster, every namespace",
    );

    // helm --set, as a user would type it.
    const { stdout } = await run(helm, [
      'template',
      'gitops-reverser',
      CHART_DIR,
      '--namespace',
      'ops',
      '--set',
      'clusterProvider.createDefault=false',
    ]);
    assert.doesNotMatch(stdout, /kind: ClusterProvider/);
    assert.deepEqual(
      clusterProviders(
        (await renderChart(helm, { namespace: 'ops', values: { clusterProvider: { createDefault: false } } }))
          .objects,
      ),
      [],
    );
  });

  it('renders clusterProvider.accessFrom as given, without the default selector left beside names', async () => {
    const accessFrom = async (value: Record<string, unknown>): Promise<unknown> =>
      clusterProviders(
        (await renderChart(helm, { namespace: 'ops', values: { clusterProvider: { accessFrom: value } } }))
          .objects,
      )[0]?.spec.accessFrom;
    assert.deepEqual(await accessFrom({ names: ['team-a', 'team-b'] }), { names: ['team-a', 'team-b'] });
    const labelled = { selector: { matchLabels: { 'example.com/mirror': 'true' } } };
    assert.deepEqual(await accessFrom(labelled), labelled);
    assert.deepEqual(await accessFrom({ names: [] }), { names: [] }, 'names: [] admits none');

    const { stdout } = await run(helm, [
      'template',
      'gitops-reverser',
      CHART_DIR,
      '--namespace',
      'ops',
      '--set',
      'clusterProvider.accessFrom.names={team-a}',
    ]);
    const [cp] = parseAllDocuments(stdout)
      .map((d) => d.toJS() as ClusterProviderObj | null)
      .filter((o): o is ClusterProviderObj => o?.kind === 'ClusterProvider');
    assert.deepEqual(cp?.spec, { accessFrom: { names: ['team-a'] } });
  });

  it('runs the operator with one replica by default, probes on /healthz and /readyz (readiness every 2 s), hardened, its clones in an emptyDir', async () => {
    const { objects } = await renderChart(helm, { namespace: 'ops' });
    const { name, namespace, replicas, pod, container } = deployment(objects);
    assert.equal(name, 'gitops-reverser');
    assert.equal(namespace, 'ops');
    assert.equal(replicas, 1);
    assert.equal(pod.serviceAccountName, 'gitops-reverser');
    assert.equal(
      container.image,
      'ghcr.io/kube-operators-ts/gitops-reverser:0.1.0',
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
    assert.deepEqual(container.volumeMounts, [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'work', mountPath: '/var/lib/gitops-reverser' },
    ]);
    assert.deepEqual(pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'work', emptyDir: {} },
    ]);
    assert.deepEqual(container.livenessProbe, { httpGet: { path: '/healthz', port: 'health' } });
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

    const set = deployment(
      (
        await renderChart(helm, {
          namespace: 'ops',
          values: {
            replicas: 2,
            metrics: { secure: false, port: 8080 },
            workDir: { emptyDir: { sizeLimit: '2Gi' } },
            image: { repository: 'registry.example/gitops-reverser', tag: 'dev' },
          },
        })
      ).objects,
    );
    assert.equal(set.replicas, 2, 'two replicas: one leads, one waits');
    assert.deepEqual(
      set.container.ports,
      [{ name: 'health', containerPort: 8081 }],
      'insecure /metrics listens on loopback: no port to declare',
    );
    assert.deepEqual(set.pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'work', emptyDir: { sizeLimit: '2Gi' } },
    ]);
    assert.equal(set.container.image, 'registry.example/gitops-reverser:dev');
  });

  it('passes its values to the operator as the environment main.ts reads, leader election in the release namespace', async () => {
    const defaults = envOf(deployment((await renderChart(helm, { namespace: 'ops' })).objects).container);
    assert.deepEqual(defaults, {
      // The operator's namespace (kubeconfig Secrets) and leader election in it.
      POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      GITOPS_REVERSER_LEADER_ELECTION_NAMESPACE: '$(POD_NAMESPACE)',
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      GITOPS_REVERSER_WORK_DIR: '/var/lib/gitops-reverser',
      GITOPS_REVERSER_HEALTH_PORT: '8081',
      GITOPS_REVERSER_METRICS_PORT: '8443',
      GITOPS_REVERSER_METRICS_SECURE: 'true',
      GITOPS_REVERSER_RESYNC: '1m',
      TMPDIR: '/tmp',
    });
    // Each variable the chart sets is one the operator process reads: its --help names each
    // variable beside its flag (the kit reads them as the flags declare).
    const help = spawnSync(process.execPath, [join(CHART_DIR, '..', 'src', 'main.ts'), '--help'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(help.status, 0, help.stderr);
    for (const name of Object.keys(defaults).filter(
      (n) => n.startsWith('GITOPS_REVERSER_') || n === 'POD_NAMESPACE',
    )) {
      assert.match(help.stdout, new RegExp(`[(, ]${name}[)=,]`), `--help names ${name}`);
    }

    const set = envOf(
      deployment(
        (
          await renderChart(helm, {
            namespace: 'ops',
            values: { healthPort: 9081, metrics: { port: 9443, secure: false }, resync: '30s' },
          })
        ).objects,
      ).container,
    );
    assert.deepEqual(
      [
        set.GITOPS_REVERSER_HEALTH_PORT,
        set.GITOPS_REVERSER_METRICS_PORT,
        set.GITOPS_REVERSER_METRICS_SECURE,
        set.GITOPS_REVERSER_RESYNC,
      ],
      ['9081', '9443', 'false', '30s'],
    );
  });

  it('has a helm test that waits for the CRDs, then a replica holding the Lease and the ClusterProvider default Ready', async () => {
    const [pod] = (await renderChart(helm, { namespace: 'ops' })).tests;
    assert.ok(pod);
    assert.equal(
      (pod.spec as { serviceAccountName: string }).serviceAccountName,
      'gitops-reverser-helm-test',
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
    const providerReady = [
      'wait',
      '--for=condition=Ready',
      'clusterproviders.configbutler.ai/default',
      '--timeout=120s',
    ];
    assert.deepEqual(helmTestCommands(pod), [crdsServed, leaseHeld, providerReady]);

    const [without] = (
      await renderChart(helm, { namespace: 'ops', values: { clusterProvider: { createDefault: false } } })
    ).tests;
    assert.ok(without);
    assert.deepEqual(helmTestCommands(without), [crdsServed, leaseHeld]);
  });
});
