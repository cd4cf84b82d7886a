/**
 * What a Scope's status is computed from that is pure: its paths in the tenant tree and
 * when to look again. (The rows and message are assembled in controllers/scope.ts from
 * what it found in each cluster.)
 */
import type { Level } from '../api/common.ts';
import { PLATFORM } from '../api/role-status.ts';

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
