/**
 * Reconnect backoff for watches: jittered, growing from about 0.8 s to 30 s, and back to
 * the start once a connection has stayed healthy for a while. Without the reset, a watch
 * that failed a few times during an apiserver upgrade would reconnect slowly for ever
 * after (client-node 2.x resets only when an event arrives, so quiet watches stay slow).
 */
export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  readonly factor?: number;
  /** ± this fraction of the delay, so that many watches do not reconnect in lockstep. */
  readonly jitter?: number;
  /** A connection healthy this long resets the delay to `initialMs`. */
  readonly resetAfterMs?: number;
  readonly random?: () => number;
}

export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  readonly resetAfterMs: number;
  private readonly random: () => number;
  private current: number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 800;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = opts.jitter ?? 0.2;
    this.resetAfterMs = opts.resetAfterMs ?? 60_000;
    this.random = opts.random ?? Math.random;
    this.current = this.initialMs;
  }

  /** The delay before the next attempt; each call grows the one after. */
  next(): number {
    const base = this.current;
    this.current = Math.min(this.maxMs, this.current * this.factor);
    const spread = base * this.jitter * (2 * this.random() - 1);
    return Math.max(0, Math.round(base + spread));
  }

  /** Called with how long the last connection was healthy; resets the delay if long enough. */
  healthyFor(ms: number): void {
    if (ms >= this.resetAfterMs) this.reset();
  }

  reset(): void {
    this.current = this.initialMs;
  }
}
