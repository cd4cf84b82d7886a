/**
 * The data every step of the blocklist pipeline hands to the next: the prefixes of each
 * address family as columns of typed arrays, not one object per prefix. A proxy list has
 * three million lines; three million objects would cost hundreds of megabytes and most of
 * the run time, two typed arrays cost five bytes a prefix.
 *
 * What the order means depends on who produced the list: `parseBlocklist` keeps file
 * order; `merge`, `budget` and everything after them hold the canonical order, each
 * family ascending by address, disjoint, IPv4 before IPv6.
 */
import { ipv6FromWords, wordsOfIpv6 } from './ipv6.ts';

/** IPv4 prefixes, one per index across both columns. */
export interface Ipv4Prefixes {
  /** Network addresses as unsigned 32-bit integers (1.2.3.0 is 0x01020300), host bits zero. */
  readonly addresses: Uint32Array;
  /** Prefix lengths, 0 to 32. */
  readonly lengths: Uint8Array;
}

/**
 * IPv6 prefixes, one per index of `lengths`. Addresses are four 32-bit words each rather
 * than bigints: a list of 200,000 lone addresses spent most of its time making, comparing
 * and collecting bigints. `Prefix` and `prefixesOf` give single addresses as bigints.
 */
export interface Ipv6Prefixes {
  /**
   * Network addresses, host bits zero, as unsigned 32-bit words, most significant first:
   * prefix i is `words[4 * i]` to `words[4 * i + 3]` (2001:db8::1 is 0x20010db8, 0, 0, 1).
   */
  readonly words: Uint32Array;
  /** Prefix lengths, 0 to 128. */
  readonly lengths: Uint8Array;
}

export interface PrefixList {
  readonly ipv4: Ipv4Prefixes;
  readonly ipv6: Ipv6Prefixes;
}

/** One prefix, for code that handles a few at a time (formatting, sharding, tests). */
export type Prefix =
  | { readonly family: 'ipv4'; readonly address: number; readonly length: number }
  | { readonly family: 'ipv6'; readonly address: bigint; readonly length: number };

/** No prefixes; shared, which is safe because nothing writes to a list once made. */
export const EMPTY_PREFIX_LIST: PrefixList = {
  ipv4: { addresses: new Uint32Array(0), lengths: new Uint8Array(0) },
  ipv6: { words: new Uint32Array(0), lengths: new Uint8Array(0) },
};

export function prefixCount(list: PrefixList): number {
  return list.ipv4.lengths.length + list.ipv6.lengths.length;
}

/** The prefixes in list order, IPv4 first. */
export function* prefixesOf(list: PrefixList): Generator<Prefix> {
  const { ipv4, ipv6 } = list;
  for (let i = 0; i < ipv4.addresses.length; i++) {
    yield { family: 'ipv4', address: ipv4.addresses[i]!, length: ipv4.lengths[i]! };
  }
  for (let i = 0; i < ipv6.lengths.length; i++) {
    yield { family: 'ipv6', address: ipv6FromWords(ipv6.words, 4 * i), length: ipv6.lengths[i]! };
  }
}

/**
 * A list from single prefixes, in the order given. Addresses must already be network
 * addresses within range; this builds test data and small sets, it does not validate.
 */
export function prefixListOf(prefixes: Iterable<Prefix>): PrefixList {
  const v4a: number[] = [];
  const v4l: number[] = [];
  const v6a: bigint[] = [];
  const v6l: number[] = [];
  for (const p of prefixes) {
    switch (p.family) {
      case 'ipv4':
        v4a.push(p.address);
        v4l.push(p.length);
        break;
      case 'ipv6':
        v6a.push(p.address);
        v6l.push(p.length);
        break;
      default:
        return p satisfies never;
    }
  }
  const words = new Uint32Array(4 * v6a.length);
  for (let i = 0; i < v6a.length; i++) wordsOfIpv6(v6a[i]!, words, 4 * i);
  return {
    ipv4: { addresses: Uint32Array.from(v4a), lengths: Uint8Array.from(v4l) },
    ipv6: { words, lengths: Uint8Array.from(v6l) },
  };
}
