/**
 * Retries are limited twice, as client-go's default controller rate limiter does: per key
 * (5 ms doubling to 1000 s) and overall (a token bucket of 10 per second, burst 100), so
 * a thousand keys failing at once cost a hundred retries at once and ten a second after,
 * not a thousand retries every few milliseconds against the apiserver.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock, settle } from '../src/base/clock.ts';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
} from '../src/control/rate-limiter.ts';
import { runWorkers, Workqueue } from '../src/control/workqueue.ts';

describe('rate limiting of retries', () => {
  it('1,000 keys failing at once are retried about 110 times in the first second, not 1,000', async () => {
    const clock = new FakeClock();
    const q = new Workqueue({ name: 'storm', clock });
    let attempts = 0;
    const workers = runWorkers(q, 8, async () => {
      attempts++;
      throw new Error('the apiserver is overloaded');
    });
    for (let i = 0; i < 1000; i++) q.add(`ns/k${i}`);
    await settle();
    assert.equal(attempts, 1000, 'every key was tried once');
    await clock.advanceAsync(1000);
    // The oracle is the bucket's arithmetic: 100 tokens at once (the burst), then one
    // every 100 ms (10 per second): at t = 100, 200, …, 1000 ms, ten more.
    assert.equal(attempts - 1000, 110);
    await clock.advanceAsync(1000);
    assert.equal(attempts - 1000, 120, 'then ten a second');
    q.shutdown();
    await workers;
  });

  it('lets the overall rate be configured', async () => {
    const clock = new FakeClock();
    const q = new Workqueue({ name: 'custom', clock, qps: 50, burst: 10 });
    for (let i = 0; i < 100; i++) q.addRateLimited(`k${i}`);
    clock.advance(1000);
    // 10 at once (burst), then 50 per second: 50 more within the second.
    assert.equal(q.len, 60);
  });
});

describe('the token bucket', () => {
  it('hands out its burst at once, then one token per 1/qps', () => {
    const clock = new FakeClock();
    const b = new BucketRateLimiter({ qps: 10, burst: 3, clock });
    assert.deepEqual(
      Array.from({ length: 5 }, () => b.when('x')),
      [0, 0, 0, 100, 200],
    );
  });

  it('refills while idle, up to the burst and no further', () => {
    const clock = new FakeClock();
    const b = new BucketRateLimiter({ qps: 10, burst: 2, clock });
    b.when('a');
    b.when('a');
    clock.advance(60_000);
    assert.deepEqual([b.when('a'), b.when('a'), b.when('a')], [0, 0, 100]);
  });

  it('peeks without taking a token', () => {
    const clock = new FakeClock();
    const b = new BucketRateLimiter({ qps: 1, burst: 1, clock });
    assert.equal(b.peek('a'), 0);
    assert.equal(b.when('a'), 0);
    assert.equal(b.peek('a'), 1000);
    assert.equal(b.when('a'), 1000);
  });
});

describe('the combined limiter', () => {
  it('waits for the longer of the per-key backoff and the overall bucket', () => {
    const clock = new FakeClock();
    const l = new MaxOfRateLimiter([
      new ItemExponentialFailureRateLimiter({ baseDelayMs: 5, maxDelayMs: 1_000_000 }),
      new BucketRateLimiter({ qps: 10, burst: 2, clock }),
    ]);
    // Key a: 5 ms (bucket free), 10 ms (bucket free), then the bucket's 100 ms is longer.
    assert.deepEqual([l.when('a'), l.when('a'), l.when('a')], [5, 10, 100]);
    assert.equal(l.numRequeues('a'), 3);
    l.forget('a');
    assert.equal(l.numRequeues('a'), 0);
  });

  it('is client-go default: 5 ms per key at first, 10 qps and burst 100 overall', () => {
    const clock = new FakeClock();
    const l = defaultControllerRateLimiter({ clock });
    const first = Array.from({ length: 101 }, (_, i) => l.when(`k${i}`));
    assert.deepEqual(new Set(first.slice(0, 100)), new Set([5]));
    assert.equal(first[100], 100);
  });
});
