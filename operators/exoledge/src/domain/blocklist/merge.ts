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
import { BLOCK_SIZE_V6, hostMaskWord, ipv6FromWords, wordsOfIpv6 } from './ipv6.ts';
import type { Ipv4Prefixes, Ipv6Prefixes, PrefixList } from './prefix-list.ts';
import { sortIpv4, sortIpv6 } from './sort.ts';

/** The minimal exact cover of `entries`, each family on its own. Pure: the input is not modified. */
export function merge(entries: PrefixList): PrefixList {
  return { ipv4: mergeIpv4(entries.ipv4), ipv6: mergeIpv6(entries.ipv6) };
}

const TWO_32 = 4294967296;

/** `merge` for IPv4 alone. */
export function mergeIpv4(entries: Ipv4Prefixes): Ipv4Prefixes {
  const sorted = sortIpv4(entries);
  const n = sorted.addresses.length;
  // A merge never writes more prefixes than it reads: the prefixes of a range are an
  // exact cover of it, so its minimal cover has no more. So the result fits in the
  // sorted columns, and is written over them when they are the sort's own copy: every
  // write lands below the entry being read. (Fresh columns would cost a page fault per
  // 4 KiB.) The result is a view, not a copy.
  const inPlace = sorted !== entries;
  const addresses = inPlace ? sorted.addresses : new Uint32Array(n);
  const lengths = inPlace ? sorted.lengths : new Uint8Array(n);
  const count = sweepIpv4(sorted, addresses, lengths);
  return { addresses: addresses.subarray(0, count), lengths: lengths.subarray(0, count) };
}

/**
 * Joins sorted prefixes into disjoint ranges and writes each as its largest aligned
 * blocks into `outAddresses` and `outLengths`; returns how many it wrote.
 */
function sweepIpv4(sorted: Ipv4Prefixes, outAddresses: Uint32Array, outLengths: Uint8Array): number {
  const { addresses, lengths } = sorted;
  const n = addresses.length;
  if (n === 0) return 0;
  let count = 0;
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
      if (single) {
        outAddresses[count] = start;
        outLengths[count++] = length;
      } else {
        count = splitIpv4(start, end, outAddresses, outLengths, count);
      }
      start = s;
      length = l;
      end = s + BLOCK_SIZE_V4[l]! - 1;
      single = true;
    }
  }
  if (single) {
    outAddresses[count] = start;
    outLengths[count++] = length;
    return count;
  }
  return splitIpv4(start, end, outAddresses, outLengths, count);
}

/**
 * Writes the inclusive range [start, end] as its largest aligned blocks, left to right,
 * from index `at`; returns the index after the last.
 */
function splitIpv4(
  start: number,
  end: number,
  addresses: Uint32Array,
  lengths: Uint8Array,
  at: number,
): number {
  let s = start;
  let k = at;
  while (s <= end) {
    // The largest block aligned on s: as many host bits as s has trailing zeros...
    let length = s === 0 ? 0 : 32 - (31 - Math.clz32(s & -s));
    // ...but no larger than what is left of the range.
    const left = end - s + 1;
    const fit = left === TWO_32 ? 0 : 32 - (31 - Math.clz32(left));
    if (fit > length) length = fit;
    addresses[k] = s;
    lengths[k++] = length;
    s += BLOCK_SIZE_V4[length]!;
  }
  return k;
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

/** Output columns for IPv6, growing as prefixes are written. */
class Ipv6Builder {
  words: Uint32Array;
  lengths: Uint8Array;
  count = 0;

  constructor(capacity: number) {
    this.words = new Uint32Array(4 * capacity);
    this.lengths = new Uint8Array(capacity);
  }

  /** Makes room for one more prefix and returns where its words go. */
  #next(): number {
    if (this.count === this.lengths.length) {
      const words = new Uint32Array(this.words.length * 2);
      words.set(this.words);
      this.words = words;
      const lengths = new Uint8Array(this.lengths.length * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    return 4 * this.count;
  }

  /** Appends the address at `from[at..at+3]`. */
  push(from: Uint32Array, at: number, length: number): void {
    const to = this.#next();
    this.words[to] = from[at]!;
    this.words[to + 1] = from[at + 1]!;
    this.words[to + 2] = from[at + 2]!;
    this.words[to + 3] = from[at + 3]!;
    this.lengths[this.count++] = length;
  }

  pushBigint(address: bigint, length: number): void {
    wordsOfIpv6(address, this.words, this.#next());
    this.lengths[this.count++] = length;
  }

  /** A view: the unwritten tail of the columns was never touched, so it holds no memory. */
  build(): Ipv6Prefixes {
    return { words: this.words.subarray(0, 4 * this.count), lengths: this.lengths.subarray(0, this.count) };
  }
}

/**
 * The range being swept: its start (words 0-3) and its inclusive end (words 4-7), and
 * whether it is still the one prefix it started as.
 */
class Ipv6Range {
  readonly bounds = new Uint32Array(8);
  length = 0;
  single = true;

  /** Starts the range at the prefix at `words[at..at+3]`. */
  open(words: Uint32Array, at: number, length: number): void {
    const b = this.bounds;
    for (let k = 0; k < 4; k++) {
      const w = words[at + k]!;
      b[k] = w;
      b[4 + k] = (w | hostMaskWord(length, k)) >>> 0;
    }
    this.length = length;
    this.single = true;
  }

  /** Whether the prefix starting at `words[at..]` overlaps or touches the range: start <= end + 1. */
  reaches(words: Uint32Array, at: number): boolean {
    const b = this.bounds;
    for (let k = 0; k < 4; k++) {
      const s = words[at + k]!;
      const e = b[4 + k]!;
      if (s < e) return true;
      if (s > e) return this.#follows(words, at);
    }
    return true;
  }

  /** Whether the address at `words[at..]` is end + 1 (it is above end, so end is not the last address). */
  #follows(words: Uint32Array, at: number): boolean {
    const b = this.bounds;
    let carry = 1;
    for (let k = 3; k >= 0; k--) {
      let w = b[4 + k]! + carry;
      carry = w === 4294967296 ? 1 : 0;
      if (carry === 1) w = 0;
      if (words[at + k] !== w) return false;
    }
    return true;
  }

  /** Extends the end to that of the prefix at `words[at..]`, if it reaches further. */
  extend(words: Uint32Array, at: number, length: number): void {
    const b = this.bounds;
    for (let k = 0; k < 4; k++) {
      const e = (words[at + k]! | hostMaskWord(length, k)) >>> 0;
      if (e < b[4 + k]!) return;
      if (e > b[4 + k]!) {
        for (let j = k; j < 4; j++) b[4 + j] = (words[at + j]! | hostMaskWord(length, j)) >>> 0;
        this.single = false;
        return;
      }
    }
  }

  /** Writes the range as its largest aligned blocks. */
  write(out: Ipv6Builder): void {
    if (this.single) {
      out.push(this.bounds, 0, this.length);
      return;
    }
    // Rare enough (ranges of several prefixes) to do on bigints, as written in the RFCs.
    let s = ipv6FromWords(this.bounds, 0);
    const end = ipv6FromWords(this.bounds, 4);
    while (s <= end) {
      let length = s === 0n ? 0 : 128 - trailingZeros128(s);
      // The largest block no larger than what is left: 2^(bit length - 1) addresses.
      const fit = 128 - (end - s + 1n).toString(2).length + 1;
      if (fit > length) length = fit;
      out.pushBigint(s, length);
      s += BLOCK_SIZE_V6[length]!;
    }
  }
}

/** The same sweep as IPv4, on the four words of each address. */
export function mergeIpv6(entries: Ipv6Prefixes): Ipv6Prefixes {
  const { words, lengths } = sortIpv6(entries);
  const n = lengths.length;
  const out = new Ipv6Builder(Math.max(16, n));
  if (n === 0) return out.build();
  const range = new Ipv6Range();
  range.open(words, 0, lengths[0]!);
  for (let i = 1; i < n; i++) {
    if (range.reaches(words, 4 * i)) {
      range.extend(words, 4 * i, lengths[i]!);
    } else {
      range.write(out);
      range.open(words, 4 * i, lengths[i]!);
    }
  }
  range.write(out);
  return out.build();
}
