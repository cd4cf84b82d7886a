/**
 * `npm run up` runs this: the terdut-server STAND-IN (ours, contract-faithful; the real
 * server is not public) on 127.0.0.1, and terdut-operator in-process on the local control
 * plane with a sample to look at: a TerdutServer in `oncall` that admits namespaces
 * labelled `terdut.ryuvia.com/allowed-server=oncall.terdut`, a team beside it, a team in
 * `platform` (labelled: consent given), and an escalation rule, a dead man's switch and
 * an alert source. The operator reaches the stand-in through `serverUrl` (the
 * `--server-url` flag's in-process form), since no Service DNS resolves outside a cluster.
 */
import type { LocalContext } from '@operators/controlplane';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { API_VERSION } from './api/common.ts';
import { TERDUT_SERVER } from './api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam } from './api/terdut-team.ts';
import { createOperator } from './operator.ts';
import { startStandIn } from './server/stand-in.ts';

const SERVER_NS = 'oncall';
const TEAM_NS = 'platform';
const CONSENT_LABEL = 'terdut.ryuvia.com/allowed-server';

async function create(client: KubeClient, obj: KubeObject): Promise<void> {
  try {
    await client.create(obj);
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.AlreadyExists)) throw err;
  }
}

function samples(): KubeObject[] {
  const team = (ns: string, name: string, displayName: string, serverNs?: string): KubeObject =>
    ({
      apiVersion: API_VERSION,
      kind: 'TerdutTeam',
      metadata: { name, namespace: ns },
      spec: { serverRef: { name: 'terdut', ...(serverNs ? { namespace: serverNs } : {}) }, displayName },
    }) as KubeObject;
  const child = (kind: string, name: string, spec: Record<string, unknown>): KubeObject =>
    ({ apiVersion: API_VERSION, kind, metadata: { name, namespace: SERVER_NS }, spec }) as KubeObject;
  return [
    {
      apiVersion: API_VERSION,
      kind: 'TerdutServer',
      metadata: { name: 'terdut', namespace: SERVER_NS },
      spec: {
        database: { dsn: 'postgres://terdut@terdut-postgres:5432/terdut?sslmode=require' },
        allowedTeams: {
          namespaces: {
            from: 'Selector',
            selector: { matchLabels: { [CONSENT_LABEL]: `${SERVER_NS}.terdut` } },
          },
        },
      },
    } as KubeObject,
    team(SERVER_NS, 'sre', 'SRE'),
    team(TEAM_NS, 'platform', 'Platform', SERVER_NS),
    child('TerdutEscalationRule', 'sre-escalation', {
      teamRef: { name: 'sre' },
      repeatCount: 2,
      levels: [
        { timeout: '5m', targets: [{ kind: 'oncall' }] },
        { timeout: '15m', targets: [{ kind: 'oncall' }] },
      ],
    }),
    child('TerdutDeadmanSwitch', 'prod-watchdog', {
      teamRef: { name: 'sre' },
      name: 'prod-watchdog',
      matcher: 'alertname=Watchdog,cluster=prod',
      timeout: '15m',
    }),
    child('TerdutAlertSource', 'prod-alertmanager', {
      teamRef: { name: 'sre' },
      kind: 'alertmanager',
      name: 'prod-alertmanager',
    }),
  ];
}

export async function runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }> {
  const { client, log } = ctx;
  // Writes only: the resync's GETs every minute would bury everything else.
  const standIn = await startStandIn({ log: (line) => (/ GET \//.test(line) ? undefined : log(line)) });
  await create(client, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: SERVER_NS } });
  await create(client, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: TEAM_NS, labels: { [CONSENT_LABEL]: `${SERVER_NS}.terdut` } },
  });
  const { manager } = createOperator({
    client,
    logger: ctx.logger,
    serverUrl: () => standIn.url,
    resyncMs: 60_000,
  });
  await manager.start();
  for (const obj of samples()) await create(client, obj);

  // Tell the newcomer where to look once the team IDs are there.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const teams = await client.list<TerdutTeam>(TERDUT_TEAM);
    const ids = teams.items.filter((t) => t.status?.teamID !== undefined);
    if (ids.length >= 2 || Date.now() > deadline) {
      log(
        `teams with server IDs: ${ids.map((t) => `${t.metadata.namespace}/${t.metadata.name}=${t.status?.teamID}`).join(', ') || 'none yet'}`,
      );
      break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  log(
    `look: npm run kubectl -- get ${TERDUT_SERVER.kind.toLowerCase()}s,terdutteams,terdutescalationrules,terdutdeadmanswitches,terdutalertsources -A`,
  );
  log(
    'the server side, over its API: curl -s -H "Authorization: Bearer $(npm run -s kubectl -- -n oncall get secret ' +
      `terdut-operator-credentials -o jsonpath='{.data.apiKey}' | base64 -d)" ${standIn.url}/api/teams`,
  );
  return {
    async stop() {
      await manager.stop();
      await standIn.close();
    },
  };
}
