/**
 * The decider process with its lists: verdicts for addresses in and out of each list,
 * the lists and the site's files reloaded while it runs, and the client address it
 * trusts. Shards come from memory (the watch through the API is one implementation of
 * the same feed); no Valkey: these verdicts do not depend on state.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ListKind } from '../src/api/blocklist-source.ts';
import { Posture } from '../src/api/edge-site.ts';
import {
  BASE_SPEC,
  DeciderHarness,
  extAuthz,
  shardsOf,
  type TestList,
  verdictOf,
  within,
} from './support/decider-harness.ts';

const PROXIES: TestList = {
  name: 'proxies',
  kind: ListKind.Presumed,
  entries: ['198.51.100.0/24', '203.0.113.7', '2001:db8:aa::/48', '192.0.2.128/25'],
};
const TOR: TestList = { name: 'tor', kind: ListKind.Presumed, entries: ['100.64.1.1', '2001:db8:77::1'] };
const SIGNING_KEY = 'k'.repeat(32);
const SCANNERS: TestList = {
  name: 'scanners',
  kind: ListKind.Certain,
  entries: ['45.0.0.0/16', '2001:db8:bad::/48'],
};

describe('decider: verdicts for the lists it serves', () => {
  it('gives each v4 and v6 address the verdict of the lists holding it, allowlists first', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec({ ...BASE_SPEC, posture: Posture.Challenge, security: { allowlists: ['payment'] } });
    await h.writeAllowlist('payment', {
      'addresses.txt': '# our payment provider\n198.51.100.9\n2001:db8:aa:1::/64 ; its v6 range\n',
    });
    h.publish(PROXIES, TOR, SCANNERS);
    const d = await h.start();
    const table: [string, string, string, string | undefined][] = [
      ['198.51.100.1', 'pow', 'PresumedListed', 'proxies'],
      ['203.0.113.7', 'pow', 'PresumedListed', 'proxies'],
      ['203.0.113.8', 'pass', 'NotListed', undefined],
      ['192.0.2.200', 'pow', 'PresumedListed', 'proxies'],
      ['192.0.2.1', 'pass', 'NotListed', undefined],
      ['::ffff:198.51.100.77', 'pow', 'PresumedListed', 'proxies'],
      ['2001:db8:aa:ffff::1', 'pow', 'PresumedListed', 'proxies'],
      ['2001:db8:ab::1', 'pass', 'NotListed', undefined],
      ['100.64.1.1', 'pow', 'PresumedListed', 'tor'],
      ['2001:db8:77::1', 'pow', 'PresumedListed', 'tor'],
      ['2001:db8:77::2', 'pass', 'NotListed', undefined],
      ['45.0.200.1', 'drop', 'CertainListed', 'scanners'],
      ['2001:db8:bad:1::9', 'drop', 'CertainListed', 'scanners'],
      ['198.51.100.9', 'pass', 'Allowlisted', undefined],
      ['2001:db8:aa:1::42', 'pass', 'Allowlisted', undefined],
      ['2001:db8:aa:2::42', 'pow', 'PresumedListed', 'proxies'],
    ];
    for (const [addr, verdict, reason, list] of table) {
      const got = await verdictOf(d, addr);
      assert.deepEqual(got, { verdict, reason, ...(list ? { list } : {}) }, addr);
    }
  });

  it('answers ext_authz: 200 with the verdict header for pass, the challenge page (403) for a challenge, 403 for drop', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(BASE_SPEC);
    h.publish(PROXIES, SCANNERS);
    const d = await h.start({ signingKeys: [SIGNING_KEY] });
    const ext = (addr: string, method = 'GET') =>
      extAuthz(d, '/cart/checkout?id=3', { 'x-forwarded-for': addr }, method);
    assert.deepEqual(await ext('203.0.113.7'), { status: 403, verdict: 'pow', reason: 'PresumedListed' });
    assert.deepEqual(await ext('8.8.8.8', 'POST'), { status: 200, verdict: 'pass', reason: 'NotListed' });
    // A drop goes to the client as it is: it says nothing of why.
    assert.deepEqual(await ext('45.0.0.1'), { status: 403, verdict: 'drop', reason: null });
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    assert.match(metrics, /exoledge_decider_verdicts_total\{verdict="drop",reason="CertainListed"\} 1/);
  });

  it('answers every ext_authz path with a verdict: a client path with dot segments never reaches /metrics or /healthz', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(BASE_SPEC);
    h.publish(SCANNERS);
    const d = await h.start();
    // Raw paths, as Envoy forwards them when path normalisation is off; fetch() would resolve them first.
    const raw = (path: string): Promise<{ status: number; verdict: string | undefined }> =>
      new Promise((resolve, reject) => {
        const { hostname, port } = new URL(d.url);
        // `path` as an option goes out as written; in a URL string it would be resolved first.
        const headers = { 'x-forwarded-for': '45.0.0.1' };
        const req = request({ hostname, port, path, headers }, (res) => {
          res.resume();
          res.on('end', () => {
            const v = res.headers['x-exoledge-verdict'];
            resolve({ status: res.statusCode ?? 0, verdict: typeof v === 'string' ? v : undefined });
          });
        });
        req.on('error', reject);
        req.end();
      });
    for (const path of [
      '/v1/verdict/../../metrics',
      '/v1/verdict/%2e%2e/%2e%2e/healthz',
      '/v1/verdict/./../readyz',
      '/v1/verdict//healthz?x=1',
    ]) {
      // A Certain-listed client: a 200 from another endpoint would let it through.
      assert.deepEqual(await raw(path), { status: 403, verdict: 'drop' }, path);
    }
  });

  it('serves only the Presumed lists the site selects, and every Certain list', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec({ ...BASE_SPEC, security: { blocklists: ['tor'] } });
    h.publish(PROXIES, TOR, SCANNERS);
    const d = await h.start();
    assert.equal((await verdictOf(d, '203.0.113.7')).reason, 'NotListed');
    assert.equal((await verdictOf(d, '100.64.1.1')).reason, 'PresumedListed');
    assert.equal((await verdictOf(d, '45.0.0.1')).reason, 'CertainListed');
  });
});

describe('decider: lists change while it runs', () => {
  it('serves a new version of a list within 2 s, without a restart', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(BASE_SPEC);
    h.publish(PROXIES);
    const d = await h.start();
    assert.equal((await verdictOf(d, '100.64.9.9')).verdict, 'pass');
    h.publish({ ...PROXIES, entries: [...PROXIES.entries, '100.64.9.0/24'] });
    await within(
      2000,
      '100.64.9.9 challenged',
      async () => (await verdictOf(d, '100.64.9.9')).verdict === 'pow',
    );
  });

  for (const [change, before, after] of [
    ['grows', 5, 11],
    ['shrinks', 11, 5],
  ] as const) {
    it(`answers every request while a list ${change} by the old version or the new one, never a mix`, async (t) => {
      const h = await DeciderHarness.create(t);
      await h.writeSpec(BASE_SPEC);
      // Version `n`: the hosts 10.0.i.1 for i < n, and n's own marker host. Shards of two
      // lines, rewritten in place one at a time as the operator does.
      const version = (n: number): TestList => ({
        name: 'proxies',
        kind: ListKind.Presumed,
        entries: [...Array.from({ length: n }, (_, i) => `10.0.${i}.1`), `172.16.${n}.1`],
      });
      h.feed.set(shardsOf(version(before)));
      const d = await h.start();
      const probes = [
        ...Array.from({ length: 12 }, (_, i) => `10.0.${i}.1`),
        `172.16.${before}.1`,
        `172.16.${after}.1`,
      ];
      const listedIn = (n: number, addr: string): boolean => version(n).entries.includes(addr);
      const answers: string[][] = [];
      const sample = async (): Promise<void> => {
        const row: string[] = [];
        for (const p of probes) row.push((await verdictOf(d, p)).verdict);
        answers.push(row);
      };
      await sample();
      const next = shardsOf(version(after));
      const old = shardsOf(version(before));
      // Write the new shards in place, then delete the surplus: the operator's order.
      // Each view is applied off the request thread, a moment after it is delivered: a row
      // is sampled once it is served, so that a swap during a row is not taken for a mix.
      for (const cm of next) {
        h.feed.put(cm);
        await d.decider.shardsSettled();
        await sample();
      }
      for (const cm of old.slice(next.length)) {
        h.feed.remove(cm.name);
        await d.decider.shardsSettled();
        await sample();
      }
      const expect = (n: number) => probes.map((p) => (listedIn(n, p) ? 'pow' : 'pass'));
      const oldRow = expect(before);
      const newRow = expect(after);
      assert.notDeepEqual(oldRow, newRow);
      for (const [i, row] of answers.entries()) {
        assert.ok(
          JSON.stringify(row) === JSON.stringify(oldRow) || JSON.stringify(row) === JSON.stringify(newRow),
          `sample ${i} is a mix: ${row.join(' ')}`,
        );
      }
      assert.deepEqual(answers.at(-1), newRow, 'the new version is served at the end');
    });
  }

  it('keeps serving the version it had when a new one does not parse, and says so in /readyz', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec(BASE_SPEC);
    h.publish(PROXIES);
    const d = await h.start();
    const [good] = shardsOf({ name: 'proxies', kind: ListKind.Presumed, entries: ['203.0.113.7'] });
    const text = 'not-an-address\n';
    const { createHash } = await import('node:crypto');
    h.feed.set([
      {
        ...good!,
        data: {
          'prefixes.txt': text,
          fingerprint: createHash('sha256').update(text).digest('hex'),
          total: '1',
        },
      },
    ]);
    await d.decider.shardsSettled();
    assert.equal((await verdictOf(d, '198.51.100.1')).verdict, 'pow', 'the previous version is still served');
    const ready = await fetch(`${d.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.match(
      await ready.text(),
      /degraded: shards: list proxies version [0-9a-f]{12}: 1 lines do not parse/,
    );
  });
});

describe('decider: the site files reload while it runs', () => {
  it('applies a posture change from the site configuration without a restart', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec({ ...BASE_SPEC, posture: Posture.Observe });
    h.publish(PROXIES);
    const d = await h.start();
    assert.deepEqual(await verdictOf(d, '203.0.113.7'), {
      verdict: 'pass',
      reason: 'ListedObserved',
      list: 'proxies',
    });
    await h.writeSpec({
      ...BASE_SPEC,
      posture: Posture.Strict,
      captcha: { provider: 'Turnstile', siteKey: 'site-key', secretRef: { name: 'captcha' } },
    });
    await within(
      3000,
      'posture Strict applied',
      async () => (await verdictOf(d, '203.0.113.7')).verdict === 'captcha',
    );
  });

  it('keeps the configuration it had when the file stops parsing, and reports it', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec({ ...BASE_SPEC, posture: Posture.Challenge });
    h.publish(PROXIES);
    const d = await h.start();
    await h.writeConfigText('{"posture": "Panic"');
    await within(3000, 'the refusal reported', async () =>
      /degraded: site configuration .* is refused: not JSON/.test(
        await (await fetch(`${d.url}/readyz`)).text(),
      ),
    );
    assert.equal((await verdictOf(d, '203.0.113.7')).verdict, 'pow');
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    assert.match(metrics, /exoledge_decider_reload_failures_total\{source="site-config"\} 1/);
  });

  it('applies an allowlist edit, and refuses one with a bad line while keeping the previous version', async (t) => {
    const h = await DeciderHarness.create(t);
    await h.writeSpec({ ...BASE_SPEC, security: { allowlists: ['crawlers'] } });
    await h.writeAllowlist('crawlers', { list: '203.0.113.7\n' });
    h.publish(PROXIES);
    const d = await h.start();
    assert.equal((await verdictOf(d, '203.0.113.7')).reason, 'Allowlisted');
    await h.writeAllowlist('crawlers', { list: '198.51.100.5\n', more: '2001:db8:aa::/56\n' });
    await within(
      3000,
      'the new allowlist',
      async () => (await verdictOf(d, '198.51.100.5')).reason === 'Allowlisted',
    );
    assert.equal((await verdictOf(d, '203.0.113.7')).reason, 'PresumedListed');
    assert.equal((await verdictOf(d, '2001:db8:aa:ff::1')).reason, 'Allowlisted');
    await h.writeAllowlist('crawlers', { list: '198.51.100.5\n0.0.0.0/0\n' });
    await within(3000, 'the refusal reported', async () =>
      /degraded: allowlist crawlers is refused: .*line 2/.test(await (await fetch(`${d.url}/readyz`)).text()),
    );
    assert.equal((await verdictOf(d, '198.51.100.5')).reason, 'Allowlisted');
    assert.equal((await verdictOf(d, '198.51.100.6')).reason, 'PresumedListed', 'not everyone is exempt');
  });
});

describe('decider: readiness and the client address', () => {
  it('is not ready, and answers verdicts 503, until it has read its shards and configuration', async (t) => {
    const h = await DeciderHarness.create(t);
    h.publish(PROXIES);
    const d = await h.start();
    const before = await fetch(`${d.url}/readyz`);
    assert.equal(before.status, 503);
    assert.match(await before.text(), /\[-\]site-config failed: never read/);
    const ext = await extAuthz(d, '/', { 'x-forwarded-for': '203.0.113.7' });
    assert.equal(ext.status, 503, 'ext_authz applies failurePolicy to a 5xx');
    await h.writeSpec(BASE_SPEC);
    await within(3000, 'ready', async () => (await fetch(`${d.url}/readyz`)).status === 200);
    assert.equal((await fetch(`${d.url}/healthz`)).status, 200);
  });

  /**
   * An attacker's request as the gateway forwards it: whatever the client wrote on the
   * left of X-Forwarded-For, then what each trusted hop appended (the client's real
   * address, then each hop's peer), and any header a client can add. The verdict must be
   * the real address's, from a fixed table, for 0, 1 and 2 trusted hops.
   */
  for (const hops of [0, 1, 2]) {
    it(`as an attacker, with ${hops} trusted hop(s): forged x-envoy-external-address, x-real-ip and left-hand X-Forwarded-For entries change no verdict, as Envoy's ext_authz would call it`, async (t) => {
      const h = await DeciderHarness.create(t);
      await h.writeSpec(BASE_SPEC);
      h.publish(PROXIES, SCANNERS);
      const d = await h.start({ trustedHops: hops, signingKeys: [SIGNING_KEY] });
      /** The real client, and what ext_authz must say of it. */
      const clients: readonly [string, number, string][] = [
        ['45.0.3.4', 403, 'drop'],
        ['203.0.113.7', 403, 'pow'],
        ['198.51.100.9', 403, 'pow'],
        ['8.8.8.8', 200, 'pass'],
      ];
      // Addresses an attacker would claim: the unlisted one and an allowlisted-looking one.
      const claim = fc.constantFrom('8.8.8.8', '1.1.1.1', '198.51.100.9', '45.0.3.4', 'garbage', '');
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...clients),
          fc.array(claim, { maxLength: 3 }),
          fc.record(
            {
              'x-envoy-external-address': claim,
              'x-real-ip': claim,
              'true-client-ip': claim,
              forwarded: claim.map((c) => `for=${c}`),
            },
            { requiredKeys: [] },
          ),
          async ([client, status, verdict], left, forged) => {
            // Each trusted hop appends its peer: the client first, then the hops between.
            const appended = [client, ...['10.0.0.2', '10.0.0.3'].slice(0, hops)];
            const xff = [...left, ...appended].join(', ');
            const got = await extAuthz(d, '/', { ...forged, 'x-forwarded-for': xff });
            assert.deepEqual(
              [got.status, got.verdict],
              [status, verdict],
              `${xff} ${JSON.stringify(forged)}`,
            );
          },
        ),
        { numRuns: 40 },
      );
    });
  }
});
