/**
 * What a controller does with each outcome of a reconcile, on a fake clock and without
 * an apiserver: the primary informer's store is filled by hand, so every delay is
 * exact. The outcomes mirror controller-runtime's reconcileHandler (v0.19–v0.22):
 * an error is retried with backoff and counted `error`; a terminal error is counted
 * `error` and in its own counter, and not retried; `RequeueAfter > 0` is counted
 * `requeue_after`; `Requeue: true` is a rate-limited requeue counted `requeue`; a zero
 * result (a zero `RequeueAfter` included) is `success`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeClock, settle } from '../src/base/clock.ts';
import { InformerCache } from '../src/cache/informer-cache.ts';
import { KubeClient } from '../src/client/client.ts';
import { ApiError, ApiErrorReason } from '../src/client/errors.ts';
import type { KubeObject } from '../src/client/types.ts';
import {
  type Controller,
  ControllerBuilder,
  type ReconcileResult,
  TerminalError,
} from '../src/control/controller.ts';
import { defaultControllerRateLimiter } from '../src/control/rate-limiter.ts';
import { WIDGET, type Widget } from './support/sample-operator.ts';

const log = pino({ level: 'silent' });

/** A kubeconfig pointing at a port nobody listens on: these tests must not reach a server. */
const NOWHERE = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1' } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

interface Harness {
  readonly clock: FakeClock;
  readonly registry: Registry;
  readonly builder: ControllerBuilder;
}

async function harness(): Promise<Harness> {
  const clock = new FakeClock();
  const registry = new Registry();
  const client = await KubeClient.fromKubeconfigString(NOWHERE);
  const cache = new InformerCache(client, log, clock);
  return {
    clock,
    registry,
    builder: new ControllerBuilder('widgets', { client, cache, log, registry, clock }),
  };
}

function widget(name: string, message = name): Widget {
  return { ...WIDGET, metadata: { name, namespace: 'ns', resourceVersion: '1' }, spec: { message } };
}

/** Fills the primary store as a first list would, and starts the workers. */
async function run<T extends KubeObject>(c: Controller<T>, objects: readonly T[]): Promise<void> {
  c.primary.store.replace(objects);
  c.startWorkers();
  await settle();
}

async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

describe('controller: what each reconcile result does', () => {
  it('does not requeue on requeueAfterMs: 0 (a zero RequeueAfter is no requeue, as in controller-runtime)', async (t) => {
    const { builder, clock, registry } = await harness();
    let attempts = 0;
    // Were 0 a requeue, this would loop 50 times without the clock moving.
    const c = builder
      .for<Widget>(WIDGET)
      .reconcile(async () => (++attempts < 50 ? { requeueAfterMs: 0 } : {}));
    t.after(() => c.stop(0));
    await run(c, [widget('a')]);
    await clock.advanceAsync(600_000);
    assert.equal(attempts, 1);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_total', { result: 'success' }), 1);
  });

  it('requeues with the rate-limited backoff on requeue: true, counted as requeue, not as an error', async (t) => {
    const { builder, clock, registry } = await harness();
    const at: number[] = [];
    const start = clock.now();
    const c = builder.for<Widget>(WIDGET).reconcile(async (): Promise<ReconcileResult> => {
      at.push(clock.now() - start);
      return at.length < 4 ? { requeue: true } : {};
    });
    t.after(() => c.stop(0));
    await run(c, [widget('a')]);
    await clock.advanceAsync(1_000);
    // The per-key backoff: 5, 10, 20 ms after each requeue.
    assert.deepEqual(at, [0, 5, 15, 35]);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_total', { result: 'requeue' }), 3);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_total', { result: 'success' }), 1);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_errors_total', {}), 0);
    assert.equal(c.queue.numRequeues('ns/a'), 0, 'the final success resets the backoff');
  });

  it('requeues after the delay on requeueAfterMs > 0, counted as requeue_after', async (t) => {
    const { builder, clock, registry } = await harness();
    let attempts = 0;
    const c = builder
      .for<Widget>(WIDGET)
      .reconcile(async () => (++attempts === 1 ? { requeueAfterMs: 30_000 } : {}));
    t.after(() => c.stop(0));
    await run(c, [widget('a')]);
    await clock.advanceAsync(29_999);
    assert.equal(attempts, 1);
    await clock.advanceAsync(1);
    assert.equal(attempts, 2);
    assert.equal(
      await metric(registry, 'controller_runtime_reconcile_total', { result: 'requeue_after' }),
      1,
    );
  });

  it('counts a terminal error under result="error" and in the terminal counter, and never retries it', async (t) => {
    const { builder, clock, registry } = await harness();
    let attempts = 0;
    const c = builder.for<Widget>(WIDGET).reconcile(async () => {
      attempts++;
      throw new TerminalError('InvalidSpec', 'the spec cannot work');
    });
    t.after(() => c.stop(0));
    await run(c, [widget('a')]);
    assert.equal(c.queue.delayedLen, 0, 'no retry is scheduled');
    await clock.advanceAsync(2_000_000);
    assert.equal(attempts, 1);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_total', { result: 'error' }), 1);
    assert.equal(await metric(registry, 'controller_runtime_terminal_reconcile_errors_total', {}), 1);
    assert.equal(await metric(registry, 'controller_runtime_reconcile_errors_total', {}), 1);
  });

  it('retries a reconcile that hit a 429 no sooner than its Retry-After', async (t) => {
    const { builder, clock } = await harness();
    const at: number[] = [];
    const start = clock.now();
    const c = builder.for<Widget>(WIDGET).reconcile(async () => {
      at.push(clock.now() - start);
      if (at.length === 1) {
        throw new ApiError(ApiErrorReason.TooManyRequests, 429, 'slow down', 'PATCH widgets/a', [], 3);
      }
      return {};
    });
    t.after(() => c.stop(0));
    await run(c, [widget('a')]);
    await clock.advanceAsync(2_999);
    assert.deepEqual(at, [0], 'not retried before the 3 s the server asked for');
    await clock.advanceAsync(1);
    assert.deepEqual(at, [0, 3_000]);
  });

  it('retries within the overall limit the builder was given', async (t) => {
    const { builder, clock } = await harness();
    let attempts = 0;
    const c = builder
      .for<Widget>(WIDGET)
      .withRateLimiter(defaultControllerRateLimiter({ clock, qps: 1, burst: 1 }))
      .reconcile(async () => {
        attempts++;
        throw new Error('down');
      });
    t.after(() => c.stop(0));
    await run(c, [widget('a'), widget('b'), widget('c')]);
    assert.equal(attempts, 3);
    // One token at once (a's retry at 5 ms), then one a second: b's at 1 s, c's at 2 s.
    await clock.advanceAsync(999);
    assert.equal(attempts, 4);
    await clock.advanceAsync(1);
    assert.equal(attempts, 5);
  });

  it('resyncs on the injected clock, every key within ±10 % of the period', async (t) => {
    const { builder, clock } = await harness();
    const seen: string[] = [];
    const c = builder
      .for<Widget>(WIDGET)
      .resyncEvery(60_000)
      .reconcile(async (req) => {
        seen.push(req.name);
        return {};
      });
    t.after(() => c.stop(0));
    await run(c, [widget('a'), widget('b')]);
    assert.deepEqual(seen.sort(), ['a', 'b'], 'every cached key once at start');
    await clock.advanceAsync(54_000 - 1);
    assert.equal(seen.length, 2, 'no resync before 90 % of the period');
    await clock.advanceAsync(66_000 - 54_000 + 1);
    assert.deepEqual(seen.slice(2).sort(), ['a', 'b'], 'each key once more by 110 % of the period');
  });
});

describe('controller: the primary object handed to the reconcile', () => {
  it('hands the cached object, typed as for<T>() says, and undefined for a key not in the cache', async (t) => {
    const { builder } = await harness();
    const got = new Map<string, string | undefined>();
    const c = builder.for<Widget>(WIDGET).reconcile(async (req) => {
      // Typed: `spec.message` is known to be a string here, without a cast.
      const message: string | undefined = req.object?.spec?.message;
      got.set(req.key, message);
      return {};
    });
    t.after(() => c.stop(0));
    await run(c, [widget('a', 'hello')]);
    c.queue.add('ns/deleted');
    await settle();
    assert.deepEqual(
      [...got.entries()],
      [
        ['ns/a', 'hello'],
        ['ns/deleted', undefined],
      ],
    );
  });
});

describe('controller: worker metrics', () => {
  it('reports the configured maximum of concurrent reconciles and how many run now', async (t) => {
    const { builder, registry } = await harness();
    const release: (() => void)[] = [];
    const c = builder
      .for<Widget>(WIDGET)
      .withConcurrency(3)
      .reconcile(async () => {
        await new Promise<void>((r) => release.push(r));
        return {};
      });
    t.after(() => c.stop(0));
    assert.equal(
      await metric(registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'widgets' }),
      3,
    );
    assert.equal(await metric(registry, 'controller_runtime_active_workers', { controller: 'widgets' }), 0);
    await run(
      c,
      ['a', 'b', 'c', 'd', 'e'].map((n) => widget(n)),
    );
    assert.equal(await metric(registry, 'controller_runtime_active_workers', { controller: 'widgets' }), 3);
    for (const r of release.splice(0)) r();
    await settle();
    assert.equal(await metric(registry, 'controller_runtime_active_workers', { controller: 'widgets' }), 2);
    for (const r of release.splice(0)) r();
    await settle();
    assert.equal(await metric(registry, 'controller_runtime_active_workers', { controller: 'widgets' }), 0);
  });
});
