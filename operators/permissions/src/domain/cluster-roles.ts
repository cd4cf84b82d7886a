/**
 * The ClusterRoles one Permission wants, as complete server-side apply configurations.
 *
 * On the management cluster, two: the aggregating `platform:<ns>.<name>`, whose rules
 * kube-controller-manager's clusterrole-aggregation controller fills from every
 * ClusterRole labelled for it, and the labelled part `platform:<ns>.<name>:rules`, which
 * holds `platform_rules` and carries the label of its own Permission and of each
 * `aggregateTo` Permission, so that one Permission's rules reach several platform roles
 * without copying them. In each selected client cluster, one: `shturval:<ns>.<name>` with
 * `granted_cluster_rules`.
 */
import type { Permission } from '../api/permission.ts';
import {
  aggregationId,
  aggregationLabelKey,
  clientClusterRoleName,
  ownerLabels,
  platformClusterRoleName,
  platformRulesClusterRoleName,
} from './names.ts';
import { type ClusterRole, normalizeRule, RBAC_API_VERSION } from './rbac.ts';

function identity(p: Permission): { namespace: string; name: string; uid: string } {
  return { namespace: p.metadata.namespace ?? '', name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' };
}

const labelsOf = (p: Permission): Record<string, string> =>
  ownerLabels({ kind: 'Permission', ...identity(p) });

/**
 * The aggregating role. It has no `rules` field on purpose: the aggregation controller
 * owns that field, and an apply that named it would fight the controller on every write.
 */
export function platformAggregatingClusterRole(p: Permission): ClusterRole {
  const { namespace, name } = identity(p);
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: { name: platformClusterRoleName(namespace, name), labels: labelsOf(p) },
    aggregationRule: {
      clusterRoleSelectors: [
        { matchLabels: { [aggregationLabelKey(aggregationId(namespace, name))]: 'true' } },
      ],
    },
  };
}

/**
 * The labelled part: `platform_rules`, aggregated into this Permission's own platform
 * role and into that of each `aggregateTo` Permission of the same namespace (whether or
 * not it exists yet: the label waits for it).
 */
export function platformRulesClusterRole(p: Permission): ClusterRole {
  const { namespace, name } = identity(p);
  const targets = [name, ...(p.spec.aggregateTo ?? []).filter((t) => t !== name)];
  const aggregation: Record<string, string> = {};
  for (const t of targets) aggregation[aggregationLabelKey(aggregationId(namespace, t))] = 'true';
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: {
      name: platformRulesClusterRoleName(namespace, name),
      labels: { ...labelsOf(p), ...aggregation },
    },
    rules: (p.spec.platform_rules ?? []).map(normalizeRule),
  };
}

/** The role written into each selected client cluster. */
export function clientClusterRole(p: Permission): ClusterRole {
  const { namespace, name } = identity(p);
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: { name: clientClusterRoleName(namespace, name), labels: labelsOf(p) },
    rules: (p.spec.granted_cluster_rules ?? []).map(normalizeRule),
  };
}

/** What a Permission wants written now. */
export interface DesiredPermissionObjects {
  /** The aggregating role and its labelled part, or none when there are no `platform_rules`. */
  readonly platform: readonly ClusterRole[];
  /** The client clusters' role, or none when there are no `granted_cluster_rules`. */
  readonly client: ClusterRole | undefined;
}

export function desiredPermissionObjects(p: Permission): DesiredPermissionObjects {
  const platform =
    (p.spec.platform_rules?.length ?? 0) > 0
      ? [platformAggregatingClusterRole(p), platformRulesClusterRole(p)]
      : [];
  const client = (p.spec.granted_cluster_rules?.length ?? 0) > 0 ? clientClusterRole(p) : undefined;
  return { platform, client };
}
