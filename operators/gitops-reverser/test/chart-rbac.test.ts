/**
 * The chart's RBAC is enough, and its source rules are what bounds a mirror: the chart
 * installed by the real `helm install` into a control plane of the test's own, then
 * gitops-reverser run in this process as the chart's ServiceAccount (impersonated), with
 * leader election on, mirroring into a `file://` bare repository (real git) through the
 * chart's ClusterProvider `default`. Every kind is reconciled and its status written (a
 * WatchRule and a ClusterWatchRule streaming, a CommitRequest answered, Events recorded, the
 * Lease held, a secure scrape of /metrics through TokenReview and SubjectAccessReview), and
 * not one request is refused (the client's own request counter, by status code). Then a
 * WatchRule the gate admits but the chart's source rules do not cover: its GitTarget says
 * StreamsBlocked with the apiserver's 403. The helm test's commands are run with the real
 * kubectl as the helm test's ServiceAccount: they pass while a replica leads, and the Lease
 * check fails once it is released.
 *
 * The plane is private because `default` is a cluster-wide name the chart owns, and because
 * it runs the OwnerReferencesPermissionEnforcement admission plugin, as hardened clusters do
 * (the operator sets no owner reference; the plugin would refuse one it had no right to).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { type Condition, type GroupVersionKind, KubeClient, type KubeObject } from '@operators/kit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import { CLUSTER_PROVIDER } from '../src/api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE } from '../src/api/cluster-watch-rule.ts';
import { COMMIT_REQUEST } from '../src/api/commit-request.ts';
import { GIT_PROVIDER } from '../src/api/git-provider.ts';
import { GIT_TARGET } from '../src/api/git-target.ts';
import { WATCH_RULE } from '../src/api/watch-rule.ts';
import { createOperator, LEASE_NAME, type Operator } from '../src/operator.ts';
import {
  CHART_DIR,
  helmTestCommands,
  httpsGet,
  kubectlAs,
  recordRbacRefusals,
  renderChart,
  run,
} from './chart-support.ts';
import { initBare, treeOf } from './support/git-fixtures.ts';

/** The release's name and the operator's ServiceAccount, as the chart names it. */
const RELEASE = 'gitops-reverser';
const SERVICE_ACCOUNT = 'gitops-reverser';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
/** A remote cluster's kubeconfig with inline credentials only (what the operator accepts). */
const REMOTE_KUBECONFIG = `apiVersion: v1
kind: Config
current-context: remote
contexts: [{ name: remote, context: { cluster: remote, user: mirror } }]
clusters: [{ name: remote, cluster: { server: 'https://remote.example.invalid:6443' } }]
users: [{ name: mirror, user: { token: not-a-real-token } }]
`;
/** How long the operator gets for anything the test waits on (first snapshots, pushes). */
const WAIT_MS = 60_000;

type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
};
type EventObj = KubeObject & {
  reason?: string;
  reportingController?: string;
  regarding?: { kind?: string; name?: string };
};

let env: TestEnv;
let helm: string;
let kubectl: string;
let scratch: string;
/** The release namespace: the operator's namespace, its Lease. */
let release: string;
let operator: Operator;
let stopped = false;
let registry: Registry;
let operatorClient: KubeClient;
/** Every request refused (403) to the operator, with what it asked. */
const refused: string[] = [];
const logs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];

/** Requests the client sent, by status code, from its `rest_client_requests_total` (watches included). */
async function requestsAnswered(code: string): Promise<number> {
  const metric = await registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.code === code).reduce((sum, v) => sum + v.value, 0);
}

/** kubectl as `user` on the plane the chart is installed on. */
const kubectlAsUser = (user: string, args: readonly string[]) =>
  kubectlAs(kubectl, env.kubeconfigPath, user, args);

/** The symptom, if the operator misbehaves: the object as it stands and the log's warnings. */
async function symptom(gvk: GroupVersionKind, ns: string | undefined, name: string): Promise<string> {
  const o = await env.admin.find<Obj>(gvk, name, ns).catch((e: unknown) => String(e));
  const tail = logs.filter((l) => /"level":(40|50|60)/.test(l)).slice(-20);
  return `\n${gvk.kind} ${ns ?? ''}/${name}: ${JSON.stringify(
    typeof o === 'string' ? o : { status: o?.status },
    null,
    1,
  )}\nwarnings and errors logged (last 20):\n${tail.join('\n')}\nrefused: ${refused.join('\n')}`;
}

/** Waits for condition `type` to be `status` (and `reason`), then returns the object. */
async function condition(
  gvk: GroupVersionKind,
  ns: string | undefined,
  name: string,
  type: string,
  status: 'True' | 'False',
  reason?: string,
): Promise<Obj> {
  try {
    return await eventually(
      `${gvk.kind} ${ns ?? ''}/${name} ${type}=${status}${reason ? ` (${reason})` : ''}`,
      async () => {
        const o = await env.admin.get<Obj>(gvk, name, ns);
        const c = o.status?.conditions?.find((x) => x.type === type);
        return c?.status === status && (!reason || c.reason === reason) ? o : undefined;
      },
      WAIT_MS,
    );
  } catch (err) {
    throw new Error(`${String(err)}${await symptom(gvk, ns, name)}`);
  }
}

/** Waits for `path` on `main` of the bare repository; returns its text. */
async function fileInRepo(bare: string, path: string): Promise<string> {
  return eventually(`${path} on main of ${bare}`, async () => (await treeOf(bare)).get(path), WAIT_MS).catch(
    async (err: unknown) => {
      throw new Error(
        `${String(err)}; files: ${[...(await treeOf(bare)).keys()].join(', ')}\n${logs.slice(-10).join('\n')}`,
      );
    },
  );
}

const create = (gvk: GroupVersionKind, ns: string | undefined, name: string, spec: Record<string, unknown>) =>
  env.admin.create({ ...gvk, metadata: { name, ...(ns ? { namespace: ns } : {}) }, spec } as Obj);

before(async () => {
  env = await privateTestEnv({
    apiserverFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  });
  ({ helm, kubectl } = await resolveBinaries(() => {}));
  scratch = await mkdtemp(join(tmpdir(), 'gitops-reverser-chart-'));
  release = await env.namespace(
    { after: (fn: () => Promise<void>) => void cleanups.push(fn) },
    'gitops-reverser',
  );

  // The chart, installed by helm itself: CRDs from crds/ first, then the templates.
  await run(
    helm,
    ['install', RELEASE, CHART_DIR, '--namespace', release, '--kubeconfig', env.kubeconfigPath],
    {
      env: {
        ...process.env,
        HELM_CACHE_HOME: join(scratch, 'helm-cache'),
        HELM_CONFIG_HOME: join(scratch, 'helm-config'),
        HELM_DATA_HOME: join(scratch, 'helm-data'),
      },
    },
  );

  // The operator's client is the chart's ServiceAccount, built on a transport of its own so
  // that its requests are counted by status code.
  registry = new Registry();
  const base = await KubeClient.load(env.kubeconfigPath, { registry });
  cleanups.push(() => base.transport.close());
  operatorClient = base.impersonate({ user: `system:serviceaccount:${release}:${SERVICE_ACCOUNT}` });
  recordRbacRefusals(operatorClient, refused);
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
      done();
    },
  });
  operator = createOperator({
    client: operatorClient,
    operatorNamespace: release,
    workDir: await mkdtemp(join(scratch, 'work-')),
    allowedProtocols: ['file'],
    leaderElection: { namespace: release },
    healthPort: 0,
    metrics: { port: 0, host: '127.0.0.1', secure: {} },
    registry,
    resyncMs: 3_000,
    retry: { baseMs: 200, maxMs: 2_000 },
    logger: pino({ level: process.env.GITOPS_REVERSER_TEST_LOG ?? 'debug' }, stream),
  });
  await operator.manager.start();
});

after(async () => {
  if (operator && !stopped) await operator.manager.stop();
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
  await env?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("the chart's RBAC on a real apiserver, the operator run as the chart's ServiceAccount", () => {
  it('installs the ClusterProvider default, admitting every namespace', async () => {
    const cp = await env.admin.get<Obj>(CLUSTER_PROVIDER, 'default');
    assert.deepEqual(cp.spec?.accessFrom, { selector: {} });
    await condition(CLUSTER_PROVIDER, undefined, 'default', 'Ready', 'True', 'Ready');
  });

  it('is enough to mirror ConfigMaps into a file:// repository end to end, through the ClusterProvider default: no request refused', async (t) => {
    const team = await env.namespace(t, 'team');
    const bare = await initBare(join(scratch, 'remote.git'));
    await env.admin.create({
      ...CM,
      metadata: { name: 'settings', namespace: team },
      data: { color: 'blue' },
    } as KubeObject);

    // A WatchRule before its GitTarget: a Warning Event (the recorder's create).
    await create(WATCH_RULE, team, 'configmaps', {
      targetRef: { name: 'mirror' },
      rules: [{ apiGroups: [''], resources: ['configmaps'] }],
    });
    await condition(WATCH_RULE, team, 'configmaps', 'Ready', 'False', 'GitTargetNotFound');

    // Credentials in the team's namespace: a file:// remote needs none, but the GitProvider is
    // Ready only once its Secret is read (the cross-namespace Secret get).
    await env.admin.create({
      ...SECRET,
      metadata: { name: 'repo-credentials', namespace: team },
      stringData: { username: 'mirror', password: 'not-a-real-password' },
    } as KubeObject);
    await create(GIT_PROVIDER, team, 'repo', {
      url: `file://${bare}`,
      allowedBranches: ['*'],
      secretRef: { name: 'repo-credentials' },
    });
    // No clusterProviderRef: the chart's `default`.
    await create(GIT_TARGET, team, 'mirror', {
      providerRef: { name: 'repo' },
      branch: 'main',
      path: 'live',
      commit: { window: '0s' },
    });
    // Cluster-scoped objects into the same target: the team's own Namespace.
    await create(CLUSTER_WATCH_RULE, undefined, `namespace-of-${team}`, {
      targetRef: { name: 'mirror', namespace: team },
      rules: [{ apiGroups: [''], resources: ['namespaces'] }],
    });

    const file = parse(await fileInRepo(bare, `live/${team}/configmaps/settings.yaml`)) as KubeObject & {
      data?: unknown;
    };
    assert.equal(file.metadata.name, 'settings');
    assert.deepEqual(file.data, { color: 'blue' });
    await fileInRepo(bare, `live/_cluster/namespaces/${team}.yaml`);
    // A change after the first snapshot travels too (the watch, not only the list).
    await env.admin.patch(CM, 'settings', team, { type: 'merge', body: { data: { color: 'green' } } });
    await eventually(
      'the update in the repository',
      async () => {
        const text = (await treeOf(bare)).get(`live/${team}/configmaps/settings.yaml`);
        return text && (parse(text) as { data?: { color?: string } }).data?.color === 'green'
          ? true
          : undefined;
      },
      WAIT_MS,
    );

    // Every kind's status written.
    const target = await condition(GIT_TARGET, team, 'mirror', 'Ready', 'True', 'Mirroring');
    assert.equal(target.status?.conditions?.find((c) => c.type === 'StreamsRunning')?.status, 'True');
    await condition(GIT_PROVIDER, team, 'repo', 'Ready', 'True');
    await condition(WATCH_RULE, team, 'configmaps', 'Ready', 'True');
    await condition(CLUSTER_WATCH_RULE, undefined, `namespace-of-${team}`, 'Ready', 'True');
    await create(COMMIT_REQUEST, team, 'now', { targetRef: { name: 'mirror' } });
    // A remote ClusterProvider: its kubeconfig Secret, read in the operator's namespace. Ready
    // once read and checked (nothing connects to the remote until a GitTarget streams from it).
    await env.admin.create({
      ...SECRET,
      metadata: { name: 'remote-kubeconfig', namespace: release },
      stringData: { value: REMOTE_KUBECONFIG },
    } as KubeObject);
    await create(CLUSTER_PROVIDER, undefined, 'remote', {
      kubeConfig: { secretRef: { name: 'remote-kubeconfig' } },
    });
    await condition(CLUSTER_PROVIDER, undefined, 'remote', 'Ready', 'True', 'Ready');
    await condition(COMMIT_REQUEST, team, 'now', 'Ready', 'True');

    // The Event the operator wrote (events.k8s.io) in the object's namespace.
    await eventually('the GitTargetNotFound Event', async () =>
      (await env.admin.listAll<EventObj>(EVENT, { namespace: team })).items.find(
        (e) =>
          e.reportingController !== undefined &&
          e.regarding?.kind === 'WatchRule' &&
          e.regarding.name === 'configmaps' &&
          e.reason === 'GitTargetNotFound',
      ),
    );

    // Leader election through the chart's Role, and the probes the chart points the kubelet at.
    await eventually('a replica holds the Lease', async () => {
      const lease = await env.admin.find<KubeObject & { spec?: { holderIdentity?: string } }>(
        { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
        LEASE_NAME,
        release,
      );
      return lease?.spec?.holderIdentity ? true : undefined;
    });
    const probe = operator.manager.healthProbeEndpoint;
    assert.ok(probe);
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`http://${probe.host}:${probe.port}${path}`);
      assert.equal(res.status, 200, `${path}: ${await res.text()}`);
    }

    // The helm test, as its own ServiceAccount: passes while a replica leads.
    const [pod] = (await renderChart(helm, { namespace: release, release: RELEASE })).tests;
    assert.ok(pod, 'a helm test pod');
    const helmTestUser = `system:serviceaccount:${release}:gitops-reverser-helm-test`;
    const commands = helmTestCommands(pod);
    assert.equal(commands.length, 3, 'the CRDs served, the Lease held, the ClusterProvider default Ready');
    for (const args of commands) {
      const { code, output } = await kubectlAsUser(helmTestUser, args);
      assert.equal(code, 0, `kubectl ${args.join(' ')}: ${output}`);
    }

    // Secure metrics: a scraper bound to the chart's metrics-reader ClusterRole gets 200,
    // after the operator's TokenReview and SubjectAccessReview.
    await env.admin.create({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'scraper', namespace: release },
    });
    await env.admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${release}-scraper` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: `${release}-gitops-reverser-metrics-reader`,
      },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: release }],
    } as KubeObject);
    const token = await env.admin.transport.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${release}/serviceaccounts/scraper/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    const scrape = await eventually(
      'a 200 scrape (the RBAC binding takes a moment to be seen)',
      async () => {
        const r = await httpsGet(operator.manager.metricsEndpoint?.port ?? 0, '/metrics', token.status.token);
        return r.status === 200 ? r : undefined;
      },
      10_000,
    );
    assert.match(scrape.body, /^gitops_reverser_commits_total\{[^}]*\} [1-9]/m);

    assert.ok((await requestsAnswered('200')) > 0, 'the operator made requests');
    assert.deepEqual(refused, [], 'no request was refused');
    assert.equal(await requestsAnswered('403'), 0, 'no request was refused (watches included)');
  });

  it('bounds what a rule the gate admits can read: roles, not in source.rules, give StreamsBlocked with the 403', async (t) => {
    const team = await env.namespace(t, 'team-rbac');
    const bare = await initBare(join(scratch, 'rbac.git'));
    await env.admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: team },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    } as KubeObject);
    const chartRules = (await renderChart(helm, { namespace: release, release: RELEASE })).objects.find(
      (o) => o.metadata.name === `${release}-gitops-reverser-source-reader`,
    ) as (KubeObject & { rules: { apiGroups: string[] }[] }) | undefined;
    assert.ok(chartRules);
    assert.ok(
      !chartRules.rules.some((r) => r.apiGroups.includes('rbac.authorization.k8s.io')),
      'the chart grants no read of rbac.authorization.k8s.io by default',
    );

    await create(GIT_PROVIDER, team, 'repo', { url: `file://${bare}`, allowedBranches: ['*'] });
    await create(GIT_TARGET, team, 'rbac', {
      providerRef: { name: 'repo' },
      branch: 'main',
      path: 'rbac',
      commit: { window: '0s' },
    });
    await create(WATCH_RULE, team, 'roles', {
      targetRef: { name: 'rbac' },
      rules: [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'] }],
    });

    // The gate admits it: the WatchRule is Ready, its target Validated.
    await condition(WATCH_RULE, team, 'roles', 'Ready', 'True');
    const target = await condition(GIT_TARGET, team, 'rbac', 'StreamsRunning', 'False', 'StreamsBlocked');
    assert.equal(target.status?.conditions?.find((c) => c.type === 'Validated')?.status, 'True');
    const message = target.status?.conditions?.find((c) => c.type === 'StreamsRunning')?.message ?? '';
    assert.match(message, /\(403\)/, message);
    assert.match(
      message,
      new RegExp(`system:serviceaccount:${release}:${SERVICE_ACCOUNT}.*cannot (list|watch) resource "roles"`),
      message,
    );
    assert.deepEqual(
      refused.filter((r) => !r.includes('/roles')),
      [],
      'the only requests refused are the reads of roles',
    );
    assert.equal((await treeOf(bare)).size, 0, 'nothing of the roles reached the repository');
  });

  it('has a helm test whose Lease check fails once the operator stops (the Lease released), without being forbidden', async () => {
    const [pod] = (await renderChart(helm, { namespace: release, release: RELEASE })).tests;
    assert.ok(pod);
    const leaseCheck = (helmTestCommands(pod)[1] ?? []).map((a) =>
      a.startsWith('--timeout=') ? '--timeout=0s' : a,
    );
    assert.ok(leaseCheck.includes(`leases.coordination.k8s.io/${LEASE_NAME}`));
    await operator.manager.stop();
    stopped = true;
    const released = await kubectlAsUser(
      `system:serviceaccount:${release}:gitops-reverser-helm-test`,
      leaseCheck,
    );
    assert.notEqual(released.code, 0, `a released Lease fails the helm test: ${released.output}`);
    assert.doesNotMatch(released.output, /forbidden/i);
  });
});
