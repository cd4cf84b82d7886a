/**
 * The RBAC plugin's objects: the bindings that give a role's subject one Permission.
 *
 * - platform level: a ClusterRoleBinding on the management cluster to the aggregating
 *   `platform:<ns>.<perm>` ClusterRole;
 * - cluster level: a ClusterRoleBinding in the client cluster to `shturval:<ns>.<perm>`;
 * - namespace level: a RoleBinding in each namespace of the Scope, in the client
 *   cluster, to the same `shturval:<ns>.<perm>` ClusterRole (a RoleBinding may
 *   reference a ClusterRole and then grants its rules in that namespace only).
 *
 * Every binding is named by names.ts `bindingName` (the same name in every namespace)
 * and labelled for its grant, so the plugin finds the stale ones by label and name.
 */
import type { KubeObject } from '@operators/kit';
import type { Level } from '../../api/common.ts';
import { bindingName, clientClusterRoleName, platformClusterRoleName } from '../names.ts';
import { type Grant, grantLabels, RBAC_GROUP, RBAC_VERSION, rbacSubject } from './grant.ts';

export const CLUSTER_ROLE_BINDING = { apiVersion: RBAC_VERSION, kind: 'ClusterRoleBinding' } as const;
export const ROLE_BINDING = { apiVersion: RBAC_VERSION, kind: 'RoleBinding' } as const;

export interface RoleRef {
  readonly apiGroup: string;
  readonly kind: string;
  readonly name: string;
}

export type Binding = KubeObject & {
  readonly roleRef: RoleRef;
  readonly subjects: readonly { readonly kind: string; readonly apiGroup: string; readonly name: string }[];
};

/** The kind of binding a level takes. */
export function bindingKind(level: Level): typeof CLUSTER_ROLE_BINDING | typeof ROLE_BINDING {
  return level === 'namespace' ? ROLE_BINDING : CLUSTER_ROLE_BINDING;
}

/** The name every binding of this grant has (in each namespace, for RoleBindings). */
export function grantBindingName(grant: Grant): string {
  return bindingName(grant.owner.kind, grant.owner.namespace, grant.owner.name, grant.permission);
}

/**
 * The bindings of one grant at one level; `namespaces` are the Scope's (used at the
 * namespace level only; duplicates are written once, in sorted order).
 */
export function desiredBindings(grant: Grant, level: Level, namespaces: readonly string[]): Binding[] {
  const name = grantBindingName(grant);
  const labels = grantLabels(grant, 'rbac');
  const roleName =
    level === 'platform'
      ? platformClusterRoleName(grant.owner.namespace, grant.permission)
      : clientClusterRoleName(grant.owner.namespace, grant.permission);
  const roleRef: RoleRef = { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: roleName };
  const subjects = [rbacSubject(grant.subject.kind, grant.subject.name)];
  if (level !== 'namespace') {
    return [{ ...CLUSTER_ROLE_BINDING, metadata: { name, labels }, roleRef, subjects }];
  }
  return [...new Set(namespaces)].sort().map((namespace) => ({
    ...ROLE_BINDING,
    metadata: { name, namespace, labels },
    roleRef,
    subjects,
  }));
}
