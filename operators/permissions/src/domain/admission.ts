/**
 * The admission decisions for UserRole, GroupRole and Tenant, from facts the webhook has
 * already looked up (the Scope, the Permissions, the parent Tenant, and the apiserver's
 * SubjectAccessReview answers about the requesting user). Messages are for the person
 * at `kubectl apply`: they name the object, what is wrong, and what to do.
 */
import { GROUP } from '../api/common.ts';
import type { GroupRoleSpec } from '../api/group-role.ts';
import type { Permission } from '../api/permission.ts';
import type { Scope } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import type { UserRoleSpec } from '../api/user-role.ts';
import { Reason } from './reasons.ts';
import { tenantWithinParent } from './tenant.ts';

export type AdmissionDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: Reason; readonly message: string };

const ALLOWED: AdmissionDecision = { allowed: true };

const quoted = (names: readonly string[]): string => names.map((n) => `"${n}"`).join(', ');

/** What a user must hold to grant `name` of `resource`: either verb, on that one object. */
function grantNeeds(resource: 'permissions' | 'tenants', name: string, namespace: string): string {
  return (
    `verb "bind" or "escalate" on ${resource}.${GROUP} with resourceName "${name}" in namespace "${namespace}" ` +
    `(a Role rule {apiGroups: [${GROUP}], resources: [${resource}], resourceNames: [${name}], verbs: [bind]})`
  );
}

export interface RoleAdmission {
  readonly kind: 'UserRole' | 'GroupRole';
  readonly namespace: string;
  /** The role's name, when the request has one (not under generateName). */
  readonly name?: string;
  readonly spec: UserRoleSpec | GroupRoleSpec;
  /** The Scope spec.scope names, or undefined when it does not exist. */
  readonly scope: Scope | undefined;
  /** Each Permission spec.permissions names; undefined (or absent) when it does not exist. */
  readonly permissions: ReadonlyMap<string, Permission | undefined>;
  /** Whether the requesting user may grant each Permission (SubjectAccessReview); absent counts as no. */
  readonly grantorMay: ReadonlyMap<string, boolean>;
  /** The requesting user's name, for the message. */
  readonly user: string;
}

/**
 * Refuses, in this order (each listing every offender): a missing Scope; missing
 * Permissions; Permissions whose level is not the Scope's; Permissions the requesting
 * user may not grant. Otherwise admits.
 */
export function validateRole(input: RoleAdmission): AdmissionDecision {
  const { kind, namespace, spec, scope } = input;
  const what = input.name ? `${kind} "${input.name}"` : `this ${kind}`;
  if (!scope) {
    return {
      allowed: false,
      reason: Reason.ScopeNotFound,
      message:
        `${what} names Scope "${spec.scope}", which does not exist in namespace "${namespace}": ` +
        `create the Scope first, or set spec.scope to an existing one`,
    };
  }
  const names = [...new Set(spec.permissions)];
  const missing = names.filter((n) => input.permissions.get(n) === undefined);
  if (missing.length > 0) {
    return {
      allowed: false,
      reason: Reason.PermissionNotFound,
      message:
        `${what} names Permission(s) ${quoted(missing)}, which do not exist in namespace "${namespace}": ` +
        `create them first, or remove them from spec.permissions`,
    };
  }
  const scopeLevel = scope.spec.level;
  const mismatched = names.flatMap((n) => {
    const level = input.permissions.get(n)?.spec.level;
    return level !== undefined && level !== scopeLevel ? [`Permission "${n}" is level ${level}`] : [];
  });
  if (mismatched.length > 0) {
    return {
      allowed: false,
      reason: Reason.LevelMismatch,
      message:
        `${what}: ${mismatched.join('; ')}, but Scope "${spec.scope}" is level ${scopeLevel}; ` +
        `a Permission binds only in a Scope of its own level: choose a Scope of that level, or Permissions of level ${scopeLevel}`,
    };
  }
  const forbidden = names.filter((n) => input.grantorMay.get(n) !== true);
  if (forbidden.length > 0) {
    return {
      allowed: false,
      reason: Reason.BindForbidden,
      message:
        `user "${input.user}" may not grant Permission(s) ${quoted(forbidden)} through ${what}: ` +
        `granting needs, for each, ${forbidden.map((n) => grantNeeds('permissions', n, namespace)).join('; ')}; ` +
        `ask an administrator of namespace "${namespace}" for it`,
    };
  }
  return ALLOWED;
}

export interface TenantAdmission {
  readonly tenant: Tenant;
  /** The Tenant spec.parent names; undefined when it does not exist or none is named. */
  readonly parent: Tenant | undefined;
  /** Whether the requesting user may bind or escalate this Tenant (SubjectAccessReview). */
  readonly grantorMay: boolean;
  /** The requesting user's name, for the message. */
  readonly user: string;
}

/**
 * Refuses, in this order: a Tenant with neither admins nor members; a named parent that
 * does not exist; a Tenant reaching outside its parent; a requesting user who may not
 * bind or escalate the Tenant (it hands out tenant-get and tenant-edit). Otherwise admits.
 */
export function validateTenant(input: TenantAdmission): AdmissionDecision {
  const { tenant } = input;
  const namespace = tenant.metadata.namespace ?? '';
  const name = tenant.metadata.name ?? '';
  const what = name ? `Tenant "${name}"` : 'this Tenant';
  if ((tenant.spec.admins?.length ?? 0) === 0 && (tenant.spec.members?.length ?? 0) === 0) {
    return {
      allowed: false,
      reason: Reason.TenantWithoutMembers,
      message: `${what} has neither admins nor members, so nobody could use or manage it: list at least one user in spec.admins or spec.members`,
    };
  }
  const parentName = tenant.spec.parent;
  if (parentName !== undefined) {
    const parent = input.parent;
    if (!parent) {
      return {
        allowed: false,
        reason: Reason.ParentTenantNotFound,
        message: `${what} names parent Tenant "${parentName}", which does not exist in namespace "${namespace}": create the parent first, or fix spec.parent`,
      };
    }
    const within = tenantWithinParent(tenant, parent);
    if (!within.ok) return { allowed: false, reason: within.reason, message: within.message };
  }
  if (!input.grantorMay) {
    return {
      allowed: false,
      reason: Reason.BindForbidden,
      message:
        `user "${input.user}" may not grant ${what}, which binds its admins and members to its roles: ` +
        `that needs ${grantNeeds('tenants', name, namespace)}; ask an administrator of namespace "${namespace}" for it`,
    };
  }
  return ALLOWED;
}
