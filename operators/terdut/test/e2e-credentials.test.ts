/**
 * The operator's own key (our answer to DESIGN §6 and §13), on the real apiserver
 * against terdut-server STAND-INS (contract-faithful, not the real server): a fresh
 * server bootstrapped by the operator, the bootstrap race lost to someone else, a
 * bootstrap whose answer was lost, rotation by annotation (the old key refused
 * afterwards, everything keeps working), and an operator restarted mid-way that
 * duplicates nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import {
  condition,
  credsOf,
  Harness,
  KINDS,
  MovableClock,
  serverCall,
  serverGet,
} from './support/harness.ts';

const h = Harness.forFile();

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;

describe('the operator’s credentials, against terdut-server stand-ins (contract-faithful, not the real server)', () => {
  it('on a fresh server the operator bootstraps, keeps only its own user’s key, and says so in Events', async (t) => {
    const ns = await h.namespace(t, 'terdut-fresh');
    const standIn = await h.server(ns);
    const server = await h.ready(KINDS.server, ns, 'terdut');
    assert.equal(condition(server, 'Bootstrapped')?.reason, 'CredentialsReady');
    const key = await h.operatorKey(ns);
    assert.equal(
      (await serverGet<{ user: { username: string } }>(standIn, '/api/me', key)).user.username,
      'terdut-operator',
    );
    const users = standIn.snapshot().users.map((u) => [u.username, u.admin]);
    assert.deepEqual(users, [
      ['admin', true],
      ['terdut-operator', false],
    ]);
    assert.equal(credsOf(server)?.userID, 2);
    await h.eventWith(ns, 'terdut', 'Bootstrapped');
    await h.eventWith(ns, 'terdut', 'CredentialsMinted');
    assert.equal(
      (await serverCall(standIn, 'POST', '/api/bootstrap', undefined, {})).status,
      403,
      'bootstrap is spent',
    );
  });

  it('a server someone else bootstrapped first: AdminCredentialRequired saying what to do, then the admin key Secret works', async (t) => {
    const ns = await h.namespace(t, 'terdut-race');
    const standIn = await h.standIn(ns, 'terdut');
    // The chart's Job wins the race.
    const boot = await serverCall(standIn, 'POST', '/api/bootstrap', undefined, { username: 'chart-job' });
    assert.equal(boot.status, 201);
    await h.server(ns);
    const waiting = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'AdminCredentialRequired',
      (o) => condition(o, 'Bootstrapped')?.reason === 'AdminCredentialRequired',
    );
    assert.match(condition(waiting, 'Bootstrapped')?.message ?? '', /spec\.credentials\.adminKeySecretRef/);
    assert.equal(condition(waiting, 'Ready')?.status, 'False');
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'admin-key', namespace: ns },
      stringData: { apiKey: (boot.json as { api_key: { key: string } }).api_key.key },
    } as KubeObject);
    await h.patchSpec(KINDS.server, ns, 'terdut', {
      credentials: { adminKeySecretRef: { name: 'admin-key' } },
    });
    await h.ready(KINDS.server, ns, 'terdut');
    const me = await serverGet<{ user: { username: string } }>(standIn, '/api/me', await h.operatorKey(ns));
    assert.equal(me.user.username, 'terdut-operator');
  });

  it('a bootstrap committed but never answered leaves the admin key lost: AdminCredentialRequired, and the message says why', async (t) => {
    const ns = await h.namespace(t, 'terdut-lostboot');
    const standIn = await h.standIn(ns, 'terdut');
    standIn.dropAfterCommitNext(1, { method: 'POST', path: /^\/api\/bootstrap$/ });
    await h.server(ns);
    const waiting = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'AdminCredentialRequired',
      (o) => condition(o, 'Bootstrapped')?.reason === 'AdminCredentialRequired',
    );
    assert.match(condition(waiting, 'Bootstrapped')?.message ?? '', /answer was lost/);
    assert.equal(standIn.snapshot().users.length, 1, 'the lost bootstrap made its one admin, nothing more');
  });

  it('the rotate annotation mints a new key, swaps the Secret, deletes the old key on the server, and the operator keeps working', async (t) => {
    const ns = await h.namespace(t, 'terdut-rotate');
    const standIn = await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    await h.create(KINDS.team, ns, 'before', { serverRef: { name: 'terdut' }, displayName: 'Before' });
    await h.ready(KINDS.team, ns, 'before');
    const oldKey = await h.operatorKey(ns);
    const oldId = credsOf(await h.get(KINDS.server, ns, 'terdut'))?.keyID;
    await h.admin.patch(KINDS.server, 'terdut', ns, {
      type: 'merge',
      body: { metadata: { annotations: { 'terdut.ryuvia.com/rotate': 'now' } } },
    });
    const rotated = await h.until(KINDS.server, ns, 'terdut', 'a new key', (o) => {
      const c = credsOf(o);
      return c?.keyID !== oldId && c?.retiringKeyID === undefined && c?.rotateRequest === 'now';
    });
    const newKey = await h.operatorKey(ns);
    assert.notEqual(newKey, oldKey);
    assert.equal((await serverCall(standIn, 'GET', '/api/me', oldKey)).status, 401, 'the old key is refused');
    assert.equal((await serverCall(standIn, 'GET', '/api/me', newKey)).status, 200);
    assert.deepEqual(
      standIn
        .snapshot()
        .keys.filter((k) => k.userId === credsOf(rotated)?.userID)
        .map((k) => k.id),
      [credsOf(rotated)?.keyID],
      'one key left for the operator',
    );
    await h.eventWith(ns, 'terdut', 'KeyRotated');
    await h.create(KINDS.team, ns, 'after', { serverRef: { name: 'terdut' }, displayName: 'After' });
    await h.ready(KINDS.team, ns, 'after');
    await h.patchSpec(KINDS.team, ns, 'before', { displayName: 'Before Renamed' });
    await h.ready(KINDS.team, ns, 'before');
    const names = (await serverGet<{ name: string }[]>(standIn, '/api/teams', newKey))
      .map((x) => x.name)
      .sort();
    assert.deepEqual(names, ['After', 'Before Renamed']);
  });

  it('spec.credentials.rotateEvery rotates the key once the period has passed since it was minted', async (t) => {
    const ns = await h.namespace(t, 'terdut-period');
    const clock = new MovableClock();
    await h.stopOperator();
    await h.startOperator({ clock });
    const standIn = await h.server(ns, 'terdut', { credentials: { rotateEvery: '24h' } });
    const first = await h.ready(KINDS.server, ns, 'terdut');
    const firstKey = await h.operatorKey(ns);
    clock.offset = 25 * 3_600_000;
    // The next resync (3 s here) sees the period passed.
    const rotated = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'rotated',
      (o) => credsOf(o).keyID !== credsOf(first).keyID && credsOf(o).retiringKeyID === undefined,
    );
    assert.equal(
      (await serverCall(standIn, 'GET', '/api/me', firstKey)).status,
      401,
      'the old key is refused',
    );
    assert.ok(
      Date.parse(credsOf(rotated).mintedAt ?? '') >
        Date.parse(credsOf(first).mintedAt ?? '') + 24 * 3_600_000,
    );
    await h.stopOperator();
    await h.startOperator();
  });

  it('an operator restarted while creating leaves no duplicate anywhere', async (t) => {
    const ns = await h.namespace(t, 'terdut-restart');
    const standIn = await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    standIn.setLatency(300);
    for (const i of [1, 2, 3]) {
      await h.create(KINDS.team, ns, `team-${i}`, {
        serverRef: { name: 'terdut' },
        displayName: `Team ${i}`,
      });
      await h.create(KINDS.deadman, ns, `wd-${i}`, {
        teamRef: { name: `team-${i}` },
        name: `wd-${i}`,
        matcher: 'alertname=Watchdog',
        timeout: '5m',
      });
      await h.create(KINDS.alertSource, ns, `am-${i}`, {
        teamRef: { name: `team-${i}` },
        name: `am-${i}`,
        kind: 'alertmanager',
      });
    }
    await new Promise((r) => setTimeout(r, 900));
    await h.stopOperator(); // mid-way: some creates answered, some in flight, some not sent
    standIn.setLatency(0);
    await h.startOperator();
    for (const i of [1, 2, 3]) {
      await h.ready(KINDS.team, ns, `team-${i}`, 30_000);
      await h.ready(KINDS.deadman, ns, `wd-${i}`, 30_000);
      await h.ready(KINDS.alertSource, ns, `am-${i}`, 30_000);
    }
    const snap = standIn.snapshot();
    assert.deepEqual(snap.teams.map((x) => x.name).sort(), ['Team 1', 'Team 2', 'Team 3']);
    assert.deepEqual(snap.switches.map((x) => x.name).sort(), ['wd-1', 'wd-2', 'wd-3']);
    assert.deepEqual(snap.integrations.map((x) => x.name).sort(), ['am-1', 'am-2', 'am-3']);
    assert.deepEqual(
      snap.users.map((u) => u.username),
      ['admin', 'terdut-operator'],
      'one operator user',
    );
  });
});
