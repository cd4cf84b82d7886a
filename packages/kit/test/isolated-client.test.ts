/**
 * `client.isolated()`: a client to the same apiserver, as the same user, that shares
 * nothing a request can queue on. Against the real apiserver: with the source's bucket
 * drained and a queue of requests waiting in it, the isolated client's requests go at
 * once; its own bucket, when given, limits it alone; it resolves kinds (a Lease) through
 * its own discovery; closing it leaves the source working; the elector's client has no
 * bucket and a deadline of half the renew deadline.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  DEFAULT_RENEW_DEADLINE_MS,
  KubeClient,
  leaderElectionClient,
  leaseRequestTimeoutMs,
  MIN_LEASE_REQUEST_TIMEOUT_MS,
  REVIEW_RATE_LIMIT,
  reviewClient,
} from '@operators/kit';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

const NAMESPACE_PATH = '/api/v1/namespaces/default';
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;

describe('isolated client', () => {
  it("goes at once while the source's bucket has a queue, resolves a Lease, and closes alone", async () => {
    // One token a second: 10 requests queue for about 9 s in the source's bucket.
    const source = await KubeClient.load(env.kubeconfigPath, { rateLimit: { qps: 1, burst: 1 } });
    const isolated = source.isolated();
    let isolatedOpen = true;
    try {
      assert.equal(isolated.transport.rateLimit, undefined, "the source's bucket was inherited");
      assert.equal(isolated.transport.server, source.transport.server);
      const queued = Array.from({ length: 10 }, () =>
        source.transport.request({ method: 'GET', path: NAMESPACE_PATH }),
      );
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 10 }, () => isolated.transport.request({ method: 'GET', path: NAMESPACE_PATH })),
      );
      const tookMs = performance.now() - started;
      assert.ok(tookMs < 3_000, `10 isolated GETs took ${tookMs.toFixed(0)} ms behind the source's queue`);
      // Its own discovery resolves the elector's kind, as the same user.
      assert.equal((await isolated.resolve(LEASE)).resource, 'leases');
      await isolated.transport.close();
      isolatedOpen = false;
      await Promise.all(queued);
      await source.transport.request({ method: 'GET', path: NAMESPACE_PATH });
    } finally {
      if (isolatedOpen) await isolated.transport.close();
      await source.transport.close();
    }
  });

  it('has a bucket of its own when given one, and the derived clients of the manager are set as documented', async () => {
    const source = await KubeClient.load(env.kubeconfigPath);
    const limited = source.isolated({ rateLimit: { qps: 20, burst: 2 } });
    const reviews = reviewClient(source);
    const elector = leaderElectionClient(source, DEFAULT_RENEW_DEADLINE_MS);
    try {
      assert.equal(source.transport.rateLimit, undefined, 'the source got a bucket');
      assert.deepEqual(limited.transport.rateLimit, { qps: 20, burst: 2 });
      assert.deepEqual(reviews.transport.rateLimit, REVIEW_RATE_LIMIT);
      assert.equal(elector.transport.rateLimit, undefined, "the elector's client is throttled");
      assert.equal(leaseRequestTimeoutMs(DEFAULT_RENEW_DEADLINE_MS), DEFAULT_RENEW_DEADLINE_MS / 2);
      assert.equal(leaseRequestTimeoutMs(1_500), MIN_LEASE_REQUEST_TIMEOUT_MS);
      // 6 GETs at burst 2, 20 qps: at least (6 − 2)/20 s on the derived bucket.
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 6 }, () => limited.transport.request({ method: 'GET', path: NAMESPACE_PATH })),
      );
      assert.ok(performance.now() - started >= 200 - 5, 'the derived bucket did not limit');
    } finally {
      await Promise.all([limited, reviews, elector, source].map((c) => c.transport.close()));
    }
  });
});
