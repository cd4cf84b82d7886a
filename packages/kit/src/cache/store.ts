/**
 * The cache a reflector fills: objects by key (`namespace/name`), with indexes.
 *
 * Readers get the stored objects themselves, not copies: they are frozen in spirit
 * (the kit never mutates them) and must be treated as read-only by controllers. A copy
 * per read would double the memory of a large cache and the cost of every reconcile.
 */
import { type KubeObject, type ObjectKey, objectKey } from '../client/types.ts';

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

export class Store<T extends KubeObject = KubeObject> {
  private readonly items = new Map<ObjectKey, T>();
  private readonly indexers = new Map<string, IndexFunction<T>>();
  private readonly indexes = new Map<string, Map<string, Set<ObjectKey>>>();
  private synced = false;

  constructor() {
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

  get(key: ObjectKey): T | undefined {
    return this.items.get(key);
  }

  get size(): number {
    return this.items.size;
  }

  keys(): IterableIterator<ObjectKey> {
    return this.items.keys();
  }

  list(): T[] {
    return [...this.items.values()];
  }

  /** The objects whose index `name` yields `value`. */
  byIndex(name: string, value: string): T[] {
    const idx = this.indexes.get(name);
    if (!idx) throw new Error(`no index named ${name}`);
    const keys = idx.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.items.get(k);
      if (o) out.push(o);
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
   * Replaces the whole content with a fresh list and returns what changed: objects new
   * or with another resourceVersion, and objects gone (deleted while we were not
   * watching). Marks the store synced.
   */
  replace(objects: readonly T[]): StoreDelta<T>[] {
    const deltas: StoreDelta<T>[] = [];
    const seen = new Set<ObjectKey>();
    for (const obj of objects) {
      seen.add(objectKey(obj));
      const d = this.upsert(obj);
      if (d) deltas.push(d);
    }
    for (const [key, old] of [...this.items]) {
      if (seen.has(key)) continue;
      const d = this.remove(old);
      if (d) deltas.push(d);
    }
    this.synced = true;
    return deltas;
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
