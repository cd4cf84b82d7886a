/** The kinds of other APIs this operator reads or writes, in one place (the chart's RBAC lists the same). */

/** Cluster API's Cluster, at its storage version (no conversion webhook needed to read it). */
export const CAPI_CLUSTER = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster' } as const;
export const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;
export const ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' } as const;
export const ROLE_BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
export const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;
export const SUBJECT_ACCESS_REVIEW = {
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SubjectAccessReview',
} as const;
