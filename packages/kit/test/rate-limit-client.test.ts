/**
 * Client-side rate limiting and client-go's request metrics, against the real
 * apiserver: a limited client cannot go faster than its bucket allows, a watch is
 * never held back by it, a waiting request can be cancelled, and every request is
 * counted under client-go's names.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, KubeClient, watch } from '@operators/kit';
import { Registry } from 'prom-client';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

/**
 * The value of one series as a scrape of /metrics shows it (0 when absent): `name` with
 * the `_count`/`_sum` suffix for histograms, and every given label equal.
 */
async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  for (const line of (await registry.metrics()).split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

const NAMESPACE_PATH = '/api/v1/namespaces/default';

describe('client-side rate limit', () => {
  it('50 GETs at qps 20, burst 10 take at least (50 − 10)/20 s, and all 50 are counted with code 200', async () => {
    const qps = 20;
    const burst = 10;
    const n = 50;
    const registry = new Registry();
    const client = await KubeClient.load(env.kubeconfigPath, { rateLimit: { qps, burst }, registry });
    try {
      const host = new URL(client.transport.server).host;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: n }, () => client.transport.request({ method: 'GET', path: NAMESPACE_PATH })),
      );
      const elapsedS = (performance.now() - started) / 1000;
      // The bucket starts full: `burst` go at once, the rest one every 1/qps.
      const floorS = (n - burst) / qps;
      assert.ok(elapsedS >= floorS - 0.05, `${n} GETs took ${elapsedS.toFixed(2)} s, below ${floorS} s`);

      assert.equal(
        await sample(registry, 'rest_client_requests_total', { code: '200', method: 'GET', host }),
        n,
      );
      const verb = { verb: 'GET', host };
      assert.equal(await sample(registry, 'rest_client_request_duration_seconds_count', verb), n);
      assert.equal(await sample(registry, 'rest_client_rate_limiter_duration_seconds_count', verb), n);
      // Asked at once, the k-th request beyond the burst waits k/qps: Σ k/qps for k = 1..n−burst.
      const extra = n - burst;
      const expectedWaitS = (extra * (extra + 1)) / 2 / qps;
      const waitedS = await sample(registry, 'rest_client_rate_limiter_duration_seconds_sum', verb);
      assert.ok(
        waitedS >= expectedWaitS - 0.05 * extra,
        `waited ${waitedS} s in all, expected ${expectedWaitS} s`,
      );
    } finally {
      await client.transport.close();
    }
  });

  it('a watch opens and streams while the bucket is empty: watches take no token', async () => {
    const registry = new Registry();
    // One token, then one every 1000 s: any request after the first would wait that long.
    const client = await KubeClient.load(env.kubeconfigPath, {
      rateLimit: { qps: 0.001, burst: 1 },
      registry,
    });
    try {
      const host = new URL(client.transport.server).host;
      await client.transport.request({ method: 'GET', path: NAMESPACE_PATH });
      const ac = new AbortController();
      const seen: string[] = [];
      for await (const ev of watch(client.transport, '/api/v1/namespaces', {
        fieldSelector: 'metadata.name=default',
        timeoutSeconds: 30,
        // A watch waiting for a token would wait 1000 s: fail at 10 s instead.
        signal: AbortSignal.any([ac.signal, AbortSignal.timeout(10_000)]),
      })) {
        seen.push(`${ev.type}:${ev.object.metadata.name}`);
        break;
      }
      ac.abort();
      assert.deepEqual(seen, ['ADDED:default']);
      // The watch is counted as a request (client-go counts it too), but waited for no token.
      assert.equal(
        await sample(registry, 'rest_client_requests_total', { code: '200', method: 'GET', host }),
        2,
      );
      assert.equal(
        await sample(registry, 'rest_client_rate_limiter_duration_seconds_count', { verb: 'GET', host }),
        1,
      );
    } finally {
      await client.transport.close();
    }
  });

  it('a request waiting for a token is aborted by its signal and never reaches the server', async () => {
    const registry = new Registry();
    const client = await KubeClient.load(env.kubeconfigPath, {
      rateLimit: { qps: 0.001, burst: 1 },
      registry,
    });
    try {
      const host = new URL(client.transport.server).host;
      await client.transport.request({ method: 'GET', path: NAMESPACE_PATH });
      const ac = new AbortController();
      const reason = new Error('reconcile cancelled');
      const waiting = client.transport.request({ method: 'GET', path: NAMESPACE_PATH, signal: ac.signal });
      // Its token is due in 1000 s; the reconcile gives up long before.
      setTimeout(() => ac.abort(reason), 100);
      await assert.rejects(waiting, (err: unknown) => err === reason);
      assert.equal(
        await sample(registry, 'rest_client_requests_total', { code: '200', method: 'GET', host }),
        1,
      );
    } finally {
      await client.transport.close();
    }
  });

  it('a request still waiting for a token at its deadline fails as transient, naming the rate limiter', async () => {
    const client = await KubeClient.load(env.kubeconfigPath, { rateLimit: { qps: 0.001, burst: 1 } });
    try {
      await client.transport.request({ method: 'GET', path: NAMESPACE_PATH });
      await assert.rejects(
        client.transport.request({ method: 'GET', path: NAMESPACE_PATH, timeoutMs: 200 }),
        (err: unknown) =>
          isApiError(err, ApiErrorReason.Transient) && /client-side rate limiter/.test(err.message),
      );
    } finally {
      await client.transport.close();
    }
  });

  it('impersonating clients share the bucket of the client they came from', async () => {
    const client = await KubeClient.load(env.kubeconfigPath, { rateLimit: { qps: 0.001, burst: 1 } });
    try {
      await client.transport.request({ method: 'GET', path: NAMESPACE_PATH });
      const jane = client.impersonate({ user: 'jane' });
      assert.deepEqual(jane.transport.rateLimit, { qps: 0.001, burst: 1 });
      await assert.rejects(
        jane.transport.request({ method: 'GET', path: NAMESPACE_PATH, timeoutMs: 200 }),
        (err: unknown) => isApiError(err, ApiErrorReason.Transient) && /rate limiter/.test(err.message),
      );
    } finally {
      await client.transport.close();
    }
  });
});
