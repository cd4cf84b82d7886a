/**
 * A token bucket: client-go's client-side rate limiter
 * (`flowcontrol.NewTokenBucketRateLimiter`, golang.org/x/time/rate underneath).
 *
 * Guarantees:
 * - The bucket starts full with `burst` tokens and refills at `qps` tokens a second, up to
 *   `burst`: at most `burst + qps·t` takes succeed in any window of `t` seconds.
 * - Waiters are served in the order they called {@link TokenBucket.take}: each reserves
 *   the next token to come and sleeps until it is due, so no waiter is starved.
 * - A take aborted while it waits rejects with the signal's reason and gives its token
 *   back (the next caller gets it): an aborted request costs no budget.
 * - Time is read from the injected {@link Clock}, so tests run on a FakeClock.
 */
import { type Clock, realClock, sleep } from '../base/clock.ts';

export interface RateLimit {
  /** Tokens added a second (sustained requests a second). Positive and finite. */
  readonly qps: number;
  /** The bucket's size: requests that may go at once after a quiet spell. At least 1. */
  readonly burst: number;
}

/**
 * What controller-runtime's `GetConfig` gives a manager's client when the kubeconfig
 * sets nothing (client-go's own defaults, 5 and 10, are lower).
 */
export const DEFAULT_CLIENT_RATE_LIMIT: RateLimit = { qps: 20, burst: 30 };

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private readonly clock: Clock;
  /** Tokens at `at`; negative while takers wait (each waiter holds one reservation). */
  private tokens: number;
  private at: number;

  constructor(limit: RateLimit, clock: Clock = realClock) {
    if (!(limit.qps > 0) || !Number.isFinite(limit.qps)) {
      throw new Error(`rate limit qps must be a positive finite number, got ${limit.qps}`);
    }
    if (!Number.isInteger(limit.burst) || limit.burst < 1) {
      throw new Error(`rate limit burst must be an integer of at least 1, got ${limit.burst}`);
    }
    this.qps = limit.qps;
    this.burst = limit.burst;
    this.clock = clock;
    this.tokens = limit.burst;
    this.at = clock.now();
  }

  /**
   * Takes a token, waiting until one is due. Resolves with the milliseconds waited.
   *
   * @throws the signal's reason if `signal` aborts before the token is due (at once if it
   *   already has); the reserved token is then returned to the bucket.
   */
  async take(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) throw signal.reason;
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    // This caller holds reservation number -tokens in line; its token is due when the
    // bucket has refilled that far.
    const waitMs = (-this.tokens * 1000) / this.qps;
    try {
      await sleep(this.clock, waitMs, signal);
    } catch (err) {
      this.refill();
      this.tokens = Math.min(this.burst, this.tokens + 1);
      throw err;
    }
    return waitMs;
  }

  /** Takes a token if one is there now, without waiting. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Tokens available now (negative: that many takers are waiting). */
  available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.qps) / 1000);
      this.at = now;
    }
  }
}
