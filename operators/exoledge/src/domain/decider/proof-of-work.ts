/**
 * The proof-of-work challenge, stateless: the nonce carries what the decider needs to
 * check an answer, signed with the key both replicas share, so either replica checks a
 * nonce the other made, and nothing is stored until the work is done.
 *
 * A nonce is `<random>.<expires>.<difficulty>.<mac>`: 16 random bytes (base64url), the
 * Unix time in seconds after which it is refused, the leading zero bits asked, and the
 * HMAC-SHA256 (base64url), under the shared key, of those three and the client key
 * (`client-key.ts`). The client key is in the MAC, not in the nonce: a nonce solved at one
 * address is worth nothing at another, and the nonce says nothing of who asked.
 *
 * The work: find a counter, a non-negative integer, such that SHA-256 of the UTF-8 text
 * `<nonce><counter in decimal>` starts with `difficulty` zero bits (the first byte's most
 * significant bit first). On average 2^difficulty hashes.
 *
 * Pure: the key, the time and the random bytes are arguments. One nonce buys one
 * clearance: the caller records the nonce's MAC (`SolutionCheck.nonceId`) until it expires.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** How long a nonce may be worked on: a slow phone at 24 bits takes about a minute. */
export const NONCE_TTL_SECONDS = 300;
/** Random bytes in a nonce: never two alike. */
export const NONCE_RANDOM_BYTES = 16;

/** Why an answer to a challenge is refused. */
export const ChallengeRejection = {
  /** The nonce is not four dot-separated fields of the right shapes. */
  MalformedNonce: 'MalformedNonce',
  /**
   * The MAC does not match: the nonce was altered, was made for another client (another
   * IPv4 address or IPv6 /64), or under another key (another site).
   */
  ForgedNonce: 'ForgedNonce',
  /** The nonce's time is past: ask a new one. */
  ExpiredNonce: 'ExpiredNonce',
  /**
   * The nonce asks fewer zero bits than the site asks now: the difficulty was raised
   * since it was made. Ask a new one.
   */
  DifficultyRaised: 'DifficultyRaised',
  /** The counter is not a non-negative safe integer. */
  MalformedCounter: 'MalformedCounter',
  /** The hash does not start with enough zero bits: the work is not done. */
  InsufficientWork: 'InsufficientWork',
  /** The nonce was answered already: one nonce, one clearance. (Told by the caller's record.) */
  NonceUsed: 'NonceUsed',
} as const;
export type ChallengeRejection = (typeof ChallengeRejection)[keyof typeof ChallengeRejection];

export interface MintInput {
  readonly key: Uint8Array;
  /** `clientKey` of the requester. */
  readonly client: string;
  readonly difficulty: number;
  /** Unix time, seconds. */
  readonly now: number;
  /** `NONCE_RANDOM_BYTES` random bytes. */
  readonly random: Uint8Array;
}

export interface CheckInput {
  readonly key: Uint8Array;
  readonly client: string;
  readonly nonce: unknown;
  readonly counter: unknown;
  readonly now: number;
  /** The site's difficulty now: a nonce asking less is refused. */
  readonly difficulty: number;
}

export type SolutionCheck =
  | {
      readonly ok: true;
      /** The nonce's MAC: record it until `expires` to refuse a second answer. */
      readonly nonceId: string;
      readonly expires: number;
    }
  | { readonly ok: false; readonly reason: ChallengeRejection; readonly message: string };

const B64URL = /^[A-Za-z0-9_-]+$/;
const DECIMAL = /^(0|[1-9][0-9]{0,15})$/;

function mac(key: Uint8Array, random: string, expires: number, difficulty: number, client: string): Buffer {
  return createHmac('sha256', key)
    .update(`exoledge-pow-v1\n${random}\n${expires}\n${difficulty}\n${client}`)
    .digest();
}

/** A nonce for `client`; see the module comment for its form. */
export function mintNonce(input: MintInput): string {
  const random = Buffer.from(input.random).toString('base64url');
  const expires = input.now + NONCE_TTL_SECONDS;
  const signature = mac(input.key, random, expires, input.difficulty, input.client).toString('base64url');
  return `${random}.${expires}.${input.difficulty}.${signature}`;
}

/** Leading zero bits of `digest`, most significant bit of the first byte first. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** SHA-256 of `<nonce><counter>`: what the client's work is judged on. */
export function workDigest(nonce: string, counter: number): Buffer {
  return createHash('sha256').update(`${nonce}${counter}`, 'utf8').digest();
}

/** Whether `counter` answers `nonce` (whose difficulty the caller checked). */
export function checkSolution(input: CheckInput): SolutionCheck {
  const refuse = (reason: ChallengeRejection, message: string): SolutionCheck => ({
    ok: false,
    reason,
    message,
  });
  const { nonce, counter } = input;
  if (typeof nonce !== 'string' || nonce.length > 200) {
    return refuse(ChallengeRejection.MalformedNonce, 'the nonce is not a string of at most 200 characters');
  }
  const fields = nonce.split('.');
  const [random, expiresText, difficultyText, signature] = fields;
  if (
    fields.length !== 4 ||
    random === undefined ||
    expiresText === undefined ||
    difficultyText === undefined ||
    signature === undefined ||
    !B64URL.test(random) ||
    !B64URL.test(signature) ||
    !DECIMAL.test(expiresText) ||
    !DECIMAL.test(difficultyText)
  ) {
    return refuse(
      ChallengeRejection.MalformedNonce,
      'the nonce is not <random>.<expires>.<difficulty>.<mac>',
    );
  }
  const expires = Number(expiresText);
  const difficulty = Number(difficultyText);
  const expected = mac(input.key, random, expires, difficulty, input.client);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return refuse(
      ChallengeRejection.ForgedNonce,
      'the nonce was not made by this site for this client: ask a new one from this address',
    );
  }
  if (input.now > expires)
    return refuse(ChallengeRejection.ExpiredNonce, 'the nonce has expired: ask a new one');
  if (difficulty < input.difficulty) {
    return refuse(
      ChallengeRejection.DifficultyRaised,
      `the nonce asks ${difficulty} bits and the site now asks ${input.difficulty}: ask a new one`,
    );
  }
  if (typeof counter !== 'number' || !Number.isSafeInteger(counter) || counter < 0) {
    return refuse(ChallengeRejection.MalformedCounter, 'the counter is not a non-negative integer');
  }
  const zeros = leadingZeroBits(workDigest(nonce, counter));
  if (zeros < difficulty) {
    return refuse(
      ChallengeRejection.InsufficientWork,
      `SHA-256(nonce + counter) starts with ${zeros} zero bits, ${difficulty} are asked`,
    );
  }
  return { ok: true, nonceId: signature, expires };
}
