/**
 * What the decider remembers between requests and shares between its replicas: how many
 * challenges each client was sent in the current window, the nonces already answered
 * (replay protection), and the signing key when no Secret provides one. Clearances are
 * not stored: they are signed cookies (`clearance.ts`), checked without asking anyone. Valkey holds it
 * (`ValkeyStateStore`); this interface is what the rest of the decider sees.
 *
 * Every method answers, never throws: when the store cannot be reached the answer says
 * so (`unavailable`, `undefined`), and the caller fails open (see `verdict.ts`).
 */
import type { ClientState } from '../domain/decider/verdict.ts';

export type NonceClaim = 'claimed' | 'used' | 'unavailable';

export interface StateStore {
  /**
   * One round trip: counts one more challenge for `client` in its window and says how
   * many that makes. A store that knows the answer without asking anyone (none
   * configured, or one that is down and not asked again yet) answers at once, without a
   * promise: that is the verdict of every listed client while Valkey is away, and the
   * fail-open path should not be the slower one.
   */
  countChallenge(client: string): ClientState | Promise<ClientState>;
  /** Records that nonce `id` was answered, until `ttlSeconds` from now. */
  claimNonce(id: string, ttlSeconds: number): Promise<NonceClaim>;
  /** The key shared by the replicas; undefined while it cannot be read. */
  signingKey(): Promise<Buffer | undefined>;
  /**
   * Resolves once the store can answer (at once if it can, or has nothing to connect to);
   * never rejects, and may never resolve: the caller bounds the wait.
   */
  connected(): Promise<void>;
  /** Undefined when healthy; else what `/readyz` reports after `degraded: `. */
  degraded(): string | undefined;
  close(): Promise<void>;
}

const UNAVAILABLE: ClientState = { kind: 'unavailable' };

/** No Valkey configured: nothing is remembered, every answer is `unavailable`. */
export class NoStateStore implements StateStore {
  countChallenge(): ClientState {
    return UNAVAILABLE;
  }
  async claimNonce(): Promise<NonceClaim> {
    return 'unavailable';
  }
  async signingKey(): Promise<Buffer | undefined> {
    return undefined;
  }
  async connected(): Promise<void> {}
  degraded(): string {
    return 'valkey not configured';
  }
  async close(): Promise<void> {}
}
