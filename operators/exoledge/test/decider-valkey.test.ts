/**
 * The decider with its state in a real redis-server (Valkey speaks the same protocol):
 * the proof-of-work round trip and the clearance it buys, shared by replicas and kept
 * across restarts; the flood counter; and what happens when Valkey goes away (the
 * decider fails open and says so) and comes back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import type { RunningDecider } from '../src/decider/run.ts';
import { leadingZeroBits, workDigest } from '../src/domain/decider/proof-of-work.ts';
import {
  BASE_SPEC,
  DeciderHarness,
  extAuthz,
  type TestList,
  verdictOf,
  within,
} from './support/decider-harness.ts';
import { type RedisServer, startRedis } from './support/decider-redis.ts';

const PROXIES: TestList = {
  name: 'proxies',
  kind: ListKind.Presumed,
  entries: ['203.0.113.0/24', '2001:db8:aa::/48'],
};
const SCANNERS: TestList = { name: 'scanners', kind: ListKind.Certain, entries: ['45.0.0.0/16'] };
/** The easiest the CRD allows: about 256 hashes to solve. */
const SPEC = { ...BASE_SPEC, filter: { difficulty: 8, clearance: '30m' } };

/** A client's own solver: counters from 0 until the hash has enough zero bits. */
function solve(nonce: string, difficulty: number): number {
  for (let counter = 0; ; counter++) {
    if (leadingZeroBits(workDigest(nonce, counter)) >= difficulty) return counter;
  }
}

function from(addr: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'x-envoy-external-address': addr, ...extra };
}

async function nonceFor(d: RunningDecider, addr: string): Promise<{ nonce: string; difficulty: number }> {
  const res = await fetch(`${d.url}/v1/challenge`, { headers: from(addr) });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { nonce: string; difficulty: number };
}

async function answer(
  d: RunningDecider,
  addr: string,
  body: unknown,
): Promise<{ status: number; cookie: string | null; body: Record<string, unknown> }> {
  const res = await fetch(`${d.url}/v1/challenge`, {
    method: 'POST',
    headers: from(addr, { 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    cookie: res.headers.get('set-cookie'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

async function metric(d: RunningDecider, name: string): Promise<number> {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `no ${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

describe('decider with Valkey: the proof-of-work and its clearance', () => {
  it('clears a listed client that solves a challenge, and remembers it across a restart', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const first = await h.start({ valkeyUrl: redis.url });
    assert.equal((await extAuthz(first, '/', from('203.0.113.7'))).verdict, 'pow');

    const { nonce, difficulty } = await nonceFor(first, '203.0.113.7');
    assert.equal(difficulty, 8);
    const solved = await answer(first, '203.0.113.7', { nonce, counter: solve(nonce, difficulty) });
    assert.equal(solved.status, 200, JSON.stringify(solved.body));
    assert.ok(solved.cookie);
    assert.match(solved.cookie, /^exoledge_clearance=[A-Za-z0-9_-]{43}; /);
    for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Max-Age=1800', 'Path=/']) {
      assert.ok(solved.cookie.split('; ').includes(attribute), `${attribute} in ${solved.cookie}`);
    }
    const cookie = solved.cookie.split(';')[0]!;
    assert.deepEqual(await extAuthz(first, '/', from('203.0.113.7', { cookie: `theme=dark; ${cookie}` })), {
      status: 200,
      verdict: 'pass',
      reason: 'Cleared',
    });

    await first.close();
    const second = await h.start({ valkeyUrl: redis.url });
    assert.equal((await extAuthz(second, '/', from('203.0.113.7', { cookie }))).reason, 'Cleared');
    // The token is the client's: another listed address presenting it is challenged.
    assert.equal((await extAuthz(second, '/', from('203.0.113.8', { cookie }))).verdict, 'pow');
    // One nonce, one clearance.
    const again = await answer(second, '203.0.113.7', { nonce, counter: solve(nonce, difficulty) });
    assert.deepEqual([again.status, again.body.error], [403, 'NonceUsed']);
  });

  it('lets one replica check the nonce another made: they share the signing key', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const [a, b] = [await h.start({ valkeyUrl: redis.url }), await h.start({ valkeyUrl: redis.url })];
    const { nonce, difficulty } = await nonceFor(a, '2001:db8:aa::1');
    // Another address of the same /64 is the same client.
    const solved = await answer(b, '2001:db8:aa::2', { nonce, counter: solve(nonce, difficulty) });
    assert.equal(solved.status, 200, JSON.stringify(solved.body));
    const other = await nonceFor(a, '203.0.113.9');
    const elsewhere = await answer(b, '203.0.113.10', { nonce: other.nonce, counter: solve(other.nonce, 8) });
    assert.deepEqual([elsewhere.status, elsewhere.body.error], [403, 'ForgedNonce']);
  });

  it('refuses an answer whose work is not done', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const d = await h.start({ valkeyUrl: redis.url });
    const { nonce } = await nonceFor(d, '203.0.113.7');
    let counter = 0;
    while (leadingZeroBits(workDigest(nonce, counter)) >= 8) counter++;
    const refused = await answer(d, '203.0.113.7', { nonce, counter });
    assert.deepEqual([refused.status, refused.body.error, refused.cookie], [403, 'InsufficientWork', null]);
  });

  it('drops a listed client sent more than 120 challenges in a minute without answering one', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const d = await h.start({ valkeyUrl: redis.url });
    const verdicts: string[] = [];
    for (let i = 0; i < 122; i++) verdicts.push((await extAuthz(d, '/', from('203.0.113.50'))).verdict ?? '');
    assert.deepEqual(verdicts.slice(0, 120), Array(120).fill('pow'));
    assert.deepEqual(verdicts.slice(120), ['drop', 'drop']);
    assert.equal((await extAuthz(d, '/', from('203.0.113.51'))).verdict, 'pow', 'counted per client');
  });
});

describe('decider with Valkey: fail open', () => {
  it('keeps answering when Valkey is killed: lists still apply, no clearance counts, /readyz says degraded', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES, SCANNERS);
    const d = await h.start({ valkeyUrl: redis.url });
    const { nonce } = await nonceFor(d, '203.0.113.7');
    const cookie = (await answer(d, '203.0.113.7', { nonce, counter: solve(nonce, 8) })).cookie!.split(
      ';',
    )[0]!;
    assert.equal(await metric(d, 'exoledge_decider_valkey_up'), 1);

    await redis.kill();
    t.after(() => redis.restart());
    const started = Date.now();
    // No token can be checked: the cleared client is challenged again; the rest is unchanged.
    assert.deepEqual(await extAuthz(d, '/', from('203.0.113.7', { cookie })), {
      status: 200,
      verdict: 'pow',
      reason: 'PresumedListed',
    });
    assert.equal((await extAuthz(d, '/', from('8.8.8.8'))).verdict, 'pass');
    assert.equal((await extAuthz(d, '/', from('45.0.0.1'))).status, 403);
    assert.ok(Date.now() - started < 1000, 'verdicts do not wait on a dead Valkey');

    const ready = await fetch(`${d.url}/readyz`);
    assert.equal(ready.status, 200, 'still in the Service');
    assert.match(await ready.text(), /degraded: valkey unreachable/);
    assert.ok((await metric(d, 'exoledge_decider_valkey_failures_total')) >= 1);
    assert.equal(await metric(d, 'exoledge_decider_valkey_up'), 0);
    const other = await nonceFor(d, '203.0.113.8');
    const refused = await answer(d, '203.0.113.8', { nonce: other.nonce, counter: solve(other.nonce, 8) });
    assert.deepEqual([refused.status, refused.body.error], [503, 'StateUnavailable']);

    await redis.restart();
    await within(5000, 'Valkey answers again', async () => {
      await extAuthz(d, '/', from('203.0.113.99'));
      return !/degraded/.test(await (await fetch(`${d.url}/readyz`)).text());
    });
    assert.equal(await metric(d, 'exoledge_decider_valkey_up'), 1);
  });

  it('starts ready without Valkey, degraded, and gives verdicts without state', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    // A port nothing listens on.
    const d = await h.start({ valkeyUrl: 'redis://127.0.0.1:1' });
    const ready = await fetch(`${d.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.match(await ready.text(), /degraded: valkey unreachable/);
    assert.deepEqual(await verdictOf(d, '203.0.113.7'), {
      verdict: 'pow',
      reason: 'PresumedListed',
      list: 'proxies',
    });
    const res = await fetch(`${d.url}/v1/challenge`, { headers: from('203.0.113.7') });
    assert.equal(res.status, 503, 'no nonce without the shared key');
  });
});
