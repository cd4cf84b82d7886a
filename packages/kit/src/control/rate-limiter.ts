/**
 * How long a failed key waits before it is retried: client-go's workqueue rate limiters.
 *
 * The default ({@link defaultControllerRateLimiter}, client-go's
 * `DefaultTypedControllerRateLimiter`) is the longer of two delays:
 * - per key, exponential: 5 ms, doubling with each failure since the last `forget`, up to
 *   1000 s, so one broken object backs off without slowing the others;
 * - overall, a token bucket of 10 retries per second with a burst of 100, so that a
 *   thousand keys failing together (the apiserver overloaded, a webhook down) cost a
 *   hundred retries at once and then ten a second, instead of a storm of retries that
 *   keeps the apiserver overloaded.
 *
 * Only retries are limited: a key added because something changed is not.
 */
import { type Clock, realClock } from '../base/clock.ts';

export interface RateLimiter {
  /** The delay before `key`'s next retry; counts one failure of `key` (and takes a token). */
  when(key: string): number;
  /** The delay {@link when} would return now, changing nothing. */
  peek(key: string): number;
  /** Forgets `key`'s failures: call it on success, or its next failure waits too long. */
  forget(key: string): void;
  /** Failures of `key` since the last {@link forget}. */
  numRequeues(key: string): number;
}

/** client-go's default first retry delay: fast enough that a transient conflict costs nothing. */
export const DEFAULT_BASE_DELAY_MS = 5;
/**
 * client-go's default cap, 1000 s (about 16.7 min): a key that keeps failing is still
 * retried a few times an hour, without a broken object costing a reconcile per second.
 */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;
/** client-go's default overall retry rate: ten retries per second across all keys of a queue. */
export const DEFAULT_RETRY_QPS = 10;
/** client-go's default burst: a hundred retries may go at once before the rate applies. */
export const DEFAULT_RETRY_BURST = 100;

/** Per key: `baseDelayMs × 2^failures`, capped at `maxDelayMs` (client-go's `ItemExponentialFailureRateLimiter`). */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly failures = new Map<string, number>();

  constructor(opts: { readonly baseDelayMs?: number; readonly maxDelayMs?: number } = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  }

  when(key: string): number {
    const delay = this.peek(key);
    this.failures.set(key, this.numRequeues(key) + 1);
    return delay;
  }

  peek(key: string): number {
    return Math.min(this.baseDelayMs * 2 ** this.numRequeues(key), this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/**
 * Overall: a token bucket shared by every key (client-go's `BucketRateLimiter` over
 * `rate.Limiter`). Each retry reserves a token; when none is left it reserves a future
 * one, so retries are spaced `1000 / qps` ms apart in the order they failed. Tokens
 * accumulate while idle, up to `burst`. Keeps no per-key state.
 */
export class BucketRateLimiter implements RateLimiter {
  private readonly qps: number;
  private readonly burst: number;
  private readonly clock: Clock;
  /** Tokens available at `at`; negative when future tokens are reserved already. */
  private tokens: number;
  private at: number;

  constructor(opts: { readonly qps: number; readonly burst: number; readonly clock?: Clock }) {
    if (!(opts.qps > 0) || !(opts.burst >= 1)) {
      throw new Error(
        `a retry bucket needs qps > 0 and burst ≥ 1 (got qps ${opts.qps}, burst ${opts.burst})`,
      );
    }
    this.qps = opts.qps;
    this.burst = opts.burst;
    this.clock = opts.clock ?? realClock;
    this.tokens = opts.burst;
    this.at = this.clock.now();
  }

  when(_key: string): number {
    this.refill();
    this.tokens -= 1;
    return this.delayFor(this.tokens);
  }

  peek(_key: string): number {
    this.refill();
    return this.delayFor(this.tokens - 1);
  }

  forget(_key: string): void {}

  numRequeues(_key: string): number {
    return 0;
  }

  private refill(): void {
    const now = this.clock.now();
    // elapsed × qps / 1000 rather than elapsed × (qps / 1000): exact for whole intervals.
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.at) * this.qps) / 1000);
    this.at = now;
  }

  /** How long until the balance `tokens` is back to zero; a hair of slack absorbs float error. */
  private delayFor(tokens: number): number {
    return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / this.qps - 1e-9);
  }
}

/** The longest delay of several limiters; each counts the failure (client-go's `MaxOfRateLimiter`). */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(limiters: readonly RateLimiter[]) {
    this.limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must see the failure (the bucket takes its token), so no short-circuit.
    return Math.max(0, ...this.limiters.map((l) => l.when(key)));
  }

  peek(key: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.peek(key)));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.numRequeues(key)));
  }
}

export interface ControllerRateLimiterOptions {
  readonly clock?: Clock;
  /** First per-key retry delay; doubles per failure. */
  readonly baseDelayMs?: number;
  /** Cap of the per-key retry delay. */
  readonly maxDelayMs?: number;
  /** Overall retries per second, across all keys. */
  readonly qps?: number;
  /** Overall retries allowed at once before `qps` applies. */
  readonly burst?: number;
}

/** client-go's `DefaultTypedControllerRateLimiter`: max(per key 5 ms…1000 s, overall 10 qps burst 100). */
export function defaultControllerRateLimiter(opts: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter([
    new ItemExponentialFailureRateLimiter({ baseDelayMs: opts.baseDelayMs, maxDelayMs: opts.maxDelayMs }),
    new BucketRateLimiter({
      qps: opts.qps ?? DEFAULT_RETRY_QPS,
      burst: opts.burst ?? DEFAULT_RETRY_BURST,
      clock: opts.clock,
    }),
  ]);
}
