/**
 * Sorting prefixes by address, the costliest step of a merge after reading. IPv4 is a
 * radix sort: one pass scatters the entries into 65,536 buckets by their top 16 bits,
 * straight into the result; each bucket, small enough to stay in cache, is then sorted
 * on its low 16 bits (insertion for a few entries, two 8-bit counting passes through a
 * scratch the size of the largest bucket otherwise). Linear, no comparator calls, the
 * length column travelling along. An earlier two-pass LSD sort needed a second pair of
 * full-size arrays; on a list of three million lone addresses that fresh memory (a page
 * fault per 4 KiB on first touch) cost more than the sorting. IPv6 does the same on its
 * top 16 bits, then sorts each bucket on its other 112 bits (insertion, or MSD byte
 * passes skipping the bytes the bucket shares): a comparison sort of bigints took a
 * third of a second for 200,000 addresses, a global LSD over an index 60 ms.
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

/**
 * The prefixes ordered by address (ties in any order): new arrays, or the input itself
 * when it is sorted already. The input is not modified. As for IPv4, one pass scatters
 * the entries into 65,536 buckets by their top 16 bits, straight into the result; each
 * bucket is then sorted in place on its other 112 bits, by insertion when small, else by
 * MSD byte passes through a scratch the size of the largest bucket, skipping the bytes
 * the whole bucket shares (a site's /48, the zeros of a /64). A bucket stays in cache;
 * the earlier global LSD over an index jumped across the whole array sixteen times.
 */
export function sortIpv6(input: Ipv6Prefixes): Ipv6Prefixes {
  const { words, lengths } = input;
  const n = lengths.length;
  if (ipv6Sorted(words, n)) return input;
  const starts = new Uint32Array(DIGIT + 1);
  for (let i = 0; i < n; i++) starts[words[4 * i]! >>> 16]!++;
  toOffsets(starts);
  starts[DIGIT] = n;
  const outWords = new Uint32Array(4 * n);
  const outLengths = new Uint8Array(n);
  scatterHighIpv6(words, lengths, outWords, outLengths, starts.slice(0, DIGIT));
  let largest = 0;
  for (let d = 0; d < DIGIT; d++) largest = Math.max(largest, starts[d + 1]! - starts[d]!);
  if (largest <= 1) return { words: outWords, lengths: outLengths };
  const scratchWords = new Uint32Array(4 * largest);
  const scratchLengths = new Uint8Array(largest);
  const counts = new Uint32Array(16 * 257);
  for (let d = 0; d < DIGIT; d++) {
    const from = starts[d]!;
    const to = starts[d + 1]!;
    if (to - from <= 1) continue;
    if (to - from <= INSERTION_MAX) insertionSortIpv6(outWords, outLengths, from, to);
    else msdIpv6(outWords, outLengths, from, to, 2, scratchWords, scratchLengths, counts);
  }
  return { words: outWords, lengths: outLengths };
}

/** Moves each entry (four words and a length) to the next free slot of its top-16-bit bucket. */
function scatterHighIpv6(
  fromWords: Uint32Array,
  fromLengths: Uint8Array,
  toWords: Uint32Array,
  toLengths: Uint8Array,
  next: Uint32Array,
): void {
  for (let i = 0; i < fromLengths.length; i++) {
    const w = 4 * i;
    const at = next[fromWords[w]! >>> 16]!++;
    const t = 4 * at;
    toWords[t] = fromWords[w]!;
    toWords[t + 1] = fromWords[w + 1]!;
    toWords[t + 2] = fromWords[w + 2]!;
    toWords[t + 3] = fromWords[w + 3]!;
    toLengths[at] = fromLengths[i]!;
  }
}

/** Whether the address at `words[x..x+3]` sorts after the address (w0, w1, w2, w3). */
function ipv6After(words: Uint32Array, x: number, w0: number, w1: number, w2: number, w3: number): boolean {
  const a0 = words[x]!;
  if (a0 !== w0) return a0 > w0;
  const a1 = words[x + 1]!;
  if (a1 !== w1) return a1 > w1;
  const a2 = words[x + 2]!;
  if (a2 !== w2) return a2 > w2;
  return words[x + 3]! > w3;
}

/** Stable: an entry moves only past addresses strictly after it. */
function insertionSortIpv6(words: Uint32Array, lengths: Uint8Array, from: number, to: number): void {
  for (let i = from + 1; i < to; i++) {
    const w0 = words[4 * i]!;
    const w1 = words[4 * i + 1]!;
    const w2 = words[4 * i + 2]!;
    const w3 = words[4 * i + 3]!;
    const l = lengths[i]!;
    let j = i - 1;
    while (j >= from && ipv6After(words, 4 * j, w0, w1, w2, w3)) {
      const x = 4 * j;
      words[x + 4] = words[x]!;
      words[x + 5] = words[x + 1]!;
      words[x + 6] = words[x + 2]!;
      words[x + 7] = words[x + 3]!;
      lengths[j + 1] = lengths[j]!;
      j--;
    }
    const t = 4 * (j + 1);
    words[t] = w0;
    words[t + 1] = w1;
    words[t + 2] = w2;
    words[t + 3] = w3;
    lengths[j + 1] = l;
  }
}

/**
 * Stable MSD byte passes over bucket [from, to), from byte `digit` (0 is the top byte):
 * bytes the whole range shares are skipped, the first that differs splits the range into
 * up to 256 through the scratch, and each part is sorted the same way from the next
 * byte, by insertion once small. Lone addresses under a site's /64 split into parts of
 * one or two after one or two passes, where LSD would make ten.
 */
function msdIpv6(
  words: Uint32Array,
  lengths: Uint8Array,
  from: number,
  to: number,
  digit: number,
  scratchWords: Uint32Array,
  scratchLengths: Uint8Array,
  counts: Uint32Array,
): void {
  const size = to - from;
  if (size <= INSERTION_MAX) {
    insertionSortIpv6(words, lengths, from, to);
    return;
  }
  // One row of 257 per byte: a part's counts survive while its sub-parts are sorted.
  for (let d = digit; d < 16; d++) {
    const k = d >> 2;
    const shift = (3 - (d & 3)) * 8;
    const row = d * 257;
    counts.fill(0, row, row + 257);
    for (let i = from; i < to; i++) counts[row + 1 + ((words[4 * i + k]! >>> shift) & 255)]!++;
    if (counts.subarray(row + 1, row + 257).includes(size)) continue;
    // counts[row + b] becomes where part b starts; counts[row + 256] is the end.
    for (let v = 0; v < 256; v++) counts[row + v + 1]! += counts[row + v]!;
    for (let i = from; i < to; i++) {
      const s = 4 * i;
      const at = counts[row + ((words[s + k]! >>> shift) & 255)]!++;
      const t = 4 * at;
      scratchWords[t] = words[s]!;
      scratchWords[t + 1] = words[s + 1]!;
      scratchWords[t + 2] = words[s + 2]!;
      scratchWords[t + 3] = words[s + 3]!;
      scratchLengths[at] = lengths[i]!;
    }
    words.set(scratchWords.subarray(0, 4 * size), 4 * from);
    lengths.set(scratchLengths.subarray(0, size), from);
    // After the scatter counts[row + v] is where part v ends, so part v is
    // [counts[row + v - 1], counts[row + v]) with the first part starting at 0.
    let start = 0;
    for (let v = 0; v < 256; v++) {
      const end = counts[row + v]!;
      if (end - start > 1 && d < 15) {
        msdIpv6(words, lengths, from + start, from + end, d + 1, scratchWords, scratchLengths, counts);
      }
      start = end;
    }
    return;
  }
}
