/**
 * When to read a source's list again, and what the operator remembers of it meanwhile.
 *
 * The rules, in the order `decideRead` applies them:
 * 1. After a failed read of the current URL, retry once `retryDelayMs` has passed since
 *    that read started (5 minutes, or the refresh interval if shorter): a passing network failure must not
 *    wait for the next 2-hour cycle, while the last set stays in force.
 * 2. After a good read of the current URL, read again once the refresh interval has
 *    passed since the last check (a 200 or a 304) STARTED. The seed's "jamais moins vite
 *    que demandé" is "never slower than asked": the interval is the oldest the data may
 *    get, so a read that takes 10 minutes does not push the next one 10 minutes later.
 *    The read is conditional when the source gave an ETag or a Last-Modified, so that an
 *    unchanged list costs a 304 and nothing else.
 * 3. The URL changed: read the new one at once.
 * 4. Nothing in memory (the operator just started): if the status shows a read of this
 *    spec within the interval and what is published still matches it (every object there,
 *    the shards hashing to the status's fingerprint, the policy as the spec wants it: see
 *    `published-check.ts`), wait for the interval to end, so that restarts do not read
 *    faster than asked either. If something was deleted or edited while we were away,
 *    read at once to repair it (`Repair`): the list is needed to publish anything.
 *    Otherwise (a new source, a spec changed while we were away) read at once too.
 *
 * Memory is per process and holds the merged list (five bytes a prefix), so that a spec
 * change (budget, channel, selector) republishes without reading the list again.
 */
import {
  type BlocklistSourceStatus,
  MALFORMED_LINES_SHOWN,
  type MalformedLineReport,
  type RefusedLineReport,
} from '../../api/blocklist-source.ts';
import type { ParseResult, PrefixList, ShortestPrefix } from '../blocklist/index.ts';
import type { ReadFailureReason } from './reasons.ts';
import type { ResolvedSpec } from './spec.ts';

/** A failed read is retried after this long (or after the refresh interval, if shorter). */
export const RETRY_AFTER_FAILURE_MS = 5 * 60_000;

/** HTTP validators for a conditional GET. */
export interface Validators {
  readonly etag?: string;
  readonly lastModified?: string;
}

/** What a read told us about the list's lines, for the status. */
export interface ReadSummary {
  readonly lines: number;
  /** Valid entries. */
  readonly entries: number;
  readonly malformed: number;
  readonly normalised: number;
  /** The first refused lines. */
  readonly malformedLines: readonly MalformedLineReport[];
  /** Well-formed prefixes refused as shorter than `shortestPrefix`: not among `entries`. */
  readonly refused: number;
  /** The first of them. */
  readonly refusedLines: readonly RefusedLineReport[];
  /** The floor the list was read with. */
  readonly shortestPrefix: ShortestPrefix;
}

/** The summary of a parse made with floor `shortestPrefix`, with the first refused lines. */
export function readSummary(parse: ParseResult, shortestPrefix: ShortestPrefix): ReadSummary {
  const { counts } = parse;
  return {
    lines: counts.lines,
    entries: counts.ipv4 + counts.ipv6,
    malformed: counts.malformed,
    normalised: counts.normalised,
    malformedLines: parse.malformed
      .slice(0, MALFORMED_LINES_SHOWN)
      .map((m) => ({ line: m.line, reason: m.reason, text: m.text })),
    refused: counts.tooShort,
    refusedLines: parse.tooShort.slice(0, MALFORMED_LINES_SHOWN).map((r) => ({ line: r.line, text: r.text })),
    shortestPrefix,
  };
}

/** The last good read of a URL. */
export interface ListData {
  readonly url: string;
  /** The minimal exact cover of every entry read. */
  readonly merged: PrefixList;
  readonly summary: ReadSummary;
  readonly validators: Validators;
  /**
   * When the read that received the list (a 200) started: the data is as old as the
   * request, however long the body took.
   */
  readonly readAt: number;
  /** When the last read that found the list current (a 200 or a 304) started. */
  readonly checkedAt: number;
}

/** The last read, if it failed. */
export interface ReadFailure {
  readonly url: string;
  /** When the failed read started: the retry is counted from there. */
  readonly at: number;
  readonly reason: ReadFailureReason;
  readonly message: string;
}

/** What the operator remembers of one source, by UID (a recreated source starts afresh). */
export interface SourceMemory {
  readonly uid: string;
  readonly data?: ListData;
  readonly failure?: ReadFailure;
}

export const ReadWhy = {
  /** Never read by this process, and the status gives no reason to wait. */
  FirstRead: 'FirstRead',
  /** The refresh interval has passed. */
  Due: 'Due',
  /** The last read failed and the retry delay has passed. */
  Retry: 'Retry',
  /** The URL is not the one last read. */
  UrlChanged: 'UrlChanged',
  /**
   * Just started, within the interval, but what is published no longer matches the
   * status (an object deleted or edited while the operator was away): read now to
   * republish, rather than leave it broken until the next scheduled read.
   */
  Repair: 'Repair',
} as const;
export type ReadWhy = (typeof ReadWhy)[keyof typeof ReadWhy];

export type ReadDecision =
  | {
      readonly read: true;
      readonly why: ReadWhy;
      /** Present when the read may be conditional: we hold the list these validators describe. */
      readonly validators: Validators | undefined;
    }
  | { readonly read: false; readonly nextReadAt: number };

export interface ReadInput {
  readonly now: number;
  readonly spec: ResolvedSpec;
  readonly generation: number | undefined;
  readonly status: BlocklistSourceStatus | undefined;
  readonly memory: SourceMemory | undefined;
  /**
   * What is published matches the status: every object present, untampered, the shards
   * hashing to its fingerprint (`publishedIntact`). Only consulted with nothing in memory.
   */
  readonly publishedComplete: boolean;
}

export function retryDelayMs(spec: ResolvedSpec): number {
  return Math.min(RETRY_AFTER_FAILURE_MS, spec.refreshIntervalMs);
}

/** The data of the last good read of the spec's URL, if memory holds it. */
export function usableData(memory: SourceMemory | undefined, url: string): ListData | undefined {
  return memory?.data?.url === url ? memory.data : undefined;
}

function conditional(data: ListData | undefined): Validators | undefined {
  return data && (data.validators.etag !== undefined || data.validators.lastModified !== undefined)
    ? data.validators
    : undefined;
}

/** Whether to read the list now, or when next. Pure. */
export function decideRead(input: ReadInput): ReadDecision {
  const { now, spec, memory } = input;
  const data = usableData(memory, spec.url);
  const failure = memory?.failure?.url === spec.url ? memory.failure : undefined;
  if (failure) {
    const at = failure.at + retryDelayMs(spec);
    return now >= at
      ? { read: true, why: ReadWhy.Retry, validators: conditional(data) }
      : { read: false, nextReadAt: at };
  }
  if (data) {
    const at = data.checkedAt + spec.refreshIntervalMs;
    return now >= at
      ? { read: true, why: ReadWhy.Due, validators: conditional(data) }
      : { read: false, nextReadAt: at };
  }
  if (memory?.data || memory?.failure) return { read: true, why: ReadWhy.UrlChanged, validators: undefined };
  const last = input.status?.lastRefreshTime ? Date.parse(input.status.lastRefreshTime) : Number.NaN;
  const sameSpec = input.generation !== undefined && input.status?.observedGeneration === input.generation;
  if (Number.isFinite(last) && sameSpec) {
    const at = last + spec.refreshIntervalMs;
    if (now >= at) return { read: true, why: ReadWhy.Due, validators: undefined };
    if (!input.publishedComplete) return { read: true, why: ReadWhy.Repair, validators: undefined };
    return { read: false, nextReadAt: at };
  }
  return { read: true, why: ReadWhy.FirstRead, validators: undefined };
}

/** What a read brought, as the memory needs it. */
export type ReadResult =
  | {
      readonly kind: 'Read';
      readonly merged: PrefixList;
      readonly summary: ReadSummary;
      readonly validators: Validators;
    }
  | { readonly kind: 'NotModified' }
  | { readonly kind: 'Failed'; readonly reason: ReadFailureReason; readonly message: string };

/**
 * The memory after a read of `url` that started at `startedAt` (not when it ended: the
 * next read is due an interval after this one started, see rule 2). Pure.
 */
export function remember(
  memory: SourceMemory | undefined,
  uid: string,
  url: string,
  result: ReadResult,
  startedAt: number,
): SourceMemory {
  const previous = memory?.uid === uid ? memory : undefined;
  switch (result.kind) {
    case 'Read':
      return {
        uid,
        data: {
          url,
          merged: result.merged,
          summary: result.summary,
          validators: result.validators,
          readAt: startedAt,
          checkedAt: startedAt,
        },
      };
    case 'NotModified': {
      const data = usableData(previous, url);
      // A 304 to a read we did not make conditional cannot happen; without data it means nothing.
      return data ? { uid, data: { ...data, checkedAt: startedAt } } : { uid };
    }
    case 'Failed':
      return {
        uid,
        ...(previous?.data ? { data: previous.data } : {}),
        failure: { url, at: startedAt, reason: result.reason, message: result.message },
      };
    default:
      return result satisfies never;
  }
}

/**
 * A body that is more garbage than list is not a list: an error page served with a 200,
 * or the wrong file. An empty list (no entries, no malformed lines) is a list.
 */
export function looksLikeBlocklist(summary: ReadSummary): boolean {
  return summary.malformed <= summary.entries;
}
