/**
 * The decider's state in Valkey (or Redis: the same protocol), through ioredis.
 *
 * Keys, all under `exoledge:<site namespace>/<site>:`, so sites can share one Valkey:
 * - `key`: the signing key of nonces, 32 random bytes in hex. Written once with `SET NX`
 *   by whichever replica comes first, then read by both: both replicas check each other's
 *   nonces, and the key outlives restarts (as long as Valkey keeps its data).
 * - `challenges:<client key>`: challenges sent in the current window (`INCR`, and
 *   `EXPIRE` on the first one: a fixed window from the first challenge).
 * - `nonce:<mac>`: a nonce already answered, until the nonce expires.
 *
 * Failing fast. A verdict cannot wait for a Valkey that is gone: every call is bounded by
 * `VALKEY_TIMEOUT_MS` (connect and command), nothing is queued while disconnected (a
 * command then fails at once), no command is retried, and reconnection backs off to one
 * attempt every `MAX_RECONNECT_DELAY_MS`, and after a failed call Valkey is left alone for
 * `BACKOFF_AFTER_FAILURE_MS`: a dead Valkey costs a listed request at most one failed
 * call, and Valkey one connection attempt per two seconds per replica, not a storm.
 * Every call without an answer (failed, or not made in that pause) counts in
 * `exoledge_decider_valkey_failures_total`; a failure sets
 * `exoledge_decider_valkey_up` to 0 until a call succeeds again.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { CHALLENGE_WINDOW_SECONDS, type ClientState } from '../domain/decider/verdict.ts';
import type { DeciderMetrics } from './metrics.ts';
import type { NonceClaim, StateStore } from './state-store.ts';

/** Longest a verdict waits for Valkey: ext_authz gives the whole verdict 250 ms. */
export const VALKEY_TIMEOUT_MS = 200;
/** Longest pause between reconnection attempts. */
export const MAX_RECONNECT_DELAY_MS = 2000;
/** How often the signing key is read again: a Valkey that lost its data gets one key again. */
export const KEY_REFRESH_MS = 60_000;
/**
 * After a failed call, Valkey is not asked again for this long (unless it reconnects
 * first): a Valkey that accepts connections but does not answer would otherwise cost every
 * listed request the whole `VALKEY_TIMEOUT_MS`.
 */
export const BACKOFF_AFTER_FAILURE_MS = 1000;
/** At most one failure line per this long: a dead Valkey must not flood the log. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

const SIGNING_KEY_BYTES = 32;
const HEX_KEY = /^[0-9a-f]{64}$/;

/**
 * One round trip for a listed client without a valid clearance: the count. KEYS: the
 * counter. ARGV: the window.
 */
const OBSERVE = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
`;

/** The prefix of every key of a site. */
export function keyPrefix(siteNamespace: string, site: string): string {
  return `exoledge:${siteNamespace}/${site}:`;
}

export interface ValkeyStateOptions {
  readonly url: string;
  readonly prefix: string;
  readonly metrics: DeciderMetrics;
  readonly log: Logger;
}

/** ioredis' type for a command added with `defineCommand`. */
interface ObserveCommand {
  exoledgeObserve(counter: string, window: string): Promise<number>;
}

const FAILED = Symbol('failed');

export class ValkeyStateStore implements StateStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #metrics: DeciderMetrics;
  readonly #log: Logger;
  #up = false;
  #lastError = 'not connected yet';
  #lastFailureLog = 0;
  #quietUntil = 0;
  #key: Buffer | undefined;
  #keyReadAt = 0;

  constructor(options: ValkeyStateOptions) {
    this.#prefix = options.prefix;
    this.#metrics = options.metrics;
    this.#log = options.log;
    this.#metrics.valkeyUp.set(0);
    this.#redis = new Redis(options.url, {
      connectTimeout: VALKEY_TIMEOUT_MS,
      commandTimeout: VALKEY_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), MAX_RECONNECT_DELAY_MS),
    });
    // Without a listener ioredis prints every connection error; failures are counted and
    // logged (throttled) where a call fails.
    this.#redis.on('error', (err: Error) => {
      this.#lastError = err.message;
    });
    this.#redis.on('ready', () => {
      this.#quietUntil = 0;
      this.#setUp(true);
    });
    this.#redis.on('close', () => this.#setUp(false));
    this.#redis.defineCommand('exoledgeObserve', { numberOfKeys: 1, lua: OBSERVE });
  }

  countChallenge(client: string): ClientState | Promise<ClientState> {
    // In the pause after a failure the answer is known: no promise (see `StateStore.countChallenge`).
    if (this.#skipped()) return { kind: 'unavailable' };
    return this.#count(client);
  }

  async #count(client: string): Promise<ClientState> {
    const commands = this.#redis as unknown as ObserveCommand;
    const n = await this.#call('count challenge', () =>
      commands.exoledgeObserve(`${this.#prefix}challenges:${client}`, String(CHALLENGE_WINDOW_SECONDS)),
    );
    if (n === FAILED) return { kind: 'unavailable' };
    return { kind: 'challenged', count: n };
  }

  async claimNonce(id: string, ttlSeconds: number): Promise<NonceClaim> {
    const done = await this.#call('claim nonce', () =>
      this.#redis.set(`${this.#prefix}nonce:${id}`, '1', 'EX', Math.max(1, ttlSeconds), 'NX'),
    );
    if (done === FAILED) return 'unavailable';
    return done === 'OK' ? 'claimed' : 'used';
  }

  async signingKey(): Promise<Buffer | undefined> {
    if (this.#key !== undefined && Date.now() - this.#keyReadAt < KEY_REFRESH_MS) return this.#key;
    const name = `${this.#prefix}key`;
    const candidate = randomBytes(SIGNING_KEY_BYTES).toString('hex');
    const text = await this.#call('signing key', async () => {
      await this.#redis.set(name, candidate, 'NX');
      return this.#redis.get(name);
    });
    if (text === FAILED) return this.#key;
    if (text === null || !HEX_KEY.test(text)) {
      this.#log.error(
        { key: name },
        'the signing key in Valkey is not 64 hex digits: delete it to have a new one made',
      );
      return this.#key;
    }
    if (this.#key !== undefined && this.#key.toString('hex') !== text) {
      this.#log.warn(
        { key: name },
        'the signing key changed (Valkey lost its data?): nonces made before are refused',
      );
    }
    this.#key = Buffer.from(text, 'hex');
    this.#keyReadAt = Date.now();
    return this.#key;
  }

  connected(): Promise<void> {
    // A command sent before the connection is ready fails at once (no offline queue, so
    // that a verdict never waits on a reconnect), and starts the pause after a failure.
    if (this.#redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => this.#redis.once('ready', () => resolve()));
  }

  degraded(): string | undefined {
    return this.#up ? undefined : `valkey unreachable (${this.#lastError})`;
  }

  async close(): Promise<void> {
    try {
      await this.#redis.quit();
    } catch {
      // Not connected: nothing to say goodbye to.
    }
    this.#redis.disconnect();
  }

  /** Whether a call now is skipped, in the pause after a failure; counted as a failure then. */
  #skipped(): boolean {
    if (Date.now() >= this.#quietUntil) return false;
    // Counted too: this call got no answer, and its verdict is given without state.
    this.#metrics.valkeyFailures.inc();
    return true;
  }

  async #call<T>(what: string, fn: () => Promise<T>): Promise<T | typeof FAILED> {
    if (this.#skipped()) return FAILED;
    try {
      const result = await fn();
      this.#setUp(true);
      return result;
    } catch (err) {
      this.#lastError = err instanceof Error ? err.message : String(err);
      this.#metrics.valkeyFailures.inc();
      this.#setUp(false);
      const now = Date.now();
      this.#quietUntil = now + BACKOFF_AFTER_FAILURE_MS;
      if (now - this.#lastFailureLog >= FAILURE_LOG_INTERVAL_MS) {
        this.#lastFailureLog = now;
        this.#log.warn(
          { call: what, err: this.#lastError },
          'valkey call failed: verdicts are given without state (fail open) until it answers',
        );
      }
      return FAILED;
    }
  }

  #setUp(up: boolean): void {
    if (up && !this.#up) this.#log.info('valkey answers');
    this.#up = up;
    this.#metrics.valkeyUp.set(up ? 1 : 0);
  }
}
