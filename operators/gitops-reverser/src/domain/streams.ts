/**
 * Which watches a GitTarget needs: its admitted rules' items, expanded against the
 * resources the source cluster serves, as one stream per (resource, namespace).
 *
 * Pure: the rules arrive already through the gate (an item's namespaces are the ones
 * `resolveWatchRuleSourceScope` resolved, a ClusterWatchRule only if its target was
 * admitted), and the catalogue is discovery's answer. Choices, documented for users:
 *  - a stream reads the group's PREFERRED version; `apiVersions` filters on it;
 *  - `*` in resources skips what cannot be listed and watched and Events (a flood of
 *    short-lived objects nobody restores from Git);
 *  - a WatchRule watches namespaced resources only, a ClusterWatchRule cluster-scoped
 *    ones only; a name that matches nothing in scope is reported, never guessed;
 *  - two items claiming one (resource, namespace) share one stream, their operations
 *    united; a cluster-wide stream of a resource subsumes its per-namespace ones.
 */

/** One resource the source cluster serves (discovery's `ResourceInfo` satisfies it). */
export interface CatalogueEntry {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
}

/** What an event may do to Git: `CREATE`, `UPDATE`, `DELETE`, or `*` for all. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';
export const ALL_OPERATIONS: readonly Operation[] = ['CREATE', 'UPDATE', 'DELETE'];

/** One rule item after the gate. */
export interface AdmittedItem {
  /** `WatchRule ns/name spec.rules[i]` or `ClusterWatchRule name spec.rules[i]`, for messages. */
  readonly source: string;
  readonly scope: 'Namespaced' | 'Cluster';
  readonly operations?: readonly string[];
  readonly apiGroups: readonly string[];
  readonly apiVersions?: readonly string[];
  readonly resources: readonly string[];
  /** The resolved namespace ("" = every namespace); ignored for Cluster items. */
  readonly namespace: string;
}

export interface StreamSpec {
  /** `group/resource@namespace` (`@` alone for cluster-wide or cluster-scoped). */
  readonly key: string;
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: string;
  readonly namespaced: boolean;
  /** "" for every namespace (and for cluster-scoped resources). */
  readonly namespace: string;
  readonly operations: readonly Operation[];
}

export interface StreamPlan {
  readonly streams: readonly StreamSpec[];
  /** Items naming a resource the cluster does not serve in their scope, one message each. */
  readonly unmatched: readonly string[];
}

const EXCLUDED_FROM_WILDCARD = new Set(['/events', 'events.k8s.io/events']);

function matches(pattern: readonly string[] | undefined, value: string): boolean {
  return pattern === undefined || pattern.length === 0 || pattern.includes('*') || pattern.includes(value);
}

function operationsOf(item: AdmittedItem): Operation[] {
  const ops = item.operations ?? [];
  if (ops.length === 0 || ops.includes('*')) return [...ALL_OPERATIONS];
  return ALL_OPERATIONS.filter((o) => ops.includes(o));
}

export function streamKey(group: string, resource: string, namespace: string): string {
  return `${group}/${resource}@${namespace}`;
}

export function planStreams(
  items: readonly AdmittedItem[],
  catalogue: readonly CatalogueEntry[],
): StreamPlan {
  const byKey = new Map<string, { entry: CatalogueEntry; namespace: string; ops: Set<Operation> }>();
  const unmatched: string[] = [];
  for (const item of items) {
    const cluster = item.scope === 'Cluster';
    const inScope = catalogue.filter(
      (e) =>
        e.namespaced === !cluster && matches(item.apiGroups, e.group) && matches(item.apiVersions, e.version),
    );
    for (const name of item.resources) {
      const hits =
        name === '*'
          ? inScope.filter(
              (e) =>
                e.verbs.includes('list') &&
                e.verbs.includes('watch') &&
                !EXCLUDED_FROM_WILDCARD.has(`${e.group}/${e.resource}`),
            )
          : inScope.filter((e) => e.resource === name);
      if (hits.length === 0) {
        if (name !== '*') {
          unmatched.push(
            `${item.source}: resource "${name}" in apiGroups [${item.apiGroups.map((g) => JSON.stringify(g)).join(', ')}] ` +
              `is not served as a ${cluster ? 'cluster-scoped' : 'namespaced'} resource by the source cluster`,
          );
        }
        continue;
      }
      const namespace = cluster ? '' : item.namespace;
      for (const entry of hits) {
        const key = streamKey(entry.group, entry.resource, namespace);
        const cur = byKey.get(key) ?? { entry, namespace, ops: new Set<Operation>() };
        for (const o of operationsOf(item)) cur.ops.add(o);
        byKey.set(key, cur);
      }
    }
  }
  // A cluster-wide stream of a namespaced resource covers its per-namespace ones.
  for (const [key, s] of byKey) {
    if (s.namespace === '') continue;
    const wide = byKey.get(streamKey(s.entry.group, s.entry.resource, ''));
    if (!wide) continue;
    for (const o of s.ops) wide.ops.add(o);
    byKey.delete(key);
  }
  const streams = [...byKey.entries()]
    .map(([key, { entry, namespace, ops }]) => ({
      key,
      group: entry.group,
      version: entry.version,
      apiVersion: entry.apiVersion,
      kind: entry.kind,
      resource: entry.resource,
      namespaced: entry.namespaced,
      namespace,
      operations: ALL_OPERATIONS.filter((o) => ops.has(o)),
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
  return { streams, unmatched };
}
