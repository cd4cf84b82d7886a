/**
 * One list-and-watch loop: keeps one scope (a kind in one namespace, or in all) in step
 * with the apiserver, and hands complete states and single changes to its reflector.
 *
 * Initial state, in either of two ways (`listMode`):
 * - `watch-list` (the default): one WATCH with `sendInitialEvents=true`,
 *   `resourceVersionMatch=NotOlderThan` and bookmarks. The server streams the current
 *   objects, then a BOOKMARK annotated `k8s.io/initial-events-end: "true"`, then carries
 *   on as an ordinary watch. The initial objects are gathered aside and handed over
 *   whole at that bookmark, as a LIST would be, so deletions that happened while
 *   disconnected are reported the same way. No LIST response of the whole kind is ever
 *   held in memory, and the server serves it from its watch cache.
 * - `list`: a paged LIST (`limit`), then a WATCH from the list's resourceVersion. When
 *   the continue token expires mid-way (410), the pages are dropped and one full
 *   unpaged LIST is made at once, as client-go's pager does (`FullListIfExpired`).
 * A server that refuses the watch-list parameters (a 4xx: the WatchList feature off, or
 *   a server too old to know them) is asked with `list` from then on: the loop remembers.
 * After the initial state, in both modes, every event's and bookmark's resourceVersion is
 * the version to resume from (client-go's last-synced version), so a watch the server
 * ends is resumed with a plain WATCH from there; only a 410 fetches a whole state again.
 *
 * Guarantees:
 * - A watch is connected when the server answers 200, not when its first event comes:
 *   a quiet kind after a reconnect is healthy, not stale.
 * - A watch never stays silent for ever: one that outlives its server timeout (plus
 *   30 s), or that delivers nothing (not even a bookmark) for `idleTimeoutMs`, is torn
 *   down and resumed. Silent that long, the loop is stale at once, and stays stale until
 *   a new watch opens, with no `staleAfterMs` grace after the teardown (it was silent for
 *   long enough); a watch that fails outright is stale after `staleAfterMs` without one.
 * - Failures reconnect with jittered backoff (about 0.8 s to 30 s, reset after a healthy
 *   minute), a 429's Retry-After honoured (and logged at debug: an expected retry). A
 *   LIST that fails (a 410 included) backs off like any failure; a watch told its
 *   resourceVersion is gone relists at once, but not twice within a second.
 * - A kind that is not served (yet) is retried with backoff and said so in `lastError`,
 *   with `served: false`; discovery is asked again each time.
 */
import type { Logger } from 'pino';
import type { Backoff } from '../base/backoff.ts';
import { type Clock, sleep } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import { resourcePath } from '../client/discovery.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { GroupVersionKind, KubeObject, ObjectKey, ResourceInfo } from '../client/types.ts';
import { objectKey } from '../client/types.ts';
import { METADATA_LIST_ACCEPT, watch } from '../client/watch.ts';
import { deepFreeze } from './deep-freeze.ts';

/** How a loop gets its initial state. */
export type ListMode = 'watch-list' | 'list';

/** The annotation on the bookmark that ends a watch-list's initial events. */
export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** Options a loop shares with its reflector. */
export interface ListWatchTuning {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly metadataOnly?: boolean;
  readonly keepManagedFields?: boolean;
  /** Server-side watch timeout; randomised between this and twice this, as client-go does. */
  readonly watchTimeoutSeconds?: number;
  /** No event nor bookmark for this long means the watch is dead (bookmarks come about every minute). */
  readonly idleTimeoutMs?: number;
  /** Disconnected (or stalled) this long makes the loop stale for readiness. */
  readonly staleAfterMs?: number;
  /** LIST page size (in `list` mode). */
  readonly pageSize?: number;
  /** How the initial state is fetched; `watch-list` falls back to `list` when refused. */
  readonly listMode?: ListMode;
}

/** Where a loop delivers what it sees. */
export interface ListWatchSink<T extends KubeObject> {
  /**
   * The complete state of the loop's scope. `namespace` bounds what it replaces
   * (undefined: everything the loop's reflector holds); `id` names the loop.
   */
  replace(items: T[], namespace: string | undefined, id: string): void;
  /** One change seen on the watch, after the initial state. */
  change(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void;
}

export interface ListWatchOptions extends ListWatchTuning {
  readonly id: string;
  readonly name: string;
  readonly client: KubeClient;
  readonly gvk: GroupVersionKind;
  readonly namespace: string | undefined;
  /**
   * For a kind that turns out cluster-scoped, only the first loop of a namespaced set
   * lists it; the others report an empty state and stay idle.
   */
  readonly secondary: boolean;
  readonly log: Logger;
  readonly clock: Clock;
  readonly backoff: Backoff;
  readonly signal: AbortSignal;
  readonly sink: ListWatchSink<KubeObject>;
}

/** What readiness, metrics and tests need to know about one loop. */
export interface ListWatchHealth {
  readonly name: string;
  /** The loop has delivered a complete state at least once. */
  readonly synced: boolean;
  /**
   * Not synced, or without a working watch for longer than `staleAfterMs`, or silent beyond
   * `idleTimeoutMs` (and then until a new watch opens, with no grace after the teardown).
   */
  readonly stale: boolean;
  /** False once discovery said the kind is not served; true again when it is. */
  readonly served: boolean;
  /** How the initial state is (or will next be) fetched; `list` after a refused watch-list. */
  readonly listMode: ListMode;
  readonly watching: boolean;
  readonly lastActivityAt: number;
  readonly lastError: string | undefined;
  /** Complete states fetched (LISTs and watch-lists). */
  readonly relists: number;
  /** Watches torn down for silence. */
  readonly restarts: number;
  /** Watches opened (HTTP 200), the first one included. */
  readonly connects: number;
}

/** Why a watch ended, as the loop decides what to do next. */
type WatchEnd =
  | { readonly kind: 'closed' }
  | { readonly kind: 'gone' }
  /** Torn down by the stall detector; `silent`: for delivering nothing for `idleTimeoutMs`. */
  | { readonly kind: 'stalled'; readonly silent: boolean }
  | { readonly kind: 'stopped' }
  /** The server refused the watch-list parameters: fall back to LIST. */
  | { readonly kind: 'refused'; readonly error: unknown }
  /** A watch-list stream ended before its initial-events-end bookmark. */
  | { readonly kind: 'incomplete' }
  | { readonly kind: 'failed'; readonly error: unknown };

export class ListWatch {
  private readonly opts: ListWatchOptions;
  private readonly clock: Clock;
  private mode: ListMode;
  private resourceVersion: string | undefined;
  private info: ResourceInfo | undefined;
  private served = true;
  private synced = false;
  private lastActivityAt = 0;
  /** Since when the loop has had no working watch; staleness counts from here. */
  private disconnectedSince: number | undefined;
  private connected = false;
  /** The last watch was torn down for silence, and none has opened since: stale, without grace. */
  private silenced = false;
  private lastError: string | undefined;
  private lastListAt = Number.NEGATIVE_INFINITY;
  private relists = 0;
  private restarts = 0;
  private connects = 0;

  constructor(opts: ListWatchOptions) {
    this.opts = opts;
    this.clock = opts.clock;
    this.mode = opts.listMode ?? 'watch-list';
    this.disconnectedSince = this.clock.now();
  }

  health(): ListWatchHealth {
    const now = this.clock.now();
    const staleAfter = this.opts.staleAfterMs ?? 60_000;
    const unhealthyFor =
      this.connected || this.disconnectedSince === undefined ? 0 : now - this.disconnectedSince;
    const idle = this.connected && now - this.lastActivityAt > this.idleMs;
    return {
      name: this.opts.name,
      synced: this.synced,
      stale: !this.synced || unhealthyFor > staleAfter || idle || this.silenced,
      served: this.served,
      listMode: this.mode,
      watching: this.watching,
      lastActivityAt: this.lastActivityAt,
      lastError: this.lastError,
      relists: this.relists,
      restarts: this.restarts,
      connects: this.connects,
    };
  }

  /** Synced, and the watch neither failed nor silent beyond `idleTimeoutMs`. */
  get watching(): boolean {
    return (
      this.synced &&
      this.connected &&
      !this.opts.signal.aborted &&
      this.clock.now() - this.lastActivityAt <= this.idleMs
    );
  }

  private get idleMs(): number {
    return this.opts.idleTimeoutMs ?? 150_000;
  }

  async run(): Promise<void> {
    const { log, signal } = this.opts;
    while (!signal.aborted) {
      try {
        const info = await this.resolve();
        if (!info.namespaced && this.opts.secondary) return await this.idle();
        const started = this.clock.now();
        let end: WatchEnd;
        if (this.resourceVersion !== undefined) end = await this.watchOnce(false);
        else if (this.mode === 'watch-list') end = await this.watchOnce(true);
        else {
          await this.list();
          end = await this.watchOnce(false);
        }
        const healthyMs = this.clock.now() - started;
        this.opts.backoff.healthyFor(healthyMs);
        switch (end.kind) {
          case 'stopped':
            return;
          case 'closed':
            // The server's timeout: resume at once from the last resourceVersion. A
            // stream that closes immediately again and again is a failure in disguise.
            if (healthyMs < 1_000) await this.pause();
            break;
          case 'gone':
            this.markDisconnected();
            log.info({ reflector: this.opts.name }, 'resourceVersion too old (410): relisting');
            this.resourceVersion = undefined;
            // Relisting is the cure for a 410, but one that comes straight back is not.
            if (this.clock.now() - this.lastListAt < 1_000) await this.pause();
            break;
          case 'stalled':
            this.restarts++;
            this.markDisconnected();
            // Silent that long, `idle` has called the loop stale already: a grace counted
            // from the teardown would call it fresh again for `staleAfterMs` while no new
            // watch may open at all (the path that froze it is likely frozen still).
            if (end.silent) this.silenced = true;
            log.warn({ reflector: this.opts.name }, 'watch went silent beyond its timeout: restarting it');
            break;
          case 'refused':
            this.markDisconnected();
            this.mode = 'list';
            log.info(
              { reflector: this.opts.name, err: errorText(end.error) },
              'the server refused a streaming watch-list: using LIST and WATCH from now on',
            );
            break;
          case 'incomplete':
            this.markDisconnected();
            await this.pause();
            break;
          case 'failed':
            throw end.error;
          default:
            assertNever(end);
        }
      } catch (err) {
        if (signal.aborted) return;
        this.markDisconnected();
        this.lastError = errorText(err);
        if (isApiError(err, ApiErrorReason.NotFound) && !this.info) {
          // The kind is not served (yet): discovery will be asked again after the pause.
          this.served = false;
          this.lastError = `kind ${this.opts.gvk.apiVersion}/${this.opts.gvk.kind} not served: ${this.lastError}`;
          this.opts.client.discovery.invalidate(this.opts.gvk.apiVersion);
        }
        const retryAfterSeconds = isApiError(err) ? err.retryAfterSeconds : undefined;
        const delay = Math.max((retryAfterSeconds ?? 0) * 1000, this.opts.backoff.next());
        // A 429 is the server asking us to come back later (its watch cache initialising
        // after a start, or priority and fairness shedding load): an expected retry, not
        // a fault, so it is not worth a warning on every start.
        const throttled = isApiError(err) && err.code === 429;
        log[throttled ? 'debug' : 'warn'](
          { reflector: this.opts.name, err: this.lastError, retryInMs: delay, retryAfterSeconds },
          throttled
            ? 'list or watch throttled (429): retrying after its Retry-After'
            : 'list or watch failed: retrying',
        );
        try {
          await sleep(this.clock, delay, signal);
        } catch {
          return;
        }
      }
    }
  }

  private markConnected(): void {
    this.connected = true;
    this.silenced = false;
    this.connects++;
    this.disconnectedSince = undefined;
    this.lastActivityAt = this.clock.now();
  }

  private markDisconnected(): void {
    if (this.connected || this.disconnectedSince === undefined) this.disconnectedSince = this.clock.now();
    this.connected = false;
  }

  private async pause(): Promise<void> {
    try {
      await sleep(this.clock, this.opts.backoff.next(), this.opts.signal);
    } catch {
      // Stopped while pausing.
    }
  }

  /** A cluster-scoped kind needs one loop, not one per namespace: the others hold nothing. */
  private async idle(): Promise<void> {
    // Its own namespace bounds the (empty) replacement: cluster-scoped objects have
    // none, so the first loop's objects stay.
    this.synced = true;
    this.opts.sink.replace([], this.opts.namespace, this.opts.id);
    this.markConnected();
    await new Promise<void>((resolve) =>
      this.opts.signal.aborted
        ? resolve()
        : this.opts.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
  }

  private async resolve(): Promise<ResourceInfo> {
    this.info ??= await this.opts.client.resolve(this.opts.gvk);
    this.served = true;
    return this.info;
  }

  private path(info: ResourceInfo): string {
    return resourcePath(info, info.namespaced ? this.opts.namespace : undefined);
  }

  /** The namespace a complete state bounds: none for a cluster-scoped kind or a cluster-wide loop. */
  private get scope(): string | undefined {
    return this.info?.namespaced ? this.opts.namespace : undefined;
  }

  private deliver(items: KubeObject[], mode: ListMode): void {
    this.relists++;
    this.lastListAt = this.clock.now();
    this.synced = true;
    this.lastError = undefined;
    this.opts.log.debug({ reflector: this.opts.name, objects: items.length, mode }, 'initial state stored');
    this.opts.sink.replace(items, this.scope, this.opts.id);
  }

  /** A paged LIST (one full LIST if the continue token expires) into the sink. */
  private async list(): Promise<void> {
    const info = await this.resolve();
    let result: { items: KubeObject[]; resourceVersion: string };
    try {
      result = await this.listPages(info, this.opts.pageSize ?? 500);
    } catch (err) {
      if (!(err instanceof ExpiredWhilePaging)) throw err;
      this.opts.log.info(
        { reflector: this.opts.name, err: errorText(err.cause) },
        'continue token expired while paging (410): listing everything at once',
      );
      result = await this.listPages(info, undefined);
    }
    this.resourceVersion = result.resourceVersion;
    this.deliver(result.items, 'list');
  }

  private async listPages(
    info: ResourceInfo,
    limit: number | undefined,
  ): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      let page: { metadata: { resourceVersion?: string; continue?: string }; items: KubeObject[] | null };
      try {
        page = await this.opts.client.transport.request({
          method: 'GET',
          path: this.path(info),
          query: {
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
            limit,
            continue: cont,
          },
          signal: this.opts.signal,
          accept: this.opts.metadataOnly ? METADATA_LIST_ACCEPT : undefined,
          timeoutMs: 120_000,
        });
      } catch (err) {
        if (cont !== undefined && isApiError(err, ApiErrorReason.Gone)) throw new ExpiredWhilePaging(err);
        throw err;
      }
      // A metadata-only list of nothing says `"items": null`.
      for (const item of page.items ?? []) items.push(this.prepare(item));
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);
    return { items, resourceVersion: rv };
  }

  /** One WATCH until it ends; with `initial`, a watch-list whose first events are the state. */
  private async watchOnce(initial: boolean): Promise<WatchEnd> {
    const info = await this.resolve();
    const base = this.opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.round(base * (1 + Math.random()));
    // Stopping may have happened already (during the list): combine, do not subscribe,
    // or an abort dispatched before the subscription would be missed.
    if (this.opts.signal.aborted) return { kind: 'stopped' };
    const abort = new AbortController();
    const signal = AbortSignal.any([this.opts.signal, abort.signal]);
    let stalled: { silent: boolean } | undefined;
    const openedAt = this.clock.now();
    this.lastActivityAt = openedAt;
    const idleMs = this.idleMs;
    // The server must end the stream at timeoutSeconds; alive beyond that (plus grace),
    // or quiet beyond idleMs, the connection is dead without having said so.
    const check = (): void => {
      const now = this.clock.now();
      const silent = now - this.lastActivityAt > idleMs;
      if (silent || now - openedAt > (timeoutSeconds + 30) * 1000) {
        stalled = { silent };
        abort.abort(new Error('stalled'));
        return;
      }
      timer = this.clock.setTimeout(check, every);
    };
    const every = Math.min(5_000, Math.max(100, idleMs / 4));
    let timer = this.clock.setTimeout(check, every);
    // A watch-list's initial objects, gathered aside until its end bookmark.
    const initialState = new Map<ObjectKey, KubeObject>();
    let opened = false;
    try {
      for await (const ev of watch<KubeObject>(this.opts.client.transport, this.path(info), {
        resourceVersion: initial ? undefined : this.resourceVersion,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        allowWatchBookmarks: true,
        sendInitialEvents: initial,
        resourceVersionMatch: initial ? 'NotOlderThan' : undefined,
        timeoutSeconds,
        signal,
        metadataOnly: this.opts.metadataOnly,
        onOpen: () => {
          opened = true;
          this.markConnected();
        },
      })) {
        this.lastActivityAt = this.clock.now();
        const rv = ev.object.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') {
          // Branch on `initial`, not on the map: the map outlives the initial events, and
          // bookmarks after them must move the resume version (writes to other namespaces
          // or objects advance only bookmarks; a resume from the start version would meet
          // a 410 once the server's window moved past it, and re-stream everything).
          if (initial) {
            // Before the end bookmark nothing is stored yet: a resume must not skip them.
            if (ev.object.metadata.annotations?.[INITIAL_EVENTS_END_ANNOTATION] !== 'true') continue;
            this.resourceVersion = rv;
            const items = [...initialState.values()];
            initialState.clear();
            this.deliver(items, 'watch-list');
            initial = false;
          } else if (rv) this.resourceVersion = rv;
          continue;
        }
        const obj = this.prepare(ev.object);
        if (initial) {
          if (ev.type === 'DELETED') initialState.delete(objectKey(obj));
          else initialState.set(objectKey(obj), obj);
          continue;
        }
        this.opts.sink.change(ev.type, obj);
        if (rv) this.resourceVersion = rv;
      }
      return initial ? { kind: 'incomplete' } : { kind: 'closed' };
    } catch (err) {
      if (this.opts.signal.aborted) return { kind: 'stopped' };
      if (stalled) return { kind: 'stalled', silent: stalled.silent };
      if (isApiError(err, ApiErrorReason.Gone)) return { kind: 'gone' };
      if (initial && !opened && refusesWatchList(err)) return { kind: 'refused', error: err };
      return { kind: 'failed', error: err };
    } finally {
      this.clock.clearTimeout(timer);
      if (!this.opts.signal.aborted) abort.abort(new Error('watch ended'));
    }
  }

  /**
   * Makes a freshly parsed object fit for the cache: its real kind (list items carry
   * none, metadata-only objects say PartialObjectMetadata), managedFields dropped unless
   * kept, and deep-frozen. Mutates: the object was parsed for us and nobody else holds it.
   */
  private prepare(raw: KubeObject): KubeObject {
    const o = raw as { apiVersion?: string; kind?: string; metadata: { managedFields?: unknown } };
    if (this.opts.metadataOnly || !o.apiVersion || !o.kind) {
      o.apiVersion = this.opts.gvk.apiVersion;
      o.kind = this.opts.gvk.kind;
    }
    if (!this.opts.keepManagedFields && o.metadata.managedFields) o.metadata.managedFields = undefined;
    return deepFreeze(raw);
  }
}

/** A continue token that expired while paging: the pages so far are useless. */
class ExpiredWhilePaging extends Error {
  constructor(cause: unknown) {
    super('continue token expired', { cause });
  }
}

/** A 4xx other than the ones any watch may meet: the server does not take watch-list's parameters. */
function refusesWatchList(err: unknown): boolean {
  return (
    isApiError(err, ApiErrorReason.BadRequest) ||
    isApiError(err, ApiErrorReason.Invalid) ||
    (isApiError(err) && err.code === 406)
  );
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
