/**
 * What goes wrong between the operator and terdut-server (DESIGN §5), on the real
 * apiserver against the terdut-server STAND-IN (contract-faithful, not the real server),
 * whose fault knobs play the failures: a create committed but never answered (adopted,
 * no duplicate; an integration's lost key replaced), 500s and malformed answers
 * (conditions, observedGeneration kept), the server down during a delete (finalizer
 * held, Degraded, completed later), drift made on the server directly, a team deleted
 * on the server (team and children created again), and two escalation rules for one team.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import type { StandIn } from '../src/server/stand-in.ts';
import { condition, Harness, KINDS, type Obj, serverCall, serverGet } from './support/harness.ts';

const h = Harness.forFile();
let ns: string;
let standIn: StandIn;
let key: string;

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function team(name: string, displayName = name): Promise<number> {
  await h.create(KINDS.team, ns, name, { serverRef: { name: 'terdut' }, displayName });
  return (await h.ready(KINDS.team, ns, name)).status?.teamID as number;
}

/** The alert source `am` once Ready on another integration than `before`'s; on a timeout, its state and the controller's last log lines. */
async function replacedIntegration(before: Obj | undefined, what: string): Promise<Obj> {
  try {
    return await h.until(
      KINDS.alertSource,
      ns,
      'am',
      what,
      (o) =>
        o.status?.integrationID !== before?.status?.integrationID && condition(o, 'Ready')?.status === 'True',
    );
  } catch (e) {
    console.log(JSON.stringify(await h.get(KINDS.alertSource, ns, 'am'), null, 1));
    console.log(
      h.logs
        .filter((l) => l.includes('alertsource'))
        .slice(-30)
        .join('\n'),
    );
    throw e;
  }
}

const webhookSecret = (): Promise<KubeObject & { data?: Record<string, string> }> =>
  h.admin.get<KubeObject & { data?: Record<string, string> }>(SECRET, 'am-terdut-webhook', ns);

describe('faults, against the terdut-server stand-in (contract-faithful, not the real server)', () => {
  it('sets up a server', async (_t) => {
    ns = await h.fileNamespace('terdut-faults');
    standIn = await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    key = await h.operatorKey(ns);
  });

  it('a team whose create was committed but never answered is adopted by name: one team, and an Adopted event', async () => {
    standIn.dropAfterCommitNext(1, { method: 'POST', path: /^\/api\/teams$/ });
    const id = await team('dropped', 'Dropped');
    const named = (await serverGet<{ id: number; name: string }[]>(standIn, '/api/teams', key)).filter(
      (x) => x.name === 'Dropped',
    );
    assert.deepEqual(
      named.map((x) => x.id),
      [id],
      'exactly one team, the adopted one',
    );
    await h.eventWith(ns, 'dropped', 'Adopted');
  });

  it('an integration whose create was committed but never answered is replaced (its key was lost): one integration, a working Secret, a Warning', async () => {
    const teamId = (await h.get(KINDS.team, ns, 'dropped'))?.status?.teamID as number;
    standIn.dropAfterCommitNext(1, { method: 'POST', path: /\/integrations$/ });
    await h.create(KINDS.alertSource, ns, 'am', {
      teamRef: { name: 'dropped' },
      kind: 'alertmanager',
      name: 'am',
    });
    const src = await h.ready(KINDS.alertSource, ns, 'am');
    const list = await serverGet<{ id: number }[]>(standIn, `/api/teams/${teamId}/integrations`, key);
    assert.deepEqual(
      list.map((i) => i.id),
      [src.status?.integrationID],
      'exactly one integration',
    );
    const secret = await h.admin.get<KubeObject & { data?: Record<string, string> }>(
      SECRET,
      'am-terdut-webhook',
      ns,
    );
    const ingest = await serverCall(
      standIn,
      'POST',
      `/ingest/${src.status?.integrationID}`,
      Buffer.from(secret.data?.key ?? '', 'base64').toString(),
      {},
    );
    assert.equal(ingest.status, 202, 'the Secret holds the live integration’s key');
    const warning = await h.eventWith(ns, 'am', 'Recreated');
    assert.equal(warning.type, 'Warning');
  });

  it('changing an alert source’s kind deletes the integration and creates one with a new key, with a Warning', async () => {
    const before = await h.get(KINDS.alertSource, ns, 'am');
    const oldKey = (
      await h.admin.get<KubeObject & { data?: Record<string, string> }>(SECRET, 'am-terdut-webhook', ns)
    ).data?.key;
    await h.patchSpec(KINDS.alertSource, ns, 'am', { kind: 'webhook' });
    const after = await replacedIntegration(before, 'a new integration');
    const secret = await webhookSecret();
    assert.notEqual(secret.data?.key, oldKey, 'a new key');
    const old = await serverCall(
      standIn,
      'POST',
      `/ingest/${before?.status?.integrationID}`,
      Buffer.from(oldKey ?? '', 'base64').toString(),
      {},
    );
    assert.equal(old.status, 404, 'the old integration is gone');
    assert.deepEqual(after.status?.applied, { kind: 'webhook', name: 'am' });
    const warnings = (await h.events(ns, 'am')).filter(
      (e) => e.reason === 'Recreated' && /kind changed/.test(e.message ?? ''),
    );
    assert.equal(warnings.length, 1);
  });

  it('a deleted webhook Secret is recreated by rotating the integration’s key, with a Warning', async () => {
    const before = await h.get(KINDS.alertSource, ns, 'am');
    await h.admin.delete(SECRET, 'am-terdut-webhook', ns);
    const after = await replacedIntegration(before, 'rotated');
    const secret = await webhookSecret();
    assert.equal(
      Buffer.from(secret.data?.integrationID ?? '', 'base64').toString(),
      String(after.status?.integrationID),
    );
  });

  it('changing a dead man’s switch deletes and recreates it; a reformatted spec with the same values does not', async () => {
    await h.create(KINDS.deadman, ns, 'wd', {
      teamRef: { name: 'dropped' },
      name: 'wd',
      matcher: 'alertname=Watchdog',
      timeout: '15m',
    });
    const first = await h.ready(KINDS.deadman, ns, 'wd');
    await h.patchSpec(KINDS.deadman, ns, 'wd', { timeout: '900s' });
    await h.until(
      KINDS.deadman,
      ns,
      'wd',
      'observed',
      (o) => o.status?.observedGeneration === o.metadata.generation,
    );
    assert.equal(
      (await h.get(KINDS.deadman, ns, 'wd'))?.status?.switchID,
      first.status?.switchID,
      '15m = 900s: not recreated',
    );
    await h.patchSpec(KINDS.deadman, ns, 'wd', { severity: 'warning' });
    const second = await h.until(
      KINDS.deadman,
      ns,
      'wd',
      'recreated',
      (o) => o.status?.switchID !== first.status?.switchID && condition(o, 'Ready')?.status === 'True',
    );
    const teamId = second.status?.teamID as number;
    const list = await serverGet<{ id: number; severity: string }[]>(
      standIn,
      `/api/teams/${teamId}/deadman-switches`,
      key,
    );
    assert.deepEqual(
      list.map((s) => [s.id, s.severity]),
      [[second.status?.switchID, 'warning']],
    );
  });

  it('a switch changed on the server directly is put back at the next resync', async () => {
    const sw = await h.get(KINDS.deadman, ns, 'wd');
    const teamId = sw?.status?.teamID as number;
    await serverCall(standIn, 'DELETE', `/api/teams/${teamId}/deadman-switches/${sw?.status?.switchID}`, key);
    await h.until(
      KINDS.deadman,
      ns,
      'wd',
      'a new switch',
      (o) => o.status?.switchID !== sw?.status?.switchID,
      10_000,
    );
    assert.equal(
      (await serverGet<unknown[]>(standIn, `/api/teams/${teamId}/deadman-switches`, key)).length,
      1,
    );
  });

  // A reconcile may read its object from a cache that has not yet seen its own previous
  // status write: the status then names a server object that reconcile replaced, while the
  // replacement holds the name. Played here with the operator stopped, the server's objects
  // changed by hand, and the operator started again.
  it('a switch whose recorded ID is gone while one of its name and values is on the team (as a reconcile reading its own stale status finds) is adopted, not retried forever', async () => {
    await h.stopOperator();
    const sw = await h.get(KINDS.deadman, ns, 'wd');
    const teamId = sw?.status?.teamID as number;
    await serverCall(standIn, 'DELETE', `/api/teams/${teamId}/deadman-switches/${sw?.status?.switchID}`, key);
    const made = await serverCall(standIn, 'POST', `/api/teams/${teamId}/deadman-switches`, key, {
      name: 'wd',
      matcher: 'alertname=Watchdog',
      timeout_seconds: 900,
      severity: 'warning',
    });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const madeId = (made.json as { id: number }).id;
    await h.startOperator();
    await h.until(
      KINDS.deadman,
      ns,
      'wd',
      `Ready on switch ${madeId}`,
      (o) => o.status?.switchID === madeId && condition(o, 'Ready')?.status === 'True',
    );
    const list = await serverGet<{ id: number }[]>(standIn, `/api/teams/${teamId}/deadman-switches`, key);
    assert.deepEqual(
      list.map((x) => x.id),
      [madeId],
      'the switch on the server is the adopted one, alone',
    );
    const adopted = (await h.events(ns, 'wd')).filter((e) => e.reason === 'Adopted');
    assert.match(adopted.map((e) => e.message).join('\n'), new RegExp(`switch ${madeId} `));
  });

  it('an integration whose recorded ID is gone while the one its Secret names is on the team (as a reconcile reading its own stale status finds) is adopted in one pass: no new key, no refused create', async () => {
    await h.stopOperator();
    const src = await h.get(KINDS.alertSource, ns, 'am');
    const teamId = src?.status?.teamID as number;
    await serverCall(
      standIn,
      'DELETE',
      `/api/teams/${teamId}/integrations/${src?.status?.integrationID}`,
      key,
    );
    const made = await serverCall(standIn, 'POST', `/api/teams/${teamId}/integrations`, key, {
      name: 'am',
      kind: src?.spec?.kind,
    });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const integration = made.json as { id: number; url: string; key: string };
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    // The Secret as the previous reconcile left it: its key is written first, after each create.
    await h.admin.patch(SECRET, 'am-terdut-webhook', ns, {
      type: 'merge',
      body: {
        data: {
          url: b64(integration.url),
          key: b64(integration.key),
          integrationID: b64(String(integration.id)),
        },
      },
    });
    await h.startOperator();
    await h.until(
      KINDS.alertSource,
      ns,
      'am',
      `Ready on integration ${integration.id}`,
      (o) => o.status?.integrationID === integration.id && condition(o, 'Ready')?.status === 'True',
    );
    const list = await serverGet<{ id: number }[]>(standIn, `/api/teams/${teamId}/integrations`, key);
    assert.deepEqual(
      list.map((x) => x.id),
      [integration.id],
      'the adopted integration, alone',
    );
    const secret = await webhookSecret();
    assert.equal(secret.data?.key, b64(integration.key), 'the key senders hold still works: no rotation');
    const ingest = await serverCall(standIn, 'POST', `/ingest/${integration.id}`, integration.key, {});
    assert.equal(ingest.status, 202);
    const failed = (await h.events(ns, 'am')).filter((e) => /already taken/.test(e.message ?? ''));
    assert.deepEqual(
      failed.map((e) => `${e.reason}: ${e.message}`),
      [],
      'adopted in the first pass, not after a refused create and a SyncFailed Warning',
    );
  });

  it('a team deleted on the server is created again, and its children with it', async () => {
    const old = await h.get(KINDS.team, ns, 'dropped');
    await serverCall(standIn, 'DELETE', `/api/teams/${old?.status?.teamID}`, key);
    const fresh = await h.until(
      KINDS.team,
      ns,
      'dropped',
      'a new team ID',
      (o) => o.status?.teamID !== old?.status?.teamID && condition(o, 'Ready')?.status === 'True',
      15_000,
    );
    const teamId = fresh.status?.teamID as number;
    await h.until(
      KINDS.deadman,
      ns,
      'wd',
      'on the new team',
      (o) => o.status?.teamID === teamId && condition(o, 'Ready')?.status === 'True',
      15_000,
    );
    await h.until(
      KINDS.alertSource,
      ns,
      'am',
      'on the new team',
      (o) => o.status?.teamID === teamId && condition(o, 'Ready')?.status === 'True',
      15_000,
    );
    assert.equal(
      (await serverGet<unknown[]>(standIn, `/api/teams/${teamId}/deadman-switches`, key)).length,
      1,
    );
    assert.equal((await serverGet<unknown[]>(standIn, `/api/teams/${teamId}/integrations`, key)).length, 1);
  });

  it('a 500 gives ServerError with the server’s message and leaves observedGeneration where it was', async () => {
    const teamBefore = await h.get(KINDS.team, ns, 'dropped');
    standIn.failNext(50, { status: 500, method: 'PUT', path: /^\/api\/teams\/\d+$/ });
    await h.patchSpec(KINDS.team, ns, 'dropped', { displayName: 'Renamed Under Fire' });
    const failing = await h.notReady(KINDS.team, ns, 'dropped', 'ServerError');
    assert.match(condition(failing, 'Ready')?.message ?? '', /500/);
    assert.equal(failing.status?.observedGeneration, teamBefore?.status?.observedGeneration);
    await h.eventWith(ns, 'dropped', 'SyncFailed');
    standIn.clearFaults();
    await h.ready(KINDS.team, ns, 'dropped', 30_000);
  });

  it('a malformed answer is a ServerError that says the body was not JSON, and nothing is deleted', async () => {
    standIn.malformedNext(50, { method: 'GET', path: /\/escalation$/ });
    await h.create(KINDS.escalation, ns, 'esc', {
      teamRef: { name: 'dropped' },
      levels: [{ timeout: '5m', targets: [{ kind: 'oncall' }] }],
    });
    const failing = await h.notReady(KINDS.escalation, ns, 'esc', 'ServerError');
    assert.match(condition(failing, 'Ready')?.message ?? '', /not JSON/);
    standIn.clearFaults();
    await h.ready(KINDS.escalation, ns, 'esc', 30_000);
  });

  it('a second escalation rule for the same team says PolicyConflict and never PUTs', async () => {
    const since = h.calls.length;
    await h.create(KINDS.escalation, ns, 'esc-2', {
      teamRef: { name: 'dropped' },
      repeatCount: 5,
      levels: [{ timeout: '1m', targets: [{ kind: 'oncall' }] }],
    });
    const refused = await h.notReady(KINDS.escalation, ns, 'esc-2', 'PolicyConflict');
    assert.match(condition(refused, 'Ready')?.message ?? '', /esc already sets the policy/);
    await sleep(4_000);
    const puts = h.calls
      .slice(since)
      .filter((c) => c.controller === 'terdutescalationrule' && c.method === 'PUT');
    assert.deepEqual(puts, [], 'the holder’s policy is already in place; the other rule never PUTs');
    const teamId = (await h.get(KINDS.team, ns, 'dropped'))?.status?.teamID as number;
    assert.equal(
      (await serverGet<{ repeat_count: number }>(standIn, `/api/teams/${teamId}/escalation`, key))
        .repeat_count,
      0,
    );
    // The holder goes: the other takes the team over.
    await h.delete(KINDS.escalation, ns, 'esc');
    await h.ready(KINDS.escalation, ns, 'esc-2');
    assert.equal(
      (await serverGet<{ repeat_count: number }>(standIn, `/api/teams/${teamId}/escalation`, key))
        .repeat_count,
      5,
    );
  });

  it('with the server down, deleting a team keeps the finalizer and says Degraded; it completes once the server is back', async () => {
    await team('doomed', 'Doomed');
    const id = (await h.get(KINDS.team, ns, 'doomed'))?.status?.teamID as number;
    await standIn.stop();
    await h.delete(KINDS.team, ns, 'doomed');
    const held = await h.until(
      KINDS.team,
      ns,
      'doomed',
      'Degraded',
      (o) => condition(o, 'Degraded')?.status === 'True',
    );
    assert.ok(held.metadata.finalizers?.includes('terdut.ryuvia.com/finalizer'));
    await h.eventWith(ns, 'doomed', 'DeleteFailed');
    await standIn.start();
    await h.gone(KINDS.team, ns, 'doomed', 60_000);
    assert.equal((await serverCall(standIn, 'GET', `/api/teams/${id}`, key)).status, 404);
  });
});
