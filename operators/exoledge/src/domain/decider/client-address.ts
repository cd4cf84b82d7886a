/**
 * Whose request it is: the client address the verdict is about, read from what the
 * gateway forwards. Pure.
 *
 * Sources, in order:
 * 1. `x-envoy-external-address`: the gateway's own record of the TCP peer of an external
 *    request (Envoy writes it for a request from outside, and sanitizes a client's copy;
 *    it is absent for a peer Envoy counts as internal, RFC 1918 by default). Present means
 *    trusted: a present value that does not read is reported as unreadable, not skipped,
 *    since falling back would judge someone else.
 * 2. `x-forwarded-for`, only with `trustedHops` >= 1: the entry the N-th trusted proxy
 *    from the decider's side wrote, the gateway being the first (N = 1: the last entry,
 *    which the gateway appended; N = 2: the one before, written by a load balancer in
 *    front of it). Fewer entries than N: the first one, all of them being trusted. With
 *    0 (the default) the header is not read at all: anyone can write it, and a
 *    blocklisted client would only have to send `X-Forwarded-For: 1.1.1.1`.
 * 3. The socket's peer.
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
  ExternalAddress: 'x-envoy-external-address',
  ForwardedFor: 'x-forwarded-for',
  Peer: 'peer',
} as const;
export type AddressSource = (typeof AddressSource)[keyof typeof AddressSource];

/** What the request carries about its origin, as received. */
export interface AddressHeaders {
  readonly externalAddress?: string | undefined;
  /** Every `x-forwarded-for` header, joined by commas in arrival order (as node:http does). */
  readonly forwardedFor?: string | undefined;
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

/** The client's address; see the module comment for the order of sources. */
export function clientAddress(headers: AddressHeaders, trustedHops: number): ClientAddress {
  const external = headers.externalAddress?.trim();
  if (external) return read(external, AddressSource.ExternalAddress);
  if (trustedHops >= 1 && headers.forwardedFor !== undefined) {
    const entries = headers.forwardedFor
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    if (entries.length > 0) {
      const entry = entries[Math.max(0, entries.length - trustedHops)]!;
      return read(entry, AddressSource.ForwardedFor);
    }
  }
  if (headers.peer === undefined) {
    return { kind: 'unreadable', source: AddressSource.Peer, message: 'the connection has no peer address' };
  }
  return read(headers.peer, AddressSource.Peer);
}
