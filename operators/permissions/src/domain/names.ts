/**
 * The names and labels this operator gives what it writes, one rule each, so that the
 * controllers, the plugins, the chart and the docs agree.
 *
 * Why names carry the namespace: Permissions, UserRoles, GroupRoles and Tenants are
 * namespaced, but the ClusterRoles and ClusterRoleBindings they produce are cluster-scoped
 * (on the management cluster and in every client cluster). Two Permissions named `viewer`
 * in namespaces `team-a` and `team-b` must not write the same ClusterRole, so every name
 * is `<namespace>.<name>` behind a prefix: a namespace is a DNS label and holds no `.`,
 * so the first `.` always ends it and two different pairs never meet in one name.
 *
 * Why labels: an owner reference cannot point from a cluster-scoped object to a namespaced
 * one (the garbage collector ignores it), nor across clusters at all. What we wrote is
 * therefore found, and only ever deleted, by the owner labels below, never by name alone.
 */
import { createHash } from 'node:crypto';

/** `app.kubernetes.io/managed-by` on everything this operator writes. */
export const MANAGED_BY = 'permissions.shturval.tech';

/** The label keys on everything this operator writes. */
export const LABELS = {
  /** Always {@link MANAGED_BY}: a selector for "ours" in every cluster. */
  managedBy: 'app.kubernetes.io/managed-by',
  /** The kind of the custom resource that caused the object: Permission, UserRole, GroupRole or Tenant. */
  ownerKind: 'permissions.shturval.tech/owner-kind',
  /** Its namespace. */
  ownerNamespace: 'permissions.shturval.tech/owner-namespace',
  /** Its name, through {@link labelSafe} (a Kubernetes name may be 253 long, a label value only 63). */
  ownerName: 'permissions.shturval.tech/owner-name',
  /** Its uid: a re-created owner of the same name does not adopt what the old one left. */
  ownerUid: 'permissions.shturval.tech/owner-uid',
} as const;

/** The prefix of the label that makes a `platform:<ns>.<name>:rules` ClusterRole part of an aggregating one. */
export const AGGREGATION_LABEL_PREFIX = 'aggregate-to.permissions.shturval.tech/';

/** The kinds whose objects carry owner labels. */
export type OwnerKind = 'Permission' | 'UserRole' | 'GroupRole' | 'Tenant';

/** Who caused an object: what the owner labels record. */
export interface Owner {
  readonly kind: OwnerKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** The longest label value (and label-key name part) Kubernetes takes. */
export const MAX_LABEL_VALUE = 63;
/** The longest object name we produce (a DNS subdomain's limit, which most tools assume of any name). */
export const MAX_NAME = 253;
/** Hex digits of sha256 appended when a value is shortened: 40 bits, collisions out of reach in one cluster. */
const HASH_HEX = 10;

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const hashOf = (value: string): string => createHash('sha256').update(value).digest('hex').slice(0, HASH_HEX);

/**
 * `value` cut so that, with `-<10 hex of sha256(value)>` appended, it is at most `max`
 * long; trailing characters that may not end a name or label (`.`, `-`, `_`, `:`) are
 * dropped from the cut so the result stays valid. Different values keep different
 * results (up to a 40-bit hash collision) because the hash covers the whole value.
 */
function shortened(value: string, max: number): string {
  const hash = hashOf(value);
  const head = value.slice(0, max - HASH_HEX - 1).replace(/[^A-Za-z0-9]+$/, '');
  return head ? `${head}-${hash}` : hash;
}

/** `name` itself when it fits in {@link MAX_NAME}, else its shortened form. */
function fitName(name: string): string {
  return name.length <= MAX_NAME ? name : shortened(name, MAX_NAME);
}

/**
 * A valid label value for `value`: itself when it already is one, else a shortened form
 * (characters a label value may not hold become `-`) with a hash of the original, at
 * most 63 long. Deterministic, so the same owner always yields the same label.
 */
export function labelSafe(value: string): string {
  if (value.length <= MAX_LABEL_VALUE && LABEL_VALUE.test(value)) return value;
  const cleaned = value.replace(/[^-A-Za-z0-9_.]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  const hash = hashOf(value);
  const head = cleaned.slice(0, MAX_LABEL_VALUE - HASH_HEX - 1).replace(/[^A-Za-z0-9]+$/, '');
  return head ? `${head}-${hash}` : hash;
}

/** The labels on everything written on behalf of `owner`; a delete requires all of them on the live object. */
export function ownerLabels(owner: Owner): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.ownerKind]: owner.kind,
    [LABELS.ownerNamespace]: labelSafe(owner.namespace),
    [LABELS.ownerName]: labelSafe(owner.name),
    [LABELS.ownerUid]: labelSafe(owner.uid),
  };
}

/**
 * The Permission's id in aggregation labels: `<ns>.<name>` when it fits a label key's
 * name part (63), else its first 52 characters, `-`, and 10 hex of its sha256. Both
 * start and end alphanumerically, so the key is always valid.
 */
export function aggregationId(namespace: string, name: string): string {
  const id = `${namespace}.${name}`;
  return id.length <= MAX_LABEL_VALUE ? id : shortened(id, MAX_LABEL_VALUE);
}

/** The label (value `"true"`) that a ClusterRole carries to be aggregated into the Permission with this id. */
export function aggregationLabelKey(id: string): string {
  return `${AGGREGATION_LABEL_PREFIX}${id}`;
}

/**
 * The aggregating ClusterRole on the management cluster: its rules are filled by
 * kube-controller-manager from every ClusterRole labelled for it.
 */
export function platformClusterRoleName(namespace: string, name: string): string {
  return fitName(`platform:${namespace}.${name}`);
}

/** The labelled part holding the Permission's own `platform_rules`, aggregated into its own and its `aggregateTo` roles. */
export function platformRulesClusterRoleName(namespace: string, name: string): string {
  return fitName(`platform:${namespace}.${name}:rules`);
}

/** The ClusterRole in each selected client cluster, holding `granted_cluster_rules`. */
export function clientClusterRoleName(namespace: string, name: string): string {
  return fitName(`shturval:${namespace}.${name}`);
}

/**
 * A (Cluster)RoleBinding granting one Permission to one role's subject:
 * `shturval:<ns>.<role>.<permission>` for a UserRole, `shturval:<ns>.g.<role>.<permission>`
 * for a GroupRole (the `g.` keeps a user's and a group's bindings apart in the common
 * case). Role and Permission names may themselves hold dots, so two pairs can meet in
 * one name (`a.b`+`c` and `a`+`b.c`); the owner labels keep such a binding from being
 * taken over or deleted by the other owner.
 */
export function bindingName(
  kind: 'UserRole' | 'GroupRole',
  namespace: string,
  roleName: string,
  permission: string,
): string {
  const group = kind === 'GroupRole' ? 'g.' : '';
  return fitName(`shturval:${namespace}.${group}${roleName}.${permission}`);
}

/** The Scope a Tenant generates, in the Tenant's namespace. */
export function tenantScopeName(tenant: string): string {
  return fitName(`tenant-${tenant}`);
}

/** The namespaced Role (and its RoleBinding) letting a tenant's members read the tenant's objects. */
export function tenantGetRoleName(tenant: string): string {
  return fitName(`tenant-get.${tenant}`);
}

/** The namespaced Role (and its RoleBinding) letting a tenant's admins also manage UserRoles and GroupRoles. */
export function tenantEditRoleName(tenant: string): string {
  return fitName(`tenant-edit.${tenant}`);
}
