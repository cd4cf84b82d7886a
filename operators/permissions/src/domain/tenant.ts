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

/**
 * The Tenant's Scope: level `namespace` when the tenant names namespaces, else `cluster`
 * (its whole clusters); its clusters and namespaces copied; `tenantRef` back to the
 * Tenant; `parentScope` the parent tenant's Scope, when there is a parent.
 */
export function tenantScope(tenant: Tenant, parentScopeName?: string): Scope {
  const { namespace, name } = identity(tenant);
  const namespaces = tenant.spec.namespaces ?? [];
  const spec: ScopeSpec = {
    level: namespaces.length > 0 ? 'namespace' : 'cluster',
    ...(tenant.spec.clusters !== undefined ? { clusters: copyTargets(tenant.spec.clusters) } : {}),
    ...(namespaces.length > 0 ? { namespaces: [...namespaces] } : {}),
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
 * UserRoles and GroupRoles. Both are namespaced Roles in the Tenant's namespace.
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
      rules: [...readRules(name), { apiGroups: [GROUP], resources: [...TENANT_EDITABLE], verbs: [...WRITE] }],
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
