/**
 * The queue between "something changed" and "reconcile it": client-go's workqueue
 * (dedupe, one in flight per key, delays, per-key exponential backoff, drain on
 * shutdown) with a promise-based `get()` so that N async workers can loop on it.
 *
 * A key is a name, never an event: ten changes to one object while it waits are one
 * reconcile, and the reconcile reads the current state (level-based). What a worker
 * must do with every key it gets:
 *
 * ```ts
 * const key = await queue.get();          // undefined: shut down, stop the worker
 * try { ...reconcile...; queue.forget(key) } // success: reset its backoff
 * catch { queue.addRateLimited(key) }     // failure: retry after 5 ms, 10 ms, 20 ms ...
 * finally { queue.done(key) }             // always: or the key never runs again
 * ```
 *
 * {@link runWorkers} is that loop for N workers. Retries are rate limited per key and
 * overall (10 per second, burst 100), as client-go's controllers are: see `rate-limiter.ts`.
 */
import { type Counter, Gauge, type Histogram, type Registry } from 'prom-client';
import { type Clock, realClock, type TimerHandle } from '../base/clock.ts';
import { sharedCounter, sharedGauge, sharedHistogram, sharedMetric } from '../base/shared-metrics.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.ts';

export { DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS } from './rate-limiter.ts';

/**
 * Bucket bounds in seconds for the queue and work duration histograms, 10 ns to 10 s by
 * factors of ten: client-go's, so dashboards built for Go controllers read ours.
 */
export const DURATION_BUCKETS_SECONDS: readonly number[] = [
  1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10,
];

export interface WorkqueueOptions {
  /** The controller's name: the `name` label of every metric of this queue. */
  readonly name: string;
  readonly clock?: Clock;
  /** Where the metrics are registered; several queues may share one registry. Unregistered when omitted. */
  readonly registry?: Registry;
  /** First retry delay of {@link Workqueue.addRateLimited}; doubles per failure. */
  readonly baseDelayMs?: number;
  /** Cap of the per-key retry delay. */
  readonly maxDelayMs?: number;
  /** Overall retries per second across all keys (client-go's 10). */
  readonly qps?: number;
  /** Overall retries allowed at once before `qps` applies (client-go's 100). */
  readonly burst?: number;
  /** Replaces the default limiter (and `baseDelayMs`, `maxDelayMs`, `qps`, `burst`) entirely. */
  readonly rateLimiter?: RateLimiter;
}

interface QueueMetrics {
  readonly depth: Gauge.Internal<'name'>;
  readonly adds: Counter.Internal;
  readonly retries: Counter.Internal;
  readonly queueDuration: Histogram.Internal<'name'>;
  readonly workDuration: Histogram.Internal<'name'>;
  /** Stops reporting the in-flight gauges (a stopped queue must not be kept alive by a registry). */
  readonly release: () => void;
}

interface Delayed {
  readonly readyAt: number;
  readonly timer: TimerHandle;
}

/**
 * A deduplicating, rate-limiting, delaying work queue of string keys.
 *
 * Guarantees:
 * - A key is queued at most once, however often it is added while it waits.
 * - A key is never handed to two workers at once: added while being processed, it is
 *   queued again exactly once, when {@link done} is called for it.
 * - Of two pending delays for one key, the earlier wins.
 * - A key that starts processing drops any delay scheduled before it started: the
 *   reconcile that now runs sees the latest state and states its own requeue, so the
 *   old timer would only cause a redundant reconcile. (client-go keeps such timers.)
 * - After {@link shutdown}, nothing new starts: adds are ignored, queued and delayed
 *   keys are dropped (the next process, or the next leader, lists everything again),
 *   and `get()` resolves `undefined`; keys in flight may finish and call `done()`.
 */
export class Workqueue {
  readonly name: string;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  /** Keys waiting for a worker, in the order they were added (a Set iterates in insertion order). */
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Keys added while being processed: queued again on `done()`. */
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, Delayed>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  /** Workers blocked in `get()`, served first come, first served. */
  private readonly getters: ((key: string | undefined) => void)[] = [];
  private readonly drainWaiters = new Set<() => void>();
  private stopping = false;
  private readonly metrics: QueueMetrics;

  constructor(opts: WorkqueueOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? realClock;
    this.limiter =
      opts.rateLimiter ??
      defaultControllerRateLimiter({
        clock: this.clock,
        baseDelayMs: opts.baseDelayMs,
        maxDelayMs: opts.maxDelayMs,
        qps: opts.qps,
        burst: opts.burst,
      });
    this.metrics = queueMetrics(opts.registry, opts.name, () => this.inFlightAges());
  }

  /** Keys waiting for a worker (not those in flight, nor those delayed). */
  get len(): number {
    return this.queued.size;
  }

  /** Keys handed out and not yet `done()`. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Keys waiting for a delay (a backoff or a requeueAfter) to pass. */
  get delayedLen(): number {
    return this.delayed.size;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  /** Queues `key` unless it is queued already; if it is in flight, queues it again after `done()`. */
  add(key: string): void {
    if (this.stopping || this.queued.has(key) || this.dirty.has(key)) return;
    this.metrics.adds.inc();
    this.addedAt.set(key, this.clock.now());
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.enqueue(key);
  }

  /**
   * The next key, once there is one; `undefined` once the queue is shut down. The key
   * is in flight from the moment it is handed out until {@link done}.
   */
  get(): Promise<string | undefined> {
    const next = this.queued.values().next();
    if (!next.done) return Promise.resolve(this.start(next.value));
    if (this.stopping) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks `key` finished; if it was added meanwhile, queues it again now. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.metrics.workDuration.observe(seconds(this.clock.now() - started));
    if (this.dirty.delete(key)) this.enqueue(key);
    if (this.processing.size === 0) {
      for (const w of [...this.drainWaiters]) w();
      if (this.stopping) this.metrics.release();
    }
  }

  /**
   * Adds `key` after `ms` (a reconcile's `requeueAfter`). If the key already has a
   * pending delay, the earlier of the two stands. Counted as a retry, as client-go does.
   */
  addAfter(key: string, ms: number): void {
    if (this.stopping) return;
    this.metrics.retries.inc();
    if (ms <= 0) {
      this.cancelDelay(key);
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const pending = this.delayed.get(key);
    if (pending !== undefined && pending.readyAt <= readyAt) return;
    if (pending !== undefined) this.clock.clearTimeout(pending.timer);
    const timer = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { readyAt, timer });
  }

  /**
   * Adds `key` after its rate limiter's delay: the longer of its own backoff (5 ms,
   * doubling with each failure since the last {@link forget}, capped) and the overall
   * bucket's (10 retries a second, burst 100), and never sooner than `notBeforeMs`
   * (a server's Retry-After).
   */
  addRateLimited(key: string, notBeforeMs = 0): void {
    if (this.stopping) return;
    this.addAfter(key, Math.max(this.limiter.when(key), notBeforeMs));
  }

  /** Resets `key`'s failure count: call it when a reconcile succeeds, or the next failure waits too long. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** Failures of `key` since the last {@link forget}. */
  numRequeues(key: string): number {
    return this.limiter.numRequeues(key);
  }

  /** The delay the next {@link addRateLimited} of `key` would use now, without counting a failure. */
  backoffFor(key: string): number {
    return this.limiter.peek(key);
  }

  /**
   * Stops the queue: no key is added or handed out any more, pending delays are
   * cancelled, and workers blocked in `get()` receive `undefined`. Keys in flight
   * are not interrupted; see {@link shutdownWithDrain} to wait for them.
   */
  shutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const d of this.delayed.values()) this.clock.clearTimeout(d.timer);
    this.delayed.clear();
    for (const k of this.queued) this.addedAt.delete(k);
    for (const k of this.dirty) this.addedAt.delete(k);
    this.queued.clear();
    this.dirty.clear();
    this.metrics.depth.set(0);
    for (const g of this.getters.splice(0)) g(undefined);
    if (this.processing.size === 0) this.metrics.release();
  }

  /**
   * {@link shutdown}, then waits until every key in flight is `done()`, or `timeoutMs`
   * has passed. Resolves the keys still in flight at that point (empty when drained),
   * so the caller can log what a SIGTERM interrupted.
   */
  shutdownWithDrain(timeoutMs: number): Promise<readonly string[]> {
    this.shutdown();
    if (this.processing.size === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const drained = (): void => {
        this.drainWaiters.delete(drained);
        this.clock.clearTimeout(timer);
        resolve([]);
      };
      const timer = this.clock.setTimeout(() => {
        this.drainWaiters.delete(drained);
        resolve([...this.processing]);
      }, timeoutMs);
      this.drainWaiters.add(drained);
    });
  }

  /** Seconds each key in flight has been processed so far, for the scrape-time gauges. */
  private inFlightAges(): number[] {
    const now = this.clock.now();
    return [...this.startedAt.values()].map((s) => seconds(now - s));
  }

  private enqueue(key: string): void {
    const getter = this.getters.shift();
    if (getter !== undefined) {
      getter(this.start(key));
      return;
    }
    this.queued.add(key);
    this.metrics.depth.set(this.queued.size);
  }

  /** Moves `key` from waiting to in flight. */
  private start(key: string): string {
    this.queued.delete(key);
    this.metrics.depth.set(this.queued.size);
    this.cancelDelay(key);
    const now = this.clock.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.metrics.queueDuration.observe(seconds(now - added));
    this.processing.add(key);
    this.startedAt.set(key, now);
    return key;
  }

  private cancelDelay(key: string): void {
    const pending = this.delayed.get(key);
    if (pending === undefined) return;
    this.clock.clearTimeout(pending.timer);
    this.delayed.delete(key);
  }
}

export interface RunWorkersOptions {
  /**
   * Told of an error the handler let escape. The key has been requeued with backoff
   * already, so no work is lost; this is for logging.
   */
  readonly onError?: (key: string, err: unknown) => void;
}

/**
 * Runs `n` workers, each looping get → handler → done, so at most `n` keys are
 * handled at once and never one key twice at once. The handler owns the outcome
 * (`forget`, `addAfter`, `addRateLimited`); one that throws has its key retried with
 * backoff rather than lost. Resolves when the queue is shut down and every worker
 * has finished its last key.
 */
export async function runWorkers(
  queue: Workqueue,
  n: number,
  handler: (key: string) => Promise<void>,
  opts: RunWorkersOptions = {},
): Promise<void> {
  const worker = async (): Promise<void> => {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      try {
        await handler(key);
      } catch (err) {
        queue.addRateLimited(key);
        try {
          opts.onError?.(key, err);
        } catch {
          // A failing error reporter must not stop the worker: the key is requeued already.
        }
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, n) }, worker));
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}

const LABELS = ['name'] as const;

/** Per scrape-time gauge, the queues reporting into it: each sets its own series when scraped. */
const scrapeReporters = new WeakMap<object, Set<() => void>>();

/**
 * A gauge per queue whose value is computed when the registry is scraped, as client-go
 * computes these two (it polls every 500 ms; a scrape-time value is never stale).
 */
function scrapeTimeGauge(registry: Registry | undefined, metric: string, help: string): Gauge<'name'> {
  return sharedMetric(
    registry,
    metric,
    Gauge,
    (registers) =>
      new Gauge<'name'>({
        name: metric,
        help,
        labelNames: LABELS,
        registers,
        collect() {
          for (const report of scrapeReporters.get(this) ?? []) report();
        },
      }),
  );
}

function reportAtScrape(gauge: Gauge<'name'>, report: () => void): () => void {
  let set = scrapeReporters.get(gauge);
  if (!set) {
    set = new Set();
    scrapeReporters.set(gauge, set);
  }
  set.add(report);
  return () => {
    report();
    set.delete(report);
  };
}

function queueMetrics(
  registry: Registry | undefined,
  name: string,
  inFlightAges: () => readonly number[],
): QueueMetrics {
  const labels = { name };
  const unfinished = scrapeTimeGauge(
    registry,
    'workqueue_unfinished_work_seconds',
    'Seconds of work in progress not yet observed by work_duration: the sum of the ages of the keys in flight. Large values indicate stuck reconciles.',
  );
  const longest = scrapeTimeGauge(
    registry,
    'workqueue_longest_running_processor_seconds',
    'Seconds the longest-running key in flight has been processed.',
  );
  const releaseUnfinished = reportAtScrape(unfinished, () =>
    unfinished.labels(labels).set(inFlightAges().reduce((a, b) => a + b, 0)),
  );
  const releaseLongest = reportAtScrape(longest, () =>
    longest.labels(labels).set(Math.max(0, ...inFlightAges())),
  );
  const depth = sharedGauge(
    registry,
    'workqueue_depth',
    'Current depth of the workqueue: keys waiting for a worker.',
    LABELS,
  ).labels(labels);
  depth.set(0);
  return {
    depth,
    adds: sharedCounter(
      registry,
      'workqueue_adds_total',
      'Keys added to the workqueue (adds of a key already queued are not counted).',
      LABELS,
    ).labels(labels),
    retries: sharedCounter(
      registry,
      'workqueue_retries_total',
      'Delayed re-adds to the workqueue: backoff retries and requeueAfter.',
      LABELS,
    ).labels(labels),
    queueDuration: sharedHistogram(
      registry,
      'workqueue_queue_duration_seconds',
      'How long a key waits in the workqueue before a worker takes it.',
      LABELS,
      DURATION_BUCKETS_SECONDS,
    ).labels(labels),
    workDuration: sharedHistogram(
      registry,
      'workqueue_work_duration_seconds',
      'How long processing a key takes, from get to done.',
      LABELS,
      DURATION_BUCKETS_SECONDS,
    ).labels(labels),
    release: () => {
      releaseUnfinished();
      releaseLongest();
    },
  };
}
