/**
 * The sweep: every `--sweep-period` (and once at start-up, as soon as the model is
 * rebuilt), on the management cluster and in every client cluster, the objects carrying
 * our labels whose owner no longer exists are deleted (src/domain/sweep.ts decides which).
 * It is what undoes an owner whose finalizer was removed by hand: the owner went, its
 * cleanup never ran, and its bindings would otherwise grant for ever.
 *
 * Leader-only (it deletes). Safety, in order: nothing happens before the model is ready
 * (every cache has listed); only objects listed by the exact `managed-by` selector and
 * carrying every owner label are judged; the live owners are read from the caches AFTER
 * the list; each delete carries the listed uid and resourceVersion as preconditions, so
 * an object written since (adopted by a re-created owner) stays; a cluster that cannot
 * be listed is skipped whole, never judged from a partial list; a paused cluster is left
 * alone, as the roles leave it.
 */
import {
  ApiErrorReason,
  type GroupVersionKind,
  isApiError,
  type KubeClient,
  type KubeObject,
  type Manager,
  type Runnable,
} from '@operators/kit';
import { PLATFORM } from '../api/role-status.ts';
import { clusterId, clusterPaused } from '../domain/cluster-selection.ts';
import { AUTHORIZATION_POLICY } from '../domain/plugins/kubeflow-objects.ts';
import { CLUSTER_ROLE_BINDING, ROLE_BINDING } from '../domain/plugins/rbac-bindings.ts';
import { type LiveOwner, orphans, SWEEP_SELECTOR } from '../domain/sweep.ts';
import { failureMessage, serves } from '../plugins/writes.ts';
import { type Deps, listOf } from './deps.ts';
import { CLUSTER_ROLE, ROLE } from './gvks.ts';

/** The default `--sweep-period`. */
export const DEFAULT_SWEEP_PERIOD_MS = 60_000;

/** The kinds we write on the management cluster: platform: ClusterRoles, platform bindings, tenant Roles and RoleBindings. */
const MANAGEMENT_KINDS: readonly GroupVersionKind[] = [
  CLUSTER_ROLE,
  CLUSTER_ROLE_BINDING,
  ROLE,
  ROLE_BINDING,
];
/** The kinds we write in client clusters: shturval: ClusterRoles, bindings, Kubeflow's policies. */
const CLIENT_KINDS: readonly GroupVersionKind[] = [
  CLUSTER_ROLE,
  CLUSTER_ROLE_BINDING,
  ROLE_BINDING,
  AUTHORIZATION_POLICY,
];

/** What one sweep did, per cluster (`platform` for the management cluster). */
export interface SweepReport {
  /** `Kind ns/name` of each object deleted, by cluster. */
  readonly deleted: Readonly<Record<string, readonly string[]>>;
  /** Why a cluster, or a delete, was skipped. */
  readonly errors: readonly string[];
}

type Log = Manager['log'];

export interface SweeperOptions {
  readonly deps: Deps;
  readonly periodMs: number;
  readonly log: Log;
}

export class Sweeper implements Runnable {
  readonly name = 'sweep';
  private readonly deps: Deps;
  private readonly periodMs: number;
  private readonly log: Log;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private count = 0;
  private last: SweepReport | undefined;
  private readonly listeners = new Set<(r: SweepReport) => void>();

  constructor(opts: SweeperOptions) {
    this.deps = opts.deps;
    this.periodMs = opts.periodMs;
    this.log = opts.log;
  }

  /** How many sweeps have completed. */
  get sweeps(): number {
    return this.count;
  }

  /** The last sweep's report. */
  get lastReport(): SweepReport | undefined {
    return this.last;
  }

  /** Resolves with the report of the next sweep to complete. */
  nextSweep(): Promise<SweepReport> {
    return new Promise((resolve) => {
      const once = (r: SweepReport) => {
        this.listeners.delete(once);
        resolve(r);
      };
      this.listeners.add(once);
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    this.stopped = false;
    // Not awaited: start() must return for the manager to go on; the first sweep waits for the model.
    void (async () => {
      await Promise.all([this.deps.model.whenReady(), this.deps.caches.clusters.waitForSync()]);
      const loop = async (): Promise<void> => {
        if (this.stopped || signal.aborted) return;
        await this.sweepOnce(signal).catch((err: unknown) =>
          this.log.warn({ err: failureMessage(err) }, 'sweep failed; next one in a period'),
        );
        if (this.stopped || signal.aborted) return;
        this.timer = setTimeout(() => void loop(), this.periodMs);
        this.timer.unref?.();
      };
      await loop();
    })().catch((err: unknown) => this.log.warn({ err: failureMessage(err) }, 'the sweep stopped'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One sweep of every cluster; never throws for one cluster's failure. */
  async sweepOnce(signal?: AbortSignal): Promise<SweepReport> {
    const deleted: Record<string, string[]> = {};
    const errors: string[] = [];
    const { deps } = this;
    const one = async (id: string, clientFor: () => KubeClient, kinds: readonly GroupVersionKind[]) => {
      const gone = await this.sweepCluster(clientFor, kinds, errors, id);
      if (gone.length > 0) deleted[id] = gone;
    };
    await one(PLATFORM, () => deps.client, MANAGEMENT_KINDS);
    await Promise.all(
      listOf(deps.caches.clusters)
        .filter((c) => !clusterPaused(c))
        .map(async (c) => {
          if (signal?.aborted) return;
          const id = clusterId(c);
          const access = await deps.registry.access(id);
          if (access.kind !== 'ok') {
            errors.push(`${id}: ${access.reason}: ${access.message}`);
            return;
          }
          // A fresh deadline per request: a long list of one kind does not eat the next one's.
          await one(id, () => access.cluster.withDeadline(), CLIENT_KINDS).catch((err: unknown) => {
            errors.push(`${id}: ${failureMessage(err)}`);
          });
        }),
    );
    const report: SweepReport = { deleted, errors };
    for (const [id, objects] of Object.entries(deleted)) {
      this.log.info({ cluster: id, objects }, 'swept objects whose owner no longer exists');
    }
    if (errors.length > 0) this.log.warn({ errors }, 'sweep: some clusters or objects were skipped');
    this.count++;
    this.last = report;
    for (const l of [...this.listeners]) l(report);
    return report;
  }

  /** Lists every kind first (a failed list skips the cluster whole), then judges, then deletes. */
  private async sweepCluster(
    clientFor: () => KubeClient,
    kinds: readonly GroupVersionKind[],
    errors: string[],
    id: string,
  ): Promise<string[]> {
    const listed: { gvk: GroupVersionKind; items: KubeObject[] }[] = [];
    for (const gvk of kinds) {
      try {
        // No Istio here: no AuthorizationPolicy can be ours.
        if (gvk === AUTHORIZATION_POLICY && !(await serves(clientFor(), gvk))) continue;
        const { items } = await clientFor().listAll(gvk, { labelSelector: SWEEP_SELECTOR });
        listed.push({ gvk, items });
      } catch (err) {
        errors.push(`${id}: list ${gvk.kind}: ${failureMessage(err)}`);
        return [];
      }
    }
    // The owners are read after the list: whatever the list shows was written by an owner
    // the caches held already (reconcilers read them from there).
    const owners = this.liveOwners();
    const gone: string[] = [];
    for (const { gvk, items } of listed) {
      for (const o of orphans(items, owners)) {
        const where = o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
        try {
          const removed = await clientFor().delete(gvk, o.metadata.name ?? '', o.metadata.namespace, {
            uid: o.metadata.uid,
            resourceVersion: o.metadata.resourceVersion,
          });
          if (removed) gone.push(`${gvk.kind} ${where}`);
        } catch (err) {
          // Conflict: changed since the list (adopted, relabelled): not judged on stale labels.
          if (!isApiError(err, ApiErrorReason.Conflict)) {
            errors.push(`${id}: delete ${gvk.kind} ${where}: ${failureMessage(err)}`);
          }
        }
      }
    }
    return gone;
  }

  private liveOwners(): LiveOwner[] {
    const { caches } = this.deps;
    const sources = [caches.permissions, caches.userRoles, caches.groupRoles, caches.tenants];
    // An unsynced cache reads as empty, which would make every object an orphan.
    if (!sources.every((r) => r.store.hasSynced())) throw new Error('the caches have not listed yet');
    const of = (kind: LiveOwner['kind'], objects: readonly KubeObject[]): LiveOwner[] =>
      objects.map((o) => ({
        kind,
        namespace: o.metadata.namespace ?? '',
        name: o.metadata.name ?? '',
        uid: o.metadata.uid ?? '',
      }));
    return [
      ...of('Permission', listOf(caches.permissions)),
      ...of('UserRole', listOf(caches.userRoles)),
      ...of('GroupRole', listOf(caches.groupRoles)),
      ...of('Tenant', listOf(caches.tenants)),
    ];
  }
}
