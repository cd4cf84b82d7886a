/**
 * Every reason this operator reports, in status messages (`<Reason>: <what happened>`),
 * in Events and in admission refusals: one closed set, one constant each, saying when it
 * is used and what the reader should do about it.
 */
export const Reason = {
  // --- references between the custom resources -------------------------------------

  /** A UserRole or GroupRole names a Scope that does not exist in its namespace: create the Scope or fix spec.scope. */
  ScopeNotFound: 'ScopeNotFound',
  /** A UserRole or GroupRole names a Permission that does not exist in its namespace: nothing is granted for that name. */
  PermissionNotFound: 'PermissionNotFound',
  /** A Permission's level differs from the Scope's: a Permission binds only in a Scope of its own level. */
  LevelMismatch: 'LevelMismatch',
  /**
   * The user creating or changing a UserRole, GroupRole or Tenant may not grant what it
   * names: they need verb `bind` or `escalate` on it, as Kubernetes asks of whoever
   * binds a role they do not hold.
   */
  BindForbidden: 'BindForbidden',
  /**
   * The user creating or changing a Permission may not make the operator write what it
   * grants: its platform_rules hold rules the user does not hold on the management
   * cluster, or it grants what only `escalate` admits (granted_cluster_rules, the Argo CD
   * and Kubeflow plugins), and the user lacks verb `escalate` on the Permission — RBAC's
   * own rule for writing a ClusterRole.
   */
  EscalateForbidden: 'EscalateForbidden',
  /**
   * A Permission's `aggregateTo` names a Permission the user may not `escalate`: its
   * platform_rules would reach everyone holding that target.
   */
  AggregateForbidden: 'AggregateForbidden',
  /**
   * The user may not act inside the tenant the object belongs to (a role in a tenant's
   * Scope, a Scope naming or descending from a tenant, a child Tenant, a Tenant's update or
   * deletion): they need verb `manage` on that Tenant, which its `tenant-edit.<t>` Role gives
   * its admins.
   */
  TenantForbidden: 'TenantForbidden',
  /** A Tenant with neither admins nor members: nobody could use or manage it, so it is refused. */
  TenantWithoutMembers: 'TenantWithoutMembers',
  /** A Tenant's spec.parent names a Tenant that does not exist in its namespace. */
  ParentTenantNotFound: 'ParentTenantNotFound',
  /**
   * A child Tenant names clusters, annotations or namespaces its parent does not cover:
   * refused at admission; when the parent narrows later, the child's Scope is narrowed to
   * what lies within the parent and the child reports this reason until one of them changes.
   */
  OutsideParentTenant: 'OutsideParentTenant',
  /**
   * A Scope's `spec.tenantRef` names a Tenant that does not control it (it is not the
   * Scope that Tenant generated): no tenant-get binding for its subjects, and the bundle
   * lists it under no tenant. Remove the tenantRef, or grant in the Tenant's own Scope.
   */
  TenantNotController: 'TenantNotController',
  /**
   * A Scope named `tenant-<t>` exists and the Tenant `<t>` does not control it (someone
   * created it before the Tenant, or took the name): the Tenant never adopts it, since its
   * spec could hold fields the Tenant's own Scope would not set. The Tenant waits, False,
   * until that Scope is renamed or deleted.
   */
  TenantScopeNameTaken: 'TenantScopeNameTaken',
  /** A Tenant being deleted still has child Tenants: they go first, it waits. */
  ChildTenantsExist: 'ChildTenantsExist',

  // --- deletions that wait ------------------------------------------------------------

  /** A Permission being deleted is still named by a UserRole or GroupRole: it waits (about a minute per retry). */
  PermissionInUse: 'PermissionInUse',
  /** A Scope being deleted still has users or groups granted in it: it waits (about 5 s per retry). */
  ScopeInUse: 'ScopeInUse',
  /** Removing what an object wrote failed somewhere; the finalizer stays until a retry succeeds. */
  DeleteFailed: 'DeleteFailed',

  // --- client clusters -------------------------------------------------------------------

  /** A Scope names a Cluster API Cluster id (`<namespace>/<name>`) that does not exist. */
  ClusterNotFound: 'ClusterNotFound',
  /** A selected Cluster's control plane is not ready yet; it is written to once it is. */
  ClusterNotReady: 'ClusterNotReady',
  /** A client cluster did not answer within its deadline; the others went on without it. */
  ClusterUnreachable: 'ClusterUnreachable',
  /** A client cluster refused our credentials (401/403): its kubeconfig's user lacks the rights we need. */
  ClusterAccessDenied: 'ClusterAccessDenied',
  /** The Cluster is paused (spec.paused): UserRoles skip it and leave what it holds alone until it resumes. */
  ClusterPaused: 'ClusterPaused',
  /** The `<cluster>-kubeconfig` Secret does not exist or has no `value` key. */
  KubeconfigSecretMissing: 'KubeconfigSecretMissing',
  /** The `<cluster>-kubeconfig` Secret's `value` does not parse as a usable kubeconfig. */
  KubeconfigInvalid: 'KubeconfigInvalid',
  /** A namespace a namespace-level Scope names does not exist in a target cluster (rechecked every few minutes). */
  NamespaceMissing: 'NamespaceMissing',

  // --- writes ------------------------------------------------------------------------------

  /** The apiserver refused an object we wrote (e.g. a rule it does not accept): the message carries its words. */
  RuleRefused: 'RuleRefused',
  /** A plugin's CRD (Argo CD AppProject, Istio AuthorizationPolicy) is not installed there: that plugin reports and backs off. */
  CrdNotInstalled: 'CrdNotInstalled',
  /** A plugin's write failed for another reason; the others kept going and the role retries through the rate limiter. */
  PluginFailed: 'PluginFailed',

  // --- success ------------------------------------------------------------------------------

  /** TenantCreated=True: the Tenant's Scope, roles and model entry are in place. */
  TenantCreated: 'TenantCreated',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** `<reason>: <message>`, the form of every status message that carries a reason. */
export function withReason(reason: string, message: string): string {
  return `${reason}: ${message}`;
}
