/**
 * terdut-operator installed from its chart on the node, with the chart's own TerdutServer
 * ("helm install and get a server"). terdut-server is not public and no image of it can
 * run here, so the server is the terdut-server stand-in (operators/terdut/src/server,
 * contract-faithful, not the real server), run AS A POD from the operator's own image (it
 * holds the operator's workspace sources and node: the pod overrides the entrypoint with
 * the stand-in's main.ts). The pod carries the selector labels of the Service the
 * operator makes for the TerdutServer, whose own Deployment is scaled to 0 (its image is
 * the real server's, which this machine cannot pull): so the operator, in its pod, reaches
 * the stand-in exactly as it would the real server, at `http://oncall.<ns>.svc:8080`, a
 * name the node's CoreDNS resolves, through kube-proxy.
 *
 * The chart has no admission webhook and its CRDs no conversion webhook (one version
 * each): there is nothing of that kind for the apiserver to call.
 *
 * Expected values come from the stand-in's own records (`/_standin/state`, read from the
 * host at the pod's address), the apiserver's answers and fixed values of the specs.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { stringify } from 'yaml';
import { type ChartUnderTest, eventually } from './support/chart-checks.ts';
import type { NodeEnv } from './support/node-env.ts';

const NAMESPACE = 'terdut-system';
/** The chart's TerdutServer (`server.name`): also its Service's name and its pods' instance label. */
const SERVER = 'oncall';
const STAND_IN_POD = 'terdut-server-stand-in';
const STAND_IN_PORT = 8080;
const DB_SECRET = 'terdut-postgres';
const API = 'terdut.ryuvia.com/v1alpha1';

/** The stand-in's records as `/_standin/state` shows them (the fields read here). */
interface StandInState {
  users: { id: number; username: string; admin: boolean }[];
  teams: { id: number; name: string }[];
  switches: {
    id: number;
    teamId: number;
    name: string;
    matcher: string;
    timeoutSeconds: number;
    severity: string;
  }[];
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** The stand-in as a pod: the operator's image running the stand-in's main.ts, under the same securityContext as the chart's pods. */
function standInPod(image: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: STAND_IN_POD,
      namespace: NAMESPACE,
      // The selector of the Service the operator makes for the TerdutServer `oncall`
      // (app.kubernetes.io/name=terdut-server, instance=<server name>).
      labels: { 'app.kubernetes.io/name': 'terdut-server', 'app.kubernetes.io/instance': SERVER },
    },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'terdut-server',
          image,
          // Imported into the node's containerd; there is no registry to pull from.
          imagePullPolicy: 'Never',
          command: [
            'node',
            '/app/operators/terdut/src/server/main.ts',
            '--host',
            '0.0.0.0',
            '--port',
            String(STAND_IN_PORT),
          ],
          // The Service's targetPort is the named port `http`, as on the real server's pods.
          ports: [{ name: 'http', containerPort: STAND_IN_PORT }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
    },
  };
}

async function standInState(env: NodeEnv): Promise<StandInState> {
  const ip = (
    await env.kubectl(['get', 'pod', STAND_IN_POD, '-n', NAMESPACE, '-o', 'jsonpath={.status.podIP}'])
  ).trim();
  assert.ok(ip, 'the stand-in pod has an address');
  const res = await fetch(`http://${ip}:${STAND_IN_PORT}/_standin/state`, {
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as StandInState;
}

/** The object once its Ready condition is True (read from the apiserver); else the last condition seen. */
async function readyObject<T extends { status?: { conditions?: Condition[] } }>(
  env: NodeEnv,
  kind: string,
  name: string,
  ms: number,
): Promise<T> {
  return eventually(`${kind} ${name} Ready`, ms, async () => {
    const o = JSON.parse(await env.kubectl(['get', kind, name, '-n', NAMESPACE, '-o', 'json'])) as T;
    const ready = o.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'True') return o;
    throw new Error(`Ready=${ready?.status} ${ready?.reason}: ${ready?.message}`);
  });
}

export const terdutOnNode: ChartUnderTest = {
  operator: 'terdut',
  release: 'terdut',
  namespace: NAMESPACE,
  imageValues: { image: 'terdut-operator' },
  values: [
    // "helm install and get a server": the chart renders the TerdutServer, and its helm
    // test then also waits for that server to be Ready.
    'server.enabled=true',
    // Named apart from the release, so that the server's own objects (instance=oncall) are
    // told from the release's.
    `server.name=${SERVER}`,
    // Bring-your-own database, the password in a Secret made before the install (prepare).
    // The stand-in keeps its records in memory: no Postgres runs, the operator only wires these.
    'server.spec.database.dsn=postgres://terdut@terdut-postgres:5432/terdut?sslmode=require',
    `server.spec.database.passwordSecretRef.name=${DB_SECRET}`,
    'server.spec.database.passwordSecretRef.key=password',
    // The real server's image cannot be pulled here: its Deployment is scaled to 0 and the
    // stand-in pod behind the same Service plays the server.
    'server.spec.replicas=0',
  ],
  deployment: 'terdut-operator',
  lease: 'terdut-operator.terdut.ryuvia.com',
  metrics: { port: 8443, readerClusterRole: `${NAMESPACE}-terdut-operator-metrics-reader` },
  // The server's namespace is the release's: the stand-in and the database Secret are in it
  // before the operator starts.
  prepare: async (env: NodeEnv) => {
    const image = env.images['terdut-operator'];
    if (!image) throw new Error('no image terdut-operator was built');
    await env.kubectl(
      ['apply', '-f', '-'],
      [
        stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }),
        stringify(standInPod(image)),
        stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: DB_SECRET, namespace: NAMESPACE },
          stringData: { password: 'not-a-real-password' },
        }),
      ].join('---\n'),
    );
  },
  golden: (env) => {
    it('the chart’s TerdutServer is bootstrapped against the terdut-server stand-in (contract-faithful, not the real server) running as a pod, reached through its Service’s DNS name', async () => {
      const e = env();
      const server = await readyObject<{ status?: { serviceName?: string; conditions?: Condition[] } }>(
        e,
        'terdutserver',
        SERVER,
        30_000,
      );
      assert.equal(server.status?.serviceName, SERVER);
      // The stand-in's record: the bootstrap admin, and the operator's own user it minted its key for.
      const state = await standInState(e);
      assert.deepEqual(
        state.users.map((u) => [u.username, u.admin]),
        [
          ['admin', true],
          ['terdut-operator', false],
        ],
      );
      // The name the operator calls (http://oncall.terdut-system.svc:8080), resolved inside
      // the operator's pod by the node's CoreDNS, is the ClusterIP the apiserver gave the Service.
      const clusterIP = (
        await e.kubectl(['get', 'service', SERVER, '-n', NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}'])
      ).trim();
      const resolved = (
        await e.kubectl([
          'exec',
          '-n',
          NAMESPACE,
          'deploy/terdut-operator',
          '--',
          'node',
          '-e',
          `require('dns').lookup('${SERVER}.${NAMESPACE}.svc', (err, a) => { if (err) throw err; console.log(a); })`,
        ])
      ).trim();
      assert.equal(resolved, clusterIP);
    });

    it('a TerdutTeam and its TerdutDeadmanSwitch become the stand-in’s team and switch (contract-faithful, not the real server), with the spec’s values', async () => {
      const e = env();
      await e.kubectl(
        ['apply', '-f', '-'],
        [
          stringify({
            apiVersion: API,
            kind: 'TerdutTeam',
            metadata: { name: 'sre', namespace: NAMESPACE },
            spec: { serverRef: { name: SERVER }, displayName: 'SRE' },
          }),
          stringify({
            apiVersion: API,
            kind: 'TerdutDeadmanSwitch',
            metadata: { name: 'watchdog', namespace: NAMESPACE },
            spec: {
              teamRef: { name: 'sre' },
              name: 'watchdog',
              matcher: 'alertname=Watchdog',
              timeout: '15m',
              severity: 'critical',
            },
          }),
        ].join('---\n'),
      );
      const team = await readyObject<{ status?: { teamID?: number; conditions?: Condition[] } }>(
        e,
        'terdutteam',
        'sre',
        30_000,
      );
      const sw = await readyObject<{ status?: { switchID?: number; conditions?: Condition[] } }>(
        e,
        'terdutdeadmanswitch',
        'watchdog',
        30_000,
      );
      const state = await standInState(e);
      assert.deepEqual(
        state.teams.map((t) => ({ id: t.id, name: t.name })),
        [{ id: team.status?.teamID, name: 'SRE' }],
      );
      assert.deepEqual(
        state.switches.map(({ id, teamId, name, matcher, timeoutSeconds, severity }) => ({
          id,
          teamId,
          name,
          matcher,
          timeoutSeconds,
          severity,
        })),
        [
          {
            id: sw.status?.switchID,
            teamId: team.status?.teamID,
            name: 'watchdog',
            matcher: 'alertname=Watchdog',
            timeoutSeconds: 900,
            severity: 'critical',
          },
        ],
      );
    });
  },
  // The operator lifts its own finalizers while it still runs (the server's Deployment,
  // Service and credentials Secret then go with it, by the garbage collector); then what
  // prepare made.
  cleanUp: async (env: NodeEnv) => {
    // One delete for the three: the server's deletion waits for its team (TeamsRemaining),
    // and a switch whose team is gone has nothing left to delete on the server.
    await env.kubectl([
      'delete',
      'terdutdeadmanswitch/watchdog',
      'terdutteam/sre',
      `terdutserver/${SERVER}`,
      '-n',
      NAMESPACE,
      '--ignore-not-found',
      '--timeout=30s',
    ]);
    // The stand-in goes only now: the finalizers above call it.
    await env.kubectl([
      'delete',
      `pod/${STAND_IN_POD}`,
      `secret/${DB_SECRET}`,
      '-n',
      NAMESPACE,
      '--ignore-not-found',
      '--grace-period=1',
      '--timeout=30s',
    ]);
  },
};
