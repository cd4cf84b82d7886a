/**
 * The minimal exact cover of a set of prefixes: the fewest CIDR prefixes whose union is
 * exactly the union of the input, no address more, no address less. Four contiguous /24
 * become one /22; duplicates and prefixes inside others vanish; 10.0.0.0/24 and
 * 10.0.1.0/25 stay two prefixes, since no single prefix covers exactly their union.
 * Merging matters as much as the budget: on a scanner list it is the difference between
 * fitting Cilium's 65,536-entry policy map and saturating it.
 *
 * How: sort by address, sweep once to join overlapping and touching prefixes into
 * disjoint address ranges, then write each range as its largest aligned blocks, left to
 * right. That split is the unique minimal cover of a range, and ranges that neither
 * overlap nor touch cannot share a prefix, so the result is minimal as a whole.
 *
 * Guarantees on the result: each family ascending by address; disjoint; every prefix
 * maximal (its parent is not covered by the input); host bits zero. It is canonical: the
 * same address set always gives the same list, whatever the order and the shape of the
 * input.
 */
import { BLOCK_SIZE_V4 } from './ipv4.ts';
import { BLOCK_SIZE_V6 } from './ipv6.ts';
import type { Ipv4Prefixes, Ipv6Prefixes, PrefixList } from './prefix-list.ts';
import { sortIpv4, sortIpv6 } from './sort.ts';

/** The minimal exact cover of `entries`, each family on its own. Pure: the input is not modified. */
export function merge(entries: PrefixList): PrefixList {
  return { ipv4: mergeIpv4(entries.ipv4), ipv6: mergeIpv6(entries.ipv6) };
}

const TWO_32 = 4294967296;

/** Output columns that grow as prefixes are written: a merge may write fewer or more prefixes than it reads. */
class Ipv4Builder {
  addresses: Uint32Array;
  lengths: Uint8Array;
  count = 0;

  constructor(capacity: number) {
    this.addresses = new Uint32Array(capacity);
    this.lengths = new Uint8Array(capacity);
  }

  push(address: number, length: number): void {
    if (this.count === this.addresses.length) {
      const addresses = new Uint32Array(this.count * 2);
      addresses.set(this.addresses);
      this.addresses = addresses;
      const lengths = new Uint8Array(this.count * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    this.addresses[this.count] = address;
    this.lengths[this.count++] = length;
  }

  build(): Ipv4Prefixes {
    return { addresses: this.addresses.slice(0, this.count), lengths: this.lengths.slice(0, this.count) };
  }
}

/** `merge` for IPv4 alone. */
export function mergeIpv4(entries: Ipv4Prefixes): Ipv4Prefixes {
  const sorted = sortIpv4(entries);
  // Merged lists are usually several times shorter than their input.
  const out = new Ipv4Builder(Math.max(64, sorted.addresses.length >>> 2));
  sweepIpv4(sorted, out);
  return out.build();
}

/** Joins sorted prefixes into disjoint ranges and writes each as its largest aligned blocks. */
function sweepIpv4(sorted: Ipv4Prefixes, out: Ipv4Builder): void {
  const { addresses, lengths } = sorted;
  const n = addresses.length;
  if (n === 0) return;
  let start = addresses[0]!;
  let length = lengths[0]!;
  let end = start + BLOCK_SIZE_V4[length]! - 1;
  /** The current range is one input prefix: written as is, no split needed. */
  let single = true;
  for (let i = 1; i < n; i++) {
    const s = addresses[i]!;
    const l = lengths[i]!;
    if (s <= end + 1) {
      const e = s + BLOCK_SIZE_V4[l]! - 1;
      if (e > end) {
        end = e;
        single = false;
      }
    } else {
      if (single) out.push(start, length);
      else splitIpv4(start, end, out);
      start = s;
      length = l;
      end = s + BLOCK_SIZE_V4[l]! - 1;
      single = true;
    }
  }
  if (single) out.push(start, length);
  else splitIpv4(start, end, out);
}

/** Writes the inclusive range [start, end] as its largest aligned blocks, left to right. */
function splitIpv4(start: number, end: number, out: Ipv4Builder): void {
  let s = start;
  while (s <= end) {
    // The largest block aligned on s: as many host bits as s has trailing zeros...
    let length = s === 0 ? 0 : 32 - (31 - Math.clz32(s & -s));
    // ...but no larger than what is left of the range.
    const left = end - s + 1;
    const fit = left === TWO_32 ? 0 : 32 - (31 - Math.clz32(left));
    if (fit > length) length = fit;
    out.push(s, length);
    s += BLOCK_SIZE_V4[length]!;
  }
}

/** The trailing zero bits of a nonzero 128-bit value: how large a block may start at it. */
function trailingZeros128(x: bigint): number {
  let n = 0;
  let v = x;
  while ((v & 0xffffffffn) === 0n) {
    v >>= 32n;
    n += 32;
  }
  const low = Number(v & 0xffffffffn);
  return n + 31 - Math.clz32(low & -low);
}

/** The same sweep as IPv4, on bigints: IPv6 lists are short, clarity wins over speed. */
export function mergeIpv6(entries: Ipv6Prefixes): Ipv6Prefixes {
  const { addresses, lengths } = sortIpv6(entries);
  const n = addresses.length;
  const outAddresses: bigint[] = [];
  const outLengths: number[] = [];
  const split = (start: bigint, end: bigint): void => {
    let s = start;
    while (s <= end) {
      let length = s === 0n ? 0 : 128 - trailingZeros128(s);
      // The largest block no larger than what is left: 2^(bit length - 1) addresses.
      const fit = 128 - (end - s + 1n).toString(2).length + 1;
      if (fit > length) length = fit;
      outAddresses.push(s);
      outLengths.push(length);
      s += BLOCK_SIZE_V6[length]!;
    }
  };
  if (n > 0) {
    let start = addresses[0]!;
    let length = lengths[0]!;
    let end = start + BLOCK_SIZE_V6[length]! - 1n;
    let single = true;
    for (let i = 1; i < n; i++) {
      const s = addresses[i]!;
      const l = lengths[i]!;
      if (s <= end + 1n) {
        const e = s + BLOCK_SIZE_V6[l]! - 1n;
        if (e > end) {
          end = e;
          single = false;
        }
      } else {
        if (single) {
          outAddresses.push(start);
          outLengths.push(length);
        } else {
          split(start, end);
        }
        start = s;
        length = l;
        end = s + BLOCK_SIZE_V6[l]! - 1n;
        single = true;
      }
    }
    if (single) {
      outAddresses.push(start);
      outLengths.push(length);
    } else {
      split(start, end);
    }
  }
  return { addresses: outAddresses, lengths: Uint8Array.from(outLengths) };
}
