/**
 * Bad input gets a clear answer (the project's rule), on the real apiserver against the
 * terdut-server STAND-IN (contract-faithful, not the real server): what CEL can refuse is
 * refused at admission; the rest is a condition with a precise reason and message and a
 * Warning Event, retried — and nothing is deleted on the server on an error path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiErrorReason, isApiError } from '@operators/kit';
import type { StandIn } from '../src/server/stand-in.ts';
import { condition, Harness, KINDS, serverGet } from './support/harness.ts';

const h = Harness.forFile();
let ns: string;
let standIn: StandIn;
let key: string;

describe('bad input, against the terdut-server stand-in (contract-faithful, not the real server)', () => {
  it('sets up a server and a team', async () => {
    ns = await h.fileNamespace('terdut-bad');
    standIn = await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    key = await h.operatorKey(ns);
    await h.create(KINDS.team, ns, 'team', { serverRef: { name: 'terdut' }, displayName: 'Team' });
    await h.ready(KINDS.team, ns, 'team');
  });

  it('a server that refuses the operator’s user team calls (403): TeamPermissionDenied naming the missing right and the fix, and a Warning Event', async (t) => {
    const strict = await h.namespace(t, 'terdut-strict');
    await h.server(strict, 'terdut', {}, { teamsAdminOnly: true });
    await h.ready(KINDS.server, strict, 'terdut');
    await h.create(KINDS.team, strict, 'team', { serverRef: { name: 'terdut' }, displayName: 'Team' });
    const o = await h.notReady(KINDS.team, strict, 'team', 'TeamPermissionDenied');
    const message = condition(o, 'Ready')?.message ?? '';
    assert.match(message, /POST \/api\/teams: server returned 403: forbidden/);
    assert.match(message, /refuses user terdut-operator the right to manage teams/);
    assert.match(message, /make it an admin/);
    assert.equal((await h.eventWith(strict, 'team', 'TeamPermissionDenied')).type, 'Warning');
    assert.equal(o.status?.teamID, undefined);
  });

  it('a serverRef to nothing: ServerNotFound naming it, and a Warning Event', async () => {
    await h.create(KINDS.team, ns, 'orphan', { serverRef: { name: 'nowhere' }, displayName: 'Orphan' });
    const o = await h.notReady(KINDS.team, ns, 'orphan', 'ServerNotFound');
    assert.match(condition(o, 'Ready')?.message ?? '', new RegExp(`TerdutServer ${ns}/nowhere`));
    assert.equal((await h.eventWith(ns, 'orphan', 'ServerNotFound')).type, 'Warning');
  });

  it('a teamRef to nothing: TeamNotFound, and a Warning Event', async () => {
    await h.create(KINDS.deadman, ns, 'stray', {
      teamRef: { name: 'ghost' },
      name: 'stray',
      matcher: 'a=b',
      timeout: '5m',
    });
    const o = await h.notReady(KINDS.deadman, ns, 'stray', 'TeamNotFound');
    assert.match(condition(o, 'Ready')?.message ?? '', /no TerdutTeam .*ghost/);
    assert.equal(condition(o, 'Synced')?.status, 'False');
    await h.eventWith(ns, 'stray', 'TeamNotFound');
  });

  it('an unknown username: UnknownUser naming it, nothing PUT', async () => {
    await h.create(KINDS.escalation, ns, 'esc', {
      teamRef: { name: 'team' },
      levels: [{ timeout: '5m', targets: [{ kind: 'user', username: 'nobody' }] }],
    });
    const o = await h.notReady(KINDS.escalation, ns, 'esc', 'UnknownUser');
    assert.match(condition(o, 'Ready')?.message ?? '', /no user named nobody/);
    await h.eventWith(ns, 'esc', 'UnknownUser');
    const teamId = (await h.get(KINDS.team, ns, 'team'))?.status?.teamID;
    assert.deepEqual(await serverGet(standIn, `/api/teams/${teamId}/escalation`, key), {
      team_id: teamId,
      repeat_count: 0,
      levels: [],
    });
  });

  it('an invalid duration is refused at admission with a message naming the field', async () => {
    await assert.rejects(
      h.create(KINDS.deadman, ns, 'bad-timeout', {
        teamRef: { name: 'team' },
        name: 'x',
        matcher: 'a=b',
        timeout: '5 minutes',
      }),
      (err: unknown) =>
        isApiError(err, ApiErrorReason.Invalid) && /spec\.timeout.*Go duration/.test(String(err)),
    );
  });

  it('a server that does not answer in time: ServerError saying so, observedGeneration kept, nothing deleted; it recovers', async () => {
    const before = await h.get(KINDS.team, ns, 'team');
    standIn.setLatency(3_000); // the operator's timeout is 2 s in these tests
    await h.patchSpec(KINDS.team, ns, 'team', { displayName: 'Team Slow' });
    const o = await h.notReady(KINDS.team, ns, 'team', 'ServerError', 30_000);
    assert.match(condition(o, 'Ready')?.message ?? '', /no answer within 2000 ms/);
    assert.equal(o.status?.observedGeneration, before?.status?.observedGeneration);
    assert.equal(o.status?.teamID, before?.status?.teamID, 'the ID is kept');
    standIn.setLatency(0);
    await h.ready(KINDS.team, ns, 'team', 30_000);
    const teams = await serverGet<{ id: number; name: string }[]>(standIn, '/api/teams', key);
    assert.deepEqual(
      teams.map((x) => [x.id, x.name]),
      [[before?.status?.teamID, 'Team Slow']],
    );
  });

  it('deleting a TerdutServer that teams still reference waits (TeamsRemaining) until they are gone', async (t) => {
    const other = await h.namespace(t, 'terdut-wait');
    await h.server(other);
    await h.ready(KINDS.server, other, 'terdut');
    await h.create(KINDS.team, other, 'stays', { serverRef: { name: 'terdut' }, displayName: 'Stays' });
    await h.ready(KINDS.team, other, 'stays');
    await h.delete(KINDS.server, other, 'terdut');
    const waiting = await h.notReady(KINDS.server, other, 'terdut', 'TeamsRemaining');
    assert.match(condition(waiting, 'Ready')?.message ?? '', new RegExp(`${other}/stays`));
    await h.ready(KINDS.team, other, 'stays'); // the team still works meanwhile
    await h.delete(KINDS.team, other, 'stays');
    await h.gone(KINDS.team, other, 'stays');
    await h.gone(KINDS.server, other, 'terdut');
  });

  it('an admin key Secret that does not exist: AdminCredentialRequired saying which', async (t) => {
    const other = await h.namespace(t, 'terdut-noadmin');
    const s = await h.standIn(other, 'terdut');
    await fetch(`${s.url}/api/bootstrap`, { method: 'POST', body: '{}' });
    await h.server(other, 'terdut', { credentials: { adminKeySecretRef: { name: 'missing-admin-key' } } });
    const o = await h.until(
      KINDS.server,
      other,
      'terdut',
      'AdminCredentialRequired',
      (x) => condition(x, 'Bootstrapped')?.reason === 'AdminCredentialRequired',
    );
    assert.match(condition(o, 'Bootstrapped')?.message ?? '', /missing-admin-key.*does not exist/);
    await h.eventWith(other, 'terdut', 'AdminCredentialRequired');
  });
});
