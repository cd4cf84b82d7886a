/**
 * The reflector keeps a {@link Store} equal to the apiserver's view of one kind, in one
 * namespace, several, or all: one {@link ListWatch} loop per namespace (a streaming
 * watch-list by default, or a paged LIST then a WATCH), all behind one store and one
 * stream of changes. An operator whose RBAC is a Role in a few namespaces reads them
 * as one cache without any cluster-wide right.
 *
 * Guarantees:
 * - Every cached object is deep-frozen, and carries its real `apiVersion` and `kind`
 *   (metadata-only ones included, which the server sends as PartialObjectMetadata):
 *   owner references and patches built from it name the right kind.
 * - Handlers run after the store holds the change, in the order of each namespace's
 *   watch stream, one at a time; a handler that throws is logged and does not stop the
 *   reflector. `onDelta` returns the function that removes the handler.
 * - After a relist (or a watch-list's initial events), the handlers see every
 *   difference between the old store and the new state, deletions included, so
 *   nothing that happened while disconnected is lost.
 * - The store refuses reads until every loop has delivered its initial state;
 *   `ready({ timeoutMs })` waits for that, or fails saying why.
 * - `health()` reports stale while any loop is not synced, disconnected beyond
 *   `staleAfterMs`, or silent beyond `idleTimeoutMs`, so /readyz says so (the failure
 *   that kubernetes-client/javascript #364, #596, #958 and pepr #745 hid); and
 *   `served: false` with the reason in `lastError` while the kind is not served.
 *
 * Assumptions: one reflector per (kind, namespaces, selectors); the server supports
 * watch bookmarks (1.15+). Caveat: by default `metadata.managedFields` is dropped from
 * cached objects (it is often half an object's size and controllers rarely read it);
 * pass `keepManagedFields` to keep it.
 */
import type { Logger } from 'pino';
import { Backoff } from '../base/backoff.ts';
import { type Clock, realClock } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import type { GroupVersionKind, KubeObject } from '../client/types.ts';
import { ListWatch, type ListWatchHealth, type ListWatchTuning } from './list-watch.ts';
import { CacheNotSyncedError, Store, type StoreDelta } from './store.ts';

export interface ReflectorOptions extends ListWatchTuning {
  readonly client: KubeClient;
  readonly gvk: GroupVersionKind;
  /** Limit to one namespace; all namespaces when neither this nor `namespaces` is set. */
  readonly namespace?: string;
  /** Limit to these namespaces: one list-and-watch per namespace, one store. */
  readonly namespaces?: readonly string[];
  readonly log: Logger;
  readonly clock?: Clock;
  /** Reconnect backoff (of the first namespace's loop; the others get their own). */
  readonly backoff?: Backoff;
}

/**
 * Where a delta came from: `watch`, one event of the watch stream; `snapshot`, the
 * difference found by a complete initial state or relist (deletes there are inferred).
 */
export type DeltaOrigin = 'watch' | 'snapshot';

export type ReflectorHandler<T extends KubeObject> = (delta: StoreDelta<T>, origin: DeltaOrigin) => void;

/**
 * Called after each COMPLETE state of one loop has been stored and its deltas handled:
 * the initial one and every relist (after a 410, a dropped watch). Never for a list or
 * watch-list cut before its end, since the store replaces nothing then; so a consumer
 * may treat what is absent from `items` as gone (a mark-and-sweep).
 */
export type SnapshotHandler<T extends KubeObject> = (
  items: readonly T[],
  namespace: string | undefined,
) => void;

/** What readiness and metrics need to know about one reflector (its loops summed up). */
export type ReflectorHealth = ListWatchHealth;

export interface ReadyOptions {
  /** Fail with {@link CacheNotSyncedError} after this long; 30 s by default. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export class Reflector<T extends KubeObject = KubeObject> {
  readonly store: Store<T>;
  readonly name: string;
  /** The namespaces watched; empty for all. */
  readonly namespaces: readonly string[];
  private readonly opts: ReflectorOptions;
  private readonly clock: Clock;
  private readonly loops: ListWatch[];
  private readonly handlers = new Set<ReflectorHandler<T>>();
  private readonly snapshotHandlers = new Set<SnapshotHandler<T>>();
  private readonly stopController = new AbortController();
  private running: Promise<unknown> | undefined;
  private syncWaiters: (() => void)[] = [];

  constructor(opts: ReflectorOptions, store?: Store<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    const namespaces = [...new Set(opts.namespaces ?? (opts.namespace ? [opts.namespace] : []))].sort();
    this.namespaces = namespaces;
    const scope = namespaces.length ? ` in ${namespaces.join(',')}/` : '';
    const sel = [opts.labelSelector, opts.fieldSelector].filter(Boolean).join(',');
    this.name = `${opts.gvk.apiVersion}/${opts.gvk.kind}${scope}${sel ? ` [${sel}]` : ''}`;
    const partitioned = namespaces.length > 1;
    this.store = store ?? new Store<T>({ name: this.name, partitions: partitioned ? namespaces : undefined });
    const scopes: (string | undefined)[] = namespaces.length ? namespaces : [undefined];
    this.loops = scopes.map(
      (namespace, i) =>
        new ListWatch({
          ...opts,
          id: namespace ?? '',
          name: this.name,
          namespace,
          secondary: i > 0,
          clock: this.clock,
          backoff: i === 0 && opts.backoff ? opts.backoff : new Backoff(),
          signal: this.stopController.signal,
          sink: {
            replace: (items, ns, id) =>
              this.replaced(
                this.store.replace(items as T[], partitioned ? { id, namespace: ns } : undefined),
                items as T[],
                ns,
              ),
            change: (type, obj) => {
              const delta = type === 'DELETED' ? this.store.remove(obj as T) : this.store.upsert(obj as T);
              if (delta) this.emit(delta, 'watch');
            },
          },
        }),
    );
  }

  /** Handlers see every change after the store holds it; returns the function that removes it. */
  onDelta(handler: ReflectorHandler<T>): () => void {
    // A wrapper, so that the same function added twice is two subscriptions.
    const h: ReflectorHandler<T> = (d, origin) => handler(d, origin);
    this.handlers.add(h);
    return () => {
      this.handlers.delete(h);
    };
  }

  /** See {@link SnapshotHandler}; returns the function that removes it. */
  onSnapshot(handler: SnapshotHandler<T>): () => void {
    const h: SnapshotHandler<T> = (items, ns) => handler(items, ns);
    this.snapshotHandlers.add(h);
    return () => {
      this.snapshotHandlers.delete(h);
    };
  }

  start(): void {
    this.running ??= Promise.all(this.loops.map((l) => l.run()));
  }

  /** Stops watching; resolves once every loop has ended. */
  async stop(): Promise<void> {
    this.stopController.abort(new Error('reflector stopped'));
    await this.running;
  }

  /** Resolves once every namespace's initial state is stored (or never, if stopped first: see `ready`). */
  waitForSync(): Promise<void> {
    if (this.store.hasSynced()) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /**
   * Resolves once the store is synced (at once if it is); rejects with
   * {@link CacheNotSyncedError}, naming the last error (a kind not served, a Forbidden
   * list), if that takes longer than `timeoutMs`.
   */
  async ready(opts: ReadyOptions = {}): Promise<void> {
    if (this.store.hasSynced()) return;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const { signal } = opts;
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        timer = this.clock.setTimeout(() => {
          const err = this.health().lastError;
          reject(
            new CacheNotSyncedError(
              this.name,
              `did not sync within ${timeoutMs} ms${err ? ` (last error: ${err})` : ''}`,
            ),
          );
        }, timeoutMs);
        if (signal) {
          onAbort = () => reject(signal.reason);
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }
        void this.waitForSync().then(resolve);
      });
    } finally {
      if (timer) this.clock.clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  health(): ReflectorHealth {
    const all = this.loops.map((l) => l.health());
    return {
      name: this.name,
      synced: all.every((h) => h.synced),
      stale: all.some((h) => h.stale),
      served: all.every((h) => h.served),
      listMode: all.some((h) => h.listMode === 'list') ? 'list' : 'watch-list',
      watching: all.every((h) => h.watching),
      lastActivityAt: Math.min(...all.map((h) => h.lastActivityAt)),
      lastError: all.find((h) => h.lastError !== undefined)?.lastError,
      relists: sum(all.map((h) => h.relists)),
      restarts: sum(all.map((h) => h.restarts)),
      connects: sum(all.map((h) => h.connects)),
    };
  }

  /**
   * Whether the store follows the server right now: synced, and every watch neither
   * failed nor silent beyond `idleTimeoutMs`. Unlike `health().stale`, without the
   * grace of `staleAfterMs`: a reader that must not act on an outdated view, and can
   * ask the server instead, checks this.
   */
  get watching(): boolean {
    return this.loops.every((l) => l.watching);
  }

  private replaced(deltas: StoreDelta<T>[], items: readonly T[], namespace: string | undefined): void {
    for (const d of deltas) this.emit(d, 'snapshot');
    if (this.snapshotHandlers.size > 0) {
      // `items` are what the store now holds (the loop freezes them before the sink).
      for (const h of this.snapshotHandlers) {
        try {
          h(items, namespace);
        } catch (err) {
          this.opts.log.error({ reflector: this.name, err }, 'snapshot handler threw; the reflector goes on');
        }
      }
    }
    if (!this.store.hasSynced()) return;
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w();
  }

  private emit(delta: StoreDelta<T>, origin: DeltaOrigin): void {
    for (const h of this.handlers) {
      try {
        h(delta, origin);
      } catch (err) {
        this.opts.log.error({ reflector: this.name, err }, 'event handler threw; the reflector goes on');
      }
    }
  }
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
