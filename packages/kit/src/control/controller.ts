/**
 * A controller: watches one primary kind (and the kinds it owns or depends on), turns
 * every change into the key of a primary object, and reconciles keys from a workqueue.
 *
 * The contract, as controller-runtime states it: reconciliation is level-based. A
 * reconcile receives a key, never the event that caused it; it reads the current state
 * (from the cache), decides, and applies. "The object was deleted" is observed by not
 * finding it. Any number of events may fold into one reconcile.
 *
 * Outcomes of one reconcile:
 * - returns `{}` (or nothing): done; the key's failure count is reset.
 * - returns `{ requeueAfterMs }`: done for now; reconcile again after that delay.
 * - throws a {@link TerminalError}: recorded (log, metric) and not retried; a later
 *   change of the object brings the key back.
 * - throws anything else: retried with per-key exponential backoff (5 ms to ~16 min).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Counter, Histogram, Registry } from 'prom-client';
import type { Clock } from '../base/clock.ts';
import { realClock } from '../base/clock.ts';
import { sharedCounter, sharedHistogram } from '../base/shared-metrics.ts';
import type { InformerCache, InformerOptions } from '../cache/informer-cache.ts';
import type { Reflector } from '../cache/reflector.ts';
import type { StoreDelta } from '../cache/store.ts';
import type { KubeClient } from '../client/client.ts';
import {
  type GroupVersionKind,
  type KubeObject,
  type ObjectKey,
  objectKey,
  parseApiVersion,
  splitKey,
} from '../client/types.ts';
import { runWorkers, Workqueue } from './workqueue.ts';

/** What a reconcile is asked to do: bring the object with this key to its desired state. */
export interface ReconcileRequest {
  readonly key: ObjectKey;
  readonly namespace: string | undefined;
  readonly name: string;
}

export interface ReconcileResult {
  /** Reconcile this key again after this many milliseconds (a periodic check, a pending external state). */
  readonly requeueAfterMs?: number;
}

export interface ReconcileContext {
  /** A child logger carrying controller, key and reconcileId. */
  readonly log: Logger;
  readonly reconcileId: string;
  /** Aborted when the manager shuts down or loses leadership: stop at the next await. */
  readonly signal: AbortSignal;
}

export type Reconciler = (
  req: ReconcileRequest,
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

/** Result labels of `controller_runtime_reconcile_total`, as controller-runtime names them. */
export const ReconcileOutcome = {
  Success: 'success',
  Error: 'error',
  RequeueAfter: 'requeue_after',
  Terminal: 'terminal_error',
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

export class ControllerBuilder {
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
  private onBuilt: ((c: Controller) => void) | undefined;

  constructor(name: string, deps: ControllerDeps, onBuilt?: (c: Controller) => void) {
    this.name = name;
    this.deps = deps;
    this.onBuilt = onBuilt;
  }

  /** The primary kind: its keys are what the reconciler receives. */
  for(gvk: GroupVersionKind, opts: ForOptions = {}): this {
    this.primary = { gvk, opts };
    return this;
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

  /** Enqueue every primary key this often (with ±10 % jitter), to catch drift no event reports. */
  resyncEvery(ms: number): this {
    this.resyncMs = ms;
    return this;
  }

  reconcile(fn: Reconciler): Controller {
    if (!this.primary) throw new Error(`controller ${this.name}: call for(kind) before reconcile()`);
    const c = new Controller(
      this.name,
      this.deps,
      this.primary,
      this.secondary,
      fn,
      this.concurrency,
      this.resyncMs,
    );
    this.onBuilt?.(c);
    return c;
  }
}

export class Controller {
  readonly name: string;
  readonly queue: Workqueue;
  /** The primary kind's shared informer; its store is the reconciler's read cache. */
  readonly primary: Reflector<KubeObject>;
  private readonly deps: ControllerDeps;
  private readonly primaryGvk: GroupVersionKind;
  private readonly sources: Source[] = [];
  private readonly informers: Reflector<KubeObject>[] = [];
  private readonly reconciler: Reconciler;
  private readonly concurrency: number;
  private readonly resyncMs: number | undefined;
  private readonly clock: Clock;
  private readonly metrics: {
    total: Counter<'controller' | 'result'>;
    errors: Counter<'controller'>;
    terminal: Counter<'controller'>;
    time: Histogram<'controller'>;
  };
  private primaryNamespaced: boolean | undefined;
  private workers: Promise<void> | undefined;
  private resyncTimer: ReturnType<typeof setTimeout> | undefined;
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
    reconciler: Reconciler,
    concurrency: number,
    resyncMs: number | undefined,
  ) {
    this.name = name;
    this.deps = deps;
    this.primaryGvk = primary.gvk;
    this.reconciler = reconciler;
    this.concurrency = concurrency;
    this.resyncMs = resyncMs;
    this.clock = deps.clock ?? realClock;
    this.queue = new Workqueue({ name, registry: deps.registry, clock: deps.clock });
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
    };
    for (const r of Object.values(ReconcileOutcome)) this.metrics.total.labels(name, r).inc(0);
    this.metrics.errors.labels(name).inc(0);

    this.primary = deps.cache.informer(primary.gvk, primary.opts);
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
      const informer =
        s.gvk === primary.gvk && s.opts === primary.opts ? this.primary : deps.cache.informer(s.gvk, s.opts);
      informer.onDelta((d) => this.enqueueFor(s, d));
      this.informers.push(informer);
    }
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
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
    const stragglers = await this.queue.shutdownWithDrain(timeoutMs);
    this.abort.abort(new Error('controller stopping'));
    return stragglers;
  }

  private scheduleResync(): void {
    if (!this.resyncMs) return;
    const jittered = this.resyncMs * (0.9 + Math.random() * 0.2);
    this.resyncTimer = setTimeout(() => {
      for (const key of this.primary.store.keys()) this.queue.add(key);
      this.scheduleResync();
    }, jittered);
    this.resyncTimer.unref();
  }

  private enqueueFor(source: Source, delta: StoreDelta<KubeObject>): void {
    if (!source.predicates.every((p) => p(delta))) return;
    const keys = new Set(source.toKeys(delta.object));
    if (delta.type === 'updated') for (const k of source.toKeys(delta.old)) keys.add(k);
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
    try {
      const result = await this.reconciler(
        { key, namespace, name },
        { log, reconcileId, signal: this.abort.signal },
      );
      this.queue.forget(key);
      if (result?.requeueAfterMs !== undefined && result.requeueAfterMs >= 0) {
        this.queue.addAfter(key, result.requeueAfterMs);
        outcome = ReconcileOutcome.RequeueAfter;
      } else {
        outcome = ReconcileOutcome.Success;
      }
    } catch (err) {
      if (err instanceof TerminalError) {
        this.queue.forget(key);
        this.metrics.terminal.labels(this.name).inc();
        outcome = ReconcileOutcome.Terminal;
        log.error({ reason: err.reason, err: err.message }, 'reconcile failed terminally: not retried');
      } else {
        this.queue.addRateLimited(key);
        outcome = ReconcileOutcome.Error;
        log.warn(
          { err: err instanceof Error ? err.message : String(err), retries: this.queue.numRequeues(key) },
          'reconcile failed: retrying with backoff',
        );
      }
      this.metrics.errors.labels(this.name).inc();
    }
    this.metrics.total.labels(this.name, outcome).inc();
    this.metrics.time.labels(this.name).observe((this.clock.now() - started) / 1000);
  }
}
