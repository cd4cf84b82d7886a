/**
 * The BlocklistSource reconciler, the seed's five steps and nothing clever:
 * 1. read the list when it is due (`decideRead`), refusing anything but a 200 (or a 304);
 * 2. parse, merge, budget (`publishedSet`, memoised: a reconcile that read nothing new
 *    does not redo it);
 * 3. write the shards, then the policy, server-side applied and only where they differ
 *    from live (`planPublication`);
 * 4. delete the shards beyond the count needed, and the other channel's objects;
 * 5. write the status (`nextStatus`), only if it changed, and an event for what a user
 *    should hear about.
 *
 * A failed read keeps everything published and comes back after 5 minutes. A failed
 * write stops the loop, says ApplyFailed and retries with backoff. Deleting a source
 * deletes everything labelled with it first (finalizer `edge.exoledge.io/finalizer`).
 */
import {
  type Clock,
  type Controller,
  finalizerReconcile,
  type KubeObject,
  type Manager,
  type Predicate,
  type ReconcileContext,
  type ReconcileResult,
  realClock,
} from '@operators/kit';
import { BLOCKLIST_SOURCE, type BlocklistSource } from '../api/blocklist-source.ts';
import { CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY, CONFIG_MAP } from '../api/cilium.ts';
import { DEFAULT_SHORTEST_PREFIX, merge, type ShortestPrefix } from '../domain/blocklist/index.ts';
import {
  admitToPolicyMap,
  cleanedUpEvent,
  decideRead,
  FIELD_MANAGER,
  isOurs,
  LABEL_SOURCE,
  type ListData,
  type LiveObjects,
  looksLikeBlocklist,
  nextStatus,
  type PublicationOutcome,
  type PublicationPlan,
  type PublishedSet,
  planPublication,
  policyMapGroup,
  policyMapPeers,
  publicationEvents,
  publishedIntact,
  publishedSet,
  type ReadResult,
  type ReadWhy,
  type ResolvedSpec,
  readFailedEvent,
  readSummary,
  remember,
  repairPatch,
  resolveSpec,
  retryDelayMs,
  type SourceMemory,
  SourceReadReason,
  sameJson,
  sourceSelector,
  usableData,
} from '../domain/blocklist-source/index.ts';
import { fetchList } from '../source/fetch-list.ts';

/** The field manager of every write (drift is judged against the fields it owns). */
export { FIELD_MANAGER };
export const FINALIZER = 'edge.exoledge.io/finalizer';

export interface FetchLimits {
  /** The whole read, redirects and body included. */
  readonly timeoutMs: number;
  /** The largest list accepted, decoded. */
  readonly maxBytes: number;
  /** CA certificates (PEM) to trust for https besides the system's. */
  readonly ca?: string;
}

export const DEFAULT_FETCH_LIMITS: FetchLimits = { timeoutMs: 120_000, maxBytes: 256 * 1048576 };

/** What one reconcile did, for whoever watches the operator work (logs, the local run, tests). */
export interface ReconcileReport {
  readonly source: string;
  /** Why the list was read, and what came back; absent when it was not due. */
  readonly read?: {
    readonly why: ReadWhy;
    readonly result: ReadResult['kind'];
    readonly reason?: string;
    /** The read, parse and merge. */
    readonly durationMs: number;
  };
  readonly publication: PublicationOutcome['kind'];
  /** Objects written and deleted. */
  readonly applied: number;
  readonly deleted: number;
  readonly statusWritten: boolean;
  /** The whole reconcile, read included. */
  readonly durationMs: number;
  /** When the reconcile asked to come back; absent when it failed and is retried with backoff. */
  readonly requeueAfterMs?: number;
}

export interface BlocklistSourceControllerOptions {
  /** Where decider ConfigMaps go. */
  readonly deciderNamespace: string;
  readonly fetch?: FetchLimits;
  /**
   * Prefixes shorter than this in a list are refused, never published (a stray
   * `0.0.0.0/0` with enforce would deny the world). Default /8 IPv4, /32 IPv6.
   */
  readonly shortestPrefix?: ShortestPrefix;
  /** Time for refresh decisions; the kit's workqueue keeps its own. */
  readonly clock?: Clock;
  readonly concurrency?: number;
  readonly onReconciled?: (report: ReconcileReport) => void;
}

const SOURCE_INDEX = 'exoledge.source';

function sourceOf(o: KubeObject): string[] {
  const s = o.metadata.labels?.[LABEL_SOURCE];
  return s ? [s] : [];
}

function describe(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}

function errorMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > 2000 ? `${m.slice(0, 2000)}…` : m;
}

export function addBlocklistSourceController(
  manager: Manager,
  opts: BlocklistSourceControllerOptions,
): Controller {
  const { client, recorder } = manager;
  const clock = opts.clock ?? realClock;
  const limits = opts.fetch ?? DEFAULT_FETCH_LIMITS;
  const shortestPrefix = opts.shortestPrefix ?? DEFAULT_SHORTEST_PREFIX;
  const memories = new Map<string, SourceMemory>();
  const memo = new Map<string, { data: ListData; key: string; set: PublishedSet }>();
  /** Sources whose cleanup was announced, by name: their UID, until the source is gone. */
  const cleanedUp = new Map<string, string>();

  // managedFields kept: drift is judged against the fields our manager owns (tamper.ts).
  const watched = { labelSelector: LABEL_SOURCE, keepManagedFields: true };
  const informers = {
    cidrGroups: manager.cache.informer(CILIUM_CIDR_GROUP, watched),
    policies: manager.cache.informer(CILIUM_CLUSTERWIDE_NETWORK_POLICY, watched),
    configMaps: manager.cache.informer(CONFIG_MAP, { ...watched, namespace: opts.deciderNamespace }),
  };
  for (const i of Object.values(informers)) i.store.addIndex(SOURCE_INDEX, sourceOf);
  const liveObjects = (name: string): LiveObjects => ({
    cidrGroups: informers.cidrGroups.store.byIndex(SOURCE_INDEX, name),
    policies: informers.policies.store.byIndex(SOURCE_INDEX, name),
    configMaps: informers.configMaps.store.byIndex(SOURCE_INDEX, name),
  });

  /** Budget, shards and fingerprint, recomputed only when the list or the spec's budget changed. */
  const setFor = (name: string, data: ListData, spec: ResolvedSpec): PublishedSet => {
    const key = JSON.stringify([spec.maxEntries, spec.minPrefixLength, spec.channel, spec.shardSize]);
    const m = memo.get(name);
    if (m && m.data.merged === data.merged && m.key === key) return m.set;
    const set = publishedSet(data.merged, spec);
    memo.set(name, { data, key, set });
    return set;
  };

  async function read(
    spec: ResolvedSpec,
    validators: Parameters<typeof fetchList>[1]['validators'],
    signal: AbortSignal,
  ): Promise<ReadResult> {
    const outcome = await fetchList(spec.url, { ...limits, validators, signal, shortestPrefix });
    switch (outcome.kind) {
      case 'NotModified':
        return outcome;
      case 'Failed':
        return outcome;
      case 'Read': {
        const summary = readSummary(outcome.parse, shortestPrefix);
        if (!looksLikeBlocklist(summary)) {
          return {
            kind: 'Failed',
            reason: SourceReadReason.NotABlocklist,
            message:
              `GET ${spec.url}: ${summary.malformed} of ${summary.lines} lines are not addresses or prefixes ` +
              `(${summary.entries} are): an error page or the wrong file, not published`,
          };
        }
        return {
          kind: 'Read',
          merged: merge(outcome.parse.entries),
          summary,
          validators: outcome.validators,
        };
      }
      default:
        return outcome satisfies never;
    }
  }

  /**
   * Applies a plan in its order, stopping at the first failure: the writes, then the
   * deletions. An object missing from our cache is looked up first: one that exists
   * neither labelled with the source nor controlled by it is left alone (a name taken by
   * someone else is never taken over); ours with its label removed by hand is re-labelled
   * and repaired. Fields others added under an object's content are removed before it is
   * applied, since a forced apply leaves them in place.
   */
  async function publish(
    plan: PublicationPlan,
    live: LiveObjects,
  ): Promise<{
    applied: number;
    deleted: number;
    thrown?: unknown;
    failure?: Extract<PublicationOutcome, { kind: 'ApplyFailed' | 'NameConflict' }>;
  }> {
    const cached = new Map(
      [...live.cidrGroups, ...live.policies, ...live.configMaps].map((o) => [describe(o), o]),
    );
    let applied = 0;
    let deleted = 0;
    let current = '';
    try {
      for (const obj of plan.apply) {
        current = describe(obj);
        const gvk = { apiVersion: obj.apiVersion ?? '', kind: obj.kind ?? '' };
        const objName = obj.metadata.name ?? '';
        const ns = obj.metadata.namespace;
        let seen = cached.get(current);
        let fresh = false;
        if (!seen) {
          seen = await client.find(gvk, objName, ns);
          fresh = true;
          if (seen && !isOurs(seen, obj)) {
            return { applied, deleted, failure: { kind: 'NameConflict', object: current } };
          }
        }
        if (seen && repairPatch(obj, seen, FIELD_MANAGER)) {
          // The paths hold for one version, and the cache may lag: computed on the current one.
          const now = fresh ? seen : await client.find(gvk, objName, ns);
          const patch = now && repairPatch(obj, now, FIELD_MANAGER);
          if (patch)
            await client.patch(
              gvk,
              objName,
              ns,
              { type: 'json', body: patch },
              { fieldManager: FIELD_MANAGER },
            );
        }
        await client.apply(obj, { fieldManager: FIELD_MANAGER, force: true });
        applied++;
      }
      for (const ref of plan.delete) {
        current = `${ref.gvk.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} (delete)`;
        await client.delete(ref.gvk, ref.name, ref.namespace);
        deleted++;
      }
      return { applied, deleted };
    } catch (err) {
      return {
        applied,
        deleted,
        thrown: err,
        failure: { kind: 'ApplyFailed', object: current, message: errorMessage(err) },
      };
    }
  }

  /** Every source the primary informer holds (the controller's own cache of BlocklistSources). */
  const sourcesInCache = (): readonly BlocklistSource[] =>
    controller.primary.store.list() as unknown as readonly BlocklistSource[];

  /**
   * The refusal of an enforced source whose planned set would overflow the policy map it
   * shares with the older enforced sources of its podSelector, read from the cache (their
   * published counts); undefined when it fits or is not enforced.
   */
  function policyMapRefusal(
    source: BlocklistSource,
    planned: number,
  ): Extract<PublicationOutcome, { kind: 'PolicyMapBudgetExceeded' }> | undefined {
    const group = policyMapGroup(source);
    if (group === undefined) return undefined;
    const name = source.metadata.name ?? '';
    const all = sourcesInCache();
    const decision = admitToPolicyMap(
      { name, createdAt: source.metadata.creationTimestamp ?? '', entries: planned },
      policyMapPeers(name, group, all),
    );
    return decision.admitted ? undefined : { kind: 'PolicyMapBudgetExceeded', planned, decision };
  }

  /** Only changes of a source's place in a policy map: its group, or the entries it holds there. */
  const policyMapClaimChanged: Predicate = (d) => {
    if (d.type !== 'updated') return true;
    const claim = (o: KubeObject) => {
      const s = o as BlocklistSource;
      return JSON.stringify([policyMapGroup(s), s.status?.channel, s.status?.entries?.published]);
    };
    return claim(d.old) !== claim(d.object);
  };

  /** The other enforced sources of `source`'s policy-map group: a change of one may admit or refuse them. */
  function policyMapNeighbours(source: KubeObject): string[] {
    const group = policyMapGroup(source as BlocklistSource);
    if (group === undefined) return [];
    const self = source.metadata.name;
    return sourcesInCache()
      .filter((s) => s.metadata.name !== self && policyMapGroup(s) === group)
      .map((s) => s.metadata.name ?? '');
  }

  async function reconcileSource(source: BlocklistSource, ctx: ReconcileContext): Promise<ReconcileResult> {
    const started = performance.now();
    const name = source.metadata.name ?? '';
    const uid = source.metadata.uid ?? '';
    const spec = resolveSpec(source.spec);
    const generation = source.metadata.generation;
    let memory = memories.get(name);
    if (memory?.uid !== uid) memory = undefined;
    const live = liveObjects(name);

    // 1. Read, if due.
    const decision = decideRead({
      now: clock.now(),
      spec,
      generation,
      status: source.status,
      memory,
      publishedComplete: publishedIntact({
        source: { apiVersion: BLOCKLIST_SOURCE.apiVersion, kind: BLOCKLIST_SOURCE.kind, name, uid },
        spec,
        deciderNamespace: opts.deciderNamespace,
        status: source.status,
        live,
      }).intact,
    });
    let readReport: ReconcileReport['read'];
    if (decision.read) {
      const readStarted = performance.now();
      // The interval counts from the request, not the answer: never slower than asked.
      const startedAt = clock.now();
      const result = await read(spec, decision.validators, ctx.signal);
      memory = remember(memory, uid, spec.url, result, startedAt);
      memories.set(name, memory);
      readReport = {
        why: decision.why,
        result: result.kind,
        ...(result.kind === 'Failed' ? { reason: result.reason } : {}),
        durationMs: performance.now() - readStarted,
      };
      ctx.log.info(
        { why: decision.why, result: result.kind, ms: Math.round(readReport.durationMs) },
        'list read',
      );
      if (result.kind === 'Failed') {
        recorder.event(source, readFailedEvent(result, source.status, retryDelayMs(spec)));
      }
    }

    // 2-4. Publish what the last good read of this URL holds; with nothing read, touch nothing.
    const data = usableData(memory, spec.url);
    const failure = memory?.failure?.url === spec.url ? memory.failure : undefined;
    let publication: PublicationOutcome = { kind: 'NotPublished' };
    let applied = 0;
    let deleted = 0;
    let thrown: unknown;
    const refusal = data ? policyMapRefusal(source, setFor(name, data, spec).published) : undefined;
    if (data && refusal) {
      // Publishes nothing new and deletes nothing: what is in force stays in force.
      publication = refusal;
    } else if (data) {
      const set = setFor(name, data, spec);
      const plan = planPublication({
        source: { apiVersion: BLOCKLIST_SOURCE.apiVersion, kind: BLOCKLIST_SOURCE.kind, name, uid },
        spec,
        set,
        deciderNamespace: opts.deciderNamespace,
        live,
      });
      const outcome = await publish(plan, live);
      ({ applied, deleted, thrown } = outcome);
      publication = outcome.failure ?? { kind: 'Published', set, data };
    }

    // 5. Status and events.
    const status = nextStatus(name, {
      now: new Date(clock.now()),
      generation,
      spec,
      previous: source.status,
      data,
      failure,
      publication,
      deciderNamespace: opts.deciderNamespace,
      retryDelayMs: retryDelayMs(spec),
    });
    const statusWritten = !sameJson(status, source.status ?? {});
    if (statusWritten) {
      await client.applyStatus(
        { apiVersion: BLOCKLIST_SOURCE.apiVersion, kind: BLOCKLIST_SOURCE.kind, metadata: { name }, status },
        { fieldManager: FIELD_MANAGER, force: true },
      );
    }
    for (const e of publicationEvents(source.status, status, publication)) recorder.event(source, e);

    const report = (requeueAfterMs?: number): ReconcileResult => {
      opts.onReconciled?.({
        source: name,
        ...(readReport ? { read: readReport } : {}),
        publication: publication.kind,
        applied,
        deleted,
        statusWritten,
        durationMs: performance.now() - started,
        ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }),
      });
      return requeueAfterMs === undefined ? {} : { requeueAfterMs };
    };
    if (thrown) {
      report();
      throw thrown;
    }
    if (publication.kind === 'NameConflict') return report(retryDelayMs(spec));
    const now = clock.now();
    const next = decideRead({
      now,
      spec,
      generation,
      status,
      memory,
      publishedComplete: true,
    });
    return report(next.read ? retryDelayMs(spec) : Math.max(0, next.nextReadAt - now));
  }

  /**
   * Deletes everything labelled with the source: one deletecollection per kind, so the
   * apiserver picks the objects from its own state (not our cache, which may lag) and
   * answers with the list of those it deleted, which the CleanedUp event counts.
   */
  async function cleanup(source: BlocklistSource): Promise<void> {
    const name = source.metadata.name ?? '';
    const labelSelector = sourceSelector(name);
    const kinds = [
      { gvk: CILIUM_CLUSTERWIDE_NETWORK_POLICY, namespace: undefined },
      { gvk: CILIUM_CIDR_GROUP, namespace: undefined },
      { gvk: CONFIG_MAP, namespace: opts.deciderNamespace },
    ];
    let count = 0;
    for (const { gvk, namespace } of kinds) {
      const deleted = await client.deleteCollection(gvk, {
        labelSelector,
        ...(namespace ? { namespace } : {}),
      });
      count += deleted.items.length;
    }
    memories.delete(name);
    memo.delete(name);
    // A reconcile queued before the deletion reached our cache runs cleanup again (the kit's
    // finalizer allows it; it is idempotent): that second run finds nothing and says nothing.
    const uid = source.metadata.uid ?? '';
    if (count === 0 && cleanedUp.get(name) === uid) return;
    cleanedUp.set(name, uid);
    recorder.event(source, cleanedUpEvent(count));
  }

  const controller: Controller = manager
    .controller('blocklistsource')
    .for(BLOCKLIST_SOURCE)
    .watches(CILIUM_CIDR_GROUP, sourceOf, watched)
    .watches(CILIUM_CLUSTERWIDE_NETWORK_POLICY, sourceOf, watched)
    .watches(CONFIG_MAP, sourceOf, { ...watched, namespace: opts.deciderNamespace })
    // A source that grows, shrinks, goes or changes selector may admit or refuse the
    // others sharing its policy map: they decide again.
    .watches(BLOCKLIST_SOURCE, policyMapNeighbours, { predicates: [policyMapClaimChanged] })
    .withConcurrency(opts.concurrency ?? 2)
    .reconcile(async (req, ctx) => {
      const source = req.object as BlocklistSource | undefined;
      if (!source) {
        memories.delete(req.name);
        memo.delete(req.name);
        cleanedUp.delete(req.name);
        return {};
      }
      return finalizerReconcile(client, source, FINALIZER, {
        apply: (obj) => reconcileSource(obj, ctx),
        cleanup,
      });
    });
  return controller;
}
