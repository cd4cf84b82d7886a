/**
 * An `events.k8s.io/v1` Event recorder: what `kubectl describe` shows under Events,
 * written by a reconcile to tell users what it did or why it cannot.
 *
 * A reconcile that fails the same way every few seconds must not write an Event every
 * few seconds. As client-go's events broadcaster does, repeats of one event (same
 * object, type, reason, action, note) within a window are one Event object whose
 * `series` (count, lastObservedTime) is updated, at most once per update interval.
 * Recording never throws and never blocks a reconcile: writes happen in the
 * background, and failures are logged and counted, because an event lost is a
 * nuisance while a reconcile failed because of an event is a bug.
 *
 * `close()` (the manager's shutdown) writes the final counts but waits for them at most
 * {@link EVENT_FLUSH_TIMEOUT_MS}: an apiserver that is shutting down too (a Ctrl-C reaches
 * the whole process group under `npm run up`) must not hold the operator's exit for a
 * request timeout. Writes still pending then are aborted and dropped, with one log line.
 */
import { type Logger, pino } from 'pino';
import type { Counter, Registry } from 'prom-client';
import { type Clock, realClock, type TimerHandle } from '../base/clock.ts';
import { sharedCounter } from '../base/shared-metrics.ts';
import type { KubeClient } from '../client/client.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { KubeObject } from '../client/types.ts';

export const EventType = {
  /** Something happened as it should: created, updated, converged. */
  Normal: 'Normal',
  /** Something a user may need to act on: a failure, a refusal, a deprecated setting. */
  Warning: 'Warning',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export interface EventInput {
  readonly type: EventType;
  /** Why the action was taken, CamelCase, e.g. `ReconcileFailed`; at most 128 characters. */
  readonly reason: string;
  /** What was done or failed, e.g. `Apply`, `Delete`; at most 128 characters. */
  readonly action: string;
  /** For humans; cut to 1 kB, the apiserver's limit. */
  readonly note?: string;
  /** A second object involved, e.g. the Secret a CR refers to. */
  readonly related?: KubeObject;
}

/** How long a series stays open after its last repeat: client-go's, 6 min. A later repeat starts a new Event. */
export const DEFAULT_SERIES_WINDOW_MS = 6 * 60_000;
/**
 * The least time between two writes of one series: a hot loop emitting one Warning
 * costs the apiserver two writes a minute, while a user watching the count sees it move.
 */
export const DEFAULT_SERIES_UPDATE_INTERVAL_MS = 30_000;
/** Open series remembered at most; the least recently repeated is forgotten first. */
export const DEFAULT_MAX_SERIES = 4096;
/** How long `close()` waits for the final writes before dropping them. */
export const EVENT_FLUSH_TIMEOUT_MS = 2_000;
/** The apiserver's limit on `note`, in bytes. */
export const MAX_NOTE_BYTES = 1024;
/** The apiserver's limit on `reportingController` and `reportingInstance`. */
export const MAX_REPORTING_LENGTH = 128;

export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** `reportingController`: the controller's name, e.g. `example.com/widget-controller`. */
  readonly controller: string;
  /** `reportingInstance`: this process, e.g. the pod name; tells apart replicas of one controller. */
  readonly instance: string;
  readonly clock?: Clock;
  readonly registry?: Registry;
  readonly logger?: Logger;
  readonly seriesWindowMs?: number;
  readonly seriesUpdateIntervalMs?: number;
  readonly maxSeries?: number;
}

interface ObjectReference {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

/** An `events.k8s.io/v1` Event as the recorder writes it. */
export interface EventObject extends KubeObject {
  readonly eventTime: string;
  readonly series?: { readonly count: number; readonly lastObservedTime: string };
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly action: string;
  readonly reason: string;
  readonly type: EventType;
  readonly note?: string;
  readonly regarding: ObjectReference;
  readonly related?: ObjectReference;
}

const EVENT_GVK = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;

/** One Event object on the server and the repeats it stands for. */
interface Series {
  readonly event: EventObject;
  /** Observations so far, the first included. */
  count: number;
  /** The count the apiserver has; 0 until the Event is created. */
  written: number;
  /**
   * Observations dealt with: written, or dropped by a failed write (logged and counted
   * once; the next repeat writes again). The series is pending while `count > settled`.
   */
  settled: number;
  /** No longer in the cache (expired or evicted): its last count is written at once. */
  forgotten: boolean;
  lastObserved: number;
  /** When a write was last attempted; undefined before the first. */
  lastWrite: number | undefined;
  writing: Promise<void> | undefined;
  timer: TimerHandle | undefined;
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly controller: string;
  private readonly instance: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly windowMs: number;
  private readonly intervalMs: number;
  private readonly maxSeries: number;
  /** Open series by key, least recently observed first (re-inserted on every repeat). */
  private readonly series = new Map<string, Series>();
  /** Series with observations not yet settled, forgotten ones included, for flush(). */
  private readonly pending = new Set<Series>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;
  /** Aborts the writes still in flight when `close()` gives up on them. */
  private readonly abandon = new AbortController();
  private readonly observed: Counter.Internal;
  private readonly writes: { readonly create: Counter.Internal; readonly patch: Counter.Internal };
  private readonly failures: Counter.Internal;

  constructor(opts: EventRecorderOptions) {
    for (const [field, v] of [
      ['controller', opts.controller],
      ['instance', opts.instance],
    ] as const) {
      if (!v || v.length > MAX_REPORTING_LENGTH) {
        throw new Error(
          `event recorder: ${field} must be 1 to ${MAX_REPORTING_LENGTH} characters, got ${JSON.stringify(v)}`,
        );
      }
    }
    this.client = opts.client;
    this.controller = opts.controller;
    this.instance = opts.instance;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? pino({ level: 'silent' });
    this.windowMs = opts.seriesWindowMs ?? DEFAULT_SERIES_WINDOW_MS;
    this.intervalMs = opts.seriesUpdateIntervalMs ?? DEFAULT_SERIES_UPDATE_INTERVAL_MS;
    this.maxSeries = opts.maxSeries ?? DEFAULT_MAX_SERIES;
    const labels = { controller: opts.controller };
    this.observed = sharedCounter(
      opts.registry,
      'event_recorder_events_total',
      'Events recorded, repeats included (one Event object may stand for many).',
      ['controller'],
    ).labels(labels);
    const writes = sharedCounter(
      opts.registry,
      'event_recorder_writes_total',
      'Event writes sent to the apiserver: create for a new Event, patch for a series update.',
      ['controller', 'operation'],
    );
    this.writes = {
      create: writes.labels({ ...labels, operation: 'create' }),
      patch: writes.labels({ ...labels, operation: 'patch' }),
    };
    this.failures = sharedCounter(
      opts.registry,
      'event_recorder_failures_total',
      'Event writes that failed; the events were dropped (logged, never thrown into a reconcile).',
      ['controller'],
    ).labels(labels);
  }

  /**
   * Records that `input` happened to `regarding`. Returns at once; the write happens
   * in the background and never throws. A repeat of an open series updates its count.
   */
  event(regarding: KubeObject, input: EventInput): void {
    if (this.closed) return;
    try {
      this.observed.inc();
      const now = this.clock.now();
      this.expire(now);
      const key = seriesKey(regarding, input);
      const open = this.series.get(key);
      if (open !== undefined) {
        open.count++;
        open.lastObserved = now;
        this.series.delete(key);
        this.series.set(key, open);
        this.pending.add(open);
        this.schedule(open);
        return;
      }
      const s: Series = {
        event: this.build(regarding, input, now),
        count: 1,
        written: 0,
        settled: 0,
        forgotten: false,
        lastObserved: now,
        lastWrite: undefined,
        writing: undefined,
        timer: undefined,
      };
      this.series.set(key, s);
      this.pending.add(s);
      this.evictBeyondLimit();
      this.schedule(s);
    } catch (err) {
      // Only a bug can get here (say, an object whose fields are not what its type says).
      this.fail(err, regarding, input);
    }
  }

  /**
   * Writes every pending count now, ignoring the update interval, and waits for all
   * writes. Each pending count is tried once: a failure is logged and counted, not retried.
   */
  async flush(): Promise<void> {
    await Promise.all([...this.inFlight]);
    for (const s of this.pending) if (s.writing === undefined) this.write(s);
    await Promise.all([...this.inFlight]);
  }

  /**
   * Flushes and stops: later events are ignored. Call it on shutdown so final counts are
   * written. Waits at most `timeoutMs`: writes still pending then are aborted, dropped
   * and logged once.
   */
  async close(timeoutMs = EVENT_FLUSH_TIMEOUT_MS): Promise<void> {
    let timer: TimerHandle | undefined;
    const late = new Promise<'late'>((r) => {
      timer = this.clock.setTimeout(() => r('late'), timeoutMs);
    });
    const outcome = await Promise.race([this.flush().then(() => 'flushed' as const), late]);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    if (outcome === 'late') {
      const dropped = [...this.pending].reduce((n, s) => n + (s.count - s.settled), 0);
      this.abandon.abort(new Error(`event flush exceeded ${timeoutMs} ms`));
      this.logger.warn(
        { controller: this.controller, dropped, timeoutMs },
        'the apiserver did not take the final events in time: dropped',
      );
    }
    this.closed = true;
    for (const s of this.series.values()) if (s.timer !== undefined) this.clock.clearTimeout(s.timer);
    this.series.clear();
    this.pending.clear();
  }

  /** Open series, for tests and debugging. */
  get openSeries(): number {
    return this.series.size;
  }

  private build(regarding: KubeObject, input: EventInput, now: number): EventObject {
    const namespace = regarding.metadata.namespace || 'default';
    const base = (regarding.metadata.name || 'event').slice(0, EVENT_NAME_PREFIX_MAX);
    const note = input.note === undefined ? undefined : truncateUtf8(input.note, MAX_NOTE_BYTES);
    return {
      ...EVENT_GVK,
      metadata: { name: `${base}.${uniqueSuffix(now)}`, namespace },
      eventTime: microTime(now),
      reportingController: this.controller,
      reportingInstance: this.instance,
      action: input.action,
      reason: input.reason,
      type: input.type,
      ...(note === undefined ? {} : { note }),
      regarding: reference(regarding),
      ...(input.related ? { related: reference(input.related) } : {}),
    };
  }

  /** Writes `s` now if it is new or its interval has passed, else once the interval has passed. */
  private schedule(s: Series): void {
    if (s.writing !== undefined || s.settled >= s.count) return;
    const wait =
      s.lastWrite === undefined || s.forgotten ? 0 : s.lastWrite + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.write(s);
      return;
    }
    s.timer ??= this.clock.setTimeout(() => {
      s.timer = undefined;
      this.schedule(s);
    }, wait);
  }

  private write(s: Series): void {
    if (s.timer !== undefined) {
      this.clock.clearTimeout(s.timer);
      s.timer = undefined;
    }
    const count = s.count;
    const p = this.send(s, count).then(
      () => {
        s.written = count;
      },
      (err: unknown) => {
        // Dropped, not retried: the next repeat writes again, no sooner than the
        // interval, so a struggling apiserver is not hammered by its own events.
        // Abandoned by close(): counted, and logged there once.
        if (this.abandon.signal.aborted) this.failures.inc();
        else this.fail(err, undefined, s.event);
      },
    );
    const tracked = p.finally(() => {
      s.settled = count;
      s.lastWrite = this.clock.now();
      s.writing = undefined;
      this.inFlight.delete(tracked);
      if (s.settled >= s.count) this.pending.delete(s);
      // Repeats that arrived during the write.
      else if (!this.closed) this.schedule(s);
    });
    s.writing = tracked;
    this.inFlight.add(tracked);
  }

  private async send(s: Series, count: number): Promise<void> {
    const series = count > 1 ? { count, lastObservedTime: microTime(s.lastObserved) } : undefined;
    if (s.written > 0 && series !== undefined) {
      try {
        this.writes.patch.inc();
        await this.client.patch(
          EVENT_GVK,
          s.event.metadata.name ?? '',
          s.event.metadata.namespace,
          { type: 'merge', body: { series } },
          { signal: this.abandon.signal },
        );
        return;
      } catch (err) {
        // Events expire (1 h by default): a series outliving its Event starts it again.
        if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      }
    }
    this.writes.create.inc();
    await this.client.create({ ...s.event, ...(series ? { series } : {}) }, { signal: this.abandon.signal });
  }

  /** Forgets series whose last repeat is older than the window; pending counts are written first. */
  private expire(now: number): void {
    for (const [key, s] of this.series) {
      if (now - s.lastObserved <= this.windowMs) break; // ordered by last observation
      this.forget(key, s);
    }
  }

  private evictBeyondLimit(): void {
    for (const [key, s] of this.series) {
      if (this.series.size <= this.maxSeries) break;
      this.forget(key, s);
    }
  }

  private forget(key: string, s: Series): void {
    this.series.delete(key);
    s.forgotten = true;
    if (s.timer !== undefined) this.clock.clearTimeout(s.timer);
    s.timer = undefined;
    this.schedule(s);
  }

  private fail(err: unknown, regarding: KubeObject | undefined, input: EventInput | EventObject): void {
    this.failures.inc();
    const ref = regarding ? reference(regarding) : 'regarding' in input ? input.regarding : undefined;
    this.logger.warn(
      {
        err,
        controller: this.controller,
        regarding: ref
          ? `${ref.kind ?? ''} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? ''}`
          : undefined,
        reason: input.reason,
        action: input.action,
      },
      'could not record event',
    );
  }
}

/** The name is `<regarding>.<suffix>`; the prefix is cut so that the whole fits the 253 characters of a name. */
const EVENT_NAME_PREFIX_MAX = 253 - 1 - 16;

/**
 * Identifies repeats: the same object (by UID, as one incarnation of a name), the same
 * related object, and the same type, reason, action and note.
 */
function seriesKey(regarding: KubeObject, e: EventInput): string {
  const id = (o: KubeObject): string =>
    o.metadata.uid ?? `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
  return JSON.stringify([
    id(regarding),
    e.related ? id(e.related) : '',
    e.type,
    e.reason,
    e.action,
    e.note ?? '',
  ]);
}

function reference(o: KubeObject): ObjectReference {
  const r: { -readonly [K in keyof ObjectReference]: ObjectReference[K] } = {};
  if (o.apiVersion) r.apiVersion = o.apiVersion;
  if (o.kind) r.kind = o.kind;
  if (o.metadata.name) r.name = o.metadata.name;
  if (o.metadata.namespace) r.namespace = o.metadata.namespace;
  if (o.metadata.uid) r.uid = o.metadata.uid;
  if (o.metadata.resourceVersion) r.resourceVersion = o.metadata.resourceVersion;
  return r;
}

/**
 * client-go names Events `<object>.<UnixNano in hex>`; we have milliseconds, so the
 * sub-millisecond digits are random, which keeps two replicas from colliding.
 */
function uniqueSuffix(nowMs: number): string {
  const nanos = BigInt(Math.floor(nowMs)) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  return nanos.toString(16);
}

/** `metav1.MicroTime` as the apiserver expects it: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function truncateUtf8(s: string, maxBytes: number): string {
  if (Buffer.byteLength(s, 'utf8') <= maxBytes) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}
