/**
 * What the terdut-server stand-in was asked and what it answered, oldest first, for tests
 * to assert on (how many DELETEs, with whose key, after which fault). Never the headers
 * or bodies: they would carry the secrets the tests check do not leak.
 */
import type { FaultKind } from './faults.ts';

export interface RecordedRequest {
  readonly method: string;
  /** Without the query. */
  readonly path: string;
  /** The raw query string without `?`; "" when there is none. */
  readonly query: string;
  /**
   * The status the stand-in produced. For `dropAfterCommit` it is the status the handler
   * committed but never sent; 0 when the client went away (or `stop()` cut it) before handling.
   */
  readonly status: number;
  /** The user whose API key authenticated the request. */
  readonly userId?: number;
  /** Arrival time, ms since the epoch. */
  readonly at: number;
  /** The knob that shaped the answer, if any. */
  readonly fault?: FaultKind;
}

export class RequestLog {
  private entries: RecordedRequest[] = [];

  record(entry: RecordedRequest): void {
    this.entries.push(entry);
  }

  /** A copy: later requests do not change what a caller already holds. */
  list(): readonly RecordedRequest[] {
    return [...this.entries];
  }

  clear(): void {
    this.entries = [];
  }
}
