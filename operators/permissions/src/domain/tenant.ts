/**
 * What a Tenant wants on the management cluster, in its own namespace: its Scope
 * (`tenant-<tenant>`), the Roles `tenant-get.<tenant>` and `tenant-edit.<tenant>` and
 * their RoleBindings; and whether a child Tenant stays within its parent. The caller adds
 * the owner references (the Tenant owns all of these, so the garbage collector removes
 * them with it even if our cleanup never runs).
 */
import type { ClusterTargets, PolicyRule } from '../api/common.ts';
import { API_VERSION, GROUP } from '../api/common.ts';
import type { Scope, ScopeSpec } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import { ownerLabels, tenantEditRoleName, tenantGetRoleName, tenantScopeName } from './names.ts';
import { RBAC_API_VERSION, RBAC_GROUP, type RbacSubject, type Role, type RoleBinding } from './rbac.ts';
import { Reason } from './reasons.ts';

/** The kinds a tenant's members may read, in the tenant's namespace. */
export const TENANT_READABLE = ['scopes', 'userroles', 'grouproles', 'permissions'] as const;
/** The kinds a tenant's admins may also write: who holds which Permission within the tenant. */
export const TENANT_EDITABLE = ['userroles', 'grouproles'] as const;

/**
 * The verb on `tenants.permissions.shturval.tech` (resourceName: the Tenant) that lets a
 * user act inside that tenant: write or delete roles in its Scope, name it in a Scope's
 * tenantRef, hang a child Tenant or a Scope below it, change or delete it (the webhooks
 * ask for it with a SubjectAccessReview). `tenant-edit.<t>` gives it to the tenant's
 * admins for their tenant only; a platform admin with `*` on tenants holds it for all.
 * Not a verb the apiserver serves: RBAC stores it and answers reviews for it.
 */
export const MANAGE_VERB = 'manage';

const READ = ['get', 'list', 'watch'] as const;
const WRITE = ['create', 'update', 'patch', 'delete'] as const;

function identity(t: Tenant): { namespace: string; name: string; uid: string } {
  return { namespace: t.metadata.namespace ?? '', name: t.metadata.name ?? '', uid: t.metadata.uid ?? '' };
}

const labelsOf = (t: Tenant): Record<string, string> => ownerLabels({ kind: 'Tenant', ...identity(t) });

/** The targets without absent fields, so the desired Scope compares equal to the stored one. */
function copyTargets(targets: ClusterTargets): ClusterTargets {
  return {
    ...(targets.ids !== undefined ? { ids: [...targets.ids] } : {}),
    ...(targets.annotations !== undefined ? { annotations: { ...targets.annotations } } : {}),
  };
}

/** Where a Tenant's Scope grants: its clusters and namespaces, or their part within its parent. */
export interface TenantTargets {
  readonly clusters?: ClusterTargets;
  readonly namespaces: readonly string[];
}

/**
 * The Tenant's Scope: level `namespace` when the tenant names namespaces, else `cluster`
 * (its whole clusters); its clusters and namespaces copied (or `targets`, what of them
 * lies within its parent: {@link narrowToParent}); `tenantRef` back to the Tenant;
 * `parentScope` the parent tenant's Scope, when there is a parent.
 */
export function tenantScope(tenant: Tenant, parentScopeName?: string, targets?: TenantTargets): Scope {
  const { namespace, name } = identity(tenant);
  // The level follows the spec, never the narrowing: a Scope's level is immutable.
  const level = (tenant.spec.namespaces ?? []).length > 0 ? 'namespace' : 'cluster';
  const clusters = targets ? targets.clusters : tenant.spec.clusters;
  const namespaces = targets ? targets.namespaces : (tenant.spec.namespaces ?? []);
  const spec: ScopeSpec = {
    level,
    ...(clusters !== undefined ? { clusters: copyTargets(clusters) } : {}),
    ...(level === 'namespace' && namespaces.length > 0 ? { namespaces: [...namespaces] } : {}),
    tenantRef: { name },
    ...(parentScopeName !== undefined ? { parentScope: { name: parentScopeName } } : {}),
  };
  return {
    apiVersion: API_VERSION,
    kind: 'Scope',
    metadata: { name: tenantScopeName(name), namespace, labels: labelsOf(tenant) },
    spec,
  };
}

/** Read access to this tenant (by name only) and to the kinds of {@link TENANT_READABLE}. */
function readRules(tenantName: string): PolicyRule[] {
  return [
    { apiGroups: [GROUP], resources: ['tenants'], resourceNames: [tenantName], verbs: [...READ] },
    { apiGroups: [GROUP], resources: [...TENANT_READABLE], verbs: [...READ] },
  ];
}

/**
 * `tenant-get.<t>`: read the tenant and the namespace's Scopes, UserRoles, GroupRoles
 * and Permissions. `tenant-edit.<t>`: the same, plus create/update/patch/delete of
 * UserRoles and GroupRoles, and {@link MANAGE_VERB} on this Tenant. Both are namespaced Roles in the Tenant's namespace.
 */
export function tenantRoles(tenant: Tenant): [Role, Role] {
  const { namespace, name } = identity(tenant);
  const labels = labelsOf(tenant);
  return [
    {
      apiVersion: RBAC_API_VERSION,
      kind: 'Role',
      metadata: { name: tenantGetRoleName(name), namespace, labels },
      rules: readRules(name),
    },
    {
      apiVersion: RBAC_API_VERSION,
      kind: 'Role',
      metadata: { name: tenantEditRoleName(name), namespace, labels },
      rules: [
        ...readRules(name),
        { apiGroups: [GROUP], resources: [...TENANT_EDITABLE], verbs: [...WRITE] },
        // Writing roles is not enough: the webhooks also ask for `manage` on the tenant,
        // so that these admins act in this tenant's Scope and no other's.
        { apiGroups: [GROUP], resources: ['tenants'], resourceNames: [name], verbs: [MANAGE_VERB] },
      ],
    },
  ];
}

const users = (names: readonly string[]): RbacSubject[] =>
  [...new Set(names)].map((n) => ({ kind: 'User', apiGroup: RBAC_GROUP, name: n }));

function binding(tenant: Tenant, roleName: string, subjects: RbacSubject[]): RoleBinding {
  const { namespace } = identity(tenant);
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'RoleBinding',
    metadata: { name: roleName, namespace, labels: labelsOf(tenant) },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: roleName },
    ...(subjects.length > 0 ? { subjects } : {}),
  };
}

/**
 * The RoleBindings, named like their Roles: admins to `tenant-edit.<t>`, admins and
 * members to `tenant-get.<t>` (admins read too, whatever the edit role holds later).
 * Subjects are Users, each once, in the order the spec gives them.
 */
export function tenantRoleBindings(tenant: Tenant): [RoleBinding, RoleBinding] {
  const { name } = identity(tenant);
  const admins = tenant.spec.admins ?? [];
  const members = tenant.spec.members ?? [];
  return [
    binding(tenant, tenantGetRoleName(name), users([...admins, ...members])),
    binding(tenant, tenantEditRoleName(name), users(admins)),
  ];
}

/** Whether a child Tenant stays within its parent. */
export type WithinParent =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: typeof Reason.OutsideParentTenant; readonly message: string };

/**
 * A child stays within its parent when, for each thing the parent restricts, it is at
 * least as narrow: the parent names cluster ids → the child names ids, all among them;
 * the parent requires annotations → the child requires each of them with the same
 * value; the parent names namespaces → the child names namespaces, all among them.
 * What the parent leaves open, the child may set freely.
 */
export function tenantWithinParent(child: Tenant, parent: Tenant): WithinParent {
  const problems: string[] = [];
  const parentIds = parent.spec.clusters?.ids ?? [];
  const childIds = child.spec.clusters?.ids ?? [];
  if (parentIds.length > 0) {
    if (childIds.length === 0) {
      problems.push(`spec.clusters.ids must name clusters among the parent's (${parentIds.join(', ')})`);
    } else {
      const outside = childIds.filter((id) => !parentIds.includes(id));
      if (outside.length > 0) {
        problems.push(`clusters ${outside.join(', ')} are not among the parent's (${parentIds.join(', ')})`);
      }
    }
  }
  const parentAnnotations = Object.entries(parent.spec.clusters?.annotations ?? {});
  const childAnnotations = child.spec.clusters?.annotations ?? {};
  const missing = parentAnnotations.filter(
    ([k, v]) => !Object.hasOwn(childAnnotations, k) || childAnnotations[k] !== v,
  );
  if (missing.length > 0) {
    problems.push(
      `spec.clusters.annotations must require the parent's ${missing.map(([k, v]) => `${k}=${v}`).join(', ')}`,
    );
  }
  const parentNamespaces = parent.spec.namespaces ?? [];
  const childNamespaces = child.spec.namespaces ?? [];
  if (parentNamespaces.length > 0) {
    if (childNamespaces.length === 0) {
      problems.push(
        `spec.namespaces must name namespaces among the parent's (${parentNamespaces.join(', ')})`,
      );
    } else {
      const outside = childNamespaces.filter((n) => !parentNamespaces.includes(n));
      if (outside.length > 0) {
        problems.push(
          `namespaces ${outside.join(', ')} are not among the parent's (${parentNamespaces.join(', ')})`,
        );
      }
    }
  }
  if (problems.length === 0) return { ok: true };
  return {
    ok: false,
    reason: Reason.OutsideParentTenant,
    message:
      `Tenant "${child.metadata.name ?? ''}" reaches outside its parent Tenant "${parent.metadata.name ?? ''}": ` +
      `${problems.join('; ')}. Narrow the child, or widen the parent first`,
  };
}

/**
 * The annotation a Scope requires when nothing of its Tenant lies within the parent: no
 * Cluster carries it (its value is the Tenant's uid), so the Scope selects no cluster and
 * every grant in it is revoked, while the Scope and its roles stay (nothing of the user's
 * is deleted; widening the parent, or narrowing the child, brings the grants back).
 */
export const OUTSIDE_PARENT_ANNOTATION = 'permissions.shturval.tech/outside-parent';

/**
 * What of a child Tenant lies within its parent: the intersection, as Scope targets.
 * Parent cluster ids → the child's ids among them (all the parent's when the child names
 * none); parent annotations → required too (the parent's value where both name a key);
 * parent namespaces → the child's among them. When the intersection is empty (no common
 * id, a key required with two values, no common namespace, or a whole-cluster child of a
 * namespace-level parent, which a cluster-level Scope cannot narrow to namespaces) the
 * targets select no cluster at all ({@link OUTSIDE_PARENT_ANNOTATION}). A child within its
 * parent gets its own targets unchanged.
 */
export function narrowToParent(child: Tenant, parent: Tenant): TenantTargets {
  const childIds = child.spec.clusters?.ids ?? [];
  const parentIds = parent.spec.clusters?.ids ?? [];
  const childAnnotations = child.spec.clusters?.annotations ?? {};
  const parentAnnotations = parent.spec.clusters?.annotations ?? {};
  const childNamespaces = child.spec.namespaces ?? [];
  const parentNamespaces = parent.spec.namespaces ?? [];
  let empty = false;

  let ids: readonly string[] = childIds;
  if (parentIds.length > 0) {
    ids = childIds.length === 0 ? [...parentIds] : childIds.filter((id) => parentIds.includes(id));
    if (ids.length === 0) empty = true;
  }
  const annotations: Record<string, string> = { ...childAnnotations };
  for (const [k, v] of Object.entries(parentAnnotations)) {
    if (Object.hasOwn(childAnnotations, k) && childAnnotations[k] !== v) empty = true;
    annotations[k] = v;
  }
  let namespaces: readonly string[] = childNamespaces;
  if (parentNamespaces.length > 0) {
    if (childNamespaces.length === 0) empty = true;
    else {
      const within = childNamespaces.filter((n) => parentNamespaces.includes(n));
      if (within.length === 0) empty = true;
      else namespaces = within;
    }
  }
  if (empty) annotations[OUTSIDE_PARENT_ANNOTATION] = child.metadata.uid ?? child.metadata.name ?? '';
  const clusters: ClusterTargets = {
    ...(ids.length > 0 ? { ids: [...ids] } : {}),
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
  return {
    ...(clusters.ids !== undefined || clusters.annotations !== undefined ? { clusters } : {}),
    namespaces: [...namespaces],
  };
}

/** Whether a Scope belongs to the Tenant its `tenantRef` names. */
export type ScopeTenant =
  | { readonly kind: 'none' }
  | { readonly kind: 'controlled'; readonly tenant: string }
  | { readonly kind: 'borrowed'; readonly tenant: string; readonly message: string };

/**
 * A Scope is a Tenant's only when that Tenant generated it: its name is `tenant-<t>`
 * and it has a controller owner reference to the Tenant `<t>` that exists now, with its
 * uid (what the Tenant controller writes). A `tenantRef` alone is a claim anyone who may
 * write a Scope can make: honoured, it would bind the Scope's subjects to someone else's
 * `tenant-get` Role and list the Scope under that tenant in the bundle. `tenant` is the
 * Tenant of the namespace named by the `tenantRef`, if it exists.
 */
export function scopeTenant(scope: Scope, tenant: Tenant | undefined): ScopeTenant {
  const ref = scope.spec.tenantRef?.name;
  if (!ref) return { kind: 'none' };
  const uid = tenant?.metadata.name === ref ? tenant.metadata.uid : undefined;
  const controlled =
    uid !== undefined && scope.metadata.name === tenantScopeName(ref) && controlledBy(scope, ref, uid);
  if (controlled) return { kind: 'controlled', tenant: ref };
  return {
    kind: 'borrowed',
    tenant: ref,
    message: `spec.tenantRef names Tenant "${ref}", which does not control this Scope (only the Scope ${tenantScopeName(ref)} its Tenant generates belongs to it): no tenant-get binding, and the bundle lists it under no tenant`,
  };
}

/** The name a Tenant's generated Scope must have, as it stands in the API. */
export type TenantScopeSlot =
  | { readonly kind: 'free' }
  | { readonly kind: 'own' }
  | { readonly kind: 'taken'; readonly message: string };

/**
 * Whether the Tenant may write its generated Scope: the name is free, or the Scope there
 * is its own (a controller owner reference to this Tenant, with its uid). Any other Scope
 * of that name is never adopted: applying the Tenant's fields over it would keep whatever
 * else its author wrote (clusters, annotations, a parent) under the Tenant's name.
 */
export function tenantScopeSlot(existing: Scope | undefined, tenant: Tenant): TenantScopeSlot {
  if (!existing) return { kind: 'free' };
  const uid = tenant.metadata.uid;
  if (uid !== undefined && controlledBy(existing, tenant.metadata.name ?? '', uid)) return { kind: 'own' };
  return {
    kind: 'taken',
    message: `Scope ${existing.metadata.name} exists and is not this Tenant's (no controller reference to it): the Tenant does not adopt it. Rename or delete that Scope; the Tenant creates its own then`,
  };
}

/** A controller owner reference to the Tenant `name` with `uid`: what the Tenant controller writes. */
function controlledBy(scope: Scope, name: string, uid: string): boolean {
  return (scope.metadata.ownerReferences ?? []).some(
    (o) =>
      o.controller === true &&
      o.kind === 'Tenant' &&
      o.apiVersion.split('/')[0] === GROUP &&
      o.name === name &&
      o.uid === uid,
  );
}
