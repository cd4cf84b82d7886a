/**
 * The tenant plugin's object: a role whose Scope belongs to a Tenant lets its subject
 * read the Tenant's objects, through a RoleBinding to the Tenant's `tenant-get.<tenant>`
 * Role, in the Tenant's namespace (the role's own: a role names a Scope of its
 * namespace) on the management cluster.
 *
 * Name: `tenant-get.<tenant>.<role>.<permission>` for a UserRole and
 * `tenant-get.<tenant>.g.<role>.<permission>` for a GroupRole (the `shturval:` binding
 * name's parts; the namespace is the RoleBinding's own). One binding per Permission, not
 * per role: the plugin is applied and deleted per (role, permission), and dropping one
 * Permission from a role must not take the tenant access its other Permissions need.
 * Beyond 253 characters the name is cut and ends in 10 hex of its sha256, as names.ts
 * does.
 */
import { createHash } from 'node:crypto';
import { MAX_NAME, tenantGetRoleName } from '../names.ts';
import { type Grant, grantLabels, RBAC_GROUP, rbacSubject } from './grant.ts';
import { type Binding, ROLE_BINDING } from './rbac-bindings.ts';

/** The RoleBinding's name for one grant under one tenant. */
export function tenantBindingName(grant: Grant, tenant: string): string {
  const group = grant.owner.kind === 'GroupRole' ? 'g.' : '';
  const name = `${tenantGetRoleName(tenant)}.${group}${grant.owner.name}.${grant.permission}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${name.slice(0, MAX_NAME - 11).replace(/[^A-Za-z0-9]+$/, '')}-${hash}`;
}

/** The RoleBinding giving the grant's subject the Tenant's `tenant-get` Role. */
export function tenantBinding(grant: Grant, tenant: string): Binding {
  return {
    ...ROLE_BINDING,
    metadata: {
      name: tenantBindingName(grant, tenant),
      namespace: grant.owner.namespace,
      labels: grantLabels(grant, 'tenant'),
    },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: tenantGetRoleName(tenant) },
    subjects: [rbacSubject(grant.subject.kind, grant.subject.name)],
  };
}
