/**
 * The cache a reflector fills: objects by key (`namespace/name`), with indexes.
 *
 * Guarantees:
 * - Readers get the stored objects themselves, not copies, and those objects are
 *   deep-frozen (the reflector freezes each one once, when it arrives): a reconciler
 *   that mutates a cached object gets a TypeError (ESM code is strict), instead of
 *   silently changing what every later reader sees. Copy before changing
 *   (`structuredClone`, or spread the parts you change). A copy per read would double
 *   the memory of a large cache and the cost of every reconcile; a freeze at ingest
 *   costs one walk per object version. Reads are typed `DeepReadonly<T>` to say so.
 * - A store that has not received its first complete list refuses reads
 *   (`get`, `list`, `keys`, `byIndex`, `size` throw {@link CacheNotSyncedError}): an empty
 *   answer there would mean "not loaded yet", and a reconciler would take it for
 *   "absent" and act on it. Wait with `Reflector.ready()` or `InformerCache.ready()`.
 * - A store may be filled by several reflectors, one per namespace (a cache scoped to a
 *   few namespaces): each replaces only its own namespace's objects, and the store is
 *   synced once every one of them has listed.
 */
import { type KubeObject, type ObjectKey, objectKey } from '../client/types.ts';
import type { DeepReadonly } from './deep-freeze.ts';

/** Maps an object to the index values it is found under (none, one or many). */
export type IndexFunction<T extends KubeObject> = (obj: T) => readonly string[];

/** Built-in index: objects by namespace (`''` for cluster-scoped). */
export const BY_NAMESPACE = 'namespace';
/** Built-in index: objects by the UID of each owner reference. */
export const BY_OWNER_UID = 'owner-uid';

/** What changed in the store; handed to event handlers after the store is updated. */
export type StoreDelta<T extends KubeObject> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'updated'; readonly object: T; readonly old: T }
  /** `object` is the last state the store knew: after a relist, deletes are inferred. */
  | { readonly type: 'deleted'; readonly object: T };

/**
 * A read of a cache that has not synced yet. Thrown instead of answering "absent" for
 * an object that may well exist: retrying (the workqueue's backoff) or awaiting
 * `ready()` is the fix.
 */
export class CacheNotSyncedError extends Error {
  override readonly name = 'CacheNotSyncedError';
  /** The informer (kind, scope, selectors) that was read too early. */
  readonly informer: string;
  constructor(informer: string, detail = 'has not synced yet') {
    super(`cache ${informer} ${detail}: await its ready() (or InformerCache.ready()) before reading it`);
    this.informer = informer;
  }
}

export interface StoreOptions {
  /** Names the store in errors (the reflector's name). */
  readonly name?: string;
  /**
   * The ids of the loops (one per namespace) that fill this store, each replacing its
   * own part; the store is synced when each has listed. Omitted: one loop fills it whole.
   */
  readonly partitions?: readonly string[];
}

export class Store<T extends KubeObject = KubeObject> {
  name: string;
  private readonly items = new Map<ObjectKey, T>();
  private readonly indexers = new Map<string, IndexFunction<T>>();
  private readonly indexes = new Map<string, Map<string, Set<ObjectKey>>>();
  private readonly pendingPartitions: Set<string> | undefined;
  private synced = false;

  constructor(opts: StoreOptions = {}) {
    this.name = opts.name ?? 'store';
    this.pendingPartitions = opts.partitions ? new Set(opts.partitions) : undefined;
    this.addIndex(BY_NAMESPACE, (o) => [o.metadata.namespace ?? '']);
    this.addIndex(BY_OWNER_UID, (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid));
  }

  /** Adds an index; objects already stored are indexed at once. */
  addIndex(name: string, fn: IndexFunction<T>): void {
    if (this.indexers.has(name)) throw new Error(`index ${name} exists already`);
    this.indexers.set(name, fn);
    const idx = new Map<string, Set<ObjectKey>>();
    this.indexes.set(name, idx);
    for (const [key, obj] of this.items) for (const v of fn(obj)) addTo(idx, v, key);
  }

  /** True once the first complete list has been stored. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** The object with this key; `undefined` means absent, since the store has synced. */
  get(key: ObjectKey): DeepReadonly<T> | undefined {
    this.assertSynced();
    return this.items.get(key) as DeepReadonly<T> | undefined;
  }

  /**
   * How many objects are stored. Refused before the first list like every other read:
   * a 0 there would mean "not loaded", and a caller would take it for "none".
   */
  get size(): number {
    this.assertSynced();
    return this.items.size;
  }

  keys(): IterableIterator<ObjectKey> {
    this.assertSynced();
    return this.items.keys();
  }

  list(): DeepReadonly<T>[] {
    this.assertSynced();
    return [...this.items.values()] as DeepReadonly<T>[];
  }

  /** The objects whose index `name` yields `value`. */
  byIndex(name: string, value: string): DeepReadonly<T>[] {
    this.assertSynced();
    const idx = this.indexes.get(name);
    if (!idx) throw new Error(`no index named ${name}`);
    const keys = idx.get(value);
    if (!keys) return [];
    const out: DeepReadonly<T>[] = [];
    for (const k of keys) {
      const o = this.items.get(k);
      if (o) out.push(o as DeepReadonly<T>);
    }
    return out;
  }

  /** Stores an added or modified object; returns the delta (none when nothing changed). */
  upsert(obj: T): StoreDelta<T> | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return undefined;
    this.unindex(key, old);
    this.items.set(key, obj);
    this.index(key, obj);
    return old ? { type: 'updated', object: obj, old } : { type: 'added', object: obj };
  }

  /** Removes an object; returns the delta with the last known state. */
  remove(obj: T): StoreDelta<T> | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return { type: 'deleted', object: obj };
  }

  /**
   * Replaces the content with a fresh list and returns what changed: objects new or
   * with another resourceVersion, and objects gone (deleted while we were not
   * watching). With a `partition`, only the objects of its namespace are replaced (all
   * of them when its namespace is undefined), and the store is synced once every
   * partition named at construction has been replaced; without, once.
   */
  replace(
    objects: readonly T[],
    partition?: { readonly id: string; readonly namespace: string | undefined },
  ): StoreDelta<T>[] {
    const deltas: StoreDelta<T>[] = [];
    const seen = new Set<ObjectKey>();
    for (const obj of objects) {
      seen.add(objectKey(obj));
      const d = this.upsert(obj);
      if (d) deltas.push(d);
    }
    const candidates =
      partition?.namespace === undefined
        ? [...this.items.keys()]
        : [...(this.indexes.get(BY_NAMESPACE)?.get(partition.namespace) ?? [])];
    for (const key of candidates) {
      if (seen.has(key)) continue;
      const old = this.items.get(key);
      const d = old && this.remove(old);
      if (d) deltas.push(d);
    }
    if (partition) this.pendingPartitions?.delete(partition.id);
    if (!partition || !this.pendingPartitions || this.pendingPartitions.size === 0) this.synced = true;
    return deltas;
  }

  private assertSynced(): void {
    if (!this.synced) throw new CacheNotSyncedError(this.name);
  }

  private index(key: ObjectKey, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name);
      if (idx) for (const v of fn(obj)) addTo(idx, v, key);
    }
  }

  private unindex(key: ObjectKey, obj: T | undefined): void {
    if (!obj) return;
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name);
      if (!idx) continue;
      for (const v of fn(obj)) {
        const set = idx.get(v);
        set?.delete(key);
        if (set?.size === 0) idx.delete(v);
      }
    }
  }
}

function addTo(idx: Map<string, Set<ObjectKey>>, value: string, key: ObjectKey): void {
  let set = idx.get(value);
  if (!set) {
    set = new Set();
    idx.set(value, set);
  }
  set.add(key);
}
