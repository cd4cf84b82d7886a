/**
 * The client-side token bucket on a fake clock: a burst goes at once, then one request
 * per 1/qps, waiters in call order, and an aborted wait costs no budget.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock, TokenBucket } from '@operators/kit';

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A promise whose settlement can be read synchronously after `settle()`. */
function track<T>(p: Promise<T>): { readonly state: () => 'pending' | 'resolved' | 'rejected'; value?: T } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  const t: { state: () => typeof state; value?: T } = { state: () => state };
  p.then(
    (v) => {
      state = 'resolved';
      t.value = v;
    },
    () => {
      state = 'rejected';
    },
  );
  return t;
}

describe('TokenBucket', () => {
  it('lets a burst through at once, then one take every 1/qps', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 20, burst: 10 }, clock);
    const takes = Array.from({ length: 12 }, () => track(bucket.take()));
    await settle();
    assert.deepEqual(
      takes.map((t) => t.state()),
      [...Array(10).fill('resolved'), 'pending', 'pending'],
    );
    // 20 qps: a token every 50 ms. The 11th is due at 50 ms, the 12th at 100 ms.
    await clock.advanceAsync(49);
    assert.equal(takes[10]?.state(), 'pending');
    await clock.advanceAsync(1);
    assert.equal(takes[10]?.state(), 'resolved');
    assert.equal(takes[10]?.value, 50, 'resolves with the milliseconds it waited');
    assert.equal(takes[11]?.state(), 'pending');
    await clock.advanceAsync(50);
    assert.equal(takes[11]?.state(), 'resolved');
  });

  it('in any window of t seconds, at most burst + qps·t takes succeed', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 20, burst: 10 }, clock);
    const takes = Array.from({ length: 100 }, () => track(bucket.take()));
    // 2 s: 10 from the burst and 20·2 = 40 refilled.
    for (let i = 0; i < 20; i++) await clock.advanceAsync(100);
    assert.equal(takes.filter((t) => t.state() === 'resolved').length, 50);
  });

  it('serves waiters in the order they asked', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 10, burst: 1 }, clock);
    const order: number[] = [];
    const all = [0, 1, 2, 3].map((i) => bucket.take().then(() => order.push(i)));
    await clock.advanceAsync(300);
    await Promise.all(all);
    assert.deepEqual(order, [0, 1, 2, 3]);
  });

  it('a quiet spell refills the bucket to burst and no further', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 100, burst: 3 }, clock);
    for (let i = 0; i < 3; i++) assert.ok(bucket.tryTake());
    assert.equal(bucket.tryTake(), false);
    clock.advance(60_000);
    assert.equal(bucket.available(), 3);
    for (let i = 0; i < 3; i++) assert.ok(bucket.tryTake());
    assert.equal(bucket.tryTake(), false);
  });

  it('a take aborted while it waits rejects with the reason and gives its token back', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 1, burst: 1 }, clock);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    const reason = new Error('reconcile cancelled');
    ac.abort(reason);
    await assert.rejects(waiting, (err: unknown) => err === reason);
    assert.equal(clock.pending, 0, 'the aborted wait left a timer behind');
    // The aborted take's token (due at 1 s) goes to the next caller, not to 2 s.
    const next = track(bucket.take());
    await clock.advanceAsync(999);
    assert.equal(next.state(), 'pending');
    await clock.advanceAsync(1);
    assert.equal(next.state(), 'resolved');
  });

  it('an already-aborted signal rejects at once and takes no token', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ qps: 1, burst: 1 }, clock);
    const reason = new Error('gone');
    await assert.rejects(bucket.take(AbortSignal.abort(reason)), (err: unknown) => err === reason);
    assert.equal(bucket.tryTake(), true);
  });

  it('refuses settings that cannot limit anything', () => {
    for (const bad of [
      { qps: 0, burst: 1 },
      { qps: -1, burst: 1 },
      { qps: Number.POSITIVE_INFINITY, burst: 1 },
      { qps: 1, burst: 0 },
      { qps: 1, burst: 1.5 },
    ]) {
      assert.throws(() => new TokenBucket(bad), /rate limit/, JSON.stringify(bad));
    }
  });
});
