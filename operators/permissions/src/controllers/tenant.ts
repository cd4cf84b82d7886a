/**
 * The Tenant reconciler (§5). Apply: the finalizer (then at once again, as §5 does, so
 * the first real pass sees the object with it), the parent check, the generated Scope
 * (owned by the Tenant), the tenant-get / tenant-edit Roles and their bindings, the
 * model, `TenantCreated=True`. Delete: refuse while child Tenants exist; delete the
 * Scope with foreground propagation (its UserRoles and GroupRoles go first, and the
 * Scope's own wait for them cannot deadlock: see docs/permissions.md), wait ~5 s at a
 * time until it is gone, then the Roles, the model entry (which clears the parent
 * Scope's reference to this tenant's paths) and the finalizer.
 */
import {
  type Condition,
  type Controller,
  controllerReference,
  EventType,
  type KubeClient,
  type KubeObject,
  type Manager,
  removeFinalizer,
  withConditions,
} from '@operators/kit';
import { FINALIZER } from '../api/common.ts';
import { SCOPE, type Scope } from '../api/scope.ts';
import { TENANT, type Tenant, type TenantStatus } from '../api/tenant.ts';
import { ownerLabels, tenantEditRoleName, tenantGetRoleName, tenantScopeName } from '../domain/names.ts';
import { Reason } from '../domain/reasons.ts';
import {
  narrowToParent,
  type TenantTargets,
  tenantRoleBindings,
  tenantRoles,
  tenantScope,
  tenantScopeSlot,
  tenantWithinParent,
} from '../domain/tenant.ts';
import { type Deps, FIELD_MANAGER, getOf, listOf } from './deps.ts';
import { ROLE, ROLE_BINDING } from './gvks.ts';
import { reconcileLifecycle } from './lifecycle.ts';
import { applyStatus } from './status-writes.ts';
import { applyIfDiffers, deleteIfOurs } from './writes.ts';

/** The condition §7 names: the tenant's Scope, roles and model entry are in place. */
export const CONDITION_TENANT_CREATED = 'TenantCreated';

export function addTenantController(manager: Manager, deps: Deps): Controller<Tenant> {
  return (
    manager
      .controller('tenant')
      .for<Tenant>(TENANT)
      // Its own Scope, and a Scope of the name it waits for (TenantScopeNameTaken): that one's
      // deletion frees the name, and carries no owner reference to lead back here.
      .watches(SCOPE, (scope: KubeObject) =>
        listOf(deps.caches.tenants)
          .filter(
            (t) =>
              t.metadata.namespace === scope.metadata.namespace &&
              tenantScopeName(t.metadata.name ?? '') === scope.metadata.name,
          )
          .map((t) => `${t.metadata.namespace}/${t.metadata.name}`),
      )
      // A child's change (its creation, its deletion) concerns its parent's delete check; a
      // parent's change concerns its children, whose Scopes must stay within it.
      .watches(TENANT, (t: KubeObject) => {
        const ns = t.metadata.namespace ?? '';
        const parent = (t as Tenant).spec.parent;
        const children = listOf(deps.caches.tenants)
          .filter((c) => c.metadata.namespace === ns && c.spec.parent === t.metadata.name)
          .map((c) => `${ns}/${c.metadata.name}`);
        return [...(parent ? [`${ns}/${parent}`] : []), ...children];
      })
      .withConcurrency(2)
      .resyncEvery(deps.intervals.resyncMs)
      .reconcile(async (req, ctx) => {
        await deps.model.whenReady();
        const tenant = req.object as Tenant | undefined;
        if (!tenant) {
          return {};
        }
        // §5: right after the first finalizer, come straight back.
        return reconcileLifecycle(ctx.client, tenant, {
          apply: (o) => apply(deps, ctx.client, o),
          cleanup: (o) => cleanup(deps, ctx.client, o),
          requeueAfterAdd: true,
        });
      })
  );
}

function conditionsWith(
  tenant: Tenant,
  status: 'True' | 'False',
  reason: string,
  message: string,
  now: Date,
): readonly Condition[] {
  return withConditions(
    tenant.status?.conditions,
    [
      {
        type: CONDITION_TENANT_CREATED,
        status,
        reason,
        message,
        observedGeneration: tenant.metadata.generation,
      },
    ],
    now,
  );
}

async function apply(deps: Deps, client: KubeClient, tenant: Tenant) {
  const ns = tenant.metadata.namespace ?? '';
  const name = tenant.metadata.name ?? '';
  const now = new Date(deps.clock.now());
  let parentScope: string | undefined;
  let targets: TenantTargets | undefined;
  let outside: { reason: string; message: string } | undefined;
  if (tenant.spec.parent) {
    const parent = getOf(deps.caches.tenants, ns, tenant.spec.parent);
    if (!parent) {
      const reason = Reason.ParentTenantNotFound;
      const message = `parent Tenant "${tenant.spec.parent}" does not exist in namespace "${ns}"`;
      await applyStatus(client, TENANT, tenant, {
        ...tenant.status,
        conditions: conditionsWith(tenant, 'False', reason, message, now),
        observedGeneration: tenant.metadata.generation,
      } satisfies TenantStatus);
      deps.recorder.event(tenant, { type: EventType.Warning, reason, action: 'Reconcile', note: message });
      return { requeue: true };
    }
    parentScope = tenantScopeName(parent.metadata.name ?? '');
    const within = tenantWithinParent(tenant, parent);
    if (!within.ok) {
      // A parent narrowed after its child was admitted (or admitted with the webhooks off):
      // the child's Scope keeps only what lies within the parent, so its roles' grants
      // outside go with their next pass (the Scope's change wakes them).
      targets = narrowToParent(tenant, parent);
      outside = {
        reason: within.reason,
        message: `${within.message}. Its Scope ${tenantScopeName(name)} is narrowed to what lies within the parent; grants outside it are removed`,
      };
    }
  }
  const owner = controllerReference(tenant);
  const scope = tenantScope(tenant, parentScope, targets);
  const ownedScope = { ...scope, metadata: { ...scope.metadata, ownerReferences: [owner] } } as KubeObject;
  // Read live, not from the cache: a Scope created a moment before the Tenant must be seen.
  const slot = tenantScopeSlot(
    (await client.find(SCOPE, scope.metadata.name ?? '', ns)) as Scope | undefined,
    tenant,
  );
  if (slot.kind === 'taken') {
    const reason = Reason.TenantScopeNameTaken;
    const wrote = await applyStatus(client, TENANT, tenant, {
      ...tenant.status,
      conditions: conditionsWith(tenant, 'False', reason, slot.message, now),
      observedGeneration: tenant.metadata.generation,
    } satisfies TenantStatus);
    if (wrote) {
      deps.recorder.event(tenant, {
        type: EventType.Warning,
        reason,
        action: 'Reconcile',
        note: slot.message,
      });
    }
    // The Scope's deletion or rename wakes nothing here: retry through the rate limiter.
    return { requeue: true };
  }
  // Applied, also when the name is free: a Scope created with a plain create would leave its
  // fields to that create's manager, and a later apply could then never remove an item from
  // its lists (a narrowed parent could not narrow it). A squatter created in the moment
  // between the read above and this apply is adopted; one created any earlier is not.
  await applyIfDiffers(client, ownedScope, FIELD_MANAGER);
  for (const obj of [...tenantRoles(tenant), ...tenantRoleBindings(tenant)]) {
    await applyIfDiffers(
      client,
      { ...obj, metadata: { ...obj.metadata, ownerReferences: [owner] } } as KubeObject,
      FIELD_MANAGER,
    );
  }
  const status: TenantStatus = {
    conditions: outside
      ? conditionsWith(tenant, 'False', outside.reason, outside.message, now)
      : conditionsWith(tenant, 'True', 'Created', `Scope ${scope.metadata.name} and roles in place`, now),
    scopeRef: { name: scope.metadata.name ?? '' },
    roles: { get: tenantGetRoleName(name), edit: tenantEditRoleName(name) },
    observedGeneration: tenant.metadata.generation,
  };
  const wrote = await applyStatus(client, TENANT, tenant, status);
  if (outside && wrote) {
    deps.recorder.event(tenant, {
      type: EventType.Warning,
      reason: outside.reason,
      action: 'Reconcile',
      note: outside.message,
    });
  }
  // No retry loop while outside: a change of the parent wakes its children (the watch above).
  return {};
}

async function cleanup(deps: Deps, client: KubeClient, tenant: Tenant) {
  const ns = tenant.metadata.namespace ?? '';
  const name = tenant.metadata.name ?? '';
  const now = new Date(deps.clock.now());
  const children = listOf(deps.caches.tenants).filter(
    (t) => t.metadata.namespace === ns && t.spec.parent === name,
  );
  if (children.length > 0) {
    const message = `child Tenant(s) ${children.map((c) => c.metadata.name).join(', ')} still exist; delete them first`;
    await applyStatus(client, TENANT, tenant, {
      ...tenant.status,
      conditions: withConditions(
        tenant.status?.conditions,
        [{ type: 'Deleting', status: 'False', reason: Reason.ChildTenantsExist, message }],
        now,
      ),
    });
    deps.recorder.event(tenant, {
      type: EventType.Warning,
      reason: Reason.ChildTenantsExist,
      action: 'Delete',
      note: message,
    });
    return { requeueAfterMs: deps.intervals.tenantScopeWaitMs };
  }
  const scopeName = tenantScopeName(name);
  const scope = getOf(deps.caches.scopes, ns, scopeName) ?? (await client.find(SCOPE, scopeName, ns));
  if (scope) {
    // Foreground: the garbage collector deletes the roles that hang off the Scope first.
    if (!scope.metadata.deletionTimestamp) {
      await client.delete(SCOPE, scopeName, ns, { propagationPolicy: 'Foreground', uid: scope.metadata.uid });
    }
    return { requeueAfterMs: deps.intervals.tenantScopeWaitMs };
  }
  const labels = ownerLabels({ kind: 'Tenant', namespace: ns, name, uid: tenant.metadata.uid ?? '' });
  for (const obj of tenantRoleBindings(tenant)) {
    await deleteIfOurs(client, ROLE_BINDING, obj.metadata.name ?? '', ns, labels);
  }
  await deleteIfOurs(client, ROLE, tenantGetRoleName(name), ns, labels);
  await deleteIfOurs(client, ROLE, tenantEditRoleName(name), ns, labels);
  // The parent's Scope lists this tenant's paths: look at it again.
  const removed = await removeFinalizer(client, tenant, FINALIZER);
  return removed.kind === 'conflict' ? { requeue: true } : {};
}
