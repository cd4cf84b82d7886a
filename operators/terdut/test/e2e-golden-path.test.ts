/**
 * The golden path of every kind (DESIGN §11), on the real apiserver against the
 * terdut-server STAND-IN (contract-faithful, not the real server): create the CR → the
 * server holds the object with the right shape, read back over the server's own API
 * with a raw client and compared with literal expectations → delete the CR → gone on
 * the server. At the end, no key the stand-in issued appears in any log line, Event,
 * spec or status.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import { SERVER_VERSIONS, type StandIn } from '../src/server/stand-in.ts';
import { condition, Harness, KINDS, serverCall, serverGet } from './support/harness.ts';

const h = Harness.forFile();

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
type Secret = KubeObject & { data?: Record<string, string> };
const decode = (s: Secret, key: string): string =>
  Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');

// Every supported server version, oldest (the DESIGN's default image) first.
for (const version of SERVER_VERSIONS) {
  describe(`terdut-operator golden path, against the terdut-server stand-in as v${version} (contract-faithful, not the real server)`, () => {
    let ns: string;
    let standIn: StandIn;
    let adminKey: string;
    let aliceId: number;
    let teamId: number;
    /** Every CR as it stood once Ready: none may hold a key. */
    const seen: string[] = [];

    it('a TerdutServer on a server bootstrapped by someone else mints its own user and key with the admin key of spec.credentials.adminKeySecretRef, and owns its Deployment and Service', async (_t) => {
      ns = await h.fileNamespace(`terdut-golden-${version.replaceAll('.', '-')}`);
      standIn = await h.standIn(ns, 'terdut', { version });
      // The chart's bootstrap Job, played by the test: it holds the admin key.
      const boot = await serverCall(standIn, 'POST', '/api/bootstrap', undefined, { username: 'root' });
      assert.equal(boot.status, 201);
      adminKey = (boot.json as { api_key: { key: string } }).api_key.key;
      const alice = await serverCall(standIn, 'POST', '/api/users', adminKey, {
        username: 'alice',
        email: 'alice@example.com',
      });
      aliceId = (alice.json as { id: number }).id;
      await h.admin.create({
        ...SECRET,
        metadata: { name: 'terdut-admin', namespace: ns },
        stringData: { apiKey: adminKey },
      } as KubeObject);
      await h.server(ns, 'terdut', { credentials: { adminKeySecretRef: { name: 'terdut-admin' } } });

      const server = await h.ready(KINDS.server, ns, 'terdut');
      seen.push(JSON.stringify(server));
      assert.equal(condition(server, 'Bootstrapped')?.status, 'True');
      assert.equal(condition(server, 'DatabaseReady')?.status, 'True');
      assert.equal(server.status?.serviceName, 'terdut');
      assert.deepEqual(server.status?.operatorCredentialsSecretRef, { name: 'terdut-operator-credentials' });

      const secret = await h.admin.get<Secret>(SECRET, 'terdut-operator-credentials', ns);
      assert.equal(secret.metadata.ownerReferences?.[0]?.uid, server.metadata.uid);
      assert.equal(
        standIn.keyOwner(decode(secret, 'apiKey')),
        'terdut-operator',
        'the kept key is the operator user’s, not the admin’s',
      );

      for (const kind of [
        { apiVersion: 'apps/v1', kind: 'Deployment' },
        { apiVersion: 'v1', kind: 'Service' },
      ]) {
        const o = await h.admin.get(kind, 'terdut', ns);
        assert.equal(
          o.metadata.ownerReferences?.[0]?.uid,
          server.metadata.uid,
          `${kind.kind} owned by the server`,
        );
      }
    });

    it('a TerdutTeam becomes a team on the server with its name and OIDC groups, and a rename is a PUT of the same team', async () => {
      await h.create(KINDS.team, ns, 'platform', {
        serverRef: { name: 'terdut' },
        displayName: 'Platform',
        oidc: { memberGroup: 'terdut-platform-members', ownerGroup: 'terdut-platform-owners' },
      });
      const team = await h.ready(KINDS.team, ns, 'platform');
      seen.push(JSON.stringify(team));
      teamId = team.status?.teamID as number;
      const { created_at: _, ...onServer } = await serverGet<Record<string, unknown>>(
        standIn,
        `/api/teams/${teamId}`,
        adminKey,
      );
      assert.deepEqual(onServer, {
        id: teamId,
        name: 'Platform',
        oidc_member_group: 'terdut-platform-members',
        oidc_owner_group: 'terdut-platform-owners',
      });

      await h.patchSpec(KINDS.team, ns, 'platform', {
        displayName: 'Platform Ops',
        oidc: { memberGroup: null, ownerGroup: 'owners' },
      });
      await h.ready(KINDS.team, ns, 'platform');
      const { created_at: __, ...renamed } = await serverGet<Record<string, unknown>>(
        standIn,
        `/api/teams/${teamId}`,
        adminKey,
      );
      assert.deepEqual(renamed, { id: teamId, name: 'Platform Ops', oidc_owner_group: 'owners' });
      const all = await serverGet<unknown[]>(standIn, '/api/teams', adminKey);
      assert.equal(all.length, 1, 'renamed in place, not created again');
    });

    it('a TerdutEscalationRule becomes the team’s whole policy, usernames resolved to user IDs and durations to seconds', async () => {
      await h.create(KINDS.escalation, ns, 'platform-escalation', {
        teamRef: { name: 'platform' },
        repeatCount: 2,
        fallbackTopic: 'platform-oncall',
        levels: [
          { timeout: '5m', targets: [{ kind: 'oncall' }, { kind: 'user', username: 'alice' }] },
          { timeout: '1h30m', targets: [{ kind: 'oncall' }] },
        ],
      });
      seen.push(JSON.stringify(await h.ready(KINDS.escalation, ns, 'platform-escalation')));
      assert.deepEqual(await serverGet(standIn, `/api/teams/${teamId}/escalation`, adminKey), {
        team_id: teamId,
        repeat_count: 2,
        fallback_topic: 'platform-oncall',
        levels: [
          { timeout_seconds: 300, targets: [{ kind: 'oncall' }, { kind: 'user', user_id: aliceId }] },
          { timeout_seconds: 5400, targets: [{ kind: 'oncall' }] },
        ],
      });
    });

    it('a TerdutDeadmanSwitch becomes a switch on the team, and its status mirrors the applied values', async () => {
      await h.create(KINDS.deadman, ns, 'prod-watchdog', {
        teamRef: { name: 'platform' },
        name: 'prod-watchdog',
        matcher: 'alertname=Watchdog,cluster=prod',
        timeout: '15m',
        severity: 'critical',
      });
      const sw = await h.ready(KINDS.deadman, ns, 'prod-watchdog');
      seen.push(JSON.stringify(sw));
      const list = await serverGet<Record<string, unknown>[]>(
        standIn,
        `/api/teams/${teamId}/deadman-switches`,
        adminKey,
      );
      assert.deepEqual(
        list.map(({ created_at: _, ...rest }) => rest),
        [
          {
            id: sw.status?.switchID,
            team_id: teamId,
            name: 'prod-watchdog',
            matcher: 'alertname=Watchdog,cluster=prod',
            timeout_seconds: 900,
            severity: 'critical',
          },
        ],
      );
      assert.deepEqual(sw.status?.applied, {
        matcher: 'alertname=Watchdog,cluster=prod',
        timeoutSeconds: 900,
        severity: 'critical',
      });
    });

    it('a TerdutAlertSource becomes an integration whose URL and key are only in the owned Secret, and the key is accepted by the server', async () => {
      await h.create(KINDS.alertSource, ns, 'prod-alertmanager', {
        teamRef: { name: 'platform' },
        kind: 'alertmanager',
        name: 'prod-am',
      });
      const src = await h.ready(KINDS.alertSource, ns, 'prod-alertmanager');
      seen.push(JSON.stringify(src));
      const id = src.status?.integrationID as number;
      const list = await serverGet<Record<string, unknown>[]>(
        standIn,
        `/api/teams/${teamId}/integrations`,
        adminKey,
      );
      assert.deepEqual(
        list.map(({ created_at: _, ...rest }) => rest),
        [{ id, team_id: teamId, name: 'prod-am', kind: 'alertmanager' }],
      );
      assert.deepEqual(src.status?.webhookURLSecretRef, { name: 'prod-alertmanager-terdut-webhook' });
      const secret = await h.admin.get<Secret>(SECRET, 'prod-alertmanager-terdut-webhook', ns);
      assert.equal(secret.metadata.ownerReferences?.[0]?.uid, src.metadata.uid);
      assert.equal(decode(secret, 'url'), `${standIn.url}/ingest/${id}`);
      const ingest = await serverCall(standIn, 'POST', `/ingest/${id}`, decode(secret, 'key'), {
        alerts: [],
      });
      assert.equal(ingest.status, 202, 'the key in the Secret is the integration’s');
    });

    it('renaming a TerdutAlertSource is a PATCH of the same integration: its key stays valid', async () => {
      const before = await h.get(KINDS.alertSource, ns, 'prod-alertmanager');
      const id = before?.status?.integrationID as number;
      await h.patchSpec(KINDS.alertSource, ns, 'prod-alertmanager', { name: 'prod-am-renamed' });
      const after = await h.ready(KINDS.alertSource, ns, 'prod-alertmanager');
      assert.equal(after.status?.integrationID, id, 'the same integration');
      const list = await serverGet<{ id: number; name: string }[]>(
        standIn,
        `/api/teams/${teamId}/integrations`,
        adminKey,
      );
      assert.deepEqual(
        list.map((i) => [i.id, i.name]),
        [[id, 'prod-am-renamed']],
      );
      const secret = await h.admin.get<Secret>(SECRET, 'prod-alertmanager-terdut-webhook', ns);
      assert.equal(
        (await serverCall(standIn, 'POST', `/ingest/${id}`, decode(secret, 'key'), {})).status,
        202,
      );
    });

    it('deleting each CR deletes its counterpart on the server before the CR goes', async () => {
      await h.delete(KINDS.deadman, ns, 'prod-watchdog');
      await h.gone(KINDS.deadman, ns, 'prod-watchdog');
      assert.deepEqual(await serverGet(standIn, `/api/teams/${teamId}/deadman-switches`, adminKey), []);

      await h.delete(KINDS.alertSource, ns, 'prod-alertmanager');
      await h.gone(KINDS.alertSource, ns, 'prod-alertmanager');
      assert.deepEqual(await serverGet(standIn, `/api/teams/${teamId}/integrations`, adminKey), []);

      await h.delete(KINDS.escalation, ns, 'platform-escalation');
      await h.gone(KINDS.escalation, ns, 'platform-escalation');
      assert.deepEqual(await serverGet(standIn, `/api/teams/${teamId}/escalation`, adminKey), {
        team_id: teamId,
        repeat_count: 0,
        levels: [],
      });

      await h.delete(KINDS.team, ns, 'platform');
      await h.gone(KINDS.team, ns, 'platform');
      assert.equal((await serverCall(standIn, 'GET', `/api/teams/${teamId}`, adminKey)).status, 404);
    });

    it('no key the server issued appears in the operator’s logs, in an Event, or in any spec or status', async () => {
      const secrets = standIn.issuedSecrets();
      assert.ok(secrets.length >= 3, 'the admin key, the operator’s key and an integration key were issued');
      const events = JSON.stringify(await h.events(ns));
      const logs = h.logs.join('\n');
      assert.ok(logs.length > 0, 'the operator logged something');
      for (const s of secrets) {
        assert.ok(!logs.includes(s), 'a key in the logs');
        assert.ok(!events.includes(s), 'a key in an Event');
        assert.ok(!seen.join('\n').includes(s), 'a key in a spec or status');
      }
    });
  });
}
