/**
 * The Permission reconciler (§5). Apply: the finalizer, the model, the `platform:`
 * ClusterRoles on the management cluster (an aggregating role and the labelled part
 * holding `platform_rules`), then `shturval:<ns>.<name>` in every selected client cluster,
 * each under its own deadline so one unreachable cluster never holds up the others, then
 * `ready` and `applied_to_clusters`. Delete: wait (about a minute per retry) while a
 * UserRole or GroupRole still names it, then remove every ClusterRole it wrote, its model
 * entry, and the finalizer. A Cluster API Cluster that changes re-reconciles the
 * Permissions that select it or were applied to it.
 */
import { type Controller, EventType, type KubeObject, type Manager, removeFinalizer } from '@operators/kit';
import { FINALIZER } from '../api/common.ts';
import { PERMISSION, type Permission, type PermissionStatus } from '../api/permission.ts';
import { PLATFORM } from '../api/role-status.ts';
import { desiredPermissionObjects } from '../domain/cluster-roles.ts';
import { type CapiCluster, clusterId, selectForPermission } from '../domain/cluster-selection.ts';
import {
  clientClusterRoleName,
  ownerLabels,
  platformClusterRoleName,
  platformRulesClusterRoleName,
} from '../domain/names.ts';
import { Reason } from '../domain/reasons.ts';
import { type Deps, FIELD_MANAGER, keyOf, listOf } from './deps.ts';
import { CAPI_CLUSTER, CLUSTER_ROLE } from './gvks.ts';
import { reconcileLifecycle } from './lifecycle.ts';
import { clusterSelectionChanged, specOrDeletionChanged } from './predicates.ts';
import { applyStatus } from './status-writes.ts';
import { applyIfDiffers, deleteIfOurs } from './writes.ts';

/** One cluster's outcome: our ClusterRole is there, gone, or could not be written. */
type ClusterOutcome =
  | { readonly kind: 'applied'; readonly id: string }
  | { readonly kind: 'removed'; readonly id: string }
  | { readonly kind: 'kept'; readonly id: string }
  | { readonly kind: 'failed'; readonly id: string; readonly reason: string; readonly message: string };

type FailedOutcome = Extract<ClusterOutcome, { readonly kind: 'failed' }>;

export function addPermissionController(manager: Manager, deps: Deps): Controller<Permission> {
  const { caches } = deps;
  const selecting = (c: KubeObject): string[] =>
    listOf(caches.permissions)
      .filter(
        (p) =>
          (p.spec.granted_cluster_rules?.length ?? 0) > 0 &&
          (selectForPermission([c as CapiCluster], p.spec.clusterSelector, { ignoreReadiness: true }).length >
            0 ||
            (p.status?.applied_to_clusters ?? []).includes(clusterId(c as CapiCluster))),
      )
      .map(keyOf);

  // Clusters: not on the annotations our Scopes write on them, each would re-reconcile every Permission.
  return (
    manager
      .controller('permission')
      // Spec changes, creations and deletions: our own status write must not bring it back.
      .for<Permission>(PERMISSION, { predicates: [specOrDeletionChanged] })
      .watches(CAPI_CLUSTER, selecting, { predicates: [clusterSelectionChanged] })
      .withConcurrency(2)
      .resyncEvery(deps.intervals.resyncMs)
      .reconcile(async (req, ctx) => {
        await deps.model.whenReady();
        const p = req.object as Permission | undefined;
        if (!p) {
          return {};
        }
        return reconcileLifecycle(ctx.client, p, {
          apply: (o) => apply(deps, ctx.client, o),
          cleanup: (o) => cleanup(deps, ctx.client, o),
        });
      })
  );
}

async function apply(deps: Deps, client: Deps['client'], p: Permission) {
  const ns = p.metadata.namespace ?? '';
  const name = p.metadata.name ?? '';
  const labels = ownerLabels({ kind: 'Permission', namespace: ns, name, uid: p.metadata.uid ?? '' });
  const desired = desiredPermissionObjects(p);
  const outcomes: ClusterOutcome[] = [];

  // The management cluster: both platform roles, or neither.
  try {
    if (desired.platform.length > 0) {
      for (const role of desired.platform) await applyIfDiffers(client, role, FIELD_MANAGER);
      outcomes.push({ kind: 'applied', id: PLATFORM });
    } else {
      await deleteIfOurs(client, CLUSTER_ROLE, platformClusterRoleName(ns, name), undefined, labels);
      await deleteIfOurs(client, CLUSTER_ROLE, platformRulesClusterRoleName(ns, name), undefined, labels);
    }
  } catch (err) {
    outcomes.push({ kind: 'failed', id: PLATFORM, reason: Reason.RuleRefused, message: messageOf(err) });
  }

  // Client clusters, in parallel, each under the registry's deadline.
  const all = listOf(deps.caches.clusters);
  const selected = desired.client ? selectForPermission(all, p.spec.clusterSelector).map(clusterId) : [];
  const previously = (p.status?.applied_to_clusters ?? []).filter((id) => id !== PLATFORM);
  const existing = new Set(all.map(clusterId));
  const role = desired.client;
  const work: Promise<ClusterOutcome>[] = [];
  for (const id of selected) {
    if (!role) break;
    work.push(
      onCluster(deps, id, async (c) => {
        await applyIfDiffers(c, role, FIELD_MANAGER);
        return { kind: 'applied', id };
      }),
    );
  }
  for (const id of previously) {
    if (selected.includes(id)) continue;
    // Deleted Cluster: nothing to reach, nothing left to say about it.
    if (!existing.has(id)) continue;
    const cluster = all.find((c) => clusterId(c) === id);
    const stillMatches =
      role !== undefined &&
      cluster !== undefined &&
      selectForPermission([cluster], p.spec.clusterSelector, { ignoreReadiness: true }).length > 0;
    // A cluster that still matches but is not ready keeps what it has: never revoke by mistake.
    if (stillMatches) {
      outcomes.push({ kind: 'kept', id });
      continue;
    }
    work.push(
      onCluster(deps, id, async (c) => {
        await deleteIfOurs(c, CLUSTER_ROLE, clientClusterRoleName(ns, name), undefined, labels);
        return { kind: 'removed', id };
      }),
    );
  }
  outcomes.push(...(await Promise.all(work)));

  const failed = outcomes.filter((o) => o.kind === 'failed');
  const applied = outcomes
    .filter(
      (o) => o.kind === 'applied' || o.kind === 'kept' || (o.kind === 'failed' && previously.includes(o.id)),
    )
    .map((o) => o.id);
  const status: PermissionStatus = {
    ready: failed.length === 0,
    applied_to_clusters: sortApplied(applied),
    message: failed.map((f) => `${f.id}: ${f.reason}: ${f.message}`).join('; '),
    observedGeneration: p.metadata.generation,
  };
  await applyStatus(client, PERMISSION, p, status);
  for (const f of failed) {
    deps.recorder.event(p, {
      type: EventType.Warning,
      reason: f.reason,
      action: 'Apply',
      note: `${f.id}: ${f.message}`,
    });
  }
  // Failures come back through the rate limiter's backoff, never a hot loop.
  return failed.length > 0 ? { requeue: true } : {};
}

async function cleanup(deps: Deps, client: Deps['client'], p: Permission) {
  const ns = p.metadata.namespace ?? '';
  const name = p.metadata.name ?? '';
  const users = deps.model.rolesReferencingPermission(ns, name);
  if (users.length > 0) {
    const message = `still named by ${users.slice(0, 5).join(', ')}${users.length > 5 ? ` and ${users.length - 5} more` : ''}; deletion waits until no UserRole or GroupRole names it`;
    await applyStatus(client, PERMISSION, p, {
      ...p.status,
      ready: false,
      message: `${Reason.PermissionInUse}: ${message}`,
    });
    deps.recorder.event(p, {
      type: EventType.Normal,
      reason: Reason.PermissionInUse,
      action: 'Delete',
      note: message,
    });
    return { requeueAfterMs: deps.intervals.permissionInUseRetryMs };
  }
  const labels = ownerLabels({ kind: 'Permission', namespace: ns, name, uid: p.metadata.uid ?? '' });
  await deleteIfOurs(client, CLUSTER_ROLE, platformClusterRoleName(ns, name), undefined, labels);
  await deleteIfOurs(client, CLUSTER_ROLE, platformRulesClusterRoleName(ns, name), undefined, labels);
  const all = listOf(deps.caches.clusters);
  const existing = new Set(all.map(clusterId));
  // Where our ClusterRole is on record must be cleared before the finalizer goes. Clusters
  // selected but never recorded (a kubeconfig that never worked, a cluster never reached)
  // are cleared if they can be, for a write whose status was not yet recorded, but they
  // never hold the deletion up: a Secret that stays broken would hold it forever.
  const recorded = new Set((p.status?.applied_to_clusters ?? []).filter((id) => id !== PLATFORM));
  const targets = new Set([...recorded, ...selectForPermission(all, p.spec.clusterSelector).map(clusterId)]);
  const outcomes = await Promise.all(
    [...targets]
      .filter((id) => existing.has(id))
      .map((id) =>
        onCluster(deps, id, async (c) => {
          await deleteIfOurs(c, CLUSTER_ROLE, clientClusterRoleName(ns, name), undefined, labels);
          return { kind: 'removed', id } as const;
        }),
      ),
  );
  for (const o of outcomes) {
    if (o.kind !== 'failed' || recorded.has(o.id)) continue;
    deps.recorder.event(p, {
      type: EventType.Warning,
      reason: o.reason,
      action: 'Delete',
      note: `${o.id}: ${o.message}; not in applied_to_clusters, so the deletion goes on without it`,
    });
  }
  const failed = outcomes.filter((o): o is FailedOutcome => o.kind === 'failed' && recorded.has(o.id));
  if (failed.length > 0) {
    const message = failed.map((f) => `${f.id}: ${f.message}`).join('; ');
    await applyStatus(client, PERMISSION, p, {
      ...p.status,
      ready: false,
      message: `DeleteFailed: ${message}`,
    });
    deps.recorder.event(p, {
      type: EventType.Warning,
      reason: 'DeleteFailed',
      action: 'Delete',
      note: message,
    });
    return { requeue: true };
  }
  const removed = await removeFinalizer(client, p, FINALIZER);
  return removed.kind === 'conflict' ? { requeue: true } : {};
}

/** Runs `fn` against one client cluster; an unreachable or unusable cluster is an outcome, not a throw. */
async function onCluster(
  deps: Deps,
  id: string,
  fn: (c: Deps['client']) => Promise<ClusterOutcome>,
): Promise<ClusterOutcome> {
  const access = await deps.registry.access(id);
  if (access.kind !== 'ok') return { kind: 'failed', id, reason: access.reason, message: access.message };
  try {
    return await access.cluster.call(fn);
  } catch (err) {
    return { kind: 'failed', id, reason: reasonOf(err), message: messageOf(err) };
  }
}

function reasonOf(err: unknown): string {
  const e = err as { name?: string; reason?: string };
  if (e?.name === 'ClusterUnreachableError') return Reason.ClusterUnreachable;
  return Reason.RuleRefused;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `platform` first, then cluster ids in order: a stable list, so an unchanged status is an unchanged write. */
function sortApplied(ids: readonly string[]): string[] {
  const unique = [...new Set(ids)];
  return [...unique.filter((i) => i === PLATFORM), ...unique.filter((i) => i !== PLATFORM).sort()];
}
