/**
 * The status a reconcile writes, from what it did: the counts of the set in force, its
 * fingerprint and shards, and the three conditions with their reasons. Pure.
 *
 * Guarantees:
 * - The counts, fingerprint, shards and channel describe what is published, and change
 *   only when a publication completed: a failed read or a failed write leaves them as
 *   they were, and the conditions say why.
 * - `observedGeneration` moves only when the spec of that generation is published in
 *   full, so `observedGeneration < generation` means "not in force yet".
 * - Nothing in the status depends on when a reconcile ran, only on what it found: a
 *   reconcile that finds nothing new computes the status already there, and the
 *   reconciler then writes nothing.
 */

import { type Condition, type ConditionUpdate, setCondition } from '@operators/kit';
import {
  type BlocklistSourceStatus,
  Channel,
  type DroppedGroup,
  type EntryCounts,
} from '../../api/blocklist-source.ts';
import { DropReason } from '../blocklist/index.ts';
import type { PolicyMapDecision } from './policy-map.ts';
import { LABEL_SOURCE, type PublishedSet } from './publication.ts';
import { BudgetReason, ConditionType, ReadyReason, SourceReadReason } from './reasons.ts';
import type { ListData, ReadFailure } from './refresh.ts';
import { formatDuration, type ResolvedSpec } from './spec.ts';

/** What became of the publication in this reconcile. */
export type PublicationOutcome =
  /** The set is in force: every shard and the policy are as desired, the other channel is gone. */
  | { readonly kind: 'Published'; readonly set: PublishedSet; readonly data: ListData }
  /** No list to publish (never read, or the read of a new URL failed): nothing was touched. */
  | { readonly kind: 'NotPublished' }
  /** A write failed: `object` names it. */
  | { readonly kind: 'ApplyFailed'; readonly object: string; readonly message: string }
  /** A name we need is taken by an object that is not ours. */
  | { readonly kind: 'NameConflict'; readonly object: string }
  /**
   * The set would overflow the policy map the older enforced sources with the same
   * podSelector share with it: nothing was written, nothing deleted.
   */
  | {
      readonly kind: 'PolicyMapBudgetExceeded';
      /** The prefixes the set would publish. */
      readonly planned: number;
      readonly decision: Extract<PolicyMapDecision, { admitted: false }>;
    };

export interface StatusInput {
  readonly now: Date;
  readonly generation: number | undefined;
  readonly spec: ResolvedSpec;
  readonly previous: BlocklistSourceStatus | undefined;
  /** The last good read of the spec's URL in memory, if any. */
  readonly data: ListData | undefined;
  /** The last read of the spec's URL, if it failed and no read succeeded since. */
  readonly failure: ReadFailure | undefined;
  readonly publication: PublicationOutcome;
  readonly deciderNamespace: string;
  readonly retryDelayMs: number;
}

const n = (x: number): string => x.toLocaleString('en-US');
const plural = (x: number, one: string, many: string = `${one}s`): string =>
  `${n(x)} ${x === 1 ? one : many}`;

/** RFC 3339 in UTC, whole seconds: as the apiserver stores `metav1.Time`. */
export function rfc3339(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

function familyName(f: 'ipv4' | 'ipv6'): 'IPv4' | 'IPv6' {
  return f === 'ipv4' ? 'IPv4' : 'IPv6';
}

function droppedGroups(set: PublishedSet): DroppedGroup[] {
  return set.budget.drops.map((d) => ({
    reason: d.reason,
    family: familyName(d.family),
    prefixLength: d.length,
    count: d.dropped,
  }));
}

function describeDrops(groups: readonly DroppedGroup[]): string {
  return groups.map((g) => `${g.family} /${g.prefixLength}: ${n(g.count)}`).join(', ');
}

/** The prefixes refused under the floor: how many, the floor, the first lines; and what the budget dropped. */
function describeRefused(s: ListData['summary'], dropped: number): string {
  const lines = s.refusedLines.map((r) => `line ${r.line} "${r.text}"`).join(', ');
  const more = s.refused > s.refusedLines.length ? `, and ${n(s.refused - s.refusedLines.length)} more` : '';
  return (
    `refused ${plural(s.refused, 'prefix', 'prefixes')} shorter than /${s.shortestPrefix.ipv4} (IPv4) or ` +
    `/${s.shortestPrefix.ipv6} (IPv6), never published: they would block far more than a list means to ` +
    `(${lines}${more}; see status.refusedLines); the rest of the list is published` +
    (dropped > 0 ? `, less ${n(dropped)} dropped by the budget (see status.dropped)` : '')
  );
}

/** What the older sources of a policy-map group hold, for a message. */
export function describePolicyMapRefusal(
  planned: number,
  decision: Extract<PolicyMapDecision, { admitted: false }>,
): string {
  const others = decision.older.map((o) => `${o.name}: ${n(o.entries)}`).join(', ');
  return (
    `Cilium's policy map holds ${n(decision.limit)} entries per endpoint, shared by every enforced source ` +
    `with the same podSelector: this source would publish ${n(planned)} beside the ${n(decision.total - planned)} ` +
    `of the older ones (${others}), ${n(decision.total)} in all. Nothing new is published; what was published ` +
    'before stays. Lower maxEntries here or on an older source, or remove one'
  );
}

function where(spec: ResolvedSpec, set: PublishedSet, deciderNamespace: string, sourceName: string): string {
  switch (spec.channel) {
    case Channel.CiliumPolicy:
      return (
        `${plural(set.published, 'prefix', 'prefixes')} in ${plural(set.shards.length, 'CiliumCIDRGroup')} ` +
        `selected by CiliumClusterwideNetworkPolicy deny-${sourceName}`
      );
    case Channel.Decider:
      return (
        `${plural(set.published, 'prefix', 'prefixes')} in ${plural(set.shards.length, 'ConfigMap')} ` +
        `in namespace ${deciderNamespace}, for the decider`
      );
    default:
      return spec.channel satisfies never;
  }
}

/** The status after a reconcile of source `name`. */
export function nextStatus(name: string, input: StatusInput): BlocklistSourceStatus {
  const { previous, publication, data, failure, spec, generation } = input;
  const now = input.now;
  let conditions: readonly Condition[] = previous?.conditions ?? [];
  const set = (u: Omit<ConditionUpdate, 'observedGeneration'>): void => {
    conditions = setCondition(
      conditions,
      generation === undefined ? u : { ...u, observedGeneration: generation },
      now,
    );
  };
  const retry = formatDuration(input.retryDelayMs);

  // SourceRead: the last read this process made of the current URL.
  if (failure) {
    set({
      type: ConditionType.SourceRead,
      status: 'False',
      reason: failure.reason,
      message: `${failure.message}; retrying every ${retry}`,
    });
  } else if (data) {
    const s = data.summary;
    set({
      type: ConditionType.SourceRead,
      status: 'True',
      reason: SourceReadReason.Read,
      message:
        `read ${data.url}: ${plural(s.lines, 'line')}, ${plural(s.entries, 'entry', 'entries')}, ` +
        `${n(s.malformed)} malformed${s.malformed ? ' (see status.malformedLines)' : ''}, ${n(s.normalised)} with host bits cleared` +
        (s.refused ? `, ${n(s.refused)} refused as too short (see status.refusedLines)` : ''),
    });
  }

  let next: BlocklistSourceStatus = { ...(previous ?? {}) };
  switch (publication.kind) {
    case 'Published': {
      const { set: published } = publication;
      const s = publication.data.summary;
      const dropped = droppedGroups(published);
      const entries: EntryCounts = {
        read: s.entries,
        malformed: s.malformed,
        normalised: s.normalised,
        merged: published.merged,
        published: published.published,
        dropped: published.merged - published.published,
        refused: s.refused,
      };
      const { dropped: _d, malformedLines: _m, refusedLines: _r, ...rest } = next;
      next = {
        ...rest,
        observedGeneration: generation,
        channel: spec.channel,
        entries,
        ...(dropped.length ? { dropped } : {}),
        ...(s.malformedLines.length ? { malformedLines: s.malformedLines } : {}),
        ...(s.refusedLines.length ? { refusedLines: s.refusedLines } : {}),
        shards: published.shards.length,
        fingerprint: published.fingerprint,
        lastRefreshTime: rfc3339(publication.data.readAt),
      };
      const inForce = where(spec, published, input.deciderNamespace, name);
      if (failure) {
        set({
          type: ConditionType.Ready,
          status: 'False',
          reason: ReadyReason.LastSetKept,
          message:
            `the list could not be read (${failure.reason}); the set read at ${rfc3339(publication.data.readAt)} ` +
            `stays in force: ${inForce}`,
        });
      } else {
        set({ type: ConditionType.Ready, status: 'True', reason: ReadyReason.Published, message: inForce });
      }
      if (s.refused > 0) {
        // Before the budget: a list that says "block everything" needs a human first.
        set({
          type: ConditionType.AllEntriesPublished,
          status: 'False',
          reason: BudgetReason.PrefixesRefused,
          message: describeRefused(s, entries.dropped),
        });
      } else if (entries.dropped === 0) {
        set({
          type: ConditionType.AllEntriesPublished,
          status: 'True',
          reason: BudgetReason.AllPublished,
          message: `all ${plural(entries.merged, 'merged prefix', 'merged prefixes')} are published`,
        });
      } else {
        const byLength = dropped.filter((d) => d.reason === DropReason.LongerThanMinPrefixLength);
        const byBudget = dropped.filter((d) => d.reason === DropReason.OverMaxEntries);
        const parts: string[] = [];
        const sum = (g: readonly DroppedGroup[]): number => g.reduce((t, d) => t + d.count, 0);
        if (byLength.length)
          parts.push(
            `${n(sum(byLength))} longer than minPrefixLength ${spec.minPrefixLength} (${describeDrops(byLength)})`,
          );
        if (byBudget.length)
          parts.push(
            `${n(sum(byBudget))} over maxEntries ${n(spec.maxEntries)}, most specific first (${describeDrops(byBudget)})`,
          );
        set({
          type: ConditionType.AllEntriesPublished,
          status: 'False',
          reason: BudgetReason.DroppedByBudget,
          message: `dropped ${n(entries.dropped)} of ${plural(entries.merged, 'merged prefix', 'merged prefixes')}: ${parts.join('; ')}`,
        });
      }
      break;
    }
    case 'NotPublished':
      if (failure) {
        const kept = previous?.fingerprint !== undefined;
        set({
          type: ConditionType.Ready,
          status: 'False',
          reason: kept ? ReadyReason.LastSetKept : ReadyReason.NothingPublished,
          message: kept
            ? `the list could not be read (${failure.reason}); the set published before ` +
              `(${plural(previous?.entries?.published ?? 0, 'prefix', 'prefixes')}, sha256 ${previous?.fingerprint}) stays in force`
            : `the list could not be read (${failure.reason}); nothing is published yet`,
        });
      }
      break;
    case 'ApplyFailed':
      set({
        type: ConditionType.Ready,
        status: 'False',
        reason: ReadyReason.ApplyFailed,
        message: `writing ${publication.object} failed: ${publication.message}`,
      });
      break;
    case 'NameConflict':
      set({
        type: ConditionType.Ready,
        status: 'False',
        reason: ReadyReason.NameConflict,
        message:
          `${publication.object} exists and is not ours (no ${LABEL_SOURCE}=${name} label): ` +
          'it is left alone; rename this source or remove that object',
      });
      break;
    case 'PolicyMapBudgetExceeded':
      set({
        type: ConditionType.Ready,
        status: 'False',
        reason: ReadyReason.PolicyMapBudgetExceeded,
        message: describePolicyMapRefusal(publication.planned, publication.decision),
      });
      break;
    default:
      return publication satisfies never;
  }
  return { ...next, conditions };
}

/** Structural equality of two JSON values: a status equal to the live one is not written. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(b)) {
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
    return (
      ka.length === kb.length &&
      ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return false;
}
