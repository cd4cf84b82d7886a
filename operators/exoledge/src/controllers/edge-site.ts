/**
 * The EdgeSite reconciler: plan (`desiredObjects`), compare, apply what drifted, prune
 * what the site no longer wants, report. Every decision is in `domain/edge-site`; this
 * file reads, writes and counts.
 *
 * What the seed's deployment taught, each answered here:
 * - owned objects are watched (`owns` on every kind the cluster serves), so a route
 *   deleted or edited by hand is put back at once, not at the next resync;
 * - the site is read from the API at the start of each reconcile, and an object absent
 *   from the cache is looked up in the API before it is created: a reconcile that a
 *   deletion triggered never acts on a cache that lags behind it;
 * - nothing is written when live equals desired (`hasDrifted`, which ignores fields the
 *   server defaults and fields others own), and writes are server-side applies: others'
 *   labels, annotations and status stay;
 * - the loop stops at the first failed write, says `ApplyFailed` with the object's name
 *   (condition and Event), keeps what it applied before, and `status.features` counts only
 *   what is live;
 * - a switched-off function's objects are deleted by kind and name, only when this site
 *   controls them (an object of the same name the site does not own is never touched),
 *   whatever happened to the applies: a switch turned off must not stay live because
 *   another object failed to apply. A deletion that fails makes its function say
 *   `RemoveFailed`, never its off reason, until the object is gone;
 * - a kind the cluster does not serve (cert-manager or Istio not installed) is skipped,
 *   and the finalizer treats it as already gone, so deletion never hangs on it.
 *
 * Served kinds are discovered once, before the controller starts (`discoverEdgeKinds`):
 * an informer of a kind that is not served never syncs. A CRD installed later is taken
 * into account after a restart of the operator (documented).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  ApiErrorReason,
  type Clock,
  type Controller,
  EventType,
  finalizerReconcile,
  type GroupVersionKind,
  hasDrifted,
  isApiError,
  isControlledBy,
  type KubeClient,
  type KubeObject,
  type Manager,
  type ObjectKey,
  type ReconcileContext,
  type ReconcileResult,
  realClock,
  setCondition,
} from '@operators/kit';
import { EDGE_SITE, type EdgeSite } from '../api/edge-site.ts';
import { FIELD_MANAGER } from '../domain/blocklist-source/publication.ts';
import {
  API_VERSION,
  CRD_OF,
  DELETE_ORDER,
  type DesiredSet,
  desiredObjects,
  type EdgeSiteOptions,
  type EndpointSlice,
  endpointSliceSites,
  featureStatuses,
  LABEL_SITE,
  LABEL_SITE_NAMESPACE,
  nextStatus,
  type ObjectOutcome,
  type ObjectRef,
  OwnedKind,
  originsOf,
  outcomeKey,
  type ReconcileVerdict,
  readyCondition,
  type Service,
  SHARD_DELETE_ORDER,
  ShardKind,
  SiteReason,
  serviceSites,
  shardSelector,
  siteMode,
} from '../domain/edge-site/index.ts';

/** The EdgeSite's finalizer, as the seed names it. */
export const EDGE_SITE_FINALIZER = 'edge.exoledge.io/finalizer';

/** A converged site is looked at again this often, to repair what no event reported. */
export const DEFAULT_EDGE_RESYNC_MS = 10 * 60_000;
/** A name taken by an object the site does not own is looked at again after this long. */
const CONFLICT_RETRY_MS = 60_000;

const SERVICE: GroupVersionKind = { apiVersion: 'v1', kind: 'Service' };
const ENDPOINT_SLICE: GroupVersionKind = { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' };

/** Which of the kinds a site may own the cluster does not serve, with the CRD that would serve each. */
export type NotServed = ReadonlyMap<OwnedKind | ShardKind, string>;

/**
 * Asks discovery which owned kinds are served. Built-in kinds always are; cert-manager's,
 * Gateway API's and Istio's are when their CRDs are installed and established.
 */
export async function discoverEdgeKinds(client: KubeClient): Promise<NotServed> {
  const missing = new Map<OwnedKind | ShardKind, string>();
  for (const kind of Object.values(OwnedKind)) {
    const crd = CRD_OF[kind];
    if (!crd) continue;
    try {
      await client.resolve({ apiVersion: API_VERSION[kind], kind });
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      missing.set(kind, crd);
    }
  }
  return missing;
}

export interface EdgeSiteControllerOptions {
  readonly edge: EdgeSiteOptions;
  /** From `discoverEdgeKinds`: these kinds are skipped, and the functions they carry say so. */
  readonly notServed: NotServed;
  readonly resyncMs?: number;
  readonly concurrency?: number;
  readonly clock?: Clock;
}

const gvkOf = (kind: OwnedKind | ShardKind): GroupVersionKind => ({ apiVersion: API_VERSION[kind], kind });

function describe(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

function errorMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > 1000 ? `${m.slice(0, 1000)}…` : m;
}

/** A failed deletion, carried to the status. */
class DeleteFailed extends Error {
  override readonly name = 'DeleteFailed';
  readonly object: string;
  constructor(object: string, cause: unknown) {
    super(`deleting ${object} failed: ${errorMessage(cause)}`, { cause });
    this.object = object;
  }
}

export function addEdgeSiteController(
  manager: Manager,
  opts: EdgeSiteControllerOptions,
): Controller<EdgeSite> {
  const { client, recorder } = manager;
  const clock = opts.clock ?? realClock;
  const { edge, notServed } = opts;
  // managedFields kept: drift counts a field our manager applied and no longer states.
  const labelled = { labelSelector: LABEL_SITE, keepManagedFields: true };
  const servedOwned = Object.values(OwnedKind).filter((k) => !notServed.has(k));
  const owned = new Map(servedOwned.map((k) => [k, manager.cache.informer(gvkOf(k), labelled)]));
  const shardScope = { ...labelled, namespace: edge.shardNamespace };
  const shard = new Map(
    Object.values(ShardKind).map((k) => [k, manager.cache.informer(gvkOf(k), shardScope)] as const),
  );
  const services = manager.cache.informer<Service>(SERVICE);
  const slices = manager.cache.informer<EndpointSlice>(ENDPOINT_SLICE);

  const sitesInNamespace = (ns: string | undefined): EdgeSite[] =>
    (controller.primary.store.list() as unknown as EdgeSite[]).filter((s) => s.metadata.namespace === ns);

  /** The site a shard-namespace object belongs to, from its labels. */
  const shardOwner = (o: KubeObject): ObjectKey[] => {
    const site = o.metadata.labels?.[LABEL_SITE];
    const ns = o.metadata.labels?.[LABEL_SITE_NAMESPACE];
    return site && ns ? [`${ns}/${site}`] : [];
  };

  function liveOf(ref: ObjectRef<OwnedKind | ShardKind>): KubeObject | undefined {
    const informer = owned.get(ref.kind as OwnedKind) ?? shard.get(ref.kind as ShardKind);
    return informer?.store.get(`${ref.namespace}/${ref.name}`) as KubeObject | undefined;
  }

  /** Whether `live` is this site's: controlled by it, or (shard namespace) labelled with it. */
  function isSitesOwn(site: EdgeSite, ref: ObjectRef<OwnedKind | ShardKind>, live: KubeObject): boolean {
    if (ref.kind === ShardKind.Role || ref.kind === ShardKind.RoleBinding) {
      const l = live.metadata.labels ?? {};
      return l[LABEL_SITE] === site.metadata.name && l[LABEL_SITE_NAMESPACE] === site.metadata.namespace;
    }
    return isControlledBy(live, site);
  }

  /** Applies one object if it drifted. */
  async function ensure(
    site: EdgeSite,
    ref: ObjectRef<OwnedKind | ShardKind>,
    object: KubeObject,
  ): Promise<ObjectOutcome | 'NameConflict'> {
    let live = liveOf(ref);
    if (!live) {
      // Not in the cache: absent, unlabelled by hand, someone else's, or the cache lags a
      // deletion. The API says which.
      live = await client.find(gvkOf(ref.kind), ref.name, ref.namespace);
      if (live && !isSitesOwn(site, ref, live)) return 'NameConflict';
    }
    if (live && !hasDrifted(object, live, { fieldManager: FIELD_MANAGER })) return { kind: 'InSync' };
    await client.apply(object, { fieldManager: FIELD_MANAGER, force: true });
    return { kind: 'Applied' };
  }

  /** Deletes one object by name, this very one (uid): 404 is success. */
  async function remove(ref: ObjectRef<OwnedKind | ShardKind>, uid: string | undefined): Promise<boolean> {
    try {
      await client.delete(gvkOf(ref.kind), ref.name, ref.namespace, uid ? { uid } : {});
      return true;
    } catch (err) {
      // Gone already, or another object now holds the name (the uid precondition): not ours to delete.
      if (isApiError(err, ApiErrorReason.NotFound) || isApiError(err, ApiErrorReason.Conflict)) return false;
      throw new DeleteFailed(describe(ref), err);
    }
  }

  /** Objects the site controls that the plan no longer lists, in delete order. */
  function strays(
    site: EdgeSite,
    desired: DesiredSet,
  ): { ref: ObjectRef<OwnedKind | ShardKind>; uid?: string }[] {
    const wanted = new Set([...desired.apply, ...desired.shard.apply].map((o) => outcomeKey(o.ref)));
    const out: { ref: ObjectRef<OwnedKind | ShardKind>; uid?: string }[] = [];
    const ns = site.metadata.namespace ?? '';
    const name = site.metadata.name ?? '';
    for (const kind of DELETE_ORDER) {
      for (const o of owned.get(kind)?.store.list() ?? []) {
        const obj = o as KubeObject;
        if (obj.metadata.namespace !== ns || obj.metadata.labels?.[LABEL_SITE] !== name) continue;
        const ref = { apiVersion: API_VERSION[kind], kind, namespace: ns, name: obj.metadata.name ?? '' };
        if (wanted.has(outcomeKey(ref)) || !isControlledBy(obj, site)) continue;
        out.push({ ref, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) });
      }
    }
    for (const kind of SHARD_DELETE_ORDER) {
      for (const o of shard.get(kind)?.store.list() ?? []) {
        const obj = o as KubeObject;
        const ref = {
          apiVersion: API_VERSION[kind],
          kind,
          namespace: edge.shardNamespace,
          name: obj.metadata.name ?? '',
        };
        if (wanted.has(outcomeKey(ref)) || !isSitesOwn(site, ref, obj)) continue;
        out.push({ ref, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) });
      }
    }
    return out;
  }

  async function writeStatus(site: EdgeSite, status: EdgeSite['status']): Promise<void> {
    if (isDeepStrictEqual(status, site.status ?? {})) return;
    await client.applyStatus(
      {
        apiVersion: EDGE_SITE.apiVersion,
        kind: EDGE_SITE.kind,
        metadata: { name: site.metadata.name, namespace: site.metadata.namespace },
        status,
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
  }

  async function apply(site: EdgeSite, ctx: ReconcileContext): Promise<ReconcileResult> {
    const ns = site.metadata.namespace ?? '';
    const name = site.metadata.name ?? '';
    const generation = site.metadata.generation;
    const now = new Date(clock.now());
    let desired: DesiredSet;
    try {
      desired = desiredObjects(site, edge);
    } catch (err) {
      const verdict: ReconcileVerdict = { kind: 'InvalidSpec', message: errorMessage(err) };
      const ready = readyCondition(verdict, 0);
      await writeStatus(site, {
        ...nextStatus({
          generation,
          previous: site.status,
          mode: siteMode(site.spec),
          features: site.status?.features ?? [],
          origins: site.status?.origins ?? [],
          verdict,
          objects: 0,
          now,
        }),
      });
      recorder.event(site, {
        type: EventType.Warning,
        reason: ready.reason,
        action: 'Plan',
        note: ready.message,
      });
      return {};
    }

    const outcomes = new Map<string, ObjectOutcome>();
    const missingCrds = new Set<string>();
    let verdict: ReconcileVerdict = { kind: 'Reconciled' };
    let thrown: unknown;
    let written = 0;
    // The grant in the shard namespace first: the decider reads the shards as it starts.
    for (const { ref, object } of [...desired.shard.apply, ...desired.apply]) {
      const key = outcomeKey(ref);
      if (verdict.kind !== 'Reconciled') {
        outcomes.set(key, { kind: 'NotReached' });
        continue;
      }
      const crd = notServed.get(ref.kind);
      if (crd) {
        outcomes.set(key, { kind: 'NotServed', crd });
        missingCrds.add(crd);
        continue;
      }
      try {
        const outcome = await ensure(site, ref, object);
        if (outcome === 'NameConflict') {
          outcomes.set(key, { kind: 'Failed', message: 'name taken' });
          verdict = { kind: 'NameConflict', object: describe(ref) };
        } else {
          outcomes.set(key, outcome);
          if (outcome.kind === 'Applied') written++;
        }
      } catch (err) {
        outcomes.set(key, { kind: 'Failed', message: errorMessage(err) });
        verdict = { kind: 'ApplyFailed', object: describe(ref), message: errorMessage(err) };
        thrown = err;
      }
    }

    // What the site no longer wants goes whatever happened to the applies, each object on
    // its own: an unrelated failure must not keep a switched-off filter live.
    let deleted = 0;
    const stillLive: ObjectRef<OwnedKind | ShardKind>[] = [];
    for (const { ref, uid } of strays(site, desired)) {
      try {
        if (await remove(ref, uid)) deleted++;
      } catch (err) {
        stillLive.push(ref);
        if (verdict.kind === 'Reconciled') {
          verdict =
            err instanceof DeleteFailed
              ? { kind: 'DeleteFailed', object: err.object, message: errorMessage(err.cause) }
              : { kind: 'ApplyFailed', object: 'a stray object', message: errorMessage(err) };
        }
        thrown ??= err;
      }
    }
    if (verdict.kind === 'Reconciled' && missingCrds.size > 0) {
      verdict = { kind: 'KindsNotServed', crds: [...missingCrds].sort() };
    }

    const origins = originsOf(
      site,
      slices.store.list().filter((s) => s.metadata.namespace === ns) as EndpointSlice[],
      services.store.list().filter((s) => s.metadata.namespace === ns) as Service[],
    );
    const objects = desired.apply.length + desired.shard.apply.length;
    const status = nextStatus({
      generation,
      previous: site.status,
      mode: desired.mode,
      features: featureStatuses(name, desired, outcomes, stillLive),
      origins,
      verdict,
      objects,
      now,
    });
    await writeStatus(site, status);

    const ready = readyCondition(verdict, objects);
    const before = site.status?.conditions?.find((c) => c.type === 'Ready');
    if (verdict.kind === 'Reconciled') {
      if (!(before?.status === 'True' && before.observedGeneration === generation)) {
        recorder.event(site, {
          type: EventType.Normal,
          reason: SiteReason.Reconciled,
          action: 'Apply',
          note: `generation ${generation}: ${objects} objects live as desired`,
        });
      }
    } else if (verdict.kind !== 'KindsNotServed') {
      recorder.event(site, {
        type: EventType.Warning,
        reason: ready.reason,
        action: 'Apply',
        note: ready.message,
      });
    }
    ctx.log.debug({ site: `${ns}/${name}`, written, deleted, verdict: verdict.kind }, 'site reconciled');
    if (thrown) throw thrown;
    if (verdict.kind === 'NameConflict') return { requeueAfterMs: CONFLICT_RETRY_MS };
    return {};
  }

  /**
   * The finalizer's work, in the seed's order: every object the site controls, found in
   * the API (not the cache), deleted kind by kind; then its grant in the shard namespace,
   * found by label. A kind the cluster does not serve has nothing to delete.
   */
  async function cleanup(site: EdgeSite): Promise<void> {
    const ns = site.metadata.namespace ?? '';
    const name = site.metadata.name ?? '';
    try {
      for (const kind of DELETE_ORDER) {
        if (notServed.has(kind)) continue;
        const list = await client.list(gvkOf(kind), {
          namespace: ns,
          labelSelector: `${LABEL_SITE}=${name}`,
        });
        for (const obj of list.items) {
          if (!isControlledBy(obj, site)) continue;
          const ref = { apiVersion: API_VERSION[kind], kind, namespace: ns, name: obj.metadata.name ?? '' };
          await remove(ref, obj.metadata.uid);
        }
      }
      for (const kind of SHARD_DELETE_ORDER) {
        const list = await client.list(gvkOf(kind), {
          namespace: edge.shardNamespace,
          labelSelector: shardSelector(ns, name),
        });
        for (const obj of list.items) {
          const ref = {
            apiVersion: API_VERSION[kind],
            kind,
            namespace: edge.shardNamespace,
            name: obj.metadata.name ?? '',
          };
          await remove(ref, obj.metadata.uid);
        }
      }
    } catch (err) {
      if (!(err instanceof DeleteFailed)) throw err;
      const verdict: ReconcileVerdict = {
        kind: 'DeleteFailed',
        object: err.object,
        message: errorMessage(err.cause),
      };
      const ready = readyCondition(verdict, 0);
      const now = new Date(clock.now());
      await writeStatus(site, {
        ...site.status,
        conditions: setCondition(site.status?.conditions, { type: 'Ready', ...ready }, now),
      });
      recorder.event(site, {
        type: EventType.Warning,
        reason: ready.reason,
        action: 'Delete',
        note: ready.message,
      });
      throw err;
    }
  }

  let builder = manager.controller('edgesite').for<EdgeSite>(EDGE_SITE);
  for (const kind of servedOwned) builder = builder.owns(gvkOf(kind), labelled);
  for (const kind of Object.values(ShardKind)) builder = builder.watches(gvkOf(kind), shardOwner, shardScope);
  const controller: Controller<EdgeSite> = builder
    .watches<EndpointSlice>(ENDPOINT_SLICE, (s) =>
      endpointSliceSites(s, sitesInNamespace(s.metadata.namespace)),
    )
    .watches<Service>(SERVICE, (s) => serviceSites(s, sitesInNamespace(s.metadata.namespace)))
    .withConcurrency(opts.concurrency ?? 2)
    .resyncEvery(opts.resyncMs ?? DEFAULT_EDGE_RESYNC_MS)
    .reconcile(async (req, ctx) => {
      if (!req.object) return {};
      // Read from the API, not the cache: a reconcile a deletion triggered must not act on
      // a spec older than the one that asked for the deletion.
      const site = await client.find<EdgeSite>(EDGE_SITE, req.name, req.namespace);
      if (!site) return {};
      return finalizerReconcile(client, site, EDGE_SITE_FINALIZER, { apply: (s) => apply(s, ctx), cleanup });
    });
  return controller;
}
