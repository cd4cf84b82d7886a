/**
 * The chart's RBAC is enough: its objects, rendered by helm, applied to a real apiserver,
 * and terdut-operator run in this process as the chart's ServiceAccount (impersonated)
 * with leader election on and Zalando's CRD served, against the terdut-server STAND-IN
 * (ours, contract-faithful; the real server is not public), through every path that
 * writes: the chart's own TerdutServer (bootstrap, credentials Secret, Deployment,
 * Service), a same-namespace team, a cross-namespace team admitted by a Selector (its
 * mirror Secret written into its namespace), an escalation rule, a dead man's switch, an
 * alert source (its webhook Secret), then every deletion (finalizers, the mirror's
 * delete), the Events (a repeated one patched), the Lease, a secure scrape of /metrics (TokenReview,
 * SubjectAccessReview). Not one request is refused (the client's own request counter, by
 * status code).
 *
 * The plane is private because it runs the OwnerReferencesPermissionEnforcement admission
 * plugin, as hardened clusters do: owner references with blockOwnerDeletion need `update`
 * on the owner's `finalizers`, and only that plugin checks it. The helm test's commands
 * are run with the real kubectl as the helm test's ServiceAccount: they pass while a
 * replica leads and the server is Ready, and the Lease check fails once it is released.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { type Condition, type GroupVersionKind, KubeClient, type KubeObject } from '@operators/kit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { TERDUT_ALERT_SOURCE } from '../src/api/terdut-alert-source.ts';
import { TERDUT_DEADMAN_SWITCH } from '../src/api/terdut-deadman-switch.ts';
import { TERDUT_ESCALATION_RULE } from '../src/api/terdut-escalation-rule.ts';
import { TERDUT_SERVER } from '../src/api/terdut-server.ts';
import { TERDUT_TEAM } from '../src/api/terdut-team.ts';
import { createOperator, LEASE_NAME } from '../src/operator.ts';
import { type StandIn, startStandIn } from '../src/server/stand-in.ts';
import {
  applyAll,
  helmTestCommands,
  httpsGet,
  kubectlAs,
  recordRbacRefusals,
  renderChart,
} from './chart-support.ts';

let env: TestEnv;
let helm: string;
let kubectl: string;
let standIn: StandIn;

before(async () => {
  env = await privateTestEnv({
    apiserverFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  });
  // Zalando's postgresql served: the operator then runs its informers on postgresqls and
  // on Zalando's Secrets (label application=spilo), cluster-wide, as in a cluster with it.
  await env.installThirdParty('zalando');
  ({ helm, kubectl } = await resolveBinaries(() => {}));
  standIn = await startStandIn();
});

after(async () => {
  await standIn?.close();
  await env?.close();
});

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;
const CONSENT = 'terdut.ryuvia.com/allowed-server';

type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
};
type EventObj = KubeObject & {
  reason?: string;
  note?: string;
  regarding?: { kind?: string; name?: string };
  series?: { count?: number };
};

/** Requests the client sent, by status code, from its `rest_client_requests_total`. */
async function requestsAnswered(registry: Registry, code: string): Promise<number> {
  const metric = await registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.code === code).reduce((sum, v) => sum + v.value, 0);
}

/** kubectl as `user` on the plane the chart is installed on. */
const kubectlAsUser = (user: string, args: readonly string[]) =>
  kubectlAs(kubectl, env.kubeconfigPath, user, args);

describe("the chart's RBAC on a real apiserver", () => {
  it('is enough for every write terdut-operator makes, run as the chart ServiceAccount with leader election, against the terdut-server stand-in (contract-faithful, not the real server): no request refused', async (t) => {
    const release = await env.namespace(t, 'terdut');
    const consumer = await env.namespace(t, 'terdut-consumer');
    await env.admin.patch({ apiVersion: 'v1', kind: 'Namespace' }, consumer, undefined, {
      type: 'merge',
      body: { metadata: { labels: { [CONSENT]: release } } },
    });
    // The database password of the chart's server (bring-your-own DSN): the operator reads it.
    await env.admin.create({
      ...SECRET,
      metadata: { name: 'terdut-postgres', namespace: release },
      stringData: { password: 'not-a-real-password' },
    } as KubeObject);

    // The chart with its TerdutServer: "helm install and get a server".
    const { objects, crds, tests } = await renderChart(helm, {
      namespace: release,
      values: {
        server: {
          enabled: true,
          spec: {
            database: {
              dsn: 'postgres://terdut@terdut-postgres:5432/terdut?sslmode=require',
              passwordSecretRef: { name: 'terdut-postgres', key: 'password' },
            },
            allowedTeams: {
              namespaces: { from: 'Selector', selector: { matchLabels: { [CONSENT]: release } } },
            },
          },
        },
      },
    });
    await env.installCrds(crds);
    await applyAll(env.admin, t, objects);
    assert.ok(objects.some((o) => o.kind === 'TerdutServer'));

    // The operator's client is the chart's ServiceAccount, built on a transport of its own
    // so that its requests are counted by status code.
    const registry = new Registry();
    const admin = await KubeClient.load(env.kubeconfigPath, { registry });
    t.after(() => admin.transport.close());
    const client = admin.impersonate({ user: `system:serviceaccount:${release}:terdut-operator` });
    // Every refused request, to name it if there is one (the metric counts watches too).
    const refused: string[] = [];
    recordRbacRefusals(client, refused);
    const logs: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
        done();
      },
    });
    const { manager } = createOperator({
      client,
      zalando: true,
      leaderElection: { namespace: release },
      healthPort: 0,
      metrics: { port: 0, host: '127.0.0.1', secure: {} },
      registry,
      logger: pino({ level: process.env.TERDUT_TEST_LOG ?? 'debug' }, stream),
      resyncMs: 3_000,
      apiTimeoutMs: 2_000,
      // The stand-in instead of the Service's cluster DNS name (main.ts --server-url).
      serverUrl: () => standIn.url,
    });
    await manager.start();
    let stopped = false;
    t.after(async () => {
      if (!stopped) await manager.stop();
    });

    /** The symptom, if the operator misbehaves: the object as it stands and the log's tail. */
    const symptom = async (gvk: GroupVersionKind, ns: string, name: string): Promise<string> => {
      const o = await env.admin.find<Obj>(gvk, name, ns).catch((e: unknown) => String(e));
      const tail = logs.filter((l) => /"level":(40|50|60)/.test(l)).slice(-20);
      return `\n${gvk.kind} ${ns}/${name}: ${JSON.stringify(
        typeof o === 'string' ? o : { metadata: o?.metadata, status: o?.status },
        null,
        1,
      )}\nwarnings and errors logged (last 20):\n${tail.join('\n')}\nrefused: ${refused.join('\n')}`;
    };
    const ready = async (gvk: GroupVersionKind, ns: string, name: string): Promise<Obj> => {
      try {
        return await eventually(
          `${gvk.kind} ${ns}/${name} Ready`,
          async () => {
            const o = await env.admin.get<Obj>(gvk, name, ns);
            const c = o.status?.conditions?.find((x) => x.type === 'Ready');
            return c?.status === 'True' && o.status?.observedGeneration === o.metadata.generation
              ? o
              : undefined;
          },
          30_000,
        );
      } catch (err) {
        throw new Error(`${String(err)}${await symptom(gvk, ns, name)}`);
      }
    };
    const gone = async (gvk: GroupVersionKind, ns: string, name: string): Promise<void> => {
      try {
        await eventually(
          `${gvk.kind} ${ns}/${name} deleted`,
          async () => ((await env.admin.find(gvk, name, ns)) ? undefined : true),
          30_000,
        );
      } catch (err) {
        throw new Error(`${String(err)}${await symptom(gvk, ns, name)}`);
      }
    };
    const create = (gvk: GroupVersionKind, ns: string, name: string, spec: Record<string, unknown>) =>
      env.admin.create({ ...gvk, metadata: { name, namespace: ns }, spec } as Obj);

    await eventually('a replica holds the Lease', async () => {
      const lease = await env.admin.find<KubeObject & { spec?: { holderIdentity?: string } }>(
        { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
        LEASE_NAME,
        release,
      );
      return lease?.spec?.holderIdentity ? true : undefined;
    });
    // The probes the chart points the kubelet at answer.
    const probe = manager.healthProbeEndpoint;
    assert.ok(probe);
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`http://${probe.host}:${probe.port}${path}`);
      assert.equal(res.status, 200, `${path}: ${await res.text()}`);
    }

    // The chart's TerdutServer: bootstrap of the fresh stand-in, the credentials Secret
    // (owned, finalizer), the Deployment and Service (owned).
    const server = await ready(TERDUT_SERVER, release, 'terdut');
    assert.deepEqual(server.status?.operatorCredentialsSecretRef, { name: 'terdut-operator-credentials' });
    for (const [gvk, name] of [
      [SECRET, 'terdut-operator-credentials'],
      [{ apiVersion: 'apps/v1', kind: 'Deployment' }, 'terdut'],
      [{ apiVersion: 'v1', kind: 'Service' }, 'terdut'],
    ] as const) {
      const o = await env.admin.get(gvk, name, release);
      assert.equal(o.metadata.ownerReferences?.[0]?.uid, server.metadata.uid, `${gvk.kind} ${name} owned`);
      assert.equal(o.metadata.ownerReferences?.[0]?.blockOwnerDeletion, true);
    }

    // A team beside the server, and a team in the consenting namespace (a mirror there).
    // The server refuses the first two creates of a team: the same Warning twice is one
    // Event whose series the recorder patches (at the latest when the manager stops).
    // The second team is created only once the first is Ready: both POST /api/teams, and
    // on a loaded machine its first create could otherwise take the second refusal.
    standIn.failNext(2, { method: 'POST', path: /^\/api\/teams$/ });
    await create(TERDUT_TEAM, release, 'sre', { serverRef: { name: 'terdut' }, displayName: 'SRE' });
    await ready(TERDUT_TEAM, release, 'sre');
    await create(TERDUT_TEAM, consumer, 'platform', {
      serverRef: { name: 'terdut', namespace: release },
      displayName: 'Platform',
    });
    await ready(TERDUT_TEAM, consumer, 'platform');
    const mirror = `terdut.${release}-terdut-credentials`;
    assert.ok(
      await env.admin.find(SECRET, mirror, consumer),
      'the mirror, written into the consuming namespace',
    );

    // One of each child kind, on the team beside the server.
    await create(TERDUT_ESCALATION_RULE, release, 'sre-escalation', {
      teamRef: { name: 'sre' },
      repeatCount: 1,
      levels: [{ timeout: '5m', targets: [{ kind: 'oncall' }] }],
    });
    await create(TERDUT_DEADMAN_SWITCH, release, 'watchdog', {
      teamRef: { name: 'sre' },
      name: 'watchdog',
      matcher: 'alertname=Watchdog',
      timeout: '15m',
      severity: 'critical',
    });
    await create(TERDUT_ALERT_SOURCE, release, 'alertmanager', {
      teamRef: { name: 'sre' },
      kind: 'alertmanager',
      name: 'prod-alertmanager',
    });
    await ready(TERDUT_ESCALATION_RULE, release, 'sre-escalation');
    await ready(TERDUT_DEADMAN_SWITCH, release, 'watchdog');
    const source = await ready(TERDUT_ALERT_SOURCE, release, 'alertmanager');
    const webhook = await env.admin.get(SECRET, 'alertmanager-terdut-webhook', release);
    assert.equal(
      webhook.metadata.ownerReferences?.[0]?.uid,
      source.metadata.uid,
      'the webhook Secret, owned',
    );

    // The helm test, as its own ServiceAccount: passes while a replica leads and the server is Ready.
    const [pod, ...others] = tests;
    assert.ok(pod, 'a helm test pod');
    assert.equal(others.length, 0);
    const helmTestUser = `system:serviceaccount:${release}:terdut-operator-helm-test`;
    const commands = helmTestCommands(pod);
    assert.equal(commands.length, 3, 'the CRDs served, the Lease held, the server Ready');
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
    await applyAll(env.admin, t, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${release}-scraper` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: `${release}-terdut-operator-metrics-reader`,
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

    // Deletions, children first: every finalizer lifted by the operator. The cross-namespace
    // team's deletion makes the mirror go; the server's, its credentials Secret's finalizer.
    for (const [gvk, name] of [
      [TERDUT_ALERT_SOURCE, 'alertmanager'],
      [TERDUT_DEADMAN_SWITCH, 'watchdog'],
      [TERDUT_ESCALATION_RULE, 'sre-escalation'],
      [TERDUT_TEAM, 'sre'],
    ] as const) {
      await env.admin.delete(gvk, name, release);
      await gone(gvk, release, name);
    }
    await env.admin.delete(TERDUT_TEAM, 'platform', consumer);
    await gone(TERDUT_TEAM, consumer, 'platform');
    await gone(SECRET, consumer, mirror);
    await env.admin.delete(TERDUT_SERVER, 'terdut', release);
    await gone(TERDUT_SERVER, release, 'terdut');
    const credentials = await env.admin.find(SECRET, 'terdut-operator-credentials', release);
    assert.deepEqual(
      credentials?.metadata.finalizers ?? [],
      [],
      'the credentials Secret is left to the garbage collector, without the operator’s finalizer',
    );
    assert.deepEqual(standIn.snapshot().teams, [], 'every team deleted on the server');

    // The Events the operator wrote (events.k8s.io), in each object's namespace.
    const reasons = async (ns: string): Promise<Set<string>> =>
      new Set(
        (await env.admin.listAll<EventObj>(EVENT, { namespace: ns })).items
          .filter((e) => (e as { reportingController?: string }).reportingController !== undefined)
          .map((e) => `${e.regarding?.kind}/${e.regarding?.name} ${e.reason}`),
      );
    const inRelease = await reasons(release);
    for (const expected of [
      'TerdutServer/terdut Bootstrapped',
      'TerdutServer/terdut CredentialsMinted',
      'TerdutTeam/sre Created',
      'TerdutTeam/sre Deleted',
      'TerdutDeadmanSwitch/watchdog Created',
      'TerdutAlertSource/alertmanager Created',
    ]) {
      assert.ok(inRelease.has(expected), `${expected} in ${[...inRelease].join(', ')}`);
    }
    const inConsumer = await reasons(consumer);
    for (const expected of ['TerdutTeam/platform Created', 'TerdutTeam/platform Deleted']) {
      assert.ok(inConsumer.has(expected), `${expected} in ${[...inConsumer].join(', ')}`);
    }

    // The helm test's Lease check fails once the Lease is released (checked once: --timeout=0s).
    // Stopping also writes the recorder's pending series (a PATCH of the repeated Event).
    await manager.stop();
    stopped = true;
    const leaseCheck = (commands[1] ?? []).map((a) => (a.startsWith('--timeout=') ? '--timeout=0s' : a));
    const released = await kubectlAsUser(helmTestUser, leaseCheck);
    assert.notEqual(released.code, 0, `a released Lease fails the helm test: ${released.output}`);
    assert.doesNotMatch(released.output, /forbidden/i);
    const repeated = (await env.admin.listAll<EventObj>(EVENT, { namespace: release })).items.find(
      (e) => e.regarding?.name === 'sre' && e.reason === 'SyncFailed',
    );
    assert.ok(
      (repeated?.series?.count ?? 0) >= 2,
      `the refused creates: one SyncFailed Event, its series patched: ${JSON.stringify(repeated)}`,
    );

    assert.ok((await requestsAnswered(registry, '200')) > 0, 'the operator made requests');
    assert.deepEqual(refused, [], 'no request was refused');
    assert.equal(await requestsAnswered(registry, '403'), 0, 'no request was refused (watches included)');
  });
});
