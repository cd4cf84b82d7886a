/**
 * The clearance a solved challenge buys: a random token, kept in Valkey for the site's
 * clearance duration with the client key it was issued to, and handed to the browser in
 * a cookie. A token is worth nothing by itself: it passes only while Valkey holds it,
 * for the client it was issued to (the same IPv4 address, the same IPv6 /64), so a token
 * copied to a botnet clears one address, not the botnet.
 */

/** The cookie's name. */
export const CLEARANCE_COOKIE = 'exoledge_clearance';
/** Random bytes in a token: 256 bits, never guessed. */
export const TOKEN_BYTES = 32;

/** base64url of `TOKEN_BYTES` bytes, unpadded. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function tokenOf(random: Uint8Array): string {
  return Buffer.from(random).toString('base64url');
}

/**
 * The clearance token in a `cookie` header, when one of the right shape is there. A
 * value of another shape is ignored, never looked up: it could only be a forgery, and it
 * would otherwise become part of a Valkey key.
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
