/**
 * A Scope's computed status: its paths in the tenant tree, whether each of its
 * namespaces exists in each target cluster, when to look again, and `ready`/`message`.
 * The controller gathers the facts (selected clusters, a namespace table per cluster);
 * everything decided from them is here.
 */
import type { Level } from '../api/common.ts';
import { PLATFORM } from '../api/role-status.ts';
import type { ObjectStatus, ScopeStatus } from '../api/scope.ts';
import { Reason, withReason } from './reasons.ts';

/**
 * One path per target: `/<tenant chain>/platform` at platform level,
 * `/<tenant chain>/<cluster id>` at cluster level and `/<tenant chain>/<cluster id>/<namespace>`
 * at namespace level (a cluster id is `<namespace>/<name>`, so it spans two segments).
 * The tenant chain runs from the root tenant down. Sorted and without duplicates, so
 * equal inputs give an equal status.
 */
export function scopePaths(
  tenantChain: readonly string[],
  clusters: readonly string[],
  namespaces: readonly string[],
  level: Level,
): string[] {
  const prefix = tenantChain.map((t) => `/${t}`).join('');
  let paths: string[];
  switch (level) {
    case 'platform':
      paths = [`${prefix}/${PLATFORM}`];
      break;
    case 'cluster':
      paths = clusters.map((c) => `${prefix}/${c}`);
      break;
    case 'namespace':
      paths = clusters.flatMap((c) => namespaces.map((n) => `${prefix}/${c}/${n}`));
      break;
    default:
      return level satisfies never;
  }
  return [...new Set(paths)].sort();
}

/** What the controller found in one client cluster about the Scope's namespaces. */
export type ClusterNamespaces =
  /** The cluster answered: these of the Scope's namespaces exist there. */
  | { readonly kind: 'checked'; readonly existing: readonly string[] }
  /** The cluster could not be asked (no kubeconfig, no answer before the deadline). */
  | { readonly kind: 'unreachable'; readonly reason: string; readonly message: string };

/**
 * One row per (cluster, namespace), sorted by cluster then namespace. A namespace that
 * is not there says so and when it is looked for again; an unreachable cluster marks
 * each of its rows as not existing with the reason, since nothing can be granted there
 * now either; a cluster missing from the table was not checked.
 */
export function objectsStatus(
  clusters: readonly string[],
  namespaces: readonly string[],
  table: ReadonlyMap<string, ClusterNamespaces>,
): ObjectStatus[] {
  const rows: ObjectStatus[] = [];
  for (const cluster of [...new Set(clusters)].sort()) {
    const found = table.get(cluster);
    for (const namespace of [...new Set(namespaces)].sort()) {
      if (found === undefined) {
        rows.push({ cluster, namespace, exists: false, message: `not checked yet in cluster ${cluster}` });
      } else if (found.kind === 'unreachable') {
        rows.push({ cluster, namespace, exists: false, message: withReason(found.reason, found.message) });
      } else if (found.existing.includes(namespace)) {
        rows.push({ cluster, namespace, exists: true });
      } else {
        rows.push({
          cluster,
          namespace,
          exists: false,
          message: withReason(
            Reason.NamespaceMissing,
            `namespace ${namespace} does not exist in cluster ${cluster}; grants land there once it is created (rechecked periodically)`,
          ),
        });
      }
    }
  }
  return rows;
}

/** The recheck intervals a Scope uses (flags; §5: about 30 min and 5 min). */
export interface ScopeIntervals {
  /** Cluster level: clusters come and go with Cluster events, so this is only a safety net. */
  readonly scopeClusterRecheckMs: number;
  /** Namespace level: a namespace created in a client cluster sends us no event, so we poll. */
  readonly scopeNamespaceRecheckMs: number;
}

/** When to reconcile a Scope again unasked: never at platform level (nothing there changes behind our back). */
export function scopeRequeueMs(level: Level, intervals: ScopeIntervals): number | undefined {
  switch (level) {
    case 'platform':
      return undefined;
    case 'cluster':
      return intervals.scopeClusterRecheckMs;
    case 'namespace':
      return intervals.scopeNamespaceRecheckMs;
    default:
      return level satisfies never;
  }
}

/** The clusters a Scope's targets resolve to now. */
export interface ScopeSelection {
  /** Ready clusters it selects (ids). */
  readonly selected: readonly string[];
  /** Ids it names that no Cluster API Cluster has. */
  readonly unknown: readonly string[];
  /** Clusters it selects whose control plane is not ready yet. */
  readonly notReady: readonly string[];
}

/**
 * The whole status. Ready when every named cluster exists and every namespace exists in
 * every selected cluster; a cluster that is not ready yet is mentioned but does not make
 * the Scope unready (it joins once ready). Lists are sorted so a resync writes nothing.
 */
export function scopeStatus(input: {
  readonly level: Level;
  readonly selection: ScopeSelection;
  readonly objectsStatus: readonly ObjectStatus[];
  readonly permissions: readonly string[];
  readonly paths: readonly string[];
  readonly observedGeneration?: number;
}): ScopeStatus {
  const { level, selection } = input;
  const problems: string[] = [];
  const unknown = [...new Set(selection.unknown)].sort();
  const notReady = [...new Set(selection.notReady)].sort();
  if (unknown.length > 0) {
    problems.push(
      withReason(
        Reason.ClusterNotFound,
        `no Cluster API Cluster ${unknown.join(', ')}; fix spec.clusters.ids (ids are <namespace>/<name>)`,
      ),
    );
  }
  for (const o of input.objectsStatus) {
    if (!o.exists) problems.push(`${o.cluster}/${o.namespace}: ${o.message ?? 'does not exist'}`);
  }
  if (notReady.length > 0) {
    problems.push(
      withReason(
        Reason.ClusterNotReady,
        `${notReady.join(', ')}: control plane not ready yet; joins when it is`,
      ),
    );
  }
  const clusters = level === 'platform' ? [] : [...new Set(selection.selected)].sort();
  return {
    ready: unknown.length === 0 && input.objectsStatus.every((o) => o.exists),
    clusters,
    permissions: [...new Set(input.permissions)].sort(),
    paths: [...input.paths],
    objectsStatus: [...input.objectsStatus],
    ...(problems.length > 0 ? { message: problems.join('; ') } : {}),
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
  };
}
