/**
 * Cross-namespace teams (DESIGN §4.6, §6.4) on the real apiserver against the
 * terdut-server STAND-IN (contract-faithful, not the real server): consent under
 * Selector, the mirrored credentials, live revocation (no call at all from the team and
 * its children, nothing deleted on the server) and restoration, adoption refused to a
 * second team with the same name, and the mirror removed once no team needs it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import type { StandIn } from '../src/server/stand-in.ts';
import { condition, Harness, KINDS, serverCall, serverGet } from './support/harness.ts';

const h = Harness.forFile();

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const CONSENT = 'terdut.ryuvia.com/allowed-server';

describe('cross-namespace teams, against the terdut-server stand-in (contract-faithful, not the real server)', () => {
  let serverNs: string;
  let teamNs: string;
  let standIn: StandIn;
  let key: string;
  let teamId: number;
  const mirror = () => `terdut.${serverNs}-terdut-credentials`;

  it('a team in a namespace the server’s Selector admits gets a team on the server through a mirror of the credentials in its own namespace', async (_t) => {
    serverNs = await h.fileNamespace('terdut-owner');
    teamNs = await h.fileNamespace('terdut-tenant');
    await h.labelNamespace(teamNs, { [CONSENT]: 'yes' });
    standIn = await h.server(serverNs, 'terdut', {
      allowedTeams: { namespaces: { from: 'Selector', selector: { matchLabels: { [CONSENT]: 'yes' } } } },
    });
    await h.ready(KINDS.server, serverNs, 'terdut');
    key = await h.operatorKey(serverNs);
    await h.create(KINDS.team, teamNs, 'tenant', {
      serverRef: { name: 'terdut', namespace: serverNs },
      displayName: 'Tenant',
    });
    await h.create(KINDS.deadman, teamNs, 'watchdog', {
      teamRef: { name: 'tenant' },
      name: 'watchdog',
      matcher: 'alertname=Watchdog',
      timeout: '10m',
    });
    const team = await h.ready(KINDS.team, teamNs, 'tenant');
    teamId = team.status?.teamID as number;
    await h.ready(KINDS.deadman, teamNs, 'watchdog');
    const copy = await h.admin.get<KubeObject & { data?: Record<string, string> }>(SECRET, mirror(), teamNs);
    assert.equal(
      Buffer.from(copy.data?.apiKey ?? '', 'base64').toString(),
      key,
      'the mirror holds the server’s key',
    );
    const server = await h.get(KINDS.server, serverNs, 'terdut');
    assert.deepEqual(server?.status?.mirroredCredentials, [{ namespace: teamNs, secretName: mirror() }]);
    assert.equal((await serverGet<{ name: string }>(standIn, `/api/teams/${teamId}`, key)).name, 'Tenant');
  });

  it('unlabelling the namespace revokes within one resync: RefNotPermitted, no call but GETs from the team or its children, nothing deleted on the server', async () => {
    await h.labelNamespace(teamNs, { [CONSENT]: null });
    const since = h.calls.length;
    const team = await h.notReady(KINDS.team, teamNs, 'tenant', 'RefNotPermitted', 10_000);
    assert.match(condition(team, 'Ready')?.message ?? '', /does not match/);
    await h.notReady(KINDS.deadman, teamNs, 'watchdog', 'RefNotPermitted', 10_000);
    // The namespace's copy of the key goes with the consent, within the team's reconcile.
    await eventually('the mirror deleted on revocation', async () =>
      (await h.admin.find(SECRET, mirror(), teamNs)) ? undefined : true,
    );
    const deleted = await h.eventWith(serverNs, 'terdut', 'MirrorDeleted');
    assert.match(deleted.message ?? '', /consent revoked/);
    // A change while revoked is not carried out.
    await h.patchSpec(KINDS.team, teamNs, 'tenant', { displayName: 'Tenant Renamed' });
    await h.patchSpec(KINDS.deadman, teamNs, 'watchdog', { timeout: '20m' });
    // A rotation meanwhile writes no copy into the revoked namespace.
    const before = (await h.get(KINDS.server, serverNs, 'terdut'))?.status?.operatorCredentials as {
      keyID?: number;
    };
    await h.admin.patch(KINDS.server, 'terdut', serverNs, {
      type: 'merge',
      body: { metadata: { annotations: { 'terdut.ryuvia.com/rotate': 'while-revoked' } } },
    });
    await h.until(KINDS.server, serverNs, 'terdut', 'rotated', (o) => {
      const c = o.status?.operatorCredentials as { keyID?: number; retiringKeyID?: number } | undefined;
      return c?.keyID !== before?.keyID && c?.retiringKeyID === undefined;
    });
    key = await h.operatorKey(serverNs);
    await new Promise((r) => setTimeout(r, 4_000)); // more than one resync (3 s here)
    assert.equal(await h.admin.find(SECRET, mirror(), teamNs), undefined, 'no copy written by the rotation');
    const fromThem = h.calls.slice(since).filter((c) => c.controller !== 'terdutserver');
    assert.deepEqual(
      fromThem.filter((c) => c.method !== 'GET'),
      [],
      'no write from a revoked team or its children',
    );
    assert.deepEqual(fromThem, [], 'a revoked team and its children make no call at all');
    const onServer = await serverGet<{ name: string }>(standIn, `/api/teams/${teamId}`, key);
    assert.equal(onServer.name, 'Tenant', 'nothing changed or deleted on the server');
    assert.equal(
      (await serverGet<unknown[]>(standIn, `/api/teams/${teamId}/deadman-switches`, key)).length,
      1,
    );
  });

  it('labelling it again restores: the pending changes are carried out', async () => {
    await h.labelNamespace(teamNs, { [CONSENT]: 'yes' });
    // A label change sends no event (consent is one Get, never a Namespace watch, §4.6): the
    // team sees it at its next resync (3 s here), its children at theirs or on the team's
    // status change. The harness's default wait leaves room for a loaded CI machine, where a
    // 10 s wait for two resyncs and two server round trips once ran out.
    await h.ready(KINDS.team, teamNs, 'tenant');
    await h.ready(KINDS.deadman, teamNs, 'watchdog');
    const copy = await h.admin.get<KubeObject & { data?: Record<string, string> }>(SECRET, mirror(), teamNs);
    assert.equal(
      Buffer.from(copy.data?.apiKey ?? '', 'base64').toString(),
      key,
      'a fresh copy, of the current key',
    );
    assert.equal(copy.data?.adminKey, undefined, 'the admin key of the bootstrap is never copied');
    assert.equal(
      (await serverGet<{ name: string }>(standIn, `/api/teams/${teamId}`, key)).name,
      'Tenant Renamed',
    );
    const switches = await serverGet<{ timeout_seconds: number }[]>(
      standIn,
      `/api/teams/${teamId}/deadman-switches`,
      key,
    );
    assert.deepEqual(
      switches.map((s) => s.timeout_seconds),
      [1200],
    );
  });

  it('a second team with the same displayName in another namespace is not given the first one’s server team: NameConflict', async (t) => {
    const other = await h.namespace(t, 'terdut-other');
    await h.patchSpec(KINDS.server, serverNs, 'terdut', {
      allowedTeams: { namespaces: { from: 'All', selector: null } },
    });
    await h.create(KINDS.team, other, 'tenant', {
      serverRef: { name: 'terdut', namespace: serverNs },
      displayName: 'Tenant Renamed',
    });
    const refused = await h.notReady(KINDS.team, other, 'tenant', 'NameConflict');
    assert.match(
      condition(refused, 'Ready')?.message ?? '',
      new RegExp(`belongs to TerdutTeam ${teamNs}/tenant`),
    );
    assert.equal(refused.status?.teamID, undefined);
    assert.equal((await serverGet<unknown[]>(standIn, '/api/teams', key)).length, 1, 'no second team made');
    await h.delete(KINDS.team, other, 'tenant');
    await h.gone(KINDS.team, other, 'tenant');
    assert.equal(
      (await serverGet<unknown[]>(standIn, '/api/teams', key)).length,
      1,
      'deleting the refused team deletes nothing',
    );
  });

  it('a revoked team’s deletion still deletes its team on the server, with the server’s own key: no copy is written for it', async () => {
    await h.patchSpec(KINDS.server, serverNs, 'terdut', { allowedTeams: { namespaces: { from: 'None' } } });
    await h.notReady(KINDS.team, teamNs, 'tenant', 'RefNotPermitted', 10_000);
    await eventually('the mirror deleted on revocation', async () =>
      (await h.admin.find(SECRET, mirror(), teamNs)) ? undefined : true,
    );
    await h.delete(KINDS.deadman, teamNs, 'watchdog');
    await h.delete(KINDS.team, teamNs, 'tenant');
    await h.gone(KINDS.team, teamNs, 'tenant');
    await h.until(
      KINDS.server,
      serverNs,
      'terdut',
      'no mirror in status',
      (s) => ((s.status?.mirroredCredentials as unknown[]) ?? []).length === 0,
    );
    assert.equal(await h.admin.find(SECRET, mirror(), teamNs), undefined);
    assert.equal((await serverCall(standIn, 'GET', `/api/teams/${teamId}`, key)).status, 404);
    // Revocation, rotation and a revoked deletion: no key in a log line or an Event.
    const logs = h.logs.join('\n');
    const events = JSON.stringify([...(await h.events(serverNs)), ...(await h.events(teamNs))]);
    for (const k of standIn.issuedSecrets()) {
      assert.ok(!logs.includes(k), 'a key in the logs');
      assert.ok(!events.includes(k), 'a key in an Event');
    }
  });
});
