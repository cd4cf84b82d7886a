/**
 * What every plugin's objects are computed from: one grant, a role's subject given one
 * Permission; and the labels every plugin object carries.
 *
 * The labels are names.ts's owner labels plus `permissions.shturval.tech/permission`
 * and `permissions.shturval.tech/plugin`: a plugin is applied and deleted per (role,
 * permission), and one role's Kubeflow objects (named after the user and the Kubeflow
 * role, not the Permission) would otherwise be indistinguishable between two of its
 * Permissions; and three plugins write RoleBindings, which must not take each other's
 * for stale ones. A label selector on all of them finds exactly one plugin's objects
 * for one grant, in any namespace.
 */
import { LABELS, labelSafe, MANAGED_BY, type Owner, ownerLabels } from '../names.ts';

/** rbac.authorization.k8s.io, the apiGroup of User and Group subjects and of roleRefs. */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_VERSION = `${RBAC_GROUP}/v1`;

/** The label naming the Permission (through names.ts labelSafe) an object was written for. */
export const PERMISSION_LABEL = 'permissions.shturval.tech/permission';
/** The label naming the plugin that wrote an object. */
export const PLUGIN_LABEL = 'permissions.shturval.tech/plugin';

export type PluginName = 'rbac' | 'argocd' | 'kubeflow' | 'tenant';

/** Who is granted: a user, or a group claim (with its members, for plugins whose objects are per user). */
export interface Subject {
  readonly kind: 'User' | 'Group';
  readonly name: string;
  readonly members?: readonly string[];
}

/** A UserRole or GroupRole: the owner of every plugin object. */
export type RoleOwner = Owner & { readonly kind: 'UserRole' | 'GroupRole' };

/** One grant: a role's subject, one Permission (in the role's namespace). */
export interface Grant {
  readonly owner: RoleOwner;
  readonly permission: string;
  readonly subject: Subject;
}

/** The labels of every object `plugin` writes for `grant`; a delete requires all of them on the live object. */
export function grantLabels(grant: Grant, plugin: PluginName): Record<string, string> {
  return {
    ...ownerLabels(grant.owner),
    [PERMISSION_LABEL]: labelSafe(grant.permission),
    [PLUGIN_LABEL]: plugin,
  };
}

/** `grantLabels` as a label selector (`k=v,k=v`), to list the objects `plugin` wrote for one grant. */
export function grantSelector(grant: Grant, plugin: PluginName): string {
  return Object.entries(grantLabels(grant, plugin))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The RBAC subject of a user or a group. */
export function rbacSubject(
  kind: 'User' | 'Group',
  name: string,
): { kind: string; apiGroup: string; name: string } {
  return { kind, apiGroup: RBAC_GROUP, name };
}

/**
 * Whose a live object is, from its labels: `ours` (every label of the grant), `adopt`
 * (ours but for the owner's uid: left by an earlier owner of the same kind, namespace
 * and name, granting the same Permission, so the re-created owner takes it over), or
 * `foreign` (another owner's, or not written by this operator at all: left alone).
 */
export type Claim = 'ours' | 'adopt' | 'foreign';

export function claimOf(
  labels: Readonly<Record<string, string>> | undefined,
  grant: Grant,
  plugin: PluginName,
): Claim {
  const want = grantLabels(grant, plugin);
  const same = (k: string): boolean => labels?.[k] === want[k];
  const keys = Object.keys(want);
  if (keys.every(same)) return 'ours';
  if (keys.filter((k) => k !== LABELS.ownerUid).every(same)) return 'adopt';
  return 'foreign';
}

/** Who wrote a foreign object, for a message: its owner labels, or "someone else". */
export function writerOf(labels: Readonly<Record<string, string>> | undefined): string {
  if (labels?.[LABELS.managedBy] !== MANAGED_BY) return 'someone else (not permissions.shturval.tech)';
  return `${labels[LABELS.ownerKind] ?? '?'} ${labels[LABELS.ownerNamespace] ?? '?'}/${labels[LABELS.ownerName] ?? '?'}`;
}
