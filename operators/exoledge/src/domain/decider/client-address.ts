/**
 * Whose request it is: the client address the verdict is about, read only from what the
 * gateway and the proxies it trusts wrote, never from anything a client can send. Pure.
 *
 * The rule is Envoy's own "trusted client address" (`xff_num_trusted_hops`, which Istio
 * sets from `numTrustedProxies`), applied to the `x-forwarded-for` header ext_authz
 * forwards, after the gateway appended its own downstream peer to it:
 * - 0 trusted hops (the default): the last entry, the one the gateway appended itself,
 *   its TCP peer (Envoy's "downstream remote address");
 * - N trusted hops: the (N+1)-th entry from the right, the one the outermost trusted
 *   proxy wrote (N = 1: a load balancer in front of the gateway appended the client, the
 *   gateway appended the load balancer);
 * - fewer than N+1 entries: the last one, the gateway's peer, as Envoy falls back to the
 *   downstream connection's address.
 * Everything left of those entries is the client's own text and is never read: a
 * blocklisted client sending `X-Forwarded-For: 1.1.1.1` only adds an entry on the left.
 *
 * Headers a client can set (`x-envoy-external-address`, which Envoy passes through from
 * a peer it counts as internal, `x-real-ip`, `true-client-ip`, `forwarded`, ...) are
 * ignored. The one exception is a header the operator names (the decider's
 * `EXOLEDGE_CLIENT_ADDRESS_HEADER`): read first when present, for a gateway that only a
 * CDN reaches and that CDN overwrites the header on every request (the docs say when).
 *
 * No `x-forwarded-for` at all (a request that did not come through the gateway, such as
 * a probe or a test calling the decider directly): the socket's peer.
 *
 * An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, as a dual-stack socket reports an IPv4
 * peer) is the IPv4 address it maps: the same host, the same answer as in the lists.
 */
import { formatIpv4 } from '../blocklist/ipv4.ts';
import { formatIpv6, readDottedQuad, readIpv6Groups } from '../blocklist/ipv6.ts';

/** An address, IPv4 as an unsigned 32-bit integer, IPv6 as its 128-bit value. */
export type IpAddress =
  | { readonly family: 'ipv4'; readonly address: number }
  | { readonly family: 'ipv6'; readonly address: bigint };

/** Where the client address was read. */
export const AddressSource = {
  ForwardedFor: 'x-forwarded-for',
  /** The header the operator named (`EXOLEDGE_CLIENT_ADDRESS_HEADER`). */
  NamedHeader: 'named-header',
  Peer: 'peer',
} as const;
export type AddressSource = (typeof AddressSource)[keyof typeof AddressSource];

/** What the request carries about its origin, as received. */
export interface AddressHeaders {
  /** Every `x-forwarded-for` header, joined by commas in arrival order (as node:http does). */
  readonly forwardedFor?: string | undefined;
  /** The value of the header the operator named, when one is named and present. */
  readonly named?: string | undefined;
  /** The socket's remote address. */
  readonly peer?: string | undefined;
}

export type ClientAddress =
  | {
      readonly kind: 'address';
      readonly address: IpAddress;
      readonly source: AddressSource;
    }
  | { readonly kind: 'unreadable'; readonly source: AddressSource; readonly message: string };

/** The longest text worth reading: `[` + 45 characters of IPv6 + `]:65535`. */
const MAX_TEXT = 54;

const scratch = new Uint8Array(MAX_TEXT);

/**
 * The address in `text`: plain IPv4 or IPv6, or with a port as proxies sometimes write
 * it (`1.2.3.4:80`, `[2001:db8::1]:443`, `[2001:db8::1]`). Nothing looser: no zone, no
 * leading zeros, no shortened IPv4. A message when it names no address.
 */
export function readAddress(raw: string): IpAddress | string {
  let text = raw.trim();
  if (text === '') return 'empty';
  if (text.length > MAX_TEXT) return 'longer than any address';
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return 'an opening bracket without its closing one';
    const rest = text.slice(close + 1);
    if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return 'text after the bracketed address is not a port';
    text = text.slice(1, close);
    if (!text.includes(':')) return 'brackets around something that is not IPv6';
  } else {
    const colon = text.indexOf(':');
    if (colon >= 0 && colon === text.lastIndexOf(':')) {
      // One colon: IPv4 with a port (IPv6 has at least two).
      if (!/^[0-9]{1,5}$/.test(text.slice(colon + 1))) return 'text after the IPv4 address is not a port';
      text = text.slice(0, colon);
    }
  }
  // One buffer for every call (reading is synchronous): a typed array per request
  // showed in the decider's profile.
  const bytes = scratch;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7e) return 'a character no address has';
    bytes[i] = c;
  }
  if (!text.includes(':')) {
    const v4 = readDottedQuad(bytes, 0, text.length);
    return typeof v4 === 'string' ? v4 : { family: 'ipv4', address: v4 };
  }
  const groups = new Uint16Array(8);
  const error = readIpv6Groups(bytes, 0, text.length, groups);
  if (error !== undefined) return error;
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0) {
    if (groups[5] === 0xffff) return { family: 'ipv4', address: groups[6]! * 65536 + groups[7]! };
  }
  let address = 0n;
  for (const g of groups) address = (address << 16n) | BigInt(g);
  return { family: 'ipv6', address };
}

/** Canonical text of an address. */
export function formatAddress(address: IpAddress): string {
  return address.family === 'ipv4' ? formatIpv4(address.address) : formatIpv6(address.address);
}

function read(text: string, source: AddressSource): ClientAddress {
  const address = readAddress(text);
  if (typeof address === 'string') {
    return {
      kind: 'unreadable',
      source,
      message: `${source} ${JSON.stringify(text.slice(0, 60))}: ${address}`,
    };
  }
  return { kind: 'address', address, source };
}

/**
 * The index in `entries` (at least one) of the entry `trustedHops` trusted proxies vouch
 * for: Envoy's rule, see the module comment.
 */
export function trustedEntryIndex(entries: number, trustedHops: number): number {
  const index = entries - 1 - trustedHops;
  return index >= 0 ? index : entries - 1;
}

/** The client's address; see the module comment for the rule. */
export function clientAddress(headers: AddressHeaders, trustedHops: number): ClientAddress {
  const named = headers.named?.trim();
  if (named) return read(named, AddressSource.NamedHeader);
  if (headers.forwardedFor !== undefined) {
    const entries = headers.forwardedFor
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    if (entries.length > 0) {
      return read(entries[trustedEntryIndex(entries.length, trustedHops)]!, AddressSource.ForwardedFor);
    }
  }
  if (headers.peer === undefined) {
    return { kind: 'unreadable', source: AddressSource.Peer, message: 'the connection has no peer address' };
  }
  return read(headers.peer, AddressSource.Peer);
}
