/**
 * The reflector keeps a {@link Store} equal to the apiserver's view of one kind: a paged
 * LIST, then a WATCH from the list's resourceVersion, resumed from the last seen
 * resourceVersion whenever the stream ends, and a new LIST when the server says that
 * version is gone (410).
 *
 * Guarantees:
 * - Handlers run after the store holds the change, in the order of the watch stream,
 *   one at a time; a handler that throws is logged and does not stop the reflector.
 * - After a relist, the handlers see every difference between the old store and the new
 *   list, deletions included, so nothing that happened while disconnected is lost.
 * - A watch never stays silent for ever: one that outlives its server timeout, or that
 *   delivers nothing (not even a bookmark) for `idleTimeoutMs`, is torn down and
 *   resumed. `health()` reports it stale meanwhile, so /readyz says so (the failure
 *   that kubernetes-client/javascript #364, #596, #958 and pepr #745 hid).
 * - Failures reconnect with jittered backoff from about 0.8 s to 30 s, reset after a
 *   healthy minute: no reconnect storm, no stop.
 *
 * Assumptions: one reflector per (kind, namespace, selectors); the server supports
 * watch bookmarks (1.15+). Caveat: by default `metadata.managedFields` is dropped from
 * cached objects (it is often half an object's size and controllers rarely read it);
 * pass `keepManagedFields` to keep it.
 */
import type { Logger } from 'pino';
import { Backoff } from '../base/backoff.ts';
import { type Clock, realClock, sleep } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import { withGvk } from '../client/client.ts';
import { resourcePath } from '../client/discovery.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { GroupVersionKind, KubeObject, ResourceInfo } from '../client/types.ts';
import { METADATA_LIST_ACCEPT, watch } from '../client/watch.ts';
import { Store, type StoreDelta } from './store.ts';

export interface ReflectorOptions {
  readonly client: KubeClient;
  readonly gvk: GroupVersionKind;
  /** Limit to one namespace; all namespaces when omitted. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Cache PartialObjectMetadata only (for kinds where only names, labels and owners matter). */
  readonly metadataOnly?: boolean;
  readonly keepManagedFields?: boolean;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Server-side watch timeout; randomised between this and twice this, as client-go does. */
  readonly watchTimeoutSeconds?: number;
  /** No event nor bookmark for this long means the watch is dead (bookmarks come about every minute). */
  readonly idleTimeoutMs?: number;
  /** Disconnected (or stalled) this long makes the reflector stale for readiness. */
  readonly staleAfterMs?: number;
  readonly backoff?: Backoff;
  /** LIST page size. */
  readonly pageSize?: number;
}

export type ReflectorHandler<T extends KubeObject> = (delta: StoreDelta<T>) => void;

/** What readiness and metrics need to know about one reflector. */
export interface ReflectorHealth {
  readonly name: string;
  readonly synced: boolean;
  /** Not synced, or without a working watch for longer than `staleAfterMs`. */
  readonly stale: boolean;
  readonly lastActivityAt: number;
  readonly lastError: string | undefined;
  readonly relists: number;
  readonly restarts: number;
}

/** Why a watch ended, as the loop decides what to do next. */
type WatchEnd =
  | { readonly kind: 'closed' }
  | { readonly kind: 'gone' }
  | { readonly kind: 'stalled' }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'failed'; readonly error: unknown };

export class Reflector<T extends KubeObject = KubeObject> {
  readonly store: Store<T>;
  readonly name: string;
  private readonly opts: ReflectorOptions;
  private readonly clock: Clock;
  private readonly backoff: Backoff;
  private readonly handlers: ReflectorHandler<T>[] = [];
  private readonly stopController = new AbortController();
  private resourceVersion: string | undefined;
  private info: ResourceInfo | undefined;
  private loop: Promise<void> | undefined;
  private lastActivityAt = 0;
  /** Since when the reflector has had no working watch; staleness counts from here. */
  private disconnectedSince: number | undefined;
  private connected = false;
  private lastError: string | undefined;
  private relists = 0;
  private restarts = 0;
  private syncWaiters: (() => void)[] = [];

  constructor(opts: ReflectorOptions, store: Store<T> = new Store<T>()) {
    this.opts = opts;
    this.store = store;
    this.clock = opts.clock ?? realClock;
    this.backoff = opts.backoff ?? new Backoff();
    const scope = opts.namespace ? `${opts.namespace}/` : '';
    const sel = [opts.labelSelector, opts.fieldSelector].filter(Boolean).join(',');
    this.name = `${opts.gvk.apiVersion}/${opts.gvk.kind}${scope ? ` in ${scope}` : ''}${sel ? ` [${sel}]` : ''}`;
  }

  /** Handlers see every change after the store holds it. Add them before `start()`. */
  onDelta(handler: ReflectorHandler<T>): void {
    this.handlers.push(handler);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops watching; resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.stopController.abort(new Error('reflector stopped'));
    await this.loop;
  }

  /** Resolves once the first list is stored (or never, if stopped first: use with a timeout). */
  waitForSync(): Promise<void> {
    if (this.store.hasSynced()) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  health(): ReflectorHealth {
    const now = this.clock.now();
    const staleAfter = this.opts.staleAfterMs ?? 60_000;
    const synced = this.store.hasSynced();
    const unhealthyFor =
      this.connected || this.disconnectedSince === undefined ? 0 : now - this.disconnectedSince;
    const idle = this.connected && now - this.lastActivityAt > (this.opts.idleTimeoutMs ?? 150_000);
    return {
      name: this.name,
      synced,
      stale: !synced || unhealthyFor > staleAfter || idle,
      lastActivityAt: this.lastActivityAt,
      lastError: this.lastError,
      relists: this.relists,
      restarts: this.restarts,
    };
  }

  /**
   * Whether the store follows the server right now: listed, and the watch neither failed
   * nor silent beyond `idleTimeoutMs` since. Unlike `health().stale`, without the grace of
   * `staleAfterMs`: a reader that must not act on an outdated view, and can ask the
   * server instead, checks this.
   */
  get watching(): boolean {
    return (
      this.connected &&
      !this.signal.aborted &&
      this.clock.now() - this.lastActivityAt <= (this.opts.idleTimeoutMs ?? 150_000)
    );
  }

  private get signal(): AbortSignal {
    return this.stopController.signal;
  }

  private async run(): Promise<void> {
    const log = this.opts.log;
    while (!this.signal.aborted) {
      try {
        if (this.resourceVersion === undefined) await this.list();
        const started = this.clock.now();
        const end = await this.watchOnce();
        const healthyMs = this.clock.now() - started;
        this.backoff.healthyFor(healthyMs);
        switch (end.kind) {
          case 'stopped':
            return;
          case 'closed':
            // The server's timeout: resume at once from the last resourceVersion. A
            // stream that closes immediately again and again is a failure in disguise.
            if (healthyMs < 1_000) await this.pause();
            break;
          case 'gone':
            log.info({ reflector: this.name }, 'resourceVersion too old (410): relisting');
            this.resourceVersion = undefined;
            break;
          case 'stalled':
            this.restarts++;
            this.markDisconnected();
            log.warn({ reflector: this.name }, 'watch went silent beyond its timeout: restarting it');
            break;
          case 'failed':
            throw end.error;
          default:
            assertNever(end);
        }
      } catch (err) {
        if (this.signal.aborted) return;
        this.markDisconnected();
        this.lastError = err instanceof Error ? err.message : String(err);
        if (isApiError(err, ApiErrorReason.Gone)) {
          this.resourceVersion = undefined;
          continue;
        }
        if (isApiError(err, ApiErrorReason.NotFound) && !this.info) {
          // The kind is not served (yet): discovery will be asked again after the pause.
          this.opts.client.discovery.invalidate(this.opts.gvk.apiVersion);
        }
        const retryAfterMs = isApiError(err) && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : 0;
        const delay = Math.max(retryAfterMs, this.backoff.next());
        log.warn(
          { reflector: this.name, err: this.lastError, retryInMs: delay },
          'watch failed: reconnecting',
        );
        try {
          await sleep(this.clock, delay, this.signal);
        } catch {
          return;
        }
      }
    }
  }

  private markConnected(): void {
    this.connected = true;
    this.disconnectedSince = undefined;
    this.lastActivityAt = this.clock.now();
  }

  private markDisconnected(): void {
    if (this.connected || this.disconnectedSince === undefined) this.disconnectedSince = this.clock.now();
    this.connected = false;
  }

  private async pause(): Promise<void> {
    try {
      await sleep(this.clock, this.backoff.next(), this.signal);
    } catch {
      // Stopped while pausing.
    }
  }

  private async resolve(): Promise<ResourceInfo> {
    this.info ??= await this.opts.client.resolve(this.opts.gvk);
    return this.info;
  }

  /** A paged LIST into the store; the deltas go to the handlers. */
  private async list(): Promise<void> {
    const info = await this.resolve();
    const path = resourcePath(info, this.opts.namespace);
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.opts.client.transport.request<{
        metadata: { resourceVersion?: string; continue?: string };
        items: T[] | null;
      }>({
        method: 'GET',
        path,
        query: {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          limit: this.opts.pageSize ?? 500,
          continue: cont,
        },
        signal: this.signal,
        accept: this.opts.metadataOnly ? METADATA_LIST_ACCEPT : undefined,
        timeoutMs: 120_000,
      });
      // A metadata-only list of nothing says `"items": null`.
      for (const item of page.items ?? []) items.push(this.prepare(item));
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);
    const deltas = this.store.replace(items);
    this.resourceVersion = rv;
    this.relists++;
    this.markConnected();
    for (const d of deltas) this.emit(d);
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w();
  }

  /** One WATCH until it ends; returns why it ended. */
  private async watchOnce(): Promise<WatchEnd> {
    const info = await this.resolve();
    const base = this.opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.round(base * (1 + Math.random()));
    // Stopping may have happened already (during the list): combine, do not subscribe,
    // or an abort dispatched before the subscription would be missed.
    if (this.signal.aborted) return { kind: 'stopped' };
    const abort = new AbortController();
    const signal = AbortSignal.any([this.signal, abort.signal]);
    let stalled = false;
    const openedAt = this.clock.now();
    this.lastActivityAt = openedAt;
    const idleMs = this.opts.idleTimeoutMs ?? 150_000;
    // The server must end the stream at timeoutSeconds; alive beyond that (plus grace),
    // or quiet beyond idleMs, the connection is dead without having said so.
    const check = (): void => {
      const now = this.clock.now();
      if (now - openedAt > (timeoutSeconds + 30) * 1000 || now - this.lastActivityAt > idleMs) {
        stalled = true;
        abort.abort(new Error('stalled'));
        return;
      }
      timer = this.clock.setTimeout(check, every);
    };
    const every = Math.min(5_000, Math.max(100, idleMs / 4));
    let timer = this.clock.setTimeout(check, every);
    try {
      for await (const ev of watch<T>(this.opts.client.transport, resourcePath(info, this.opts.namespace), {
        resourceVersion: this.resourceVersion,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        allowWatchBookmarks: true,
        timeoutSeconds,
        signal,
        metadataOnly: this.opts.metadataOnly,
      })) {
        this.markConnected();
        const rv = ev.object.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
          continue;
        }
        const obj = this.prepare(ev.object);
        const delta = ev.type === 'DELETED' ? this.store.remove(obj) : this.store.upsert(obj);
        if (rv) this.resourceVersion = rv;
        if (delta) this.emit(delta);
      }
      return { kind: 'closed' };
    } catch (err) {
      if (this.signal.aborted) return { kind: 'stopped' };
      if (stalled) return { kind: 'stalled' };
      if (isApiError(err, ApiErrorReason.Gone)) return { kind: 'gone' };
      return { kind: 'failed', error: err };
    } finally {
      this.clock.clearTimeout(timer);
      if (!this.signal.aborted) abort.abort(new Error('watch ended'));
    }
  }

  private prepare(obj: T): T {
    const o = withGvk(obj, this.opts.gvk);
    if (!this.opts.keepManagedFields && o.metadata.managedFields) {
      (o.metadata as { managedFields?: unknown }).managedFields = undefined;
    }
    return o;
  }

  private emit(delta: StoreDelta<T>): void {
    for (const h of this.handlers) {
      try {
        h(delta);
      } catch (err) {
        this.opts.log.error({ reflector: this.name, err }, 'event handler threw; the reflector goes on');
      }
    }
  }
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
