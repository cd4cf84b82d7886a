/**
 * A controller: watches one primary kind (and the kinds it owns or depends on), turns
 * every change into the key of a primary object, and reconciles keys from a workqueue.
 *
 * The contract, as controller-runtime states it: reconciliation is level-based. A
 * reconcile receives a key, never the event that caused it; it reads the current state
 * (from the cache), decides, and applies. "The object was deleted" is observed by not
 * finding it. Any number of events may fold into one reconcile.
 *
 * The reconcile receives the primary object as the cache holds it when the reconcile
 * starts (`req.object`, typed by `for<T>()`, deep-frozen), or `undefined` when the cache
 * has no such object: deleted, or never seen. It never needs the builder's informer.
 *
 * Outcomes of one reconcile, as controller-runtime's reconcileHandler (v0.19+) treats
 * them, in this order:
 * - throws a {@link TerminalError}: recorded (log, `result="error"` and the terminal
 *   counter) and not retried; a later change of the object brings the key back.
 * - throws anything else: `result="error"`; retried after the rate limiter's delay: the
 *   longer of the per-key backoff (5 ms doubling to ~16.7 min) and the controller-wide
 *   bucket (10 retries a second, burst 100), and never sooner than the Retry-After of
 *   an `ApiError` that carries one (a 429). An event for the key meanwhile still
 *   queues it at once: that is new work, not a retry.
 * - returns `{ requeueAfterMs }` with a delay above 0: `requeue_after`; the failure
 *   count is reset and the key comes back after that delay.
 * - returns `{ requeue: true }`: `requeue`; the key comes back after the rate
 *   limiter's delay, which keeps growing until a result without requeue.
 * - returns `{}`, nothing, or `{ requeueAfterMs: 0 }` (or less): `success`; done, the
 *   failure count is reset. A zero delay is "no requeue", as controller-runtime's zero
 *   `RequeueAfter` is, and not "at once": that would be a hot loop.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock, TimerHandle } from '../base/clock.ts';
import { realClock } from '../base/clock.ts';
import { sharedCounter, sharedGauge, sharedHistogram } from '../base/shared-metrics.ts';
import type { DeepReadonly } from '../cache/deep-freeze.ts';
import type { InformerCache, InformerOptions } from '../cache/informer-cache.ts';
import type { Reflector } from '../cache/reflector.ts';
import type { StoreDelta } from '../cache/store.ts';
import type { KubeClient } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import {
  type GroupVersionKind,
  type KubeObject,
  type ObjectKey,
  objectKey,
  parseApiVersion,
  splitKey,
} from '../client/types.ts';
import type { RateLimiter } from './rate-limiter.ts';
import { runWorkers, Workqueue } from './workqueue.ts';

/** What a reconcile is asked to do: bring the object with this key to its desired state. */
export interface ReconcileRequest<T extends KubeObject = KubeObject> {
  readonly key: ObjectKey;
  readonly namespace: string | undefined;
  readonly name: string;
  /**
   * The primary object as the cache held it when this reconcile started; `undefined`
   * when the cache has none (deleted, or not created yet): the level-based way to
   * observe a deletion. Deep-frozen: copy what you change. Read the cache again (or the
   * API) for a view fresher than the reconcile's start.
   */
  readonly object: DeepReadonly<T> | undefined;
}

export interface ReconcileResult {
  /**
   * Reconcile this key again after this many milliseconds (a periodic check, a pending
   * external state). 0 or less means no requeue, as controller-runtime's zero
   * `RequeueAfter` does; it wins over `requeue`.
   */
  readonly requeueAfterMs?: number;
  /**
   * Reconcile this key again after the rate limiter's delay (5 ms, doubling while it
   * keeps asking, and within the controller's 10 retries a second): controller-runtime's
   * `Requeue: true`, for "not done, nothing failed" such as waiting on another object.
   */
  readonly requeue?: boolean;
}

export interface ReconcileContext {
  /** A child logger carrying controller, key and reconcileId. */
  readonly log: Logger;
  readonly reconcileId: string;
  /** Aborted when the manager shuts down or loses leadership: stop at the next await. */
  readonly signal: AbortSignal;
  /**
   * The manager's client bound to `signal`: once it aborts, every request of this
   * client is aborted on the wire, so a reconcile cut short by a lost lease cannot land
   * a write beside the new leader. Write through this one.
   */
  readonly client: KubeClient;
}

export type Reconciler<T extends KubeObject = KubeObject> = (
  req: ReconcileRequest<T>,
  ctx: ReconcileContext,
) => Promise<ReconcileResult | undefined>;

/**
 * An error retrying cannot fix (an invalid spec, a reference to something forbidden).
 * Recorded and not retried; `reason` is a CamelCase word for conditions and events.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Decides whether a change deserves a reconcile. */
export type Predicate<T extends KubeObject = KubeObject> = (delta: StoreDelta<T>) => boolean;

/** Updates pass only when metadata.generation changed (spec changes, not status or metadata). */
export const generationChanged: Predicate = (d) =>
  d.type !== 'updated' || d.old.metadata.generation !== d.object.metadata.generation;

/** Changes pass only for objects whose labels include all of `labels` (before or after the change). */
export function hasLabels(labels: Readonly<Record<string, string>>): Predicate {
  const match = (o: KubeObject): boolean =>
    Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v);
  return (d) => match(d.object) || (d.type === 'updated' && match(d.old));
}

/**
 * Result labels of `controller_runtime_reconcile_total`, as controller-runtime names
 * them. A terminal error is an `error` here too (and is counted again in
 * `controller_runtime_terminal_reconcile_errors_total`), so error-rate alerts see it.
 */
export const ReconcileOutcome = {
  /** Done: a zero result (or a zero `requeueAfterMs`). */
  Success: 'success',
  /** The reconcile threw: retried with backoff, or recorded as terminal. */
  Error: 'error',
  /** Done for now, back after `requeueAfterMs`. */
  RequeueAfter: 'requeue_after',
  /** `requeue: true`: back after the rate limiter's delay. */
  Requeue: 'requeue',
} as const;
export type ReconcileOutcome = (typeof ReconcileOutcome)[keyof typeof ReconcileOutcome];

interface Source {
  readonly gvk: GroupVersionKind;
  readonly opts: InformerOptions;
  readonly toKeys: (obj: KubeObject) => readonly ObjectKey[];
  readonly predicates: readonly Predicate[];
}

export interface ControllerDeps {
  readonly client: KubeClient;
  readonly cache: InformerCache;
  readonly log: Logger;
  readonly registry: Registry;
  readonly clock?: Clock;
}

export interface ForOptions extends InformerOptions {
  readonly predicates?: readonly Predicate[];
}

/**
 * Builds a controller. `T` is the primary kind's object type, set by `for<T>()`: the
 * reconcile's `req.object` and the controller's `primary` informer carry it.
 */
export class ControllerBuilder<T extends KubeObject = KubeObject> {
  private readonly name: string;
  private readonly deps: ControllerDeps;
  private primary: { gvk: GroupVersionKind; opts: ForOptions } | undefined;
  private readonly secondary: {
    gvk: GroupVersionKind;
    opts: ForOptions;
    map?: (obj: KubeObject) => readonly ObjectKey[];
  }[] = [];
  private concurrency = 1;
  private resyncMs: number | undefined;
  private rateLimiter: RateLimiter | undefined;
  private onBuilt: ((c: Controller) => void) | undefined;

  constructor(name: string, deps: ControllerDeps, onBuilt?: (c: Controller) => void) {
    this.name = name;
    this.deps = deps;
    this.onBuilt = onBuilt;
  }

  /**
   * The primary kind: its keys are what the reconciler receives, and its objects (typed
   * `U`, which the caller asserts matches `gvk`) come with them as `req.object`.
   */
  for<U extends KubeObject = KubeObject>(gvk: GroupVersionKind, opts: ForOptions = {}): ControllerBuilder<U> {
    this.primary = { gvk, opts };
    // Only the type parameter changes: the builder holds no value of type T yet.
    return this as unknown as ControllerBuilder<U>;
  }

  /** A kind whose objects carry a controller owner reference to a primary object. */
  owns(gvk: GroupVersionKind, opts: ForOptions = {}): this {
    this.secondary.push({ gvk, opts });
    return this;
  }

  /** Any kind, mapped to primary keys by `map` (a Secret → the CRs that reference it). */
  watches<T extends KubeObject>(
    gvk: GroupVersionKind,
    map: (obj: T) => readonly ObjectKey[],
    opts: ForOptions = {},
  ): this {
    this.secondary.push({ gvk, opts, map: map as (obj: KubeObject) => readonly ObjectKey[] });
    return this;
  }

  /** How many keys are reconciled at once (never the same key twice). */
  withConcurrency(n: number): this {
    this.concurrency = Math.max(1, Math.floor(n));
    return this;
  }

  /**
   * How failed keys wait before their retry, replacing client-go's default (the longer of
   * 5 ms doubling to 1000 s per key, and 10 retries a second, burst 100, overall): for
   * example `defaultControllerRateLimiter({ qps: 50, burst: 200 })`.
   */
  withRateLimiter(limiter: RateLimiter): this {
    this.rateLimiter = limiter;
    return this;
  }

  /** Enqueue every primary key this often (with ±10 % jitter), to catch drift no event reports. */
  resyncEvery(ms: number): this {
    this.resyncMs = ms;
    return this;
  }

  reconcile(fn: Reconciler<T>): Controller<T> {
    if (!this.primary) throw new Error(`controller ${this.name}: call for(kind) before reconcile()`);
    const c = new Controller<T>(
      this.name,
      this.deps,
      this.primary,
      this.secondary,
      fn,
      this.concurrency,
      this.resyncMs,
      this.rateLimiter,
    );
    this.onBuilt?.(c as unknown as Controller);
    return c;
  }
}

export class Controller<T extends KubeObject = KubeObject> {
  readonly name: string;
  readonly queue: Workqueue;
  /** The primary kind's shared informer; its store is the reconciler's read cache. */
  readonly primary: Reflector<T>;
  private readonly deps: ControllerDeps;
  private readonly primaryGvk: GroupVersionKind;
  private readonly sources: Source[] = [];
  private readonly informers: Reflector<KubeObject>[] = [];
  /** Removes this controller's delta handlers from the shared informers. */
  private readonly unsubscribes: (() => void)[] = [];
  private readonly reconciler: Reconciler<T>;
  private readonly concurrency: number;
  private readonly resyncMs: number | undefined;
  private readonly clock: Clock;
  private readonly metrics: {
    total: Counter<'controller' | 'result'>;
    errors: Counter<'controller'>;
    terminal: Counter<'controller'>;
    time: Histogram<'controller'>;
    active: Gauge<'controller'>;
  };
  private primaryNamespaced: boolean | undefined;
  /**
   * The watched objects whose mapping waits for every informer of this controller to
   * sync, per source and object key: the first state seen and the latest (see
   * `enqueueFor`). `undefined` once synced: events are mapped as they come.
   */
  private held: Map<Source, Map<ObjectKey, { first: KubeObject; last: KubeObject }>> | undefined = new Map();
  private workers: Promise<void> | undefined;
  private resyncTimer: TimerHandle | undefined;
  private readonly abort = new AbortController();

  constructor(
    name: string,
    deps: ControllerDeps,
    primary: { gvk: GroupVersionKind; opts: ForOptions },
    secondary: readonly {
      gvk: GroupVersionKind;
      opts: ForOptions;
      map?: (obj: KubeObject) => readonly ObjectKey[];
    }[],
    reconciler: Reconciler<T>,
    concurrency: number,
    resyncMs: number | undefined,
    rateLimiter?: RateLimiter,
  ) {
    this.name = name;
    this.deps = deps;
    this.primaryGvk = primary.gvk;
    this.reconciler = reconciler;
    this.concurrency = concurrency;
    this.resyncMs = resyncMs;
    this.clock = deps.clock ?? realClock;
    this.queue = new Workqueue({ name, registry: deps.registry, clock: deps.clock, rateLimiter });
    this.metrics = {
      total: sharedCounter(
        deps.registry,
        'controller_runtime_reconcile_total',
        'Reconciles per controller and result.',
        ['controller', 'result'],
      ),
      errors: sharedCounter(
        deps.registry,
        'controller_runtime_reconcile_errors_total',
        'Reconciles that failed.',
        ['controller'],
      ),
      terminal: sharedCounter(
        deps.registry,
        'controller_runtime_terminal_reconcile_errors_total',
        'Reconciles that failed with a terminal error (not retried).',
        ['controller'],
      ),
      time: sharedHistogram(
        deps.registry,
        'controller_runtime_reconcile_time_seconds',
        'Time per reconcile.',
        ['controller'],
        [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      ),
      active: sharedGauge(
        deps.registry,
        'controller_runtime_active_workers',
        'Workers running a reconcile now, per controller.',
        ['controller'],
      ),
    };
    for (const r of Object.values(ReconcileOutcome)) this.metrics.total.labels(name, r).inc(0);
    this.metrics.errors.labels(name).inc(0);
    this.metrics.terminal.labels(name).inc(0);
    this.metrics.active.labels(name).set(0);
    sharedGauge(
      deps.registry,
      'controller_runtime_max_concurrent_reconciles',
      'The most reconciles a controller runs at once (its worker count).',
      ['controller'],
    )
      .labels(name)
      .set(concurrency);

    // Acquired, not just looked up: the cache stops an informer when its last controller goes.
    this.primary = deps.cache.acquire(primary.gvk, primary.opts);
    this.sources.push({
      gvk: primary.gvk,
      opts: primary.opts,
      toKeys: (o) => [objectKey(o)],
      predicates: primary.opts.predicates ?? [],
    });
    for (const s of secondary) {
      this.sources.push({
        gvk: s.gvk,
        opts: s.opts,
        toKeys: s.map ?? ((o) => this.ownerKeys(o)),
        predicates: s.opts.predicates ?? [],
      });
    }
    for (const s of this.sources) {
      // The primary informer seen untyped: the sources route any object to keys.
      const informer =
        s.gvk === primary.gvk && s.opts === primary.opts
          ? (this.primary as unknown as Reflector<KubeObject>)
          : deps.cache.acquire(s.gvk, s.opts);
      this.unsubscribes.push(informer.onDelta((d) => this.enqueueFor(s, d)));
      // Called after a complete list is stored and its deltas handled: the last of this
      // controller's informers to sync releases what was held, before any sync waiter
      // (the manager starting the workers) hears of it.
      this.unsubscribes.push(informer.onSnapshot(() => this.mapHeld()));
      this.informers.push(informer);
    }
    // Shared informers that synced before this controller was built (one joining a
    // running manager) hold nothing back.
    this.mapHeld();
  }

  /**
   * Queues `key` for a reconcile, deduplicated like any event: the way for something
   * outside the informers (a data plane's state change, a timer of the operator's own)
   * to ask for a status refresh, as controller-runtime's channel source does. Ignored
   * once the controller is stopping.
   */
  enqueue(key: ObjectKey): void {
    if (this.queue.shuttingDown) return;
    this.queue.add(key);
  }

  /** Resolves once every informer this controller reads has stored its first list. */
  async waitForSync(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.waitForSync()));
  }

  /** Resolves the primary kind's scope (owner references need it to build keys). */
  async prepare(): Promise<void> {
    this.primaryNamespaced = (await this.deps.client.resolve(this.primaryGvk)).namespaced;
  }

  /** Starts the workers and the resync timer. Call after the caches have synced. */
  startWorkers(): void {
    if (this.workers) return;
    // Everything in the cache is reconciled once at start: departures and drift that
    // happened while no controller ran are found here. Queued before the workers
    // start, so that each key is deduplicated against the sync's own events.
    for (const key of this.primary.store.keys()) this.queue.add(key);
    this.workers = runWorkers(this.queue, this.concurrency, (key) => this.handle(key));
    this.scheduleResync();
  }

  /**
   * Stops taking keys and waits up to `timeoutMs` for reconciles in flight; returns the
   * keys still in flight at the deadline (their reconciles are told to abort).
   */
  async stop(timeoutMs: number): Promise<readonly string[]> {
    if (this.resyncTimer) this.clock.clearTimeout(this.resyncTimer);
    const stragglers = await this.queue.shutdownWithDrain(timeoutMs);
    this.abort.abort(new Error('controller stopping'));
    // Its handlers out, its informers given back: the last controller of a kind stops its watch.
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    // Stopped before its caches synced: what was held is never mapped, and not kept.
    this.held?.clear();
    await Promise.all(this.informers.splice(0).map((i) => this.deps.cache.release(i)));
    return stragglers;
  }

  /** On the injected clock (whose real timers are unref'd): a pending resync never keeps a process alive. */
  private scheduleResync(): void {
    if (!this.resyncMs || this.queue.shuttingDown) return;
    const jittered = this.resyncMs * (0.9 + Math.random() * 0.2);
    this.resyncTimer = this.clock.setTimeout(() => {
      for (const key of this.primary.store.keys()) this.queue.add(key);
      this.scheduleResync();
    }, jittered);
  }

  /**
   * Routes one change to primary keys. Predicates judge the change as it happens; the
   * mapping waits until every informer this controller declares has synced.
   *
   * Why: a mapper commonly reads another cache (the primary's, to find the objects in a
   * namespace; an owned kind's), and before that cache's first list a read throws
   * `CacheNotSyncedError`: the mapper would fail, and the event, with the keys only it
   * names (a primary gone meanwhile), would be lost. controller-runtime's mapper blocks
   * in its cache reader until that informer has synced; a mapper here is synchronous and
   * cannot wait, so the controller waits for it. Nothing is lost: each object's first
   * state seen and its latest are held (the intermediate ones name no key that a
   * level-based reconcile needs, and every primary is reconciled at start anyway) and
   * mapped when the last informer syncs, before the workers start. Memory stays within
   * two states per watched object. A mapper that reads a cache the controller does not
   * declare should declare it (`owns`/`watches`), or be covered by the manager's start.
   */
  private enqueueFor(source: Source, delta: StoreDelta<KubeObject>): void {
    if (!source.predicates.every((p) => p(delta))) return;
    const first = delta.type === 'updated' ? delta.old : delta.object;
    if (!this.held) {
      this.enqueueMapped(source, first, delta.object);
      return;
    }
    let objects = this.held.get(source);
    if (!objects) {
      objects = new Map();
      this.held.set(source, objects);
    }
    const key = objectKey(delta.object);
    objects.set(key, { first: objects.get(key)?.first ?? first, last: delta.object });
  }

  /** Maps what was held, once every informer of this controller has synced; then events map as they come. */
  private mapHeld(): void {
    if (!this.held || !this.informers.every((i) => i.store.hasSynced())) return;
    const held = this.held;
    this.held = undefined;
    for (const [source, objects] of held) {
      for (const { first, last } of objects.values()) {
        // One mapper that throws loses its own object's keys, not the rest of the batch.
        try {
          this.enqueueMapped(source, first, last);
        } catch (err) {
          this.deps.log.error({ controller: this.name, err }, 'mapping a watched object to keys threw');
        }
      }
    }
  }

  private enqueueMapped(source: Source, first: KubeObject, last: KubeObject): void {
    const keys = new Set(source.toKeys(last));
    if (first !== last) for (const k of source.toKeys(first)) keys.add(k);
    for (const k of keys) this.queue.add(k);
  }

  /** The keys of the primary objects that control `obj` (owner reference with controller: true). */
  private ownerKeys(obj: KubeObject): ObjectKey[] {
    const { group } = parseApiVersion(this.primaryGvk.apiVersion);
    const out: ObjectKey[] = [];
    for (const ref of obj.metadata.ownerReferences ?? []) {
      if (
        !ref.controller ||
        ref.kind !== this.primaryGvk.kind ||
        parseApiVersion(ref.apiVersion).group !== group
      )
        continue;
      // A namespaced owner lives in its dependent's namespace; a cluster-scoped one has no namespace.
      out.push(
        this.primaryNamespaced === false || !obj.metadata.namespace
          ? ref.name
          : `${obj.metadata.namespace}/${ref.name}`,
      );
    }
    return out;
  }

  private async handle(key: ObjectKey): Promise<void> {
    const reconcileId = randomUUID();
    const log = this.deps.log.child({ controller: this.name, key, reconcileId });
    const started = this.clock.now();
    const { namespace, name } = splitKey(key);
    let outcome: ReconcileOutcome;
    this.metrics.active.labels(this.name).inc();
    try {
      const object = this.primary.store.get(key);
      const result = await this.reconciler(
        { key, namespace, name, object },
        {
          log,
          reconcileId,
          signal: this.abort.signal,
          client: this.deps.client.withSignal(this.abort.signal),
        },
      );
      outcome = this.settle(key, result ?? {});
    } catch (err) {
      outcome = ReconcileOutcome.Error;
      this.metrics.errors.labels(this.name).inc();
      if (err instanceof TerminalError) {
        // controller-runtime keeps the failure count here; we reset it, since no retry is pending.
        this.queue.forget(key);
        this.metrics.terminal.labels(this.name).inc();
        log.error({ reason: err.reason, err: err.message }, 'reconcile failed terminally: not retried');
      } else {
        const retryAfterMs = retryAfterOf(err);
        this.queue.addRateLimited(key, retryAfterMs);
        log.warn(
          {
            err: err instanceof Error ? err.message : String(err),
            retries: this.queue.numRequeues(key),
            ...(retryAfterMs ? { retryAfterMs } : {}),
          },
          'reconcile failed: retrying with backoff',
        );
      }
    } finally {
      this.metrics.active.labels(this.name).dec();
    }
    this.metrics.total.labels(this.name, outcome).inc();
    this.metrics.time.labels(this.name).observe((this.clock.now() - started) / 1000);
  }

  /** What a returned result does to the key (controller-runtime's order: requeueAfter, then requeue). */
  private settle(key: ObjectKey, result: ReconcileResult): ReconcileOutcome {
    if (result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
      this.queue.forget(key);
      this.queue.addAfter(key, result.requeueAfterMs);
      return ReconcileOutcome.RequeueAfter;
    }
    if (result.requeue) {
      // No forget: the delay grows while the reconcile keeps asking, as after failures.
      this.queue.addRateLimited(key);
      return ReconcileOutcome.Requeue;
    }
    this.queue.forget(key);
    return ReconcileOutcome.Success;
  }
}

/**
 * The Retry-After, in ms, of an `ApiError` (a 429, or a 503 that carries one) found in
 * `err` or its `cause` chain; 0 when there is none.
 */
function retryAfterOf(err: unknown): number {
  for (let e = err, depth = 0; e !== undefined && depth < 5; depth++) {
    if (isApiError(e) && e.retryAfterSeconds !== undefined && e.retryAfterSeconds > 0) {
      return e.retryAfterSeconds * 1000;
    }
    e = e instanceof Error ? e.cause : undefined;
  }
  return 0;
}
