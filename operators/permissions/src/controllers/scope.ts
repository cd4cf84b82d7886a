/**
 * The Scope reconciler (§5). Apply: the finalizer, then the clusters it selects (ids and
 * annotations over ready Cluster API Clusters), whether each of its namespaces exists in
 * each of them (namespace level), its paths in the tenant tree, the model, the
 * annotation on each selected Cluster, and status; then a recheck after the level's
 * interval (namespace ~5 min, cluster ~30 min), since a namespace created in a client
 * cluster sends us no event. Delete: wait (~5 s retries) while the model still holds a
 * user or group for it, then drop the annotations, the model entry and the finalizer.
 */
import {
  ApiErrorReason,
  type Controller,
  EventType,
  isApiError,
  type KubeObject,
  type Manager,
  removeFinalizer,
} from '@operators/kit';
import { FINALIZER } from '../api/common.ts';
import { GROUP_ROLE, type GroupRole } from '../api/group-role.ts';
import { PERMISSION } from '../api/permission.ts';
import { type ObjectStatus, SCOPE, type Scope, type ScopeStatus } from '../api/scope.ts';
import { TENANT, type Tenant } from '../api/tenant.ts';
import { USER_ROLE, type UserRole } from '../api/user-role.ts';
import { clusterId, selectForScope } from '../domain/cluster-selection.ts';
import { Reason, withReason } from '../domain/reasons.ts';
import { scopePaths, scopeRequeueMs } from '../domain/scope.ts';
import { scopeAnnotationKey, scopeAnnotationPatch } from '../domain/scope-annotations.ts';
import { scopeTenant } from '../domain/tenant.ts';
import { type Deps, getOf, keyOf, listOf } from './deps.ts';
import { CAPI_CLUSTER, NAMESPACE } from './gvks.ts';
import { reconcileLifecycle } from './lifecycle.ts';
import { clusterSelectionChanged, specOrDeletionChanged } from './predicates.ts';
import { applyStatus } from './status-writes.ts';

/** How deep a chain of parent Scopes may go before we call it a cycle. */
const MAX_DEPTH = 32;

export function addScopeController(manager: Manager, deps: Deps): Controller<Scope> {
  const { caches } = deps;
  const scopesIn = (ns: string | undefined): string[] =>
    listOf(caches.scopes)
      .filter((s) => s.metadata.namespace === ns)
      .map(keyOf);
  const roleScope = (r: KubeObject): string[] => [
    `${r.metadata.namespace}/${(r as UserRole | GroupRole).spec.scope}`,
  ];
  // Watched only for what a Scope is computed from: specs, creations and deletions. Status
  // writes and finalizer patches of 1,000 UserRoles would otherwise re-reconcile their
  // Scope thousands of times (each a namespace GET per cluster); our own annotations on a
  // Cluster must not wake every Scope either.
  return manager
    .controller('scope')
    .for<Scope>(SCOPE)
    .watches(PERMISSION, (p: KubeObject) => scopesIn(p.metadata.namespace), {
      predicates: [specOrDeletionChanged],
    })
    .watches(USER_ROLE, roleScope, { predicates: [specOrDeletionChanged] })
    .watches(GROUP_ROLE, roleScope, { predicates: [specOrDeletionChanged] })
    .watches(TENANT, (t: KubeObject) => scopesIn(t.metadata.namespace))
    .watches(
      CAPI_CLUSTER,
      () =>
        listOf(caches.scopes)
          .filter((s) => s.spec.level !== 'platform')
          .map(keyOf),
      { predicates: [clusterSelectionChanged] },
    )
    .withConcurrency(2)
    .reconcile(async (req, ctx) => {
      await deps.model.whenReady();
      const scope = req.object as Scope | undefined;
      if (!scope) {
        return {};
      }
      return reconcileLifecycle(ctx.client, scope, {
        apply: (o) => apply(deps, ctx.client, o),
        cleanup: (o) => cleanup(deps, ctx.client, o),
      });
    });
}

/** The Tenant a Scope's tenantRef names, if it exists in the Scope's namespace. */
function tenantOf(deps: Deps, scope: Scope): Tenant | undefined {
  const ref = scope.spec.tenantRef?.name;
  return ref ? getOf(deps.caches.tenants, scope.metadata.namespace ?? '', ref) : undefined;
}

/** The tenant names from the root down to this Scope (its tenant, or its own name). */
function tenantChain(deps: Deps, scope: Scope): string[] {
  const ns = scope.metadata.namespace ?? '';
  const chain: string[] = [];
  let cur: Scope | undefined = scope;
  const seen = new Set<string>();
  while (cur && chain.length < MAX_DEPTH && !seen.has(cur.metadata.name ?? '')) {
    seen.add(cur.metadata.name ?? '');
    // A borrowed tenantRef names no tenant here either: the Scope goes by its own name.
    const owner = scopeTenant(cur, tenantOf(deps, cur));
    chain.unshift(owner.kind === 'controlled' ? owner.tenant : (cur.metadata.name ?? ''));
    const parent: string | undefined = cur.spec.parentScope?.name;
    cur = parent ? getOf(deps.caches.scopes, ns, parent) : undefined;
  }
  return chain;
}

async function apply(deps: Deps, client: Deps['client'], scope: Scope) {
  const ns = scope.metadata.namespace ?? '';
  const name = scope.metadata.name ?? '';
  const level = scope.spec.level;
  const all = listOf(deps.caches.clusters);
  const selection =
    level === 'platform'
      ? { selected: [] as string[], unknown: [] as string[], notReady: [] as string[] }
      : selectForScope(all, scope.spec.clusters ?? {});
  const namespaces = level === 'namespace' ? (scope.spec.namespaces ?? []) : [];

  const objectsStatus: ObjectStatus[] = [];
  const problems: string[] = [];
  if (namespaces.length > 0) {
    const perCluster = await Promise.all(selection.selected.map((id) => namespacesIn(deps, id, namespaces)));
    for (const rows of perCluster) objectsStatus.push(...rows);
  }
  for (const o of objectsStatus)
    if (!o.exists) problems.push(`${o.cluster}/${o.namespace}: ${o.message ?? 'missing'}`);
  for (const id of selection.unknown) problems.push(`${Reason.ClusterNotFound}: no Cluster ${id}`);
  for (const id of selection.notReady) problems.push(`${id}: control plane not ready yet`);
  const owner = scopeTenant(scope, tenantOf(deps, scope));
  if (owner.kind === 'borrowed') problems.push(withReason(Reason.TenantNotController, owner.message));

  const paths = scopePaths(tenantChain(deps, scope), selection.selected, namespaces, level);

  const key = scopeAnnotationKey(ns, name);
  for (const c of all) {
    const patch = scopeAnnotationPatch(
      c.metadata.annotations,
      key,
      selection.selected.includes(clusterId(c)),
      level,
    );
    if (patch) {
      await client.patch(CAPI_CLUSTER, c.metadata.name ?? '', c.metadata.namespace, {
        type: 'merge',
        body: patch,
      });
    }
  }

  const status: ScopeStatus = {
    ready: selection.unknown.length === 0 && objectsStatus.every((o) => o.exists),
    clusters: [...selection.selected],
    permissions: [...deps.model.permissionsInScope(ns, name)],
    paths: [...paths],
    objectsStatus,
    ...(problems.length ? { message: problems.join('; ') } : {}),
    observedGeneration: scope.metadata.generation,
  };
  const wrote = await applyStatus(client, SCOPE, scope, status);
  if (wrote && owner.kind === 'borrowed') {
    deps.recorder.event(scope, {
      type: EventType.Warning,
      reason: Reason.TenantNotController,
      action: 'Reconcile',
      note: owner.message,
    });
  }
  if (wrote && selection.unknown.length > 0) {
    deps.recorder.event(scope, {
      type: EventType.Warning,
      reason: Reason.ClusterNotFound,
      action: 'Reconcile',
      note: `no Cluster API Cluster ${selection.unknown.join(', ')}`,
    });
  }
  const after = scopeRequeueMs(level, deps.intervals);
  return after ? { requeueAfterMs: after } : {};
}

/** Whether each namespace exists in one client cluster; an unreachable cluster says so per row. */
async function namespacesIn(deps: Deps, id: string, namespaces: readonly string[]): Promise<ObjectStatus[]> {
  const access = await deps.registry.access(id);
  if (access.kind !== 'ok') {
    return namespaces.map((n) => ({ cluster: id, namespace: n, exists: false, message: access.message }));
  }
  try {
    return await access.cluster.call(async (c) =>
      Promise.all(
        namespaces.map(async (n) => {
          const found = await deps.namespaces.exists(
            id,
            n,
            async () => (await c.find(NAMESPACE, n)) !== undefined,
          );
          return found
            ? { cluster: id, namespace: n, exists: true }
            : {
                cluster: id,
                namespace: n,
                exists: false,
                message: `${Reason.NamespaceMissing}: not in ${id}`,
              };
        }),
      ),
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return namespaces.map((n) => ({ cluster: id, namespace: n, exists: false, message }));
  }
}

async function cleanup(deps: Deps, client: Deps['client'], scope: Scope) {
  const ns = scope.metadata.namespace ?? '';
  const name = scope.metadata.name ?? '';
  const subjects = deps.model.subjectsInScope(ns, name);
  if (subjects > 0) {
    const message = `${Reason.ScopeInUse}: ${subjects} user or group role(s) still grant in this Scope; deletion waits for them (kubectl delete --cascade=foreground removes them with it)`;
    await applyStatus(client, SCOPE, scope, { ...scope.status, ready: false, message });
    return { requeueAfterMs: deps.intervals.scopeInUseRetryMs };
  }
  const key = scopeAnnotationKey(ns, name);
  for (const c of listOf(deps.caches.clusters)) {
    const patch = scopeAnnotationPatch(c.metadata.annotations, key, false, scope.spec.level);
    if (patch) {
      // A Cluster deleted meanwhile took its annotation with it; anything else is retried.
      await client
        .patch(CAPI_CLUSTER, c.metadata.name ?? '', c.metadata.namespace, { type: 'merge', body: patch })
        .catch((err: unknown) => {
          if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
        });
    }
  }
  const removed = await removeFinalizer(client, scope, FINALIZER);
  return removed.kind === 'conflict' ? { requeue: true } : {};
}
