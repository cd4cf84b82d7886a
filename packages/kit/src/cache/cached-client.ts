/**
 * A client that reads from the manager's informers and writes to the apiserver:
 * controller-runtime's default client (`manager.GetClient()`), field indexes
 * (`IndexField`) included. A reconcile reads through it as it would through the API,
 * at the cost of a map lookup instead of a request.
 *
 * Guarantees:
 * - A read waits for its informer's first sync (`syncTimeoutMs`, 30 s by default, then
 *   `CacheNotSyncedError` naming the informer and the last error); it never answers
 *   "absent" from a cache that has not loaded. The first read of a kind starts its
 *   informer (kept until the cache stops, as controller-runtime's are).
 * - Each kind is read from one informer: the one for the kind in the cache's scope
 *   (`InformerOptions` `{}`: every namespace, or the manager's `cache.namespaces` /
 *   `cache.byKind` for it). A read of a namespace outside that scope throws instead of
 *   answering "absent".
 * - `list(…, { field })` is answered from a field index added with {@link indexField};
 *   a list by a field nobody indexed throws, naming the call that is missing.
 * - Label selectors (equality and set-based) select exactly what the apiserver would.
 * - Writes are the {@link KubeClient}'s own, unchanged.
 *
 * Caveats: a read is as fresh as the watch, so a get right after a write may return
 * the version before it (read your writes from the write's result). Objects are the
 * cache's own, deep-frozen: copy what you change. Reads of kinds with label or field
 * selectors on their informer (a `.for(kind, { labelSelector })`) do not go through
 * here: read that controller's `req.object`, or `manager.cache`.
 */
import type { KubeClient } from '../client/client.ts';
import { ApiError, ApiErrorReason } from '../client/errors.ts';
import type { GroupVersionKind, KubeObject } from '../client/types.ts';
import type { DeepReadonly } from './deep-freeze.ts';
import type { InformerCache } from './informer-cache.ts';
import { parseLabelSelector } from './label-selector.ts';
import type { Reflector } from './reflector.ts';
import { BY_NAMESPACE } from './store.ts';

/** How long a read waits for its informer's first sync by default. */
export const DEFAULT_CACHE_READ_TIMEOUT_MS = 30_000;

export interface CachedClientOptions {
  /** How long a read waits for its informer's first sync before it fails. */
  readonly syncTimeoutMs?: number;
  /** Aborts reads waiting for a sync, and every write (see `KubeClient.withSignal`). */
  readonly signal?: AbortSignal;
}

export interface CachedListOptions {
  /** Only this namespace; every namespace the cache watches when omitted. */
  readonly namespace?: string;
  /** The apiserver's syntax: `app=web,tier!=db,env in (a,b),!legacy`. */
  readonly labelSelector?: string;
  /** Only objects whose indexed `name` (see {@link CachedClient.indexField}) yields `value`. */
  readonly field?: { readonly name: string; readonly value: string };
}

/** Maps an object to the values a field index finds it under (none, one or many). */
export type FieldIndexer<T extends KubeObject> = (obj: DeepReadonly<T>) => readonly string[];

/** The store index behind a field index; `field:` as controller-runtime prefixes its own. */
function indexName(field: string): string {
  return `field:${field}`;
}

export class CachedClient {
  /** The API client the writes go to. */
  readonly api: KubeClient;
  private readonly cache: InformerCache;
  private readonly opts: CachedClientOptions;
  private readonly indexed: Set<string>;

  readonly create: KubeClient['create'];
  readonly replace: KubeClient['replace'];
  readonly delete: KubeClient['delete'];
  readonly apply: KubeClient['apply'];
  readonly applyStatus: KubeClient['applyStatus'];
  readonly patch: KubeClient['patch'];
  readonly patchStatus: KubeClient['patchStatus'];

  constructor(
    cache: InformerCache,
    api: KubeClient,
    opts: CachedClientOptions = {},
    indexed = new Set<string>(),
  ) {
    this.cache = cache;
    this.api = opts.signal ? api.withSignal(opts.signal) : api;
    this.opts = opts;
    this.indexed = indexed;
    this.create = this.api.create.bind(this.api);
    this.replace = this.api.replace.bind(this.api);
    this.delete = this.api.delete.bind(this.api);
    this.apply = this.api.apply.bind(this.api);
    this.applyStatus = this.api.applyStatus.bind(this.api);
    this.patch = this.api.patch.bind(this.api);
    this.patchStatus = this.api.patchStatus.bind(this.api);
  }

  /**
   * The same client with reads and writes bound to `signal` (a reconcile's): a read
   * waiting for a sync and a write in flight are aborted with it. Shares the indexes.
   */
  withSignal(signal: AbortSignal): CachedClient {
    return new CachedClient(this.cache, this.api, { ...this.opts, signal }, this.indexed);
  }

  /**
   * Indexes `gvk`'s cached objects by the values `extract` returns, so that
   * `list(gvk, { field: { name: field, value } })` finds them without a scan (the Secrets
   * a custom resource references, by `spec.secretRef.name`). Objects cached already are
   * indexed at once. Call it once per (kind, field), typically before the manager starts.
   *
   * @throws Error if `field` is indexed already for `gvk`.
   */
  indexField<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    field: string,
    extract: FieldIndexer<T>,
  ): void {
    const id = `${gvk.apiVersion}/${gvk.kind}/${field}`;
    if (this.indexed.has(id)) throw new Error(`field index ${field} of ${gvk.kind} exists already`);
    const informer = this.cache.informer<T>(gvk, {});
    // The store holds the frozen objects it hands out: the extractor sees them as readers do.
    informer.store.addIndex(indexName(field), (o) => extract(o as DeepReadonly<T>));
    this.indexed.add(id);
  }

  /**
   * The cached object. @throws ApiError `NotFound` when the synced cache has no such
   * object, as the API would; `CacheNotSyncedError` when the informer does not sync in time.
   */
  async get<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
  ): Promise<DeepReadonly<T>> {
    const found = await this.find<T>(gvk, name, namespace);
    if (found === undefined) {
      throw new ApiError(
        ApiErrorReason.NotFound,
        404,
        `${gvk.kind} ${namespace ? `${namespace}/` : ''}${name} not found (in the cache)`,
        `GET ${gvk.apiVersion}/${gvk.kind} ${namespace ? `${namespace}/` : ''}${name} (cache)`,
      );
    }
    return found;
  }

  /** The cached object, or `undefined` when the synced cache has none. */
  async find<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
  ): Promise<DeepReadonly<T> | undefined> {
    const info = await this.api.resolve(gvk);
    if (info.namespaced && !namespace) {
      throw new ApiError(
        ApiErrorReason.BadRequest,
        400,
        `${gvk.kind} is namespaced: a namespace is required to address ${name}`,
        `${gvk.apiVersion}/${gvk.kind}`,
      );
    }
    const ns = info.namespaced ? namespace : undefined;
    const informer = await this.informerFor<T>(gvk, ns);
    return informer.store.get(ns ? `${ns}/${name}` : name);
  }

  /** The cached objects matching `opts`, in no particular order. */
  async list<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: CachedListOptions = {},
  ): Promise<DeepReadonly<T>[]> {
    const selector = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
    const informer = await this.informerFor<T>(gvk, opts.namespace);
    const { store } = informer;
    let items: DeepReadonly<T>[];
    if (opts.field) {
      if (!this.indexed.has(`${gvk.apiVersion}/${gvk.kind}/${opts.field.name}`)) {
        throw new Error(
          `no field index ${opts.field.name} for ${gvk.kind}: call indexField(${gvk.kind}, '${opts.field.name}', …) first`,
        );
      }
      items = store.byIndex(indexName(opts.field.name), opts.field.value);
      if (opts.namespace !== undefined) items = items.filter((o) => o.metadata.namespace === opts.namespace);
    } else {
      items = opts.namespace !== undefined ? store.byIndex(BY_NAMESPACE, opts.namespace) : store.list();
    }
    return selector ? items.filter((o) => selector.matches(o.metadata.labels)) : items;
  }

  /** The kind's informer, synced; refuses a namespace outside its scope rather than answer "absent". */
  private async informerFor<T extends KubeObject>(
    gvk: GroupVersionKind,
    namespace: string | undefined,
  ): Promise<Reflector<T>> {
    const informer = await this.cache.ready<T>(
      gvk,
      {},
      { timeoutMs: this.opts.syncTimeoutMs ?? DEFAULT_CACHE_READ_TIMEOUT_MS, signal: this.opts.signal },
    );
    const scope = informer.namespaces;
    if (namespace !== undefined && scope.length > 0 && !scope.includes(namespace)) {
      throw new Error(
        `${gvk.kind} in namespace ${namespace} is outside the cache's scope (${scope.join(', ')}): read it with the API client, or add the namespace to the manager's cache scope`,
      );
    }
    return informer;
  }
}
