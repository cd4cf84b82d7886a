/**
 * The manager's shared informers: one reflector (and one store) per kind, namespaces
 * and selectors, whichever controllers ask for it. Two controllers that watch Secrets
 * share one watch and one copy of every Secret.
 *
 * Lifetimes:
 * - `acquire`/`release` count references: controllers acquire what they watch when
 *   built and release it when removed; the last release stops the informer, so adding
 *   and removing controllers at run time leaks no watch.
 * - `informer()` (and `ready()`) hand out an informer the cache itself holds until it
 *   stops: for reads outside any controller's declared kinds. Lazily created informers
 *   live as long as the cache, as controller-runtime's do.
 *
 * Reads of informers that have not synced: their store throws `CacheNotSyncedError`;
 * `ready(gvk, opts)` creates (or finds) the informer and waits for its sync, with a
 * timeout. From inside a reconcile that is the way to read a kind or a scope no
 * controller declared: the reconcile waits (its workqueue key is held meanwhile) rather
 * than take "not loaded yet" for "absent".
 *
 * Readiness (`notReady()`): an informer counts once it has synced. Before the manager
 * first syncs, its own gate covers the informers its controllers declared; after that,
 * an informer created later (a controller joining, a lazy read) is reported in
 * `health()` while it syncs but does not turn a ready process unready, and a kind that
 * is not served (a controller for a CRD not installed) never does: its health says so.
 * A synced informer whose watch goes stale does.
 *
 * Scoping (`CacheScope`): manager-wide default namespaces and per-kind namespaces and
 * selectors, so an operator whose RBAC is a Role in a few namespaces never lists
 * cluster-wide. An informer asked for without a namespace gets the scope's namespaces
 * (one list-and-watch per namespace behind one store); the scope's selectors are added
 * (AND) to those asked for. An explicit `namespace` is kept as asked.
 */
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import type { GroupVersionKind, KubeObject } from '../client/types.ts';
import { type ReadyOptions, Reflector, type ReflectorHealth, type ReflectorOptions } from './reflector.ts';

/** How a kind is watched; part of the informer's identity. */
export interface InformerOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly metadataOnly?: boolean;
  /** Keep `metadata.managedFields` in cached objects (for `hasDrifted(…, { fieldManager })`). */
  readonly keepManagedFields?: boolean;
}

/** Where and what one kind is cached. */
export interface KindScope {
  /** Watch only these namespaces (one list-and-watch each). */
  readonly namespaces?: readonly string[];
  /** Added (AND) to the selector an informer asks for. */
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
}

/** What the whole cache watches, by default and per kind. */
export interface CacheScope {
  /** Namespaced kinds are watched in these namespaces only (cluster-scoped kinds as a whole). */
  readonly namespaces?: readonly string[];
  /** Per kind, keyed `apiVersion/Kind` (`v1/ConfigMap`, `apps/v1/Deployment`); overrides `namespaces`. */
  readonly byKind?: Readonly<Record<string, KindScope>>;
}

interface Entry {
  readonly id: string;
  readonly reflector: Reflector<KubeObject>;
  /** Controllers holding it. */
  refs: number;
  /** Held by the cache itself (handed out by `informer()`), until the cache stops. */
  pinned: boolean;
}

export class InformerCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byReflector = new Map<Reflector<KubeObject>, Entry>();
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly clock: Clock | undefined;
  private readonly tuning: Partial<ReflectorOptions>;
  private readonly scope: CacheScope;
  private started = false;

  constructor(
    client: KubeClient,
    log: Logger,
    clock?: Clock,
    tuning: Partial<ReflectorOptions> = {},
    scope: CacheScope = {},
  ) {
    this.client = client;
    this.log = log;
    this.clock = clock;
    this.tuning = tuning;
    this.scope = scope;
  }

  /** The shared reflector for `gvk` watched as `opts`, created on first use and kept until the cache stops. */
  informer<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: InformerOptions = {},
  ): Reflector<T> {
    const e = this.entry(gvk, opts);
    e.pinned = true;
    return e.reflector as unknown as Reflector<T>;
  }

  /** The shared reflector for `gvk` watched as `opts`, counted: give it back with {@link release}. */
  acquire<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: InformerOptions = {},
  ): Reflector<T> {
    const e = this.entry(gvk, opts);
    e.refs++;
    return e.reflector as unknown as Reflector<T>;
  }

  /** Gives back an acquired reflector; the last release of an unpinned one stops it. */
  async release<T extends KubeObject>(reflector: Reflector<T>): Promise<void> {
    const e = this.byReflector.get(reflector as unknown as Reflector<KubeObject>);
    if (!e) return;
    e.refs = Math.max(0, e.refs - 1);
    if (e.refs > 0 || e.pinned) return;
    this.entries.delete(e.id);
    this.byReflector.delete(e.reflector);
    await e.reflector.stop();
  }

  /**
   * The informer for `gvk` as `opts` (created and pinned if new), once synced: the way
   * to read a kind no controller declared, or the same kind in another scope.
   * Rejects with `CacheNotSyncedError` after `timeoutMs` (30 s by default).
   */
  async ready<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: InformerOptions = {},
    wait: ReadyOptions = {},
  ): Promise<Reflector<T>> {
    const r = this.informer<T>(gvk, opts);
    await r.ready(wait);
    return r;
  }

  /** How many informers run (or will, once started). */
  get size(): number {
    return this.entries.size;
  }

  start(): void {
    this.started = true;
    for (const e of this.entries.values()) e.reflector.start();
  }

  /** Resolves when every informer has stored its initial state. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    const all = Promise.all([...this.entries.values()].map((e) => e.reflector.waitForSync()));
    if (!signal) {
      await all;
      return;
    }
    await Promise.race([
      all,
      new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
      ),
    ]);
  }

  health(): ReflectorHealth[] {
    return [...this.entries.values()].map((e) => e.reflector.health());
  }

  /**
   * Why the cache makes the process unready, empty when it does not: each synced
   * informer whose watch is stale (see the module comment for the rule).
   */
  notReady(): string[] {
    const out: string[] = [];
    for (const h of this.health()) {
      if (h.synced && h.stale) out.push(`watch stale: ${h.name}${h.lastError ? ` (${h.lastError})` : ''}`);
    }
    return out;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.reflector.stop()));
  }

  private entry(gvk: GroupVersionKind, opts: InformerOptions): Entry {
    const kind = this.scope.byKind?.[`${gvk.apiVersion}/${gvk.kind}`];
    const namespaces = opts.namespace
      ? [opts.namespace]
      : [...(kind?.namespaces ?? this.scope.namespaces ?? [])];
    namespaces.sort();
    const labelSelector = and(opts.labelSelector, kind?.labelSelector);
    const fieldSelector = and(opts.fieldSelector, kind?.fieldSelector);
    const id = JSON.stringify([
      gvk.apiVersion,
      gvk.kind,
      namespaces,
      labelSelector ?? '',
      fieldSelector ?? '',
      !!opts.metadataOnly,
      !!opts.keepManagedFields,
    ]);
    let e = this.entries.get(id);
    if (!e) {
      const reflector = new Reflector<KubeObject>({
        ...this.tuning,
        client: this.client,
        gvk,
        namespaces,
        labelSelector,
        fieldSelector,
        metadataOnly: opts.metadataOnly,
        keepManagedFields: opts.keepManagedFields,
        log: this.log,
        clock: this.clock,
      });
      e = { id, reflector, refs: 0, pinned: false };
      this.entries.set(id, e);
      this.byReflector.set(reflector, e);
      if (this.started) reflector.start();
    }
    return e;
  }
}

function and(a: string | undefined, b: string | undefined): string | undefined {
  const parts = [a, b].filter((s): s is string => !!s);
  return parts.length ? parts.join(',') : undefined;
}
