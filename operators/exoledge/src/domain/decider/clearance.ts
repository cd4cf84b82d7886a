/**
 * The clearance a solved challenge buys: a signed, expiring token in a cookie, checked
 * by its signature alone. No store is asked to accept it, so a visitor who solved a
 * challenge keeps passing while Valkey is down, and either replica accepts a token the
 * other issued (they share the signing key: the Secret, or Valkey's copy, `signing-keys.ts`).
 *
 * A token is `v1.<expires>.<random>.<mac>`: the Unix time in seconds after which it is
 * refused, 12 random bytes (base64url: no two tokens alike), and the HMAC-SHA256
 * (base64url) under the signing key of those two and the client key (`client-key.ts`).
 * The client key is in the MAC, not in the token: a token copied to a botnet clears the
 * address it was issued to (an IPv4 address, an IPv6 /64), not the botnet.
 *
 * Pure: keys, time and random bytes are arguments.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The cookie's name. */
export const CLEARANCE_COOKIE = 'exoledge_clearance';
/** Random bytes in a token. */
export const TOKEN_RANDOM_BYTES = 12;

/** The whole token's shape: version, expiry, 16 characters of randomness, a 43-character MAC. */
const TOKEN = /^v1\.([0-9]{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/;

function mac(key: Uint8Array, expires: number, random: string, client: string): Buffer {
  return createHmac('sha256', key).update(`exoledge-clearance-v1\n${expires}\n${random}\n${client}`).digest();
}

export interface IssueInput {
  /** The signing key (the first of the configured keys). */
  readonly key: Uint8Array;
  /** `clientKey` of the client that solved the challenge. */
  readonly client: string;
  /** Unix time, seconds. */
  readonly now: number;
  readonly seconds: number;
  /** `TOKEN_RANDOM_BYTES` random bytes. */
  readonly random: Uint8Array;
}

/** A clearance token for `client`, valid `seconds` from `now`. */
export function issueClearance(input: IssueInput): string {
  const expires = input.now + input.seconds;
  const random = Buffer.from(input.random).toString('base64url');
  return `v1.${expires}.${random}.${mac(input.key, expires, random, input.client).toString('base64url')}`;
}

/**
 * Whether `token` is a clearance issued to `client` under one of `keys` (the current key
 * first, then those kept while a rotation completes) and not expired at `now`.
 */
export function verifyClearance(
  keys: readonly Uint8Array[],
  client: string,
  token: string,
  now: number,
): boolean {
  const m = TOKEN.exec(token);
  if (m === null) return false;
  const expires = Number(m[1]);
  if (now > expires) return false;
  const given = Buffer.from(m[3]!, 'base64url');
  for (const key of keys) {
    const expected = mac(key, expires, m[2]!, client);
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
  }
  return false;
}

/**
 * The clearance token in a `cookie` header, when one of the right shape is there. A
 * value of another shape is ignored: it could only be a forgery.
 */
export function readClearanceCookie(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0 || pair.slice(0, eq).trim() !== CLEARANCE_COOKIE) continue;
    let value = pair.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (TOKEN.test(value)) return value;
  }
  return undefined;
}

/**
 * The `Set-Cookie` value for `token`: HttpOnly (no script reads it), Secure (the gateway
 * terminates TLS, so the browser only sends it over HTTPS), SameSite=Lax (sent on a
 * top-level navigation from elsewhere, as a link to the site must work), for the whole
 * site, expiring with the token.
 */
export function clearanceCookie(token: string, maxAgeSeconds: number): string {
  return `${CLEARANCE_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=Lax`;
}
