/**
 * The captcha answer: the decider asks the provider's siteverify endpoint whether the
 * widget's token is good and, when it is, issues the same clearance a proof-of-work buys
 * (kept in a real redis-server). The provider is a contract-faithful stand-in written here
 * (Turnstile's, hCaptcha's and reCAPTCHA's shared protocol: a form POST of `secret`,
 * `response` and `remoteip`, a JSON answer whose boolean `success` decides), since the
 * real ones are not reachable from the tests.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import type { EdgeSiteSpec } from '../src/api/edge-site.ts';
import type { RunningDecider } from '../src/decider/run.ts';
import { readSiteverify } from '../src/domain/decider/captcha.ts';
import { BASE_SPEC, DeciderHarness, extAuthz, type TestList } from './support/decider-harness.ts';
import { type RedisServer, startRedis } from './support/decider-redis.ts';

const PROXIES: TestList = { name: 'proxies', kind: ListKind.Presumed, entries: ['203.0.113.0/24'] };
const SECRET = '0x4AAAAAAA-secret';
const SPEC: EdgeSiteSpec = {
  ...BASE_SPEC,
  posture: 'Strict',
  captcha: { provider: 'Turnstile', siteKey: '0x4AAAAAAA-site', secretRef: { name: 'turnstile' } },
  filter: { clearance: '30m' },
};

/** One siteverify request as the stand-in received it. */
interface Asked {
  readonly contentType: string | undefined;
  readonly secret: string | null;
  readonly response: string | null;
  readonly remoteip: string | null;
}

/**
 * The provider: a token `solved-by-<ip>` is good for that IP under the right secret; any
 * other token gets `success: false` with the provider's error code.
 */
async function startProvider(): Promise<{ url: string; asked: Asked[]; server: Server }> {
  const asked: Asked[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      const form = new URLSearchParams(body);
      const a: Asked = {
        contentType: req.headers['content-type'],
        secret: form.get('secret'),
        response: form.get('response'),
        remoteip: form.get('remoteip'),
      };
      asked.push(a);
      const good = req.method === 'POST' && a.secret === SECRET && a.response === `solved-by-${a.remoteip}`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          good ? { success: true } : { success: false, 'error-codes': ['invalid-input-response'] },
        ),
      );
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/turnstile/v0/siteverify`, asked, server };
}

async function answerCaptcha(
  d: RunningDecider,
  addr: string,
  body: unknown,
): Promise<{ status: number; cookie: string | null; error: unknown }> {
  const res = await fetch(`${d.url}/v1/captcha`, {
    method: 'POST',
    headers: { 'x-forwarded-for': addr, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, cookie: res.headers.get('set-cookie'), error: json.error };
}

/** A listed site with a captcha, its decider asking the stand-in provider with the right secret. */
async function startSite(t: TestContext) {
  const provider = await startProvider();
  t.after(() => provider.server.close());
  const h = await DeciderHarness.create(t);
  await h.writeSpec(SPEC);
  h.publish(PROXIES);
  const d = await h.start({ valkeyUrl: redis.url, captchaSecret: SECRET, captchaVerifyUrl: provider.url });
  return { provider, h, d };
}

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

describe('decider: a captcha answer checked with the provider (stand-in siteverify server, real redis-server)', () => {
  it('clears a listed client whose captcha the provider accepts, asking with the secret and the client address', async (t) => {
    const { provider, d } = await startSite(t);
    const from = { 'x-forwarded-for': '203.0.113.7' };
    assert.equal((await extAuthz(d, '/', from)).verdict, 'captcha', 'Strict with a captcha asks the captcha');

    const solved = await answerCaptcha(d, '203.0.113.7', { token: 'solved-by-203.0.113.7' });
    assert.equal(solved.status, 200);
    assert.match(
      solved.cookie ?? '',
      /^exoledge_clearance=v1\.[0-9]+\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=1800; HttpOnly; Secure; SameSite=Lax$/,
    );
    assert.deepEqual(provider.asked, [
      {
        contentType: 'application/x-www-form-urlencoded',
        secret: SECRET,
        response: 'solved-by-203.0.113.7',
        remoteip: '203.0.113.7',
      },
    ]);
    const cookie = (solved.cookie ?? '').split(';')[0] ?? '';
    assert.deepEqual(await extAuthz(d, '/', { ...from, cookie }), {
      status: 200,
      verdict: 'pass',
      reason: 'Cleared',
    });
  });

  it('refuses what the provider refuses, a malformed token without asking it, and a site without a captcha', async (t) => {
    const { provider, h, d } = await startSite(t);

    // A token solved by someone else is no good here.
    const wrong = await answerCaptcha(d, '203.0.113.7', { token: 'solved-by-198.51.100.1' });
    assert.deepEqual([wrong.status, wrong.error, wrong.cookie], [403, 'CaptchaFailed', null]);
    for (const body of [{}, { token: '' }, { token: 42 }, { token: 'x'.repeat(2049) }]) {
      const bad = await answerCaptcha(d, '203.0.113.7', body);
      assert.deepEqual([bad.status, bad.error], [400, 'MalformedToken'], JSON.stringify(body).slice(0, 40));
    }
    assert.equal(provider.asked.length, 1, 'malformed tokens never reach the provider');

    await h.writeSpec(BASE_SPEC);
    await d.decider.pollFiles();
    const none = await answerCaptcha(d, '203.0.113.7', { token: 'solved-by-203.0.113.7' });
    assert.deepEqual([none.status, none.error], [403, 'CaptchaNotConfigured']);
  });

  it('never clears on doubt: the provider unreachable, or no secret key, is 503 and no cookie', async (t) => {
    const provider = await startProvider();
    const h = await DeciderHarness.create(t);
    await h.writeSpec(SPEC);
    h.publish(PROXIES);
    const noSecret = await h.start({ valkeyUrl: redis.url, captchaVerifyUrl: provider.url });
    const a = await answerCaptcha(noSecret, '203.0.113.7', { token: 'solved-by-203.0.113.7' });
    assert.deepEqual([a.status, a.error, a.cookie], [503, 'CaptchaUnavailable', null]);
    assert.equal(provider.asked.length, 0);

    provider.server.close();
    provider.server.closeAllConnections();
    await once(provider.server, 'close');
    const d = await h.start({ valkeyUrl: redis.url, captchaSecret: SECRET, captchaVerifyUrl: provider.url });
    const down = await answerCaptcha(d, '203.0.113.7', { token: 'solved-by-203.0.113.7' });
    assert.deepEqual([down.status, down.error, down.cookie], [503, 'CaptchaUnavailable', null]);
    assert.equal((await extAuthz(d, '/', { 'x-forwarded-for': '203.0.113.7' })).verdict, 'captcha');
  });
});

describe("readSiteverify: only the provider's boolean true passes", () => {
  it('passes success: true and nothing else, failing a boolean false with its codes', () => {
    assert.deepEqual(readSiteverify({ success: true, hostname: 'shop.example.com' }), { kind: 'passed' });
    assert.deepEqual(readSiteverify({ success: false, 'error-codes': ['timeout-or-duplicate', 7] }), {
      kind: 'failed',
      codes: ['timeout-or-duplicate'],
    });
    for (const body of [{ success: 'true' }, { success: 1 }, {}, null, 'success', [true], undefined]) {
      assert.deepEqual(readSiteverify(body), { kind: 'unreadable' }, JSON.stringify(body));
    }
  });
});
