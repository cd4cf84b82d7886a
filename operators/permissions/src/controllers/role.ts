/**
 * The UserRole and GroupRole reconciler (§5), one body for both kinds: the subject is a
 * user or a group claim, the rest is the same. Apply: the finalizer, the Scope as
 * controller owner (a Tenant's foreground deletion of its Scope then takes the roles
 * with it), the model, then every plugin one after the other for every (Permission,
 * target) pair; the previous status is first reset to `Undefined`, and whatever is still
 * `Undefined` after the pass (a Permission dropped from the spec, a cluster the Scope no
 * longer selects) is deleted and cleared. Not ready → back through the rate limiter.
 * Delete: every plugin removes what it wrote, then the model entry and the finalizer.
 */
import {
  type Controller,
  claimController,
  EventType,
  type GroupVersionKind,
  type JsonPatchOp,
  type JsonValue,
  jsonEqual,
  type KubeClient,
  type KubeObject,
  type Manager,
  type OwnerReference,
  removeFinalizer,
} from '@operators/kit';
import { FINALIZER, type Level } from '../api/common.ts';
import { GROUP_ROLE, type GroupRole } from '../api/group-role.ts';
import { PERMISSION, type Permission } from '../api/permission.ts';
import { PLATFORM, type PluginObject, type RoleStatus } from '../api/role-status.ts';
import { SCOPE, type Scope } from '../api/scope.ts';
import { USER_ROLE, type UserRole } from '../api/user-role.ts';
import { clusterId, clusterPaused, selectForScope } from '../domain/cluster-selection.ts';
import { Reason } from '../domain/reasons.ts';
import { roleMessage, roleReady } from '../domain/role-status.ts';
import { scopeTenant } from '../domain/tenant.ts';
import type { Plugin, PluginContext, Subject } from '../plugins/plugin.ts';
import { type Deps, FIELD_MANAGER, getOf, keyOf, listOf } from './deps.ts';
import { CAPI_CLUSTER } from './gvks.ts';
import { reconcileLifecycle } from './lifecycle.ts';
import { clusterPauseOrReadinessChanged, scopeTargetsChanged, specOrDeletionChanged } from './predicates.ts';
import { applyStatus } from './status-writes.ts';

export type RoleKind = 'UserRole' | 'GroupRole';
type AnyRole = UserRole | GroupRole;
type Results = Record<string, Record<string, Record<string, PluginObject>>>;

/** One place grants land: the management cluster or one client cluster, with the namespaces that apply. */
interface Target {
  readonly cluster: string;
  readonly namespaces: readonly string[];
}

const GVK: Record<RoleKind, GroupVersionKind> = { UserRole: USER_ROLE, GroupRole: GROUP_ROLE };

/** Plugins whose objects live on the management cluster for every target: applied once per Permission. */
const MANAGEMENT_WIDE: ReadonlySet<string> = new Set(['tenant']);

export function addRoleController(manager: Manager, deps: Deps, kind: RoleKind): Controller<AnyRole> {
  const cache = kind === 'UserRole' ? deps.caches.userRoles : deps.caches.groupRoles;
  const roles = (): readonly AnyRole[] => listOf(cache as typeof deps.caches.userRoles) as readonly AnyRole[];
  const naming = (pred: (r: AnyRole) => boolean) => roles().filter(pred).map(keyOf);
  return (
    manager
      .controller(kind.toLowerCase())
      .for<AnyRole>(GVK[kind], { predicates: [specOrDeletionChanged] })
      .watches(
        SCOPE,
        (s: KubeObject) =>
          naming((r) => r.metadata.namespace === s.metadata.namespace && r.spec.scope === s.metadata.name),
        { predicates: [scopeTargetsChanged] },
      )
      // A Permission's spec (its level, its plugins), creation and deletion matter to a role;
      // its status does not, and 100 Permissions' status writes would re-reconcile every role.
      .watches(
        PERMISSION,
        (p: KubeObject) =>
          naming(
            (r) =>
              r.metadata.namespace === p.metadata.namespace &&
              r.spec.permissions.includes(p.metadata.name ?? ''),
          ),
        { predicates: [specOrDeletionChanged] },
      )
      .watches(CAPI_CLUSTER, () => naming(() => true), { predicates: [clusterPauseOrReadinessChanged] })
      .withConcurrency(4)
      .resyncEvery(deps.intervals.resyncMs)
      .reconcile(async (req, ctx) => {
        await deps.model.whenReady();
        const role = req.object as AnyRole | undefined;
        if (!role) {
          return {};
        }
        return reconcileLifecycle(ctx.client, role, {
          apply: (o) => apply(deps, ctx.client, kind, o),
          cleanup: (o) => cleanup(deps, ctx.client, kind, o),
          alsoOnAdd: (o) => ownerReferenceOps(deps, o),
        });
      })
  );
}

/**
 * The Scope as controller owner, as guarded JSON-patch operations (none when it is
 * already, or when the Scope is not known yet): sent with the finalizer, a new role
 * costs one metadata write, not two.
 */
function ownerReferenceOps(deps: Deps, role: AnyRole): JsonPatchOp[] {
  const scope = getOf(deps.caches.scopes, role.metadata.namespace ?? '', role.spec.scope);
  if (!scope) return [];
  const claim = claimController(role, scope);
  const current = role.metadata.ownerReferences;
  if (claim.kind !== 'claimed' || sameOwners(claim.ownerReferences, current)) return [];
  return [
    { op: 'test', path: '/metadata/ownerReferences', value: (current ?? null) as JsonValue },
    { op: 'add', path: '/metadata/ownerReferences', value: claim.ownerReferences as unknown as JsonValue },
  ];
}

/**
 * Compared as JSON values: the apiserver stores a custom resource's metadata with sorted
 * keys, so a string comparison would patch on every reconcile (and every resync).
 */
function sameOwners(a: readonly OwnerReference[], b: readonly OwnerReference[] | undefined): boolean {
  return jsonEqual(a as unknown as JsonValue, (b ?? []) as unknown as JsonValue);
}

function subjectOf(kind: RoleKind, role: AnyRole): Subject {
  if (kind === 'UserRole') return { kind: 'User', name: (role as UserRole).spec.user };
  const g = role as GroupRole;
  return { kind: 'Group', name: g.spec.group, ...(g.spec.members ? { members: g.spec.members } : {}) };
}

/** Where a Scope's grants land now. */
function targetsOf(deps: Deps, scope: Scope): Target[] {
  if (scope.spec.level === 'platform') return [{ cluster: PLATFORM, namespaces: [] }];
  const { selected } = selectForScope(listOf(deps.caches.clusters), scope.spec.clusters ?? {});
  const namespaces = scope.spec.level === 'namespace' ? (scope.spec.namespaces ?? []) : [];
  return selected.map((cluster) => ({ cluster, namespaces }));
}

function isPaused(deps: Deps, id: string): boolean {
  const c = listOf(deps.caches.clusters).find((x) => clusterId(x) === id);
  return c !== undefined && clusterPaused(c);
}

/** The previous status with every plugin entry reset to Undefined (§5: reset, then apply). */
function resetPrevious(status: RoleStatus | undefined): Results {
  const out: Results = {};
  for (const [perm, targets] of Object.entries(status?.permissions ?? {})) {
    out[perm] = {};
    for (const [target, plugins] of Object.entries(targets)) {
      out[perm][target] = {};
      for (const [plugin, obj] of Object.entries(plugins)) {
        out[perm][target][plugin] = { ...obj, status: 'Undefined' };
      }
    }
  }
  return out;
}

function put(results: Results, perm: string, target: string, plugin: string, obj: PluginObject): void {
  results[perm] ??= {};
  results[perm][target] ??= {};
  results[perm][target][plugin] = obj;
}

/** A context for one plugin call; `client` is bound to the target cluster (and its deadline). */
function contextFor(
  deps: Deps,
  kind: RoleKind,
  role: AnyRole,
  permission: Permission,
  scope: Scope,
  target: Target,
  client: KubeClient,
  previous?: PluginObject,
): PluginContext {
  return {
    owner: {
      kind,
      namespace: role.metadata.namespace ?? '',
      name: role.metadata.name ?? '',
      uid: role.metadata.uid ?? '',
    },
    subject: subjectOf(kind, role),
    permission,
    scope,
    target: { cluster: target.cluster, client, level: scope.spec.level, namespaces: target.namespaces },
    ...tenantOf(deps, scope),
    fieldManager: FIELD_MANAGER,
    argoCdNamespace: deps.argoCdNamespace,
    ...(previous ? { previous } : {}),
  };
}

/**
 * The Scope's tenant, for the tenant plugin: only the Tenant that controls the Scope (a
 * hand-written Scope naming someone else's tenant gets no tenant-get binding; the Scope
 * says why in its status).
 */
function tenantOf(deps: Deps, scope: Scope): { tenant?: string } {
  const ref = scope.spec.tenantRef?.name;
  if (!ref) return {};
  const owner = scopeTenant(scope, getOf(deps.caches.tenants, scope.metadata.namespace ?? '', ref));
  return owner.kind === 'controlled' ? { tenant: owner.tenant } : {};
}

/**
 * Runs `fn` with a client for `cluster` (the management client for `platform`, else the
 * registry's client under its deadline); an unusable cluster becomes a Failed result.
 */
async function withCluster(
  deps: Deps,
  mgmt: KubeClient,
  cluster: string,
  fn: (c: KubeClient) => Promise<PluginObject>,
  removing = false,
): Promise<PluginObject> {
  try {
    if (cluster === PLATFORM) return await fn(mgmt);
    // A Cluster object that is gone took its cluster with it: nothing of ours is left to reach.
    if (removing && !listOf(deps.caches.clusters).some((c) => clusterId(c) === cluster)) {
      return { status: 'Applied', message: `Cluster ${cluster} no longer exists` };
    }
    const access = await deps.registry.access(cluster);
    if (access.kind !== 'ok') return { status: 'Failed', message: `${access.reason}: ${access.message}` };
    return await access.cluster.call(fn);
  } catch (err) {
    return { status: 'Failed', message: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * A stand-in for a Permission that is gone, so its plugins can still remove what they
 * wrote for it: they find their objects by owner and name, not by the rules.
 */
function goneFor(namespace: string, name: string, level: Level): Permission {
  return { ...PERMISSION, metadata: { namespace, name }, spec: { level } };
}

async function apply(deps: Deps, client: KubeClient, kind: RoleKind, role: AnyRole) {
  const ns = role.metadata.namespace ?? '';
  const scope = getOf(deps.caches.scopes, ns, role.spec.scope);
  if (!scope) {
    const message = `${Reason.ScopeNotFound}: Scope "${role.spec.scope}" does not exist in namespace "${ns}"`;
    await applyStatus(client, GVK[kind], role, {
      ...role.status,
      ready: false,
      message,
      observedGeneration: role.metadata.generation,
    });
    deps.recorder.event(role, {
      type: EventType.Warning,
      reason: Reason.ScopeNotFound,
      action: 'Reconcile',
      note: message,
    });
    return { requeue: true };
  }
  // The Scope as controller owner: a foreground delete of the Scope takes its roles first.
  // (Usually set already, with the finalizer; a Scope that appeared later is claimed here.)
  const claim = claimController(role, scope);
  if (claim.kind === 'claimed' && !sameOwners(claim.ownerReferences, role.metadata.ownerReferences)) {
    await client.patch(GVK[kind], role.metadata.name ?? '', ns, {
      type: 'merge',
      body: {
        metadata: { resourceVersion: role.metadata.resourceVersion, ownerReferences: claim.ownerReferences },
      },
    });
  }

  const results = resetPrevious(role.status);
  const targets = targetsOf(deps, scope);
  for (const permName of role.spec.permissions) {
    const permission = getOf(deps.caches.permissions, ns, permName);
    if (!permission) {
      put(results, permName, PLATFORM, 'rbac', {
        status: 'Failed',
        message: `${Reason.PermissionNotFound}: Permission "${permName}" does not exist in namespace "${ns}"`,
      });
      continue;
    }
    if (permission.spec.level !== scope.spec.level) {
      put(results, permName, PLATFORM, 'rbac', {
        status: 'Failed',
        message: `${Reason.LevelMismatch}: Permission "${permName}" is level ${permission.spec.level}, Scope "${scope.metadata.name}" is level ${scope.spec.level}`,
      });
      continue;
    }
    // Plugins that write on the management cluster whatever the target (tenant) run once
    // per Permission, under `platform`: a cluster leaving the Scope must not revoke them.
    const onceDone = new Set<string>();
    // Clusters in parallel (one slow cluster does not hold up the others), plugins one
    // after the other within each (§5). The management-wide check-and-mark below runs
    // before any await, so exactly one target claims a management-wide plugin.
    await Promise.all(
      targets.map(async (target) => {
        for (const plugin of deps.plugins) {
          const managementWide = MANAGEMENT_WIDE.has(plugin.name);
          if (managementWide && onceDone.has(plugin.name)) continue;
          const where: Target = managementWide ? { ...target, cluster: PLATFORM } : target;
          const paused = where.cluster !== PLATFORM && isPaused(deps, where.cluster);
          const probe = contextFor(deps, kind, role, permission, scope, where, client);
          if (!plugin.applies(probe)) continue;
          if (managementWide) onceDone.add(plugin.name);
          if (paused) {
            // A paused cluster is skipped, and what it holds is left alone until it resumes.
            const before = results[permName]?.[where.cluster]?.[plugin.name];
            put(results, permName, where.cluster, plugin.name, {
              ...(before ?? {}),
              status: 'Skipped',
              message: `${Reason.ClusterPaused}: Cluster ${where.cluster} is paused`,
            });
            continue;
          }
          const previous = role.status?.permissions?.[permName]?.[where.cluster]?.[plugin.name];
          const result = await withCluster(deps, client, where.cluster, (c) =>
            plugin.apply(contextFor(deps, kind, role, permission, scope, where, c, previous)),
          );
          put(results, permName, where.cluster, plugin.name, result);
        }
      }),
    );
  }

  // Whatever is still Undefined was granted before and is not wanted now: remove it.
  for (const [permName, perTarget] of Object.entries(results)) {
    for (const [cluster, perPlugin] of Object.entries(perTarget)) {
      for (const [pluginName, obj] of Object.entries(perPlugin)) {
        if (obj.status !== 'Undefined') continue;
        if (cluster !== PLATFORM && isPaused(deps, cluster)) {
          // A paused cluster is left alone, revocations included: resuming re-reconciles and removes it.
          perPlugin[pluginName] = {
            ...obj,
            status: 'Skipped',
            message: `${Reason.ClusterPaused}: Cluster ${cluster} is paused; removed when it resumes`,
          };
          continue;
        }
        const plugin = deps.plugins.find((p) => p.name === pluginName);
        const permission =
          getOf(deps.caches.permissions, ns, permName) ?? goneFor(ns, permName, scope.spec.level);
        const result = plugin
          ? await withCluster(
              deps,
              client,
              cluster,
              (c) =>
                plugin.delete(
                  contextFor(deps, kind, role, permission, scope, { cluster, namespaces: [] }, c),
                ),
              true,
            )
          : ({ status: 'Applied' } as PluginObject);
        if (result.status === 'Failed') perPlugin[pluginName] = { ...result, status: 'Deleting' };
        else delete perPlugin[pluginName];
      }
      if (Object.keys(perPlugin).length === 0) delete perTarget[cluster];
    }
    if (Object.keys(perTarget).length === 0) delete results[permName];
  }

  const status: RoleStatus = {
    ready: roleReady({ permissions: results }),
    ...(roleMessage({ permissions: results }) ? { message: roleMessage({ permissions: results }) } : {}),
    // Left out when empty: server-side apply turns an emptied map into null, which the
    // schema refuses (422), so a role whose Scope selects no cluster any more would never
    // get its status written. Omitted, the field is simply dropped with our ownership.
    ...(Object.keys(results).length > 0 ? { permissions: results } : {}),
    observedGeneration: role.metadata.generation,
  };
  await applyStatus(client, GVK[kind], role, status);
  return status.ready ? {} : { requeue: true };
}

async function cleanup(deps: Deps, client: KubeClient, kind: RoleKind, role: AnyRole) {
  const ns = role.metadata.namespace ?? '';
  const scope =
    getOf(deps.caches.scopes, ns, role.spec.scope) ??
    ({ ...SCOPE, metadata: { namespace: ns, name: role.spec.scope }, spec: { level: 'cluster' } } as Scope);
  // Every place something may have been granted: the status says where it was.
  const pending: Results = resetPrevious(role.status);
  for (const permName of role.spec.permissions) {
    const permission =
      getOf(deps.caches.permissions, ns, permName) ?? goneFor(ns, permName, scope.spec.level);
    for (const t of getOf(deps.caches.scopes, ns, role.spec.scope) ? targetsOf(deps, scope) : []) {
      for (const plugin of deps.plugins) {
        const where: Target = MANAGEMENT_WIDE.has(plugin.name) ? { ...t, cluster: PLATFORM } : t;
        // Only where the plugin could have written (argocd never in a client cluster, kubeflow
        // never on the platform): elsewhere its delete needs rights nobody granted.
        if (!plugin.applies(contextFor(deps, kind, role, permission, scope, where, client))) continue;
        put(pending, permName, where.cluster, plugin.name, { status: 'Undefined' });
      }
    }
  }
  let failed = false;
  for (const [permName, perTarget] of Object.entries(pending)) {
    const permission =
      getOf(deps.caches.permissions, ns, permName) ?? goneFor(ns, permName, scope.spec.level);
    for (const [cluster, perPlugin] of Object.entries(perTarget)) {
      for (const pluginName of Object.keys(perPlugin)) {
        const plugin: Plugin | undefined = deps.plugins.find((p) => p.name === pluginName);
        if (!plugin) {
          delete perPlugin[pluginName];
          continue;
        }
        const result = await withCluster(
          deps,
          client,
          cluster,
          (c) =>
            plugin.delete(
              contextFor(
                deps,
                kind,
                role,
                permission,
                scope,
                { cluster, namespaces: scope.spec.namespaces ?? [] },
                c,
              ),
            ),
          true,
        );
        if (result.status === 'Failed') {
          failed = true;
          perPlugin[pluginName] = { ...result, status: 'Deleting' };
        } else delete perPlugin[pluginName];
      }
      if (Object.keys(perPlugin).length === 0) delete perTarget[cluster];
    }
    if (Object.keys(pending[permName] ?? {}).length === 0) delete pending[permName];
  }
  if (failed) {
    await applyStatus(client, GVK[kind], role, {
      ready: false,
      message: roleMessage({ permissions: pending }) || 'cleanup failed; retrying',
      permissions: pending,
      observedGeneration: role.metadata.generation,
    });
    return { requeue: true };
  }
  const removed = await removeFinalizer(client, role, FINALIZER);
  return removed.kind === 'conflict' ? { requeue: true } : {};
}
