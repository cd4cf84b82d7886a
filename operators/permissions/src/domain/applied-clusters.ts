/**
 * A Permission's status from what happened in each cluster this pass: `applied_to_clusters`
 * (`platform` first, then client cluster ids in order, so an unchanged status is an
 * unchanged write), `ready`, and a message naming every cluster that failed and why.
 * One failed cluster never hides the others: they are still listed.
 */
import { PLATFORM } from '../api/role-status.ts';

/** What happened to our ClusterRole in one cluster (`platform` or a client cluster id). */
export type ClusterOutcome =
  /** Written, or already as wanted. */
  | { readonly kind: 'applied'; readonly id: string }
  /** Deliberately removed (deselected, or no rules for it any more). */
  | { readonly kind: 'removed'; readonly id: string }
  /** Still selected but not reachable for writing now (e.g. not ready): it keeps what it holds. */
  | { readonly kind: 'kept'; readonly id: string }
  /** Could not be written or removed: the reason and the words of whatever refused. */
  | { readonly kind: 'failed'; readonly id: string; readonly reason: string; readonly message: string };

/** How many failures the message names before it only counts the rest. */
export const MAX_FAILURES_NAMED = 5;

/** `platform` first, then the other ids sorted, without duplicates. */
export function sortApplied(ids: readonly string[]): string[] {
  const unique = [...new Set(ids)];
  const hasPlatform = unique.includes(PLATFORM);
  const rest = unique.filter((id) => id !== PLATFORM).sort();
  return hasPlatform ? [PLATFORM, ...rest] : rest;
}

/**
 * The clusters that hold our ClusterRole after this pass. Applied and kept ones do; a
 * failed one does if it did before (a failed write or delete leaves what was there, and
 * the status must not claim a revocation that did not happen); a removed one does not.
 * A cluster with no outcome at all (a deleted Cluster) is dropped.
 */
export function appliedToClusters(
  outcomes: readonly ClusterOutcome[],
  previous: readonly string[] = [],
): string[] {
  const before = new Set(previous);
  const held = outcomes
    .filter((o) => o.kind === 'applied' || o.kind === 'kept' || (o.kind === 'failed' && before.has(o.id)))
    .map((o) => o.id);
  return sortApplied(held);
}

/** What `status` of a Permission says after a pass. */
export interface PermissionStatusSummary {
  readonly ready: boolean;
  readonly applied_to_clusters: string[];
  /** Empty when ready; otherwise `<cluster>: <reason>: <message>` per failure, `; `-separated. */
  readonly message: string;
}

export function permissionStatus(
  outcomes: readonly ClusterOutcome[],
  previous: readonly string[] = [],
): PermissionStatusSummary {
  const failed = outcomes
    .filter((o): o is Extract<ClusterOutcome, { kind: 'failed' }> => o.kind === 'failed')
    .sort((a, b) => order(a.id, b.id));
  const named = failed.slice(0, MAX_FAILURES_NAMED).map((f) => `${f.id}: ${f.reason}: ${f.message}`);
  const more = failed.length - named.length;
  return {
    ready: failed.length === 0,
    applied_to_clusters: appliedToClusters(outcomes, previous),
    message: [...named, ...(more > 0 ? [`and ${more} more cluster(s) failed`] : [])].join('; '),
  };
}

/** The order of {@link sortApplied}: `platform` first, then by id. */
function order(a: string, b: string): number {
  if (a === b) return 0;
  if (a === PLATFORM) return -1;
  if (b === PLATFORM) return 1;
  return a < b ? -1 : 1;
}
