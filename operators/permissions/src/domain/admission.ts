/**
 * The admission decisions for UserRole, GroupRole, Scope and Tenant, from facts the
 * webhook has already looked up (the Scope, the Permissions, the parent Tenant, the
 * tenant an object belongs to, and the apiserver's SubjectAccessReview answers about the
 * requesting user). Messages are for the person at `kubectl apply`: they name the object,
 * what is wrong, and what to do. (Permissions: domain/permission-admission.ts.)
 */
import { GROUP } from '../api/common.ts';
import type { GroupRoleSpec } from '../api/group-role.ts';
import type { Permission } from '../api/permission.ts';
import type { Scope } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import type { UserRoleSpec } from '../api/user-role.ts';
import { Reason } from './reasons.ts';
import { MANAGE_VERB, tenantWithinParent } from './tenant.ts';

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

/** One tenant a request reaches into, why, and whether the user may manage it (SubjectAccessReview). */
export interface TenantCheck {
  readonly tenant: string;
  /** Why the request touches this tenant, for the message: `its Scope "tenant-b" belongs to Tenant "b"`. */
  readonly because: string;
  readonly mayManage: boolean;
}

const manageNeeds = (tenant: string, namespace: string): string =>
  `verb "${MANAGE_VERB}" on tenants.${GROUP} with resourceName "${tenant}" in namespace "${namespace}" ` +
  `(the Role tenant-edit.${tenant} gives it to the tenant's admins; or a Role rule {apiGroups: [${GROUP}], ` +
  `resources: [tenants], resourceNames: [${tenant}], verbs: [${MANAGE_VERB}]})`;

/**
 * Refuses when the user may not manage a tenant the request reaches into, naming each
 * such tenant and why it is reached; admits when every check passes (or there is none:
 * an object outside every tenant keeps the other rules only).
 *
 * @param action what the user asked, for the message: `create UserRole "x"`.
 */
export function validateTenantChecks(
  user: string,
  action: string,
  namespace: string,
  checks: readonly TenantCheck[],
): AdmissionDecision {
  const refused = checks.filter((c) => !c.mayManage);
  if (refused.length === 0) return ALLOWED;
  const tenants = [...new Set(refused.map((c) => c.tenant))];
  return {
    allowed: false,
    reason: Reason.TenantForbidden,
    message:
      `user "${user}" may not ${action}: ${refused.map((c) => c.because).join('; ')}, and acting inside a tenant needs ` +
      `${tenants.map((t) => manageNeeds(t, namespace)).join('; ')}; ask an admin of that tenant, or a platform administrator`,
  };
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
  /** The tenant the Scope belongs to, if any, and whether the user may manage it. */
  readonly tenantChecks?: readonly TenantCheck[];
  /** `create` or `update`, for the message; default `write`. */
  readonly operation?: string;
}

/**
 * Refuses, in this order (each listing every offender): a missing Scope; a Scope of a
 * tenant the user may not manage; missing Permissions; Permissions whose level is not
 * the Scope's; Permissions the requesting user may not grant. Otherwise admits.
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
  const boundary = validateTenantChecks(
    input.user,
    `${input.operation ?? 'write'} ${what}`,
    namespace,
    input.tenantChecks ?? [],
  );
  if (!boundary.allowed) return boundary;
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
  /** The tenants the write reaches into (the parent on create; the Tenant itself on update). */
  readonly tenantChecks?: readonly TenantCheck[];
  /** `create` or `update`, for the message; default `write`. */
  readonly operation?: string;
}

/**
 * Refuses, in this order: a Tenant with neither admins nor members; a named parent that
 * does not exist; a Tenant reaching outside its parent; a tenant the user may not manage
 * (the parent of a new child, the Tenant itself on update); a requesting user who may not
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
  const boundary = validateTenantChecks(
    input.user,
    `${input.operation ?? 'write'} ${what}`,
    namespace,
    input.tenantChecks ?? [],
  );
  if (!boundary.allowed) return boundary;
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

export interface ScopeAdmission {
  /** The Scope as written (CREATE, UPDATE) or as it was (DELETE). */
  readonly scope: Scope;
  readonly operation: 'create' | 'update' | 'delete';
  /** spec.parentScope names a Scope that does not exist (create and update only). */
  readonly parentMissing: boolean;
  /**
   * The tenants the write reaches into: the one `tenantRef` names, the one the parent
   * Scope belongs to, and on update or delete the one the stored Scope belonged to.
   */
  readonly tenantChecks: readonly TenantCheck[];
  readonly user: string;
}

/**
 * Refuses, in this order: a `parentScope` that does not exist (its tenant could not be
 * told); a tenant the user may not manage. Otherwise admits: a Scope outside every tenant
 * keeps its CEL rules only.
 */
export function validateScope(input: ScopeAdmission): AdmissionDecision {
  const { scope } = input;
  const namespace = scope.metadata.namespace ?? '';
  const name = scope.metadata.name ?? '';
  const what = name ? `Scope "${name}"` : 'this Scope';
  const parent = scope.spec.parentScope?.name;
  if (input.operation !== 'delete' && parent !== undefined && input.parentMissing) {
    return {
      allowed: false,
      reason: Reason.ScopeNotFound,
      message:
        `${what} names parent Scope "${parent}", which does not exist in namespace "${namespace}": ` +
        `create the parent first, or fix spec.parentScope`,
    };
  }
  return validateTenantChecks(input.user, `${input.operation} ${what}`, namespace, input.tenantChecks);
}
