/**
 * The workqueue's contract, on a fake clock: dedupe, one reconcile per key at a time,
 * backoff, requeueAfter, drain on shutdown, metrics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Counter, Registry } from 'prom-client';
import { FakeClock, settle } from '../src/base/clock.ts';
import { DEFAULT_MAX_DELAY_MS, runWorkers, Workqueue } from '../src/control/workqueue.ts';

function queue(clock = new FakeClock(), registry?: Registry): { q: Workqueue; clock: FakeClock } {
  return { q: new Workqueue({ name: 'test', clock, registry }), clock };
}

/**
 * What `p` resolves with before the pending callbacks have run, or 'pending': a test
 * whose key never comes fails at once instead of hanging.
 */
function soon<T>(p: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([p, settle().then(() => 'pending' as const)]);
}

/**
 * The key `get()` hands out now, or 'pending' if it blocks. A blocked `get()` stays
 * registered and would take the next key, so this is a test's last look at the queue.
 */
function poll(q: Workqueue): Promise<string | undefined | 'pending'> {
  return soon(q.get());
}

/** Takes every key waiting now. */
async function drainNow(q: Workqueue): Promise<string[]> {
  const out: string[] = [];
  while (q.len > 0) {
    const k = await q.get();
    if (k !== undefined) out.push(k);
  }
  return out;
}

describe('workqueue: dedupe and one reconcile per key at a time', () => {
  it('hands out a key added many times while it waits only once', async () => {
    const { q } = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    q.add('a');
    assert.equal(q.len, 2);
    assert.deepEqual(await drainNow(q), ['a', 'b']);
  });

  it('hands out keys in the order they were first added', async () => {
    const { q } = queue();
    for (const k of ['c', 'a', 'b', 'a', 'c']) q.add(k);
    assert.deepEqual(await drainNow(q), ['c', 'a', 'b']);
  });

  it('does not hand out a key again while it is processed, however often it is added', async () => {
    const { q } = queue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.add('a');
    q.add('a');
    assert.equal(q.len, 0, 'the key waits outside the queue while it is in flight');
    assert.equal(await poll(q), 'pending');
  });

  it('queues a key added while it was processed again exactly once, after done', async () => {
    const { q } = queue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.add('a');
    q.add('a');
    const next = q.get();
    q.done('a');
    assert.equal(await soon(next), 'a', 'the blocked worker gets the key once it is done');
    q.done('a');
    assert.equal(await poll(q), 'pending', 'and only once');
  });

  it('does not queue a key again after done if nobody added it meanwhile', async () => {
    const { q } = queue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.done('a');
    assert.equal(q.len, 0);
    assert.equal(await poll(q), 'pending');
  });

  it('wakes a worker blocked in get() when a key is added', async () => {
    const { q } = queue();
    const waiting = q.get();
    q.add('x');
    assert.equal(await soon(waiting), 'x');
    assert.equal(q.inFlight, 1);
  });

  it('never runs one key twice at once, and runs every key again that was added after its reconcile started', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.nat(3)), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        async (adds, workers) => {
          const { q } = queue();
          const running = new Set<string>();
          const starts: { key: string; at: number }[] = [];
          const lastAdd = new Map<string, number>();
          let step = 0;
          let violation = '';
          const run = runWorkers(q, workers, async (key) => {
            if (running.has(key)) violation = `${key} ran twice at once`;
            running.add(key);
            starts.push({ key, at: step });
            for (let i = 0; i < 3; i++) await settle();
            running.delete(key);
          });
          for (const [key, pause] of adds) {
            step++;
            q.add(key);
            lastAdd.set(key, step);
            for (let i = 0; i < pause; i++) await settle();
          }
          while (q.len > 0 || q.inFlight > 0) await settle();
          q.shutdown();
          await run;
          assert.equal(violation, '');
          for (const [key, at] of lastAdd) {
            assert.ok(
              starts.some((s) => s.key === key && s.at >= at),
              `${key}, added at step ${at}, was reconciled after that`,
            );
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('workqueue: per-key exponential backoff', () => {
  it('retries a failing key after 5, 10, 20, 40 ms', async () => {
    const { q, clock } = queue();
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = clock.now();
      q.addRateLimited('a');
      clock.advance(clock.nextDueIn() ?? Number.NaN);
      assert.equal(await q.get(), 'a');
      delays.push(clock.now() - before);
      q.done('a');
    }
    assert.deepEqual(delays, [5, 10, 20, 40]);
    assert.equal(q.numRequeues('a'), 4);
  });

  it('does not hand out a retried key before its backoff has passed', async () => {
    const { q, clock } = queue();
    q.addRateLimited('a');
    q.addRateLimited('a');
    q.addRateLimited('a'); // third failure: 20 ms, but the pending 5 ms delay is earlier and wins
    clock.advance(4);
    assert.equal(q.len, 0);
    clock.advance(1);
    assert.equal(q.len, 1);
    assert.equal(q.backoffFor('a'), 40);
  });

  it('keeps the backoff of each key separate', () => {
    const { q } = queue();
    for (let i = 0; i < 5; i++) q.addRateLimited('a');
    q.addRateLimited('b');
    assert.equal(q.numRequeues('a'), 5);
    assert.equal(q.numRequeues('b'), 1);
    assert.equal(q.backoffFor('a'), 160);
    assert.equal(q.backoffFor('b'), 10);
  });

  it('caps the backoff at 1000 s, however many failures', () => {
    const { q } = queue();
    for (let i = 0; i < 200; i++) q.addRateLimited('a');
    assert.equal(DEFAULT_MAX_DELAY_MS, 1_000_000);
    assert.equal(q.backoffFor('a'), 1_000_000);
    // 5 ms × 2^17 = 655 s is the last step below the cap; 2^18 would be 1311 s.
    const fresh = queue().q;
    for (let i = 0; i < 17; i++) fresh.addRateLimited('b');
    assert.equal(fresh.backoffFor('b'), 655_360);
    fresh.addRateLimited('b');
    assert.equal(fresh.backoffFor('b'), 1_000_000);
  });

  it('starts again at 5 ms after forget', async () => {
    const { q, clock } = queue();
    for (let i = 0; i < 6; i++) q.addRateLimited('a');
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
    clock.advance(5); // the pending retry from before
    assert.equal(await q.get(), 'a');
    q.done('a');
    q.addRateLimited('a');
    assert.equal(clock.nextDueIn(), 5);
  });
});

describe('workqueue: requeueAfter', () => {
  it('hands out a key added after 100 ms at 100 ms, not before', () => {
    const { q, clock } = queue();
    q.addAfter('a', 100);
    clock.advance(99);
    assert.equal(q.len, 0);
    clock.advance(1);
    assert.equal(q.len, 1);
  });

  it('keeps the earlier of two pending delays: a later one does not postpone it', () => {
    const { q, clock } = queue();
    q.addAfter('a', 50);
    q.addAfter('a', 100);
    clock.advance(50);
    assert.equal(q.len, 1);
    assert.equal(clock.pending, 0, 'no second timer is left to fire at 100 ms');
  });

  it('keeps the earlier of two pending delays: an earlier one replaces it', () => {
    const { q, clock } = queue();
    q.addAfter('a', 100);
    q.addAfter('a', 30);
    clock.advance(30);
    assert.equal(q.len, 1);
    assert.equal(clock.pending, 0);
  });

  it('adds at once for a delay of zero or less', () => {
    const { q } = queue();
    q.addAfter('a', 0);
    q.addAfter('b', -5);
    assert.equal(q.len, 2);
  });

  it('queues a key whose delay ends while it is processed once more, after done', async () => {
    const { q, clock } = queue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.addAfter('a', 10);
    clock.advance(10);
    assert.equal(q.len, 0);
    q.done('a');
    assert.equal(await poll(q), 'a');
  });

  it('drops a delay scheduled before the key started processing: that reconcile supersedes it', async () => {
    const { q, clock } = queue();
    q.addAfter('a', 1000);
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.done('a');
    clock.advance(1000);
    assert.equal(q.len, 0);
  });

  it('keeps a delay scheduled while the key is processed (the reconcile asked for it)', async () => {
    const { q, clock } = queue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.addAfter('a', 1000);
    q.done('a');
    clock.advance(1000);
    assert.equal(q.len, 1);
  });
});

describe('workqueue: shutdown and drain', () => {
  it('wakes blocked workers with undefined and ignores later adds', async () => {
    const { q } = queue();
    const blocked = [q.get(), q.get()];
    q.shutdown();
    assert.deepEqual(await Promise.all(blocked), [undefined, undefined]);
    q.add('a');
    q.addAfter('b', 0);
    q.addRateLimited('c');
    assert.equal(q.len, 0);
    assert.equal(await q.get(), undefined);
  });

  it('starts nothing new after shutdown: queued and delayed keys are dropped', async () => {
    const { q, clock } = queue();
    q.add('a');
    q.addAfter('b', 10);
    q.shutdown();
    clock.advance(10);
    assert.equal(await q.get(), undefined);
    assert.equal(clock.pending, 0, 'the delay timer was cancelled');
  });

  it('lets keys in flight finish, and does not requeue one added meanwhile', async () => {
    const { q, clock } = queue();
    q.add('a');
    q.add('b');
    assert.equal(await q.get(), 'a');
    q.add('a'); // dirty: would run again after done, but the queue is stopping
    let drained: readonly string[] | undefined;
    const draining = q.shutdownWithDrain(30_000).then((left) => {
      drained = left;
    });
    await settle();
    assert.equal(drained, undefined, 'still waiting for a');
    q.done('a');
    await draining;
    assert.deepEqual(drained, []);
    assert.equal(await q.get(), undefined, 'neither a again nor b starts');
    assert.equal(clock.pending, 0);
  });

  it('resolves at once when nothing is in flight', async () => {
    const { q } = queue();
    q.add('a');
    assert.deepEqual(await q.shutdownWithDrain(1000), []);
  });

  it('gives up after the timeout and returns the keys still in flight', async () => {
    const { q, clock } = queue();
    for (const k of ['a', 'b', 'c']) q.add(k);
    await q.get();
    await q.get();
    await q.get();
    q.done('b');
    const draining = q.shutdownWithDrain(30_000);
    clock.advance(29_999);
    q.done('a');
    clock.advance(1);
    assert.deepEqual(await draining, ['c']);
  });

  it('runWorkers: finishes the reconciles in flight and resolves once all workers have stopped', async () => {
    const { q } = queue();
    const finished: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const run = runWorkers(q, 2, async (key) => {
      await gate;
      finished.push(key);
    });
    q.add('a');
    q.add('b');
    q.add('c');
    await settle();
    assert.equal(q.inFlight, 2);
    const draining = q.shutdownWithDrain(30_000);
    release();
    assert.deepEqual(await draining, []);
    await run;
    assert.deepEqual(finished.sort(), ['a', 'b'], 'c never started');
  });
});

describe('workqueue: runWorkers', () => {
  it('runs at most n keys at once', async () => {
    const { q } = queue();
    let running = 0;
    let peak = 0;
    const run = runWorkers(q, 3, async () => {
      running++;
      peak = Math.max(peak, running);
      await settle();
      await settle();
      running--;
    });
    for (let i = 0; i < 20; i++) q.add(`k${i}`);
    while (q.len > 0 || q.inFlight > 0) await settle();
    q.shutdown();
    await run;
    assert.equal(peak, 3);
  });

  it('retries a key whose handler throws, with backoff, and reports the error', async () => {
    const { q, clock } = queue();
    const errors: string[] = [];
    let calls = 0;
    const run = runWorkers(
      q,
      1,
      async () => {
        calls++;
        if (calls < 3) throw new Error(`boom ${calls}`);
      },
      { onError: (key, err) => errors.push(`${key}: ${(err as Error).message}`) },
    );
    q.add('a');
    await clock.advanceAsync(0);
    assert.equal(calls, 1);
    await clock.advanceAsync(5);
    assert.equal(calls, 2);
    await clock.advanceAsync(9);
    assert.equal(calls, 2, 'the second retry waits 10 ms');
    await clock.advanceAsync(1);
    assert.equal(calls, 3);
    assert.deepEqual(errors, ['a: boom 1', 'a: boom 2']);
    q.shutdown();
    await run;
  });
});

describe('workqueue: metrics', () => {
  async function value(registry: Registry, metric: string, name: string, suffix = ''): Promise<number> {
    const m = registry.getSingleMetric(metric);
    assert.ok(m, `${metric} is registered`);
    const got = await m.get();
    // Histograms report several series (_bucket, _sum, _count), told apart by metricName.
    const values: readonly { value: number; labels: { name?: string | number }; metricName?: string }[] =
      got.values;
    const v = values.find((x) => x.labels.name === name && (suffix === '' || x.metricName === suffix));
    return v?.value ?? 0;
  }

  it('counts adds (not deduplicated ones), depth, retries, queue and work time, per controller', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new Workqueue({ name: 'widgets', clock, registry });
    const other = new Workqueue({ name: 'gadgets', clock, registry });
    q.add('a');
    q.add('a');
    q.add('b');
    other.add('x');
    assert.equal(await value(registry, 'workqueue_adds_total', 'widgets'), 2);
    assert.equal(await value(registry, 'workqueue_adds_total', 'gadgets'), 1);
    assert.equal(await value(registry, 'workqueue_depth', 'widgets'), 2);

    clock.advance(30);
    assert.equal(await q.get(), 'a');
    assert.equal(await value(registry, 'workqueue_depth', 'widgets'), 1);
    clock.advance(200);
    q.done('a');
    q.addRateLimited('a');
    q.addAfter('b', 1000);

    assert.equal(await value(registry, 'workqueue_retries_total', 'widgets'), 2);
    const qd = 'workqueue_queue_duration_seconds';
    assert.equal(await value(registry, qd, 'widgets', `${qd}_count`), 1);
    assert.equal(await value(registry, qd, 'widgets', `${qd}_sum`), 0.03);
    const wd = 'workqueue_work_duration_seconds';
    assert.equal(await value(registry, wd, 'widgets', `${wd}_count`), 1);
    assert.equal(await value(registry, wd, 'widgets', `${wd}_sum`), 0.2);
    const text = await registry.metrics();
    assert.match(text, /workqueue_depth\{name="gadgets"\} 1/);
  });

  it('reports, when scraped, the seconds of unfinished work and the longest-running key', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const q = new Workqueue({ name: 'widgets', clock, registry });
    const other = new Workqueue({ name: 'gadgets', clock, registry });
    const unfinished = 'workqueue_unfinished_work_seconds';
    const longest = 'workqueue_longest_running_processor_seconds';
    assert.equal(await value(registry, unfinished, 'widgets'), 0, 'nothing in flight');
    q.add('a');
    q.add('b');
    other.add('x');
    assert.equal(await q.get(), 'a');
    clock.advance(3000);
    assert.equal(await q.get(), 'b');
    assert.equal(await other.get(), 'x');
    clock.advance(1500);
    // a has run 4.5 s, b and x 1.5 s: the values are read at scrape time, from the clock.
    assert.equal(await value(registry, unfinished, 'widgets'), 6);
    assert.equal(await value(registry, longest, 'widgets'), 4.5);
    assert.equal(await value(registry, longest, 'gadgets'), 1.5);
    q.done('a');
    clock.advance(500);
    assert.equal(await value(registry, unfinished, 'widgets'), 2);
    assert.equal(await value(registry, longest, 'widgets'), 2);
    q.done('b');
    assert.equal(await value(registry, unfinished, 'widgets'), 0);
    assert.equal(await value(registry, longest, 'widgets'), 0);
  });

  it('refuses a registry where a metric of the same name has another type, naming it', () => {
    const registry = new Registry();
    new Counter({ name: 'workqueue_depth', help: 'not a gauge', registers: [registry] });
    assert.throws(
      () => new Workqueue({ name: 'w', registry }),
      /workqueue_depth is already registered with another type/,
    );
  });

  it('sets depth to zero on shutdown, since queued keys are dropped', async () => {
    const registry = new Registry();
    const q = new Workqueue({ name: 'w', registry });
    q.add('a');
    q.add('b');
    q.shutdown();
    assert.equal(await value(registry, 'workqueue_depth', 'w'), 0);
  });
});
