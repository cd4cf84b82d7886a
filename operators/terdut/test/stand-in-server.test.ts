/**
 * The terdut-server stand-in (operators/terdut/src/server), checked over plain HTTP with
 * `fetch` as an independent client: the wire rules, each route's contract, the fault
 * knobs, the control surface and the observation hooks. No Kubernetes. The stand-in is a
 * contract-faithful substitute for the real server, which is not public: these tests pin
 * what the operator's tests may rely on.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type StandIn, startStandIn } from '../src/server/stand-in.ts';

// The client's own view of the wire shapes: written from the contract, not imported.
interface WireUser {
  id: number;
  username: string;
  email?: string;
  created_at: string;
}
interface WireKey {
  id: number;
  user_id: number;
  name: string;
  key?: string;
  created_at: string;
  last_used_at: string | null;
}
interface WireTeam {
  id: number;
  name: string;
  oidc_member_group?: string;
  oidc_owner_group?: string;
  created_at: string;
}
interface WireSwitch {
  id: number;
  team_id: number;
  name: string;
  matcher: string;
  timeout_seconds: number;
  severity: string;
  created_at: string;
}
interface WireIntegration {
  id: number;
  team_id: number;
  name: string;
  kind: string;
  created_at: string;
  url?: string;
  key?: string;
}
interface WireError {
  error: string;
}
interface Bootstrap {
  user: WireUser;
  api_key: WireKey;
}

const HEX64 = /^[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface Res<T> {
  status: number;
  text: string;
  body: T;
  headers: Headers;
}

async function call<T = unknown>(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string } = {},
): Promise<Res<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(base + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return {
    status: res.status,
    text,
    // Go's router answers an unknown route in plain text: kept as the text itself.
    body: (text === ''
      ? undefined
      : /json/.test(res.headers.get('content-type') ?? '')
        ? JSON.parse(text)
        : text) as T,
    headers: res.headers,
  };
}

const started: StandIn[] = [];
after(async () => {
  for (const s of started) await s.close();
});

async function fresh(opts: Parameters<typeof startStandIn>[0] = {}): Promise<StandIn> {
  const s = await startStandIn(opts);
  started.push(s);
  return s;
}

/** A stand-in playing v0.10.2 (it has /api/me), bootstrapped over HTTP, with its admin's key. */
async function bootstrapped(): Promise<{ si: StandIn; base: string; admin: string; adminId: number }> {
  const si = await fresh({ version: '0.10.2' });
  const r = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
  assert.equal(r.status, 201);
  return { si, base: si.url, admin: r.body.api_key.key ?? '', adminId: r.body.user.id };
}

/** A non-admin user with its own key, created by the admin. */
async function member(base: string, admin: string, username: string): Promise<{ id: number; key: string }> {
  const u = await call<WireUser>(base, 'POST', '/api/users', { key: admin, body: { username } });
  assert.equal(u.status, 201);
  const k = await call<WireKey>(base, 'POST', `/api/users/${u.body.id}/api-keys`, {
    key: admin,
    body: { name: 'k' },
  });
  assert.equal(k.status, 201);
  return { id: u.body.id, key: k.body.key ?? '' };
}

async function team(base: string, key: string, name: string): Promise<WireTeam> {
  const r = await call<WireTeam>(base, 'POST', '/api/teams', { key, body: { name } });
  assert.equal(r.status, 201);
  return r.body;
}

describe('terdut-server stand-in (contract-faithful, not the real server)', () => {
  it('plays v0.9.3 by default, the DESIGN’s default image: GET /api/me is an unknown route there, a plain-text 404; API errors stay JSON {"error"}', async () => {
    const si = await fresh();
    assert.equal(si.version, '0.9.3');
    const boot = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    const key = boot.body.api_key.key ?? '';
    const me = await call(si.url, 'GET', '/api/me', { key });
    assert.equal(me.status, 404);
    assert.equal(me.text, '404 page not found\n');
    assert.match(me.headers.get('content-type') ?? '', /^text\/plain/);
    const refused = await call(si.url, 'GET', '/api/users', { key: 'f'.repeat(64) });
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.body, { error: 'unauthorized' });
    assert.equal((await call(si.url, 'GET', '/api/users?username=admin', { key })).status, 200);
  });

  it('as v0.10.2 serves GET /api/me with the key’s user', async () => {
    const si = await fresh({ version: '0.10.2' });
    const boot = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    const me = await call<{ user: WireUser }>(si.url, 'GET', '/api/me', { key: boot.body.api_key.key ?? '' });
    assert.equal(me.status, 200);
    assert.equal(me.body.user.username, 'admin');
  });

  it('with teamsAdminOnly refuses a non-admin every team route with 403 {"error"}, and lets the admin through', async () => {
    const si = await fresh({ teamsAdminOnly: true });
    const boot = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    const admin = boot.body.api_key.key ?? '';
    const bob = await member(si.url, admin, 'bob');
    const refused = await call(si.url, 'POST', '/api/teams', { key: bob.key, body: { name: 'x' } });
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, { error: 'forbidden' });
    assert.equal((await call(si.url, 'GET', '/api/teams', { key: bob.key })).status, 403);
    assert.equal((await call(si.url, 'POST', '/api/teams', { key: admin, body: { name: 'x' } })).status, 201);
  });

  it('serves GET /healthz without auth, as {"status":"ok"}', async () => {
    const si = await fresh();
    const r = await call(si.url, 'GET', '/healthz');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { status: 'ok' });
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  });

  it('bootstraps once: 201 with an admin user and a one-time 64-hex key, then 403 for anyone', async () => {
    const si = await fresh();
    const r = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    assert.equal(r.status, 201);
    const { user, api_key } = r.body;
    // Defaults: username "admin", no email (omitted, not null); ids start at 1.
    assert.deepEqual(Object.keys(user).sort(), ['created_at', 'id', 'username']);
    assert.equal(user.id, 1);
    assert.equal(user.username, 'admin');
    assert.match(user.created_at, RFC3339);
    assert.equal(api_key.id, 1);
    assert.equal(api_key.user_id, 1);
    assert.match(api_key.key ?? '', HEX64);
    assert.equal(api_key.last_used_at, null);
    assert.match(api_key.created_at, RFC3339);
    assert.equal(si.snapshot().users[0]?.admin, true);

    const again = await call<WireError>(si.url, 'POST', '/api/bootstrap', {
      body: { username: 'someone-else', email: 'x@example.com' },
    });
    assert.equal(again.status, 403);
    assert.deepEqual(again.body, { error: 'already bootstrapped' });
    // Even the admin's own key does not reopen it: the gate is the user count.
    const withKey = await call(si.url, 'POST', '/api/bootstrap', { key: api_key.key ?? '' });
    assert.equal(withKey.status, 403);
  });

  it('takes a username and email at bootstrap', async () => {
    const si = await fresh();
    const r = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap', {
      body: { username: 'root', email: 'root@example.com' },
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.user.username, 'root');
    assert.equal(r.body.user.email, 'root@example.com');
  });

  it('lets exactly one of two concurrent bootstraps win', async () => {
    const si = await fresh();
    const rs = await Promise.all([
      call(si.url, 'POST', '/api/bootstrap'),
      call(si.url, 'POST', '/api/bootstrap'),
    ]);
    assert.deepEqual(rs.map((r) => r.status).sort(), [201, 403]);
    assert.equal(si.snapshot().users.length, 1);
  });

  it('answers 401 without a key, with an unknown key, and with a deleted key at once', async () => {
    const { base, admin } = await bootstrapped();
    const unauthorized = { error: 'unauthorized' };
    const none = await call(base, 'GET', '/api/me');
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, unauthorized);
    assert.equal((await call(base, 'GET', '/api/teams', { key: 'f'.repeat(64) })).status, 401);
    assert.equal((await call(base, 'GET', '/api/teams', { key: 'not-a-key' })).status, 401);

    const second = await call<WireKey>(base, 'POST', '/api/users/1/api-keys', {
      key: admin,
      body: { name: 'b' },
    });
    const k2 = second.body.key ?? '';
    assert.equal((await call(base, 'GET', '/api/me', { key: k2 })).status, 200);
    const del = await call(base, 'DELETE', `/api/users/1/api-keys/${second.body.id}`, { key: admin });
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    const after = await call(base, 'GET', '/api/me', { key: k2 });
    assert.equal(after.status, 401);
    assert.deepEqual(after.body, unauthorized);
    assert.equal((await call(base, 'GET', '/api/me', { key: admin })).status, 200);

    // A deleted user's keys die with it.
    const bob = await member(base, admin, 'bob');
    assert.equal((await call(base, 'GET', '/api/me', { key: bob.key })).status, 200);
    assert.equal((await call(base, 'DELETE', `/api/users/${bob.id}`, { key: admin })).status, 204);
    assert.equal((await call(base, 'GET', '/api/me', { key: bob.key })).status, 401);
  });

  it('shows a key only in its create response, has no key list route, and marks keys used', async () => {
    const { si, base, admin } = await bootstrapped();
    assert.equal(si.snapshot().keys[0]?.lastUsedAt, null);
    const me = await call<{ user: WireUser; has_password: boolean }>(base, 'GET', '/api/me', { key: admin });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, { user: me.body.user, has_password: false });
    assert.equal(me.body.user.username, 'admin');
    assert.match(si.snapshot().keys[0]?.lastUsedAt ?? '', RFC3339);

    const minted = await call<WireKey>(base, 'POST', '/api/users/1/api-keys', {
      key: admin,
      body: { name: 'ci' },
    });
    assert.equal(minted.status, 201);
    assert.deepEqual(Object.keys(minted.body), [
      'id',
      'user_id',
      'name',
      'key',
      'created_at',
      'last_used_at',
    ]);
    assert.match(minted.body.key ?? '', HEX64);
    assert.notEqual(minted.body.key, admin);

    const list = await call(base, 'GET', '/api/users/1/api-keys', { key: admin });
    assert.equal(list.status, 405);
    assert.deepEqual(list.body, { error: 'method not allowed' });
    const everywhere = [me.text, (await call(base, 'GET', '/api/users', { key: admin })).text];
    everywhere.push(JSON.stringify(si.snapshot()));
    for (const text of everywhere) {
      assert.ok(
        !text.includes(admin) && !text.includes(minted.body.key ?? '-'),
        'a key secret was shown again',
      );
    }
    assert.deepEqual(si.snapshot().keys[1], { id: 2, userId: 1, name: 'ci', lastUsedAt: null });
  });

  it('keeps user creation admin-only; a non-admin mints and revokes only its own keys', async () => {
    const { base, admin, adminId } = await bootstrapped();
    const created = await call<WireUser>(base, 'POST', '/api/users', {
      key: admin,
      body: { username: 'bob', email: 'bob@example.com' },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, {
      id: 2,
      username: 'bob',
      email: 'bob@example.com',
      created_at: created.body.created_at,
    });
    const taken = await call(base, 'POST', '/api/users', { key: admin, body: { username: 'bob' } });
    assert.equal(taken.status, 409);
    assert.deepEqual(taken.body, { error: 'username already taken' });

    const k = await call<WireKey>(base, 'POST', '/api/users/2/api-keys', {
      key: admin,
      body: { name: 'bob-1' },
    });
    const bob = k.body.key ?? '';
    const forbidden = await call(base, 'POST', '/api/users', { key: bob, body: { username: 'eve' } });
    assert.equal(forbidden.status, 403);
    assert.deepEqual(forbidden.body, { error: 'forbidden' });
    assert.equal((await call(base, 'DELETE', `/api/users/${adminId}`, { key: bob })).status, 403);
    assert.equal(
      (await call(base, 'POST', `/api/users/${adminId}/api-keys`, { key: bob, body: { name: 'x' } })).status,
      403,
    );

    const own = await call<WireKey>(base, 'POST', '/api/users/2/api-keys', {
      key: bob,
      body: { name: 'bob-2' },
    });
    assert.equal(own.status, 201);
    assert.equal(own.body.user_id, 2);
    assert.equal(
      (await call(base, 'DELETE', `/api/users/2/api-keys/${own.body.id}`, { key: bob })).status,
      204,
    );
    const gone = await call(base, 'DELETE', `/api/users/2/api-keys/${own.body.id}`, { key: bob });
    assert.equal(gone.status, 404);
    // Key 1 is the admin's: not one of bob's keys.
    assert.equal((await call(base, 'DELETE', '/api/users/2/api-keys/1', { key: admin })).status, 404);

    const all = await call<WireUser[]>(base, 'GET', '/api/users', { key: bob });
    assert.deepEqual(
      all.body.map((u) => u.id),
      [1, 2],
    );
    const byName = await call<WireUser[]>(base, 'GET', '/api/users?username=bob', { key: bob });
    assert.deepEqual(
      byName.body.map((u) => u.username),
      ['bob'],
    );
    assert.deepEqual((await call(base, 'GET', '/api/users?username=nobody', { key: bob })).body, []);
    assert.equal((await call(base, 'DELETE', '/api/users/99', { key: admin })).status, 404);
  });

  it('applies the transport rules: 404, 405, invalid JSON, a missing field named', async () => {
    const { base, admin } = await bootstrapped();
    const nf = await call(base, 'GET', '/api/nothing-here', { key: admin });
    assert.equal(nf.status, 404);
    assert.equal(nf.text, '404 page not found\n', 'Go’s router: plain text, not JSON');
    assert.match(nf.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal((await call(base, 'GET', '/nope')).status, 404);
    const wrong = await call(base, 'DELETE', '/api/teams', { key: admin });
    assert.equal(wrong.status, 405);
    assert.deepEqual(wrong.body, { error: 'method not allowed' });
    assert.equal((await call(base, 'GET', '/api/bootstrap')).status, 405);
    const bad = await call(base, 'POST', '/api/teams', { key: admin, raw: '{"name":' });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: 'invalid JSON' });
    const missing = await call<WireError>(base, 'POST', '/api/teams', { key: admin, body: {} });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /\bname\b/);
    const sw = await call<WireError>(
      base,
      'POST',
      `/api/teams/${(await team(base, admin, 't')).id}/deadman-switches`,
      {
        key: admin,
        body: { name: 's', matcher: 'alertname=Watchdog', severity: 'critical' },
      },
    );
    assert.equal(sw.status, 400);
    assert.match(sw.body.error, /timeout_seconds/);
  });

  it('manages teams: 409 on a taken name, ?name= lookup, rename, OIDC groups set and cleared', async () => {
    const { base, admin } = await bootstrapped();
    const a = await team(base, admin, 'platform');
    assert.deepEqual(a, { id: 1, name: 'platform', created_at: a.created_at });
    await team(base, admin, 'payments');
    const dup = await call(base, 'POST', '/api/teams', { key: admin, body: { name: 'platform' } });
    assert.equal(dup.status, 409);
    assert.deepEqual(dup.body, { error: 'team name already taken' });

    const byName = await call<WireTeam[]>(base, 'GET', '/api/teams?name=platform', { key: admin });
    assert.deepEqual(byName.body, [a]);
    assert.deepEqual((await call(base, 'GET', '/api/teams?name=plat', { key: admin })).body, []);
    assert.equal((await call<WireTeam[]>(base, 'GET', '/api/teams', { key: admin })).body.length, 2);
    assert.deepEqual((await call(base, 'GET', '/api/teams/1', { key: admin })).body, a);

    const renamed = await call<WireTeam>(base, 'PUT', '/api/teams/1', {
      key: admin,
      body: { name: 'platform-2' },
    });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'platform-2');
    assert.equal(
      (await call(base, 'PUT', '/api/teams/1', { key: admin, body: { name: 'payments' } })).status,
      409,
    );
    assert.equal(
      (await call(base, 'PUT', '/api/teams/1', { key: admin, body: { name: 'platform-2' } })).status,
      200,
    );

    const groups = await call<WireTeam>(base, 'PUT', '/api/teams/1/oidc-groups', {
      key: admin,
      body: { member_group: 'members', owner_group: 'owners' },
    });
    assert.equal(groups.status, 200);
    assert.equal(groups.body.oidc_member_group, 'members');
    assert.equal(groups.body.oidc_owner_group, 'owners');
    const cleared = await call<WireTeam>(base, 'PUT', '/api/teams/1/oidc-groups', {
      key: admin,
      body: { member_group: '', owner_group: 'owners' },
    });
    assert.ok(!('oidc_member_group' in cleared.body), 'a cleared group is omitted');
    assert.equal(cleared.body.oidc_owner_group, 'owners');

    const nf = await call(base, 'GET', '/api/teams/42', { key: admin });
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.body, { error: 'team not found' });
  });

  it('lets a non-admin (bot) user manage teams', async () => {
    const { base, admin } = await bootstrapped();
    const bot = await member(base, admin, 'terdut-operator');
    assert.equal((await call(base, 'POST', '/api/teams', { key: bot.key, body: { name: 'x' } })).status, 201);
    assert.equal((await call(base, 'DELETE', '/api/teams/1', { key: bot.key })).status, 204);
  });

  it('reads a default escalation policy, replaces it whole, and refuses bad targets and timeouts', async () => {
    const { base, admin } = await bootstrapped();
    const t = await team(base, admin, 'p');
    const path = `/api/teams/${t.id}/escalation`;
    const def = await call(base, 'GET', path, { key: admin });
    assert.equal(def.status, 200);
    assert.deepEqual(def.body, { team_id: t.id, repeat_count: 0, levels: [] });

    const policy = {
      team_id: 999, // ignored: the path names the team
      repeat_count: 2,
      fallback_topic: 'platform-oncall',
      levels: [
        { timeout_seconds: 300, targets: [{ kind: 'oncall' }, { kind: 'user', user_id: 1 }] },
        { timeout_seconds: 900, targets: [{ kind: 'oncall' }] },
      ],
    };
    const put = await call(base, 'PUT', path, { key: admin, body: policy });
    assert.equal(put.status, 200);
    const expected = { ...policy, team_id: t.id };
    assert.deepEqual(put.body, expected);
    assert.deepEqual((await call(base, 'GET', path, { key: admin })).body, expected);

    const bad = async (body: unknown, field: RegExp): Promise<void> => {
      const r = await call<WireError>(base, 'PUT', path, { key: admin, body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, field);
    };
    const level = (targets: unknown[], timeout_seconds: unknown = 60) => ({
      repeat_count: 0,
      levels: [{ timeout_seconds, targets }],
    });
    await bad(level([{ kind: 'user', user_id: 77 }]), /user_id 77/);
    await bad(level([{ kind: 'oncall' }], 0), /timeout_seconds/);
    await bad(level([{ kind: 'oncall' }], 1.5), /timeout_seconds/);
    await bad(level([{ kind: 'oncall' }], '60'), /timeout_seconds/);
    await bad(level([{ kind: 'team' }]), /kind/);
    await bad({ repeat_count: 0 }, /levels/);
    // A refused PUT changes nothing.
    assert.deepEqual((await call(base, 'GET', path, { key: admin })).body, expected);

    // Deleting a user takes its targets out of every policy (the stand-in's cascade).
    const bob = await member(base, admin, 'bob');
    const withBob = {
      repeat_count: 0,
      levels: [{ timeout_seconds: 60, targets: [{ kind: 'user', user_id: bob.id }] }],
    };
    assert.equal((await call(base, 'PUT', path, { key: admin, body: withBob })).status, 200);
    await call(base, 'DELETE', `/api/users/${bob.id}`, { key: admin });
    assert.deepEqual((await call(base, 'GET', path, { key: admin })).body, {
      team_id: t.id,
      repeat_count: 0,
      levels: [{ timeout_seconds: 60, targets: [] }],
    });

    const cleared = await call(base, 'PUT', path, { key: admin, body: { repeat_count: 0, levels: [] } });
    assert.deepEqual(cleared.body, { team_id: t.id, repeat_count: 0, levels: [] });
  });

  it("manages dead man's switches: 409 on a taken name, ?name=, no update verb, delete", async () => {
    const { base, admin } = await bootstrapped();
    const t = await team(base, admin, 'p');
    const other = await team(base, admin, 'q');
    const path = `/api/teams/${t.id}/deadman-switches`;
    const spec = {
      name: 'prod-watchdog',
      matcher: 'alertname=Watchdog,cluster=prod',
      timeout_seconds: 900,
      severity: 'critical',
    };
    const c = await call<WireSwitch>(base, 'POST', path, { key: admin, body: spec });
    assert.equal(c.status, 201);
    assert.deepEqual(c.body, { id: 1, team_id: t.id, ...spec, created_at: c.body.created_at });
    const dup = await call(base, 'POST', path, { key: admin, body: spec });
    assert.equal(dup.status, 409);
    assert.deepEqual(dup.body, { error: 'switch name already taken' });
    // Names are per team.
    const elsewhere = await call(base, 'POST', `/api/teams/${other.id}/deadman-switches`, {
      key: admin,
      body: spec,
    });
    assert.equal(elsewhere.status, 201);
    await call(base, 'POST', path, { key: admin, body: { ...spec, name: 'staging' } });

    assert.deepEqual((await call(base, 'GET', `${path}?name=prod-watchdog`, { key: admin })).body, [c.body]);
    assert.equal((await call<WireSwitch[]>(base, 'GET', path, { key: admin })).body.length, 2);

    for (const method of ['PUT', 'PATCH']) {
      const r = await call(base, method, `${path}/1`, { key: admin, body: spec });
      assert.equal(r.status, 405, method);
      assert.deepEqual(r.body, { error: 'method not allowed' });
    }
    // Switch 2 belongs to the other team.
    assert.equal((await call(base, 'DELETE', `${path}/2`, { key: admin })).status, 404);
    const del = await call(base, 'DELETE', `${path}/1`, { key: admin });
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    const again = await call(base, 'DELETE', `${path}/1`, { key: admin });
    assert.equal(again.status, 404);
    assert.deepEqual(again.body, { error: 'switch not found' });
  });

  it('shows an integration key once; ingest takes it (202) and refuses another (401)', async () => {
    const { si, base, admin } = await bootstrapped();
    const t = await team(base, admin, 'p');
    const path = `/api/teams/${t.id}/integrations`;
    const c = await call<WireIntegration>(base, 'POST', path, {
      key: admin,
      body: { name: 'am', kind: 'alertmanager' },
    });
    assert.equal(c.status, 201);
    assert.equal(c.body.url, `${si.url}/ingest/${c.body.id}`);
    assert.match(c.body.key ?? '', HEX64);
    const w = await call<WireIntegration>(base, 'POST', path, {
      key: admin,
      body: { name: 'hook', kind: 'webhook' },
    });
    assert.equal(w.status, 201);

    const list = await call<WireIntegration[]>(base, 'GET', path, { key: admin });
    assert.deepEqual(
      list.body.map((i) => Object.keys(i).sort()),
      [
        ['created_at', 'id', 'kind', 'name', 'team_id'],
        ['created_at', 'id', 'kind', 'name', 'team_id'],
      ],
    );
    assert.deepEqual(
      (await call<WireIntegration[]>(base, 'GET', `${path}?name=am`, { key: admin })).body.map((i) => i.id),
      [c.body.id],
    );

    const alert = { version: '4', status: 'firing', alerts: [] };
    const ingest = await call(base, 'POST', new URL(c.body.url ?? '').pathname, {
      key: c.body.key ?? '',
      body: alert,
    });
    assert.equal(ingest.status, 202);
    assert.deepEqual(ingest.body, { status: 'accepted' });
    assert.equal(
      (await call(base, 'POST', `/ingest/${c.body.id}`, { key: w.body.key ?? '', body: alert })).status,
      401,
    );
    assert.equal((await call(base, 'POST', `/ingest/${c.body.id}`, { key: admin, body: alert })).status, 401);
    assert.equal((await call(base, 'POST', `/ingest/${c.body.id}`, { body: alert })).status, 401);
    assert.equal(
      (await call(base, 'POST', '/ingest/99', { key: c.body.key ?? '', body: alert })).status,
      404,
    );

    const badKind = await call<WireError>(base, 'POST', path, {
      key: admin,
      body: { name: 'x', kind: 'pagerduty' },
    });
    assert.equal(badKind.status, 400);
    assert.match(badKind.body.error, /kind/);
    const dup = await call(base, 'POST', path, { key: admin, body: { name: 'am', kind: 'webhook' } });
    assert.equal(dup.status, 409);
    assert.deepEqual(dup.body, { error: 'integration name already taken' });

    const renamed = await call<WireIntegration>(base, 'PATCH', `${path}/${c.body.id}`, {
      key: admin,
      body: { name: 'am-2' },
    });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'am-2');
    assert.ok(!('key' in renamed.body) && !('url' in renamed.body));
    assert.equal(
      (await call(base, 'PATCH', `${path}/${c.body.id}`, { key: admin, body: { name: 'hook' } })).status,
      409,
    );
    // A rename keeps the key.
    assert.equal((await call(base, 'POST', `/ingest/${c.body.id}`, { key: c.body.key ?? '' })).status, 202);
    assert.equal((await call(base, 'DELETE', `${path}/${c.body.id}`, { key: admin })).status, 204);
    assert.equal((await call(base, 'DELETE', `${path}/${c.body.id}`, { key: admin })).status, 404);
    assert.equal((await call(base, 'POST', `/ingest/${c.body.id}`, { key: c.body.key ?? '' })).status, 404);
  });

  it('builds integration URLs on publicUrl when given', async () => {
    const si = await fresh({ publicUrl: 'https://terdut.example.com/' });
    const boot = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    const admin = boot.body.api_key.key ?? '';
    const t = await team(si.url, admin, 'p');
    const c = await call<WireIntegration>(si.url, 'POST', `/api/teams/${t.id}/integrations`, {
      key: admin,
      body: { name: 'am', kind: 'alertmanager' },
    });
    assert.equal(c.body.url, 'https://terdut.example.com/ingest/1');
  });

  it('cascades a team delete to its policy, switches and integrations', async () => {
    const { si, base, admin } = await bootstrapped();
    const t = await team(base, admin, 'doomed');
    const keep = await team(base, admin, 'kept');
    for (const id of [t.id, keep.id]) {
      await call(base, 'PUT', `/api/teams/${id}/escalation`, {
        key: admin,
        body: { repeat_count: 1, levels: [{ timeout_seconds: 60, targets: [{ kind: 'oncall' }] }] },
      });
      await call(base, 'POST', `/api/teams/${id}/deadman-switches`, {
        key: admin,
        body: { name: 'w', matcher: 'alertname=Watchdog', timeout_seconds: 60, severity: 'critical' },
      });
      await call(base, 'POST', `/api/teams/${id}/integrations`, {
        key: admin,
        body: { name: 'am', kind: 'alertmanager' },
      });
    }
    const doomedKey = (
      await call<WireIntegration>(base, 'POST', `/api/teams/${t.id}/integrations`, {
        key: admin,
        body: { name: 'am2', kind: 'webhook' },
      })
    ).body;
    assert.equal((await call(base, 'DELETE', `/api/teams/${t.id}`, { key: admin })).status, 204);

    const snap = si.snapshot();
    assert.deepEqual(
      snap.teams.map((x) => x.id),
      [keep.id],
    );
    assert.deepEqual(
      snap.policies.map((p) => p.teamId),
      [keep.id],
    );
    assert.deepEqual(
      snap.switches.map((s) => s.teamId),
      [keep.id],
    );
    assert.deepEqual(
      snap.integrations.map((i) => i.teamId),
      [keep.id],
    );
    assert.equal(
      (await call(base, 'POST', `/ingest/${doomedKey.id}`, { key: doomedKey.key ?? '' })).status,
      404,
    );
    assert.equal((await call(base, 'DELETE', `/api/teams/${t.id}`, { key: admin })).status, 404);
  });

  it('answers 404 "team not found" on every team-scoped route of a missing team, whatever the body', async () => {
    const { base, admin } = await bootstrapped();
    const routes: [string, string, unknown][] = [
      ['GET', '/api/teams/9', undefined],
      ['PUT', '/api/teams/9', {}],
      ['DELETE', '/api/teams/9', undefined],
      ['PUT', '/api/teams/9/oidc-groups', {}],
      ['GET', '/api/teams/9/escalation', undefined],
      ['PUT', '/api/teams/9/escalation', {}],
      ['GET', '/api/teams/9/deadman-switches', undefined],
      [
        'POST',
        '/api/teams/9/deadman-switches',
        { name: 's', matcher: 'a=b', timeout_seconds: 1, severity: 'x' },
      ],
      ['DELETE', '/api/teams/9/deadman-switches/1', undefined],
      ['GET', '/api/teams/9/integrations', undefined],
      ['POST', '/api/teams/9/integrations', {}],
      ['PATCH', '/api/teams/9/integrations/1', {}],
      ['DELETE', '/api/teams/9/integrations/1', undefined],
    ];
    for (const [method, path, body] of routes) {
      const r = await call(base, method, path, { key: admin, ...(body !== undefined ? { body } : {}) });
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.deepEqual(r.body, { error: 'team not found' }, `${method} ${path}`);
    }
  });

  it('failNext answers the injected status without acting, then lets requests through', async () => {
    const { si, base, admin } = await bootstrapped();
    si.failNext(1, { status: 503, method: 'POST', path: /^\/api\/teams$/ });
    // Not matching (GET): untouched.
    assert.equal((await call(base, 'GET', '/api/teams', { key: admin })).status, 200);
    const failed = await call(base, 'POST', '/api/teams', { key: admin, body: { name: 'p' } });
    assert.equal(failed.status, 503);
    assert.deepEqual(failed.body, { error: 'injected failure' });
    assert.equal(si.snapshot().teams.length, 0);
    assert.equal((await call(base, 'POST', '/api/teams', { key: admin, body: { name: 'p' } })).status, 201);

    si.failNext(2);
    assert.equal((await call(base, 'GET', '/healthz')).status, 200, 'knobs leave /healthz alone');
    assert.equal((await call(base, 'DELETE', '/api/teams/1', { key: admin })).status, 500);
    assert.equal((await call(base, 'GET', '/api/teams/1', { key: admin })).status, 500);
    assert.equal((await call(base, 'GET', '/api/teams/1', { key: admin })).status, 200);
    si.failNext(1, { path: /^\/healthz$/ });
    assert.equal((await call(base, 'GET', '/healthz')).status, 500, 'unless a path filter names it');
  });

  it('malformedNext answers 200 with a body that is not JSON, without acting', async () => {
    const { si, base, admin } = await bootstrapped();
    si.malformedNext(1, { method: 'POST' });
    const res = await fetch(`${base}/api/teams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'p' }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.throws(() => JSON.parse(text), SyntaxError);
    assert.equal(si.snapshot().teams.length, 0);
  });

  it('dropAfterCommitNext carries the request out, then the client sees a socket error', async () => {
    const { si, base, admin } = await bootstrapped();
    si.dropAfterCommitNext(1, { method: 'POST', path: /^\/api\/teams$/ });
    await assert.rejects(call(base, 'POST', '/api/teams', { key: admin, body: { name: 'p' } }), TypeError);
    assert.deepEqual(
      si.snapshot().teams.map((t) => t.name),
      ['p'],
    );
    // The retry a client would make now meets the committed state.
    assert.equal((await call(base, 'POST', '/api/teams', { key: admin, body: { name: 'p' } })).status, 409);
    const dropped = si.requests.filter((r) => r.fault === 'dropAfterCommit');
    assert.deepEqual(
      dropped.map((r) => [r.method, r.path, r.status]),
      [['POST', '/api/teams', 201]],
    );
  });

  it('setLatency delays every request but /healthz, and 0 clears it', async () => {
    const { si, base, admin } = await bootstrapped();
    si.setLatency(300);
    let t0 = performance.now();
    assert.equal((await call(base, 'GET', '/api/teams', { key: admin })).status, 200);
    assert.ok(performance.now() - t0 >= 290, 'delayed');
    t0 = performance.now();
    await call(base, 'GET', '/healthz');
    assert.ok(performance.now() - t0 < 250, '/healthz not delayed');
    si.setLatency(0);
    t0 = performance.now();
    await call(base, 'GET', '/api/teams', { key: admin });
    assert.ok(performance.now() - t0 < 250, 'cleared');
  });

  it('stop() refuses connections and keeps state; start() listens again on the same port', async () => {
    const { si, base, admin } = await bootstrapped();
    await team(base, admin, 'p');
    await si.stop();
    // A pooled keep-alive socket may first fail as "other side closed"; then it is refused.
    const codes: (string | undefined)[] = [];
    for (let i = 0; i < 3 && codes.at(-1) !== 'ECONNREFUSED'; i++) {
      await assert.rejects(fetch(`${base}/healthz`), (e: unknown) => {
        codes.push(
          e instanceof TypeError ? (e.cause as { code?: string } | undefined)?.code : 'not a TypeError',
        );
        return e instanceof TypeError;
      });
    }
    assert.equal(codes.at(-1), 'ECONNREFUSED', codes.join(', '));
    assert.equal(si.snapshot().teams.length, 1);
    await si.start();
    assert.equal(si.url, base);
    const teams = await call<WireTeam[]>(base, 'GET', '/api/teams', { key: admin });
    assert.equal(teams.status, 200);
    assert.deepEqual(
      teams.body.map((t) => t.name),
      ['p'],
    );
  });

  it('serves an HTTP control surface: arm knobs, read requests and state (no secrets)', async () => {
    const { si, base, admin } = await bootstrapped();
    const armed = await call(base, 'POST', '/_standin/faults', {
      body: { failNext: { n: 2, status: 503, method: 'DELETE', path: '^/api/teams' } },
    });
    assert.equal(armed.status, 204);
    await team(base, admin, 'p');
    assert.equal((await call(base, 'DELETE', '/api/teams/1', { key: admin })).status, 503);
    assert.equal((await call(base, 'DELETE', '/api/teams/1', { key: admin })).status, 503);
    assert.equal((await call(base, 'DELETE', '/api/teams/1', { key: admin })).status, 204);

    await call(base, 'POST', '/_standin/faults', { body: { malformedNext: { n: 1, path: '^/api/me$' } } });
    assert.equal(
      await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${admin}` } }).then((r) => r.text()),
      '{"id":',
    );
    await call(base, 'POST', '/_standin/faults', { body: { dropAfterCommitNext: { n: 1, method: 'POST' } } });
    await assert.rejects(call(base, 'POST', '/api/teams', { key: admin, body: { name: 'q' } }));
    await call(base, 'POST', '/_standin/faults', { body: { latencyMs: 120 } });
    const t0 = performance.now();
    await call(base, 'GET', '/api/teams', { key: admin });
    assert.ok(performance.now() - t0 >= 110);
    assert.equal((await call(base, 'DELETE', '/_standin/faults')).status, 204);

    const bad = await call(base, 'POST', '/_standin/faults', { body: { failNext: { n: 1, path: '(' } } });
    assert.equal(bad.status, 400);
    assert.equal((await call(base, 'POST', '/_standin/faults', { raw: 'nope' })).status, 400);

    const reqs = await call<{ method: string; path: string; status: number; fault?: string }[]>(
      base,
      'GET',
      '/_standin/requests',
    );
    assert.equal(reqs.status, 200);
    assert.deepEqual(
      reqs.body.filter((r) => r.method === 'DELETE').map((r) => [r.status, r.fault ?? null]),
      [
        [503, 'fail'],
        [503, 'fail'],
        [204, null],
      ],
    );
    assert.ok(!reqs.body.some((r) => r.path.startsWith('/_standin/')), 'the control surface is not logged');

    const state = await call<{ teams: { name: string }[]; users: { admin: boolean }[] }>(
      base,
      'GET',
      '/_standin/state',
    );
    assert.equal(state.status, 200);
    assert.deepEqual(
      state.body.teams.map((t) => t.name),
      ['q'],
    );
    assert.equal(state.body.users[0]?.admin, true);
    assert.ok(!state.text.includes(admin));
    assert.equal((await call(base, 'DELETE', '/_standin/requests')).status, 204);
    assert.equal(si.requests.length, 0);
  });

  it('logs every request, /healthz included, with its status, query and authenticated user', async () => {
    const { si, base, admin, adminId } = await bootstrapped();
    si.clearRequests();
    const start = Date.now();
    await call(base, 'GET', '/healthz');
    await call(base, 'GET', '/api/teams?name=p', { key: admin });
    await call(base, 'GET', '/api/teams');
    const log = si.requests;
    assert.deepEqual(
      log.map(({ method, path, query, status, userId }) => ({ method, path, query, status, userId })),
      [
        { method: 'GET', path: '/healthz', query: '', status: 200, userId: undefined },
        { method: 'GET', path: '/api/teams', query: 'name=p', status: 200, userId: adminId },
        { method: 'GET', path: '/api/teams', query: '', status: 401, userId: undefined },
      ],
    );
    assert.ok(log.every((r) => r.at >= start && r.at <= Date.now()));
    si.clearRequests();
    assert.deepEqual(si.requests, []);
  });

  it('lists every issued secret, and logs none of them', async () => {
    const lines: string[] = [];
    const si = await fresh({ log: (l) => lines.push(l) });
    const boot = await call<Bootstrap>(si.url, 'POST', '/api/bootstrap');
    const admin = boot.body.api_key.key ?? '';
    const k = await call<WireKey>(si.url, 'POST', '/api/users/1/api-keys', {
      key: admin,
      body: { name: 'x' },
    });
    await call(si.url, 'DELETE', `/api/users/1/api-keys/${k.body.id}`, { key: admin });
    const t = await team(si.url, admin, 'p');
    const i = await call<WireIntegration>(si.url, 'POST', `/api/teams/${t.id}/integrations`, {
      key: admin,
      body: { name: 'am', kind: 'alertmanager' },
    });
    assert.deepEqual(si.issuedSecrets(), [admin, k.body.key, i.body.key]);
    assert.ok(lines.length > 0);
    assert.ok(
      lines.every((l) => l.startsWith('terdut-server stand-in')),
      'every log line names the stand-in',
    );
    for (const secret of si.issuedSecrets()) {
      assert.ok(!lines.some((l) => l.includes(secret)), 'a secret reached the log');
      assert.ok(!JSON.stringify(si.snapshot()).includes(secret), 'a secret reached the snapshot');
    }
  });

  it('runs as a process: prints its URL, serves, exits 0 on SIGTERM', async () => {
    const main = join(import.meta.dirname, '../src/server/main.ts');
    const child = spawn(process.execPath, [main, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /terdut-server stand-in listening on (http:\/\/\S+)/.exec(out);
        if (m?.[1]) resolve(m[1]);
      });
      child.on('exit', () => reject(new Error(`exited before listening: ${out}`)));
    });
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await call(url, 'GET', '/healthz')).status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
