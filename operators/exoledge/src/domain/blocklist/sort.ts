/**
 * Sorting prefixes by address, the costliest step of a merge after reading. IPv4 is a
 * radix sort: one pass scatters the entries into 65,536 buckets by their top 16 bits,
 * straight into the result; each bucket, small enough to stay in cache, is then sorted
 * on its low 16 bits (insertion for a few entries, two 8-bit counting passes through a
 * scratch the size of the largest bucket otherwise). Linear, no comparator calls, the
 * length column travelling along. An earlier two-pass LSD sort needed a second pair of
 * full-size arrays; on a list of three million lone addresses that fresh memory (a page
 * fault per 4 KiB on first touch) cost more than the sorting. IPv6 uses LSD on its four
 * words, byte by byte over an index, skipping the bytes every address shares: a
 * comparison sort of bigints took a third of a second for 200,000 addresses.
 */
import type { Ipv4Prefixes, Ipv6Prefixes } from './prefix-list.ts';

const DIGIT = 1 << 16;

/** Buckets up to this size are sorted by insertion: fewer moves than two counting passes. */
const INSERTION_MAX = 32;

/**
 * The prefixes ordered by address (ties in any order): new arrays, or the input itself
 * when it is sorted already (many published lists are; nobody writes to these arrays, so
 * no copy). The input is not modified. Each step is its own small function: V8
 * optimises a small loop sooner.
 */
export function sortIpv4(input: Ipv4Prefixes): Ipv4Prefixes {
  const { addresses, lengths } = input;
  const n = addresses.length;
  const starts = new Uint32Array(DIGIT + 1);
  if (countHigh(addresses, starts)) return input;
  toOffsets(starts);
  starts[DIGIT] = n;
  const outAddresses = new Uint32Array(n);
  const outLengths = new Uint8Array(n);
  scatterHigh(addresses, lengths, outAddresses, outLengths, starts.slice(0, DIGIT));
  sortBuckets(outAddresses, outLengths, starts);
  return { addresses: outAddresses, lengths: outLengths };
}

/** Counts the top 16 bits of every address; returns whether the addresses are sorted already. */
function countHigh(addresses: Uint32Array, counts: Uint32Array): boolean {
  let sorted = true;
  let previous = 0;
  for (let i = 0; i < addresses.length; i++) {
    const a = addresses[i]!;
    counts[a >>> 16]!++;
    if (a < previous) sorted = false;
    previous = a;
  }
  return sorted;
}

/** Moves each entry to the next free slot of its top-16-bit bucket. */
function scatterHigh(
  fromAddresses: Uint32Array,
  fromLengths: Uint8Array,
  toAddresses: Uint32Array,
  toLengths: Uint8Array,
  next: Uint32Array,
): void {
  for (let i = 0; i < fromAddresses.length; i++) {
    const a = fromAddresses[i]!;
    const at = next[a >>> 16]!++;
    toAddresses[at] = a;
    toLengths[at] = fromLengths[i]!;
  }
}

/** Sorts every bucket [starts[d], starts[d + 1]) on the low 16 bits, in place. */
function sortBuckets(addresses: Uint32Array, lengths: Uint8Array, starts: Uint32Array): void {
  let largest = 0;
  for (let d = 0; d < DIGIT; d++) largest = Math.max(largest, starts[d + 1]! - starts[d]!);
  if (largest <= 1) return;
  const scratchAddresses = new Uint32Array(largest);
  const scratchLengths = new Uint8Array(largest);
  const counts = new Uint32Array(512);
  for (let d = 0; d < DIGIT; d++) {
    const from = starts[d]!;
    const to = starts[d + 1]!;
    if (to - from <= 1) continue;
    if (to - from <= INSERTION_MAX) insertionSort(addresses, lengths, from, to);
    else countingSort(addresses, lengths, from, to, scratchAddresses, scratchLengths, counts);
  }
}

function insertionSort(addresses: Uint32Array, lengths: Uint8Array, from: number, to: number): void {
  for (let i = from + 1; i < to; i++) {
    const a = addresses[i]!;
    const l = lengths[i]!;
    let j = i - 1;
    while (j >= from && addresses[j]! > a) {
      addresses[j + 1] = addresses[j]!;
      lengths[j + 1] = lengths[j]!;
      j--;
    }
    addresses[j + 1] = a;
    lengths[j + 1] = l;
  }
}

/** Two stable 8-bit counting passes on bits 0-7 then 8-15: to the scratch and back. */
function countingSort(
  addresses: Uint32Array,
  lengths: Uint8Array,
  from: number,
  to: number,
  scratchAddresses: Uint32Array,
  scratchLengths: Uint8Array,
  counts: Uint32Array,
): void {
  counts.fill(0);
  for (let i = from; i < to; i++) {
    const a = addresses[i]!;
    counts[a & 255]!++;
    counts[256 + ((a >>> 8) & 255)]!++;
  }
  let low = 0;
  let high = from;
  for (let b = 0; b < 256; b++) {
    const c = counts[b]!;
    counts[b] = low;
    low += c;
    const h = counts[256 + b]!;
    counts[256 + b] = high;
    high += h;
  }
  for (let i = from; i < to; i++) {
    const a = addresses[i]!;
    const at = counts[a & 255]!++;
    scratchAddresses[at] = a;
    scratchLengths[at] = lengths[i]!;
  }
  for (let i = 0; i < to - from; i++) {
    const a = scratchAddresses[i]!;
    const at = counts[256 + ((a >>> 8) & 255)]!++;
    addresses[at] = a;
    lengths[at] = scratchLengths[i]!;
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

/** Whether the addresses at words[4i..] ascend (ties allowed). */
function ipv6Sorted(words: Uint32Array, n: number): boolean {
  for (let i = 1; i < n; i++) {
    const a = 4 * (i - 1);
    const b = 4 * i;
    for (let k = 0; k < 4; k++) {
      const x = words[a + k]!;
      const y = words[b + k]!;
      if (x < y) break;
      if (x > y) return false;
    }
  }
  return true;
}

/** How many bytes an IPv6 address has: the radix sort's digits, least significant first. */
const V6_DIGITS = 16;

/**
 * The prefixes ordered by address (ties in any order): new arrays, or the input itself
 * when it is sorted already. The input is not modified.
 */
export function sortIpv6(input: Ipv6Prefixes): Ipv6Prefixes {
  const { words, lengths } = input;
  const n = lengths.length;
  if (ipv6Sorted(words, n)) return input;
  // Digit d is byte d & 3 (from the low end) of word 3 - (d >> 2).
  const counts = new Uint32Array(V6_DIGITS * 256);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < 4; k++) {
      const w = words[4 * i + k]!;
      const base = (3 - k) * 1024;
      counts[base + (w & 255)]!++;
      counts[base + 256 + ((w >>> 8) & 255)]!++;
      counts[base + 512 + ((w >>> 16) & 255)]!++;
      counts[base + 768 + (w >>> 24)]!++;
    }
  }
  let order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let next = new Uint32Array(n);
  for (let d = 0; d < V6_DIGITS; d++) {
    const offsets = counts.subarray(d * 256, d * 256 + 256);
    // A byte every address shares (the /32 of a site, the zeros of a /64) orders nothing.
    if (offsets.includes(n)) continue;
    toOffsets(offsets);
    scatterIndex(words, order, next, offsets, 3 - (d >> 2), (d & 3) * 8);
    [order, next] = [next, order];
  }
  const sortedWords = new Uint32Array(4 * n);
  const sortedLengths = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const from = order[i]!;
    sortedWords[4 * i] = words[4 * from]!;
    sortedWords[4 * i + 1] = words[4 * from + 1]!;
    sortedWords[4 * i + 2] = words[4 * from + 2]!;
    sortedWords[4 * i + 3] = words[4 * from + 3]!;
    sortedLengths[i] = lengths[from]!;
  }
  return { words: sortedWords, lengths: sortedLengths };
}

/** One radix pass over an index: the byte at `shift` of word `k` of each address. */
function scatterIndex(
  words: Uint32Array,
  from: Uint32Array,
  to: Uint32Array,
  offsets: Uint32Array,
  k: number,
  shift: number,
): void {
  for (let i = 0; i < from.length; i++) {
    const index = from[i]!;
    to[offsets[(words[4 * index + k]! >>> shift) & 255]!++] = index;
  }
}
