/**
 * The decider with its state in a real redis-server (Valkey speaks the same protocol):
 * the proof-of-work round trip and the clearance it buys, shared by replicas and kept
 * across restarts; the flood counter; and what happens when Valkey goes away (the
 * decider fails open and says so) and comes back.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import type { RunningDecider } from '../src/decider/run.ts';
import { leadingZeroBits, workDigest } from '../src/domain/decider/proof-of-work.ts';
import { extAuthzFilter } from '../src/domain/edge-site/filters.ts';
import {
  BASE_SPEC,
  DeciderHarness,
  extAuthz,
  type TestList,
  verdictOf,
  within,
} from './support/decider-harness.ts';
import { type RedisServer, startRedis } from './support/decider-redis.ts';
import { EDGE_OPTIONS } from './support/edge-site-options.ts';
import { slowProxy } from './support/slow-proxy.ts';

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
  return { 'x-forwarded-for': addr, ...extra };
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
    assert.match(solved.cookie, /^exoledge_clearance=v1\.[0-9]+\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}; /);
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

  it('starts knowing the shared key when Valkey is slow to answer its first connection: a clearance passes at the first request', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const first = await h.start({ valkeyUrl: redis.url });
    const { nonce, difficulty } = await nonceFor(first, '203.0.113.7');
    const solved = await answer(first, '203.0.113.7', { nonce, counter: solve(nonce, difficulty) });
    assert.equal(solved.status, 200, JSON.stringify(solved.body));
    const cookie = (solved.cookie ?? '').split(';')[0] ?? '';
    await first.close();
    // Each connection answers 150 ms after it opens (within VALKEY_TIMEOUT_MS): the start
    // must wait for it, not send its one read before the connection is ready, fail, and
    // serve without the key.
    const slow = await slowProxy(redis.port, 150);
    t.after(() => slow.close());
    const second = await h.start({ valkeyUrl: slow.url });
    assert.deepEqual(await extAuthz(second, '/', from('203.0.113.7', { cookie })), {
      status: 200,
      verdict: 'pass',
      reason: 'Cleared',
    });
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

  it('never drops a listed client flooding challenges: 500 in a minute, each a challenge, harder past the 120th', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const d = await h.start({ valkeyUrl: redis.url });
    const pages: { status: number; verdict: string | null; difficulty: number }[] = [];
    // Ten at a time, as a NAT's many browsers would: the order of the counts is not asserted.
    for (let i = 0; i < 500; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const res = await fetch(`${d.url}/v1/verdict/`, { headers: from('203.0.113.50') });
          const body = await res.text();
          const difficulty = Number(/data-difficulty="([0-9]+)"/.exec(body)?.[1] ?? -1);
          return { status: res.status, verdict: res.headers.get('x-exoledge-verdict'), difficulty };
        }),
      );
      pages.push(...batch);
    }
    assert.ok(
      pages.every((p) => p.status === 403 && p.verdict === 'pow'),
      'every answer a challenge page, none a drop',
    );
    const difficulties = pages.map((p) => p.difficulty).sort((a, b) => a - b);
    // 120 at the site's 8 bits, then 9 (121-239), 10 (240-479), 11 (480-500).
    assert.deepEqual(
      [8, 9, 10, 11].map((bits) => difficulties.filter((x) => x === bits).length),
      [120, 119, 240, 21],
    );
    const fresh = await (await fetch(`${d.url}/v1/verdict/`, { headers: from('203.0.113.51') })).text();
    assert.match(fresh, /data-difficulty="8"/, 'counted per client');
  });
});

describe('decider with Valkey: fail open', () => {
  it('keeps answering when Valkey is killed: lists still apply, clearances still pass, /readyz says degraded', async (t) => {
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
    // The clearance is checked by its signature: the cleared client still passes.
    assert.deepEqual(await extAuthz(d, '/', from('203.0.113.7', { cookie })), {
      status: 200,
      verdict: 'pass',
      reason: 'Cleared',
    });
    assert.equal((await extAuthz(d, '/', from('8.8.8.8'))).verdict, 'pass');
    assert.equal((await extAuthz(d, '/', from('45.0.0.1'))).status, 403);
    // An uncleared listed client is counted in Valkey: that call fails, and it is challenged anyway.
    assert.deepEqual(await extAuthz(d, '/', from('203.0.113.77')), {
      status: 403,
      verdict: 'pow',
      reason: 'PresumedListed',
    });
    assert.ok(Date.now() - started < 1000, 'verdicts do not wait on a dead Valkey');

    const ready = await fetch(`${d.url}/readyz`);
    assert.equal(ready.status, 200, 'still in the Service');
    assert.match(await ready.text(), /degraded: valkey unreachable/);
    assert.ok((await metric(d, 'exoledge_decider_valkey_failures_total')) >= 1);
    assert.equal(await metric(d, 'exoledge_decider_valkey_up'), 0);
    // A new visitor still gets a clearance (the key read before is kept); replay is then unchecked.
    const other = await nonceFor(d, '203.0.113.8');
    const cleared = await answer(d, '203.0.113.8', { nonce: other.nonce, counter: solve(other.nonce, 8) });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));

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
    // With the key from the Secret, the challenge needs no Valkey at all.
    const keyed = await h.start({ valkeyUrl: 'redis://127.0.0.1:1', signingKeys: ['s'.repeat(40)] });
    const { nonce } = await nonceFor(keyed, '203.0.113.7');
    const solved = await answer(keyed, '203.0.113.7', { nonce, counter: solve(nonce, 8) });
    assert.equal(solved.status, 200, JSON.stringify(solved.body));
    const cookie = solved.cookie!.split(';')[0]!;
    assert.equal((await extAuthz(keyed, '/', from('203.0.113.7', { cookie }))).reason, 'Cleared');
  });
});

/**
 * The headers Envoy passes to the client with a denied check: those the site's ext_authz
 * filter lists in `allowed_client_headers`, read from the EnvoyFilter the operator renders.
 */
function clientHeadersOnDeny(): Set<string> {
  const ref = {
    name: 'shop',
    namespace: 'shop',
    owner: {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'EdgeSite',
      name: 'shop',
      uid: 'u',
      controller: true,
      blockOwnerDeletion: true,
    },
  };
  const filter = extAuthzFilter(ref, SPEC, EDGE_OPTIONS) as unknown as {
    spec: { configPatches: { patch: { value: { typed_config: Record<string, unknown> } } }[] };
  };
  const config = filter.spec.configPatches[0]!.patch.value.typed_config as {
    allowed_headers: { patterns: { exact: string }[] };
    http_service: { authorization_response: { allowed_client_headers: { patterns: { exact: string }[] } } };
  };
  assert.ok(
    config.allowed_headers.patterns.some((p) => p.exact === 'cookie'),
    'the check carries the clearance cookie',
  );
  return new Set(
    config.http_service.authorization_response.allowed_client_headers.patterns.map((p) => p.exact),
  );
}

/** The visitor's own solver: SHA-256 from node:crypto, zero bits read off the binary string. */
function solveOwn(nonce: string, difficulty: number): number {
  for (let counter = 0; ; counter++) {
    const bits = [...createHash('sha256').update(`${nonce}${counter}`).digest()]
      .map((b) => b.toString(2).padStart(8, '0'))
      .join('');
    if (!bits.startsWith('0'.repeat(difficulty))) continue;
    return counter;
  }
}

describe("decider: a Presumed visitor's whole challenge, as Envoy's ext_authz would call it", () => {
  /**
   * One check as Envoy's ext_authz HTTP filter makes it: the request's method, the path
   * prefix and the request's path with its query, the host, the allowed headers (the
   * cookie, X-Forwarded-For with the gateway's peer appended). A denial is what the client
   * gets: its status, its body, and only the headers the filter passes on.
   */
  async function check(
    d: RunningDecider,
    path: string,
    client: string,
    cookie?: string,
  ): Promise<{ status: number; headers: Map<string, string>; body: string }> {
    const res = await fetch(`${d.url}/v1/verdict${path}`, {
      headers: {
        host: 'shop.example.com',
        'user-agent': 'Mozilla/5.0',
        // The client wrote a forged entry; the gateway appended the peer it saw.
        'x-forwarded-for': `1.1.1.1, ${client}`,
        ...(cookie ? { cookie } : {}),
      },
      redirect: 'manual',
    });
    const body = await res.text();
    const passed = clientHeadersOnDeny();
    const headers = new Map<string, string>();
    for (const [name, value] of res.headers) {
      if (res.status === 200 || passed.has(name)) headers.set(name, value);
    }
    return { status: res.status, headers, body };
  }

  /** Page, answer, redirect with the cookie, pass: what a browser does, with the test's own solver. */
  async function clearance(d: RunningDecider, client: string): Promise<string> {
    const page = await check(d, '/cart?item=42', client);
    assert.equal(page.status, 403, page.body);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const nonce = /data-nonce="([^"]+)"/.exec(page.body)?.[1];
    const difficulty = Number(/data-difficulty="([0-9]+)"/.exec(page.body)?.[1]);
    const answerPath = /data-answer="([^"]+)"/.exec(page.body)?.[1];
    assert.ok(nonce && answerPath && difficulty === 8, page.body);
    const counter = solveOwn(nonce, difficulty);
    const answered = await check(
      d,
      `${answerPath}?nonce=${encodeURIComponent(nonce)}&counter=${counter}&to=${encodeURIComponent('/cart?item=42')}`,
      client,
    );
    assert.equal(answered.status, 303, answered.body);
    assert.equal(answered.headers.get('location'), '/cart?item=42');
    const setCookie = answered.headers.get('set-cookie') ?? '';
    assert.match(
      setCookie,
      /^exoledge_clearance=[^;]+; Path=\/; Max-Age=1800; HttpOnly; Secure; SameSite=Lax$/,
    );
    return setCookie.split(';')[0]!;
  }

  it('gets the challenge, solves it, receives the clearance and passes; the same after Valkey is stopped', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES, SCANNERS);
    const d = await h.start({ valkeyUrl: redis.url });
    const cookie = await clearance(d, '203.0.113.7');
    const passed = await check(d, '/cart?item=42', '203.0.113.7', `theme=dark; ${cookie}`);
    assert.deepEqual(
      [passed.status, passed.headers.get('x-exoledge-verdict'), passed.headers.get('x-exoledge-reason')],
      [200, 'pass', 'Cleared'],
    );

    await redis.kill();
    t.after(() => redis.restart());
    const still = await check(d, '/', '203.0.113.7', cookie);
    assert.deepEqual([still.status, still.headers.get('x-exoledge-reason')], [200, 'Cleared']);
    // A new visitor, with Valkey gone: the whole round trip again.
    const second = await clearance(d, '203.0.113.8');
    const through = await check(d, '/cart?item=42', '203.0.113.8', second);
    assert.deepEqual([through.status, through.headers.get('x-exoledge-reason')], [200, 'Cleared']);
    // The cookie is the visitor's: a Certain-listed address presenting it is still dropped.
    assert.equal((await check(d, '/', '45.0.0.9', second)).status, 403);
  });

  it('sends a wrong answer back to a fresh challenge, and never redirects off the site', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const d = await h.start({ signingKeys: ['q'.repeat(32)] });
    const wrong = await check(d, '/.exoledge/challenge?nonce=forged.1.8.x&counter=1&to=/a', '203.0.113.7');
    assert.equal(wrong.status, 403);
    assert.match(wrong.body, /data-nonce="[^"]+"/);
    assert.ok(!wrong.headers.has('set-cookie'));
    const page = await check(d, '/', '203.0.113.7');
    const nonce = /data-nonce="([^"]+)"/.exec(page.body)![1]!;
    const counter = solveOwn(nonce, 8);
    for (const to of ['https://evil.example/', '//evil.example/', '/\\evil.example']) {
      const answered = await check(
        d,
        `/.exoledge/challenge?nonce=${encodeURIComponent(nonce)}&counter=${counter}&to=${encodeURIComponent(to)}`,
        '203.0.113.7',
      );
      // The first answer clears (and goes home, not to the URL given); the nonce is then spent.
      if (answered.status === 303) assert.equal(answered.headers.get('location'), '/', to);
      else assert.equal(answered.status, 403, to);
    }
  });
});
