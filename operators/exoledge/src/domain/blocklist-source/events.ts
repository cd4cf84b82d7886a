/**
 * The events a reconcile records, decided from what it did: what a user watching
 * `kubectl describe` should hear about. A reconcile that changed nothing says nothing;
 * repeats of one failure are aggregated by the kit's recorder.
 */
import { type EventInput, EventType } from '@operators/kit';
import type { BlocklistSourceStatus } from '../../api/blocklist-source.ts';
import { EventReason } from './reasons.ts';
import { formatDuration } from './spec.ts';
import { describePolicyMapRefusal, type PublicationOutcome, sameJson } from './status.ts';

/** A read failed: how, and what stays in force meanwhile. */
export function readFailedEvent(
  failure: { readonly reason: string; readonly message: string },
  previous: BlocklistSourceStatus | undefined,
  retryDelayMs: number,
): EventInput {
  return {
    type: EventType.Warning,
    reason: EventReason.ReadFailed,
    action: 'Read',
    note:
      `${failure.reason}: ${failure.message}; ` +
      (previous?.fingerprint ? 'the last published set stays in force; ' : 'nothing is published yet; ') +
      `retrying in ${formatDuration(retryDelayMs)}`,
  };
}

/** What the publication step did, from the status before and after it. */
export function publicationEvents(
  before: BlocklistSourceStatus | undefined,
  after: BlocklistSourceStatus,
  publication: PublicationOutcome,
): EventInput[] {
  switch (publication.kind) {
    case 'Published': {
      const changed =
        before?.fingerprint !== after.fingerprint ||
        before?.shards !== after.shards ||
        before?.channel !== after.channel;
      // Refused lines can change while the published set does not (a `0.0.0.0/0` added to a list).
      const refusedChanged =
        before?.entries?.refused !== after.entries?.refused ||
        !sameJson(before?.refusedLines, after.refusedLines);
      const events: EventInput[] = [];
      if (changed) {
        events.push({
          type: EventType.Normal,
          reason: EventReason.Published,
          action: 'Publish',
          note:
            `${after.entries?.published ?? 0} prefixes in ${after.shards ?? 0} shards (${after.channel}), ` +
            `sha256 ${after.fingerprint}`,
        });
      }
      if ((changed || refusedChanged) && (after.entries?.refused ?? 0) > 0) {
        const lines = (after.refusedLines ?? []).map((r) => `line ${r.line} "${r.text}"`).join(', ');
        events.push({
          type: EventType.Warning,
          reason: EventReason.PrefixesRefused,
          action: 'Publish',
          note: `${after.entries?.refused} prefixes shorter than the operator's floor refused, never published (${lines}; see status.refusedLines)`,
        });
      }
      if (changed && (after.entries?.dropped ?? 0) > 0) {
        events.push({
          type: EventType.Warning,
          reason: EventReason.DroppedByBudget,
          action: 'Publish',
          note: `${after.entries?.dropped} of ${after.entries?.merged} merged prefixes dropped by the budget (see status.dropped)`,
        });
      }
      return events;
    }
    case 'ApplyFailed':
      return [
        {
          type: EventType.Warning,
          reason: EventReason.ApplyFailed,
          action: 'Publish',
          note: `writing ${publication.object} failed: ${publication.message}`,
        },
      ];
    case 'NameConflict':
      return [
        {
          type: EventType.Warning,
          reason: EventReason.NameConflict,
          action: 'Publish',
          note: `${publication.object} exists and is not ours: left alone`,
        },
      ];
    case 'PolicyMapBudgetExceeded':
      return [
        {
          type: EventType.Warning,
          reason: EventReason.PolicyMapBudgetExceeded,
          action: 'Publish',
          note: describePolicyMapRefusal(publication.planned, publication.decision),
        },
      ];
    case 'NotPublished':
      return [];
    default:
      return publication satisfies never;
  }
}

/** A deleted source's objects are gone. */
export function cleanedUpEvent(count: number): EventInput {
  return {
    type: EventType.Normal,
    reason: EventReason.CleanedUp,
    action: 'Delete',
    note: `deleted ${count} published objects`,
  };
}
