/**
 * Sorting prefixes by address, the costliest step of a merge after reading. IPv4 uses a
 * least-significant-digit radix sort in two passes of 16 bits: linear, no comparator
 * calls, and the length column travels along without packing both into one key. On three
 * million entries it takes a few tens of milliseconds where a comparison sort takes
 * several hundred. (Bucketing by the top 16 bits and sorting each bucket in cache was
 * tried: the extra counting pass made it slower.) IPv6 lists are short and their keys
 * are bigints, so they use an ordinary comparison sort.
 */
import type { Ipv4Prefixes, Ipv6Prefixes } from './prefix-list.ts';

const DIGIT = 1 << 16;

/**
 * The prefixes ordered by address (ties in any order): new arrays, or the input itself
 * when it is sorted already (many published lists are; nobody writes to these arrays, so
 * no copy). The input is not modified. Each pass is its own small function: V8 optimises
 * a small loop sooner, and the second pass runs the code the first one warmed up.
 */
export function sortIpv4(input: Ipv4Prefixes): Ipv4Prefixes {
  const { addresses, lengths } = input;
  const n = addresses.length;
  const lowCounts = new Uint32Array(DIGIT);
  const highCounts = new Uint32Array(DIGIT);
  if (count(addresses, lowCounts, highCounts)) return input;
  toOffsets(lowCounts);
  toOffsets(highCounts);
  const midAddresses = new Uint32Array(n);
  const midLengths = new Uint8Array(n);
  scatter(addresses, lengths, midAddresses, midLengths, lowCounts, 0);
  const outAddresses = new Uint32Array(n);
  const outLengths = new Uint8Array(n);
  scatter(midAddresses, midLengths, outAddresses, outLengths, highCounts, 16);
  return { addresses: outAddresses, lengths: outLengths };
}

/** Counts the digits of every address; returns whether the addresses are sorted already. */
function count(addresses: Uint32Array, low: Uint32Array, high: Uint32Array): boolean {
  let sorted = true;
  let previous = 0;
  for (let i = 0; i < addresses.length; i++) {
    const a = addresses[i]!;
    low[a & 0xffff]!++;
    high[a >>> 16]!++;
    if (a < previous) sorted = false;
    previous = a;
  }
  return sorted;
}

/** One radix pass: moves each entry to the next free slot of its digit (16 bits from `shift`). */
function scatter(
  fromAddresses: Uint32Array,
  fromLengths: Uint8Array,
  toAddresses: Uint32Array,
  toLengths: Uint8Array,
  offsets: Uint32Array,
  shift: number,
): void {
  for (let i = 0; i < fromAddresses.length; i++) {
    const a = fromAddresses[i]!;
    const at = offsets[(a >>> shift) & 0xffff]!++;
    toAddresses[at] = a;
    toLengths[at] = fromLengths[i]!;
  }
}

/** Turns bucket counts into each bucket's first index. */
function toOffsets(counts: Uint32Array): void {
  let sum = 0;
  for (let d = 0; d < counts.length; d++) {
    const c = counts[d]!;
    counts[d] = sum;
    sum += c;
  }
}

/** The prefixes ordered by address (ties in any order). The input is not modified. */
export function sortIpv6(input: Ipv6Prefixes): Ipv6Prefixes {
  const { addresses, lengths } = input;
  const order = Array.from({ length: addresses.length }, (_, i) => i);
  order.sort((x, y) => {
    const a = addresses[x]!;
    const b = addresses[y]!;
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return {
    addresses: order.map((i) => addresses[i]!),
    lengths: Uint8Array.from(order, (i) => lengths[i]!),
  };
}
