/**
 * The rbac.authorization.k8s.io/v1 objects this operator builds, as plain data, and the
 * one normalisation every rule goes through before it is written.
 */
import type { KubeObject } from '@operators/kit';
import type { PolicyRule } from '../api/common.ts';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;

export type ClusterRole = KubeObject & {
  readonly apiVersion: typeof RBAC_API_VERSION;
  readonly kind: 'ClusterRole';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly rules?: readonly PolicyRule[];
  readonly aggregationRule?: {
    readonly clusterRoleSelectors: readonly { readonly matchLabels: Readonly<Record<string, string>> }[];
  };
};

export type Role = KubeObject & {
  readonly apiVersion: typeof RBAC_API_VERSION;
  readonly kind: 'Role';
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
  };
  readonly rules: readonly PolicyRule[];
};

export interface RbacSubject {
  readonly kind: 'User' | 'Group';
  readonly apiGroup: typeof RBAC_GROUP;
  readonly name: string;
}

export type RoleBinding = KubeObject & {
  readonly apiVersion: typeof RBAC_API_VERSION;
  readonly kind: 'RoleBinding';
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
  };
  readonly roleRef: {
    readonly apiGroup: typeof RBAC_GROUP;
    readonly kind: 'Role' | 'ClusterRole';
    readonly name: string;
  };
  /** Absent rather than empty: the apiserver drops an empty list, and a desired `[]` would never match what it stores. */
  readonly subjects?: readonly RbacSubject[];
};

/**
 * A rule as the apiserver stores it: empty lists are omitted (it drops them), so that a
 * desired object compares equal to the stored one and a resync writes nothing.
 */
export function normalizeRule(rule: PolicyRule): PolicyRule {
  const out: {
    apiGroups?: readonly string[];
    resources?: readonly string[];
    resourceNames?: readonly string[];
    nonResourceURLs?: readonly string[];
    verbs: readonly string[];
  } = { verbs: [...rule.verbs] };
  if (rule.apiGroups?.length) out.apiGroups = [...rule.apiGroups];
  if (rule.resources?.length) out.resources = [...rule.resources];
  if (rule.resourceNames?.length) out.resourceNames = [...rule.resourceNames];
  if (rule.nonResourceURLs?.length) out.nonResourceURLs = [...rule.nonResourceURLs];
  return out;
}
