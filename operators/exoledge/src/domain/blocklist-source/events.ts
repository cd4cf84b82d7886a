/**
 * The events a reconcile records, decided from what it did: what a user watching
 * `kubectl describe` should hear about. A reconcile that changed nothing says nothing;
 * repeats of one failure are aggregated by the kit's recorder.
 */
import { type EventInput, EventType } from '@operators/kit';
import type { BlocklistSourceStatus } from '../../api/blocklist-source.ts';
import { EventReason } from './reasons.ts';
import { formatDuration } from './spec.ts';
import type { PublicationOutcome } from './status.ts';

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
      if (!changed) return [];
      const events: EventInput[] = [
        {
          type: EventType.Normal,
          reason: EventReason.Published,
          action: 'Publish',
          note:
            `${after.entries?.published ?? 0} prefixes in ${after.shards ?? 0} shards (${after.channel}), ` +
            `sha256 ${after.fingerprint}`,
        },
      ];
      if ((after.entries?.dropped ?? 0) > 0) {
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
