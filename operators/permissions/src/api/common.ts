/**
 * What the five permissions.shturval.tech kinds share: the group, the levels, policy
 * rules, cluster targeting and the status pieces. Each kind's file holds its types and
 * its CRD side by side, so that they cannot disagree.
 */

export const GROUP = 'permissions.shturval.tech';
export const VERSION = 'v1beta1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** The finalizer every kind carries while the operator still has something to clean up (§5). */
export const FINALIZER = 'permissions.shturval.tech/finalizer';

/**
 * Where a grant lands. `platform`: the management cluster (platform: ClusterRoles, Argo CD);
 * `cluster`: whole client clusters (ClusterRoleBindings); `namespace`: namespaces of client
 * clusters (RoleBindings). A Permission binds only in a Scope of its own level.
 */
export type Level = 'platform' | 'cluster' | 'namespace';
export const LEVELS: readonly Level[] = ['platform', 'cluster', 'namespace'];

/** rbac.authorization.k8s.io/v1 PolicyRule, as the apiserver takes it. */
export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
}

/**
 * Which Cluster API clusters: by id (`<namespace>/<name>` of the Cluster object) and/or
 * by annotations every selected Cluster must carry. Both absent: every ready cluster.
 */
export interface ClusterTargets {
  readonly ids?: readonly string[];
  readonly annotations?: Readonly<Record<string, string>>;
}

/** An object in the referring object's own namespace, by name. */
export interface LocalObjectRef {
  readonly name: string;
}
