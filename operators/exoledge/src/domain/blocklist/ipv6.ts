/**
 * IPv6 text, both ways. Reading follows RFC 4291 section 2.2 and nothing looser: eight
 * groups of one to four hex digits, at most one `::` standing for one or more zero
 * groups, an optional dotted IPv4 address as the last 32 bits (with the same strict
 * rules as a plain IPv4 address). No zone index (`%eth0`): a zone names a link on one
 * host, it has no meaning in a list shared between machines. Writing follows RFC 5952
 * section 4: lower case, no leading zeros, the longest run of two or more zero groups
 * (the first on a tie) written `::`, a single zero group never. Section 5's mixed
 * `::ffff:192.0.2.1` form never arises: the parser reads IPv4-mapped addresses as the
 * IPv4 addresses they are, so they are written as IPv4 and never reach this writer.
 *
 * Lists hold addresses as four 32-bit words each, most significant first (see
 * `Ipv6Prefixes`): a bigint per address made reading, sorting and writing a list of
 * lone addresses several times slower. Bigints remain at the edges, for single values.
 */

const COLON = 0x3a;
const DOT = 0x2e;
const D0 = 0x30;
const D9 = 0x39;

/** The value of a hex digit byte, or -1. */
export function hexValue(c: number): number {
  if (c >= D0 && c <= D9) return c - D0;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/**
 * The strict dotted-quad value of bytes[start, end), or a message saying why not. Shared
 * by the IPv6 reader for its embedded form; the line parser has its own inlined copy of
 * the same rules on its hot path.
 */
export function readDottedQuad(bytes: Uint8Array, start: number, end: number): number | string {
  let value = 0;
  let i = start;
  for (let part = 0; part < 4; part++) {
    if (part > 0) {
      if (i >= end || bytes[i] !== DOT) return 'an IPv4 address has exactly four parts';
      i++;
    }
    const first = i;
    let octet = 0;
    while (i < end) {
      const c = bytes[i]!;
      if (c < D0 || c > D9) break;
      octet = octet * 10 + (c - D0);
      i++;
    }
    if (i === first) return 'an IPv4 part is empty or not decimal';
    if (i - first > 1 && bytes[first] === D0) return 'an IPv4 part has a leading zero';
    if (octet > 255) return 'an IPv4 part is above 255';
    value = value * 256 + octet;
  }
  if (i !== end) return 'an IPv4 address has exactly four parts';
  return value;
}

/**
 * Reads the IPv6 address in bytes[start, end) into eight 16-bit groups in `out`.
 * Returns undefined on success, or a message saying what RFC 4291 does not allow.
 */
export function readIpv6Groups(
  bytes: Uint8Array,
  start: number,
  end: number,
  out: Uint16Array,
): string | undefined {
  let i = start;
  let count = 0;
  /** Index in `out` where the groups after `::` begin, or -1 without `::`. */
  let gap = -1;
  if (i < end && bytes[i] === COLON) {
    if (bytes[i + 1] !== COLON || i + 1 >= end) return 'a single leading colon';
    gap = 0;
    i += 2;
  }
  while (i < end) {
    const groupStart = i;
    let value = 0;
    let h = hexValue(bytes[i]!);
    while (h >= 0) {
      value = value * 16 + h;
      i++;
      h = i < end ? hexValue(bytes[i]!) : -1;
    }
    if (i < end && bytes[i] === DOT) {
      // The last 32 bits as a dotted quad: it must close the address.
      if (count > 6) return 'too many groups before the embedded IPv4 address';
      const v4 = readDottedQuad(bytes, groupStart, end);
      if (typeof v4 === 'string') return `${v4} (embedded IPv4)`;
      out[count++] = v4 >>> 16;
      out[count++] = v4 & 0xffff;
      i = end;
      break;
    }
    if (i === groupStart) {
      if (i < end && bytes[i] === 0x25) return 'a zone index (%) has no meaning in a shared list';
      return i < end && bytes[i] !== COLON ? 'a character that is not a hex digit' : 'an empty group';
    }
    if (i - groupStart > 4) return 'a group of more than four hex digits';
    if (count === 8) return 'more than eight groups';
    out[count++] = value;
    if (i === end) break;
    if (bytes[i] !== COLON) {
      return bytes[i] === 0x25
        ? 'a zone index (%) has no meaning in a shared list'
        : 'a character that is not a hex digit';
    }
    i++;
    if (i < end && bytes[i] === COLON) {
      if (gap >= 0) return 'two "::"';
      gap = count;
      i++;
    } else if (i === end) {
      return 'a trailing single colon';
    }
  }
  if (gap < 0) {
    if (count !== 8) return 'fewer than eight groups and no "::"';
    return undefined;
  }
  if (count > 7) return '"::" with eight groups besides';
  // Move the groups after the gap to the end and zero the middle.
  const tail = count - gap;
  for (let k = 0; k < tail; k++) out[7 - k] = out[count - 1 - k]!;
  for (let k = gap; k < 8 - tail; k++) out[k] = 0;
  return undefined;
}

/** Writes the four words of eight groups at `words[at..at+3]`. */
export function wordsFromGroups(g: Uint16Array, words: Uint32Array, at: number): void {
  words[at] = g[0]! * 65536 + g[1]!;
  words[at + 1] = g[2]! * 65536 + g[3]!;
  words[at + 2] = g[4]! * 65536 + g[5]!;
  words[at + 3] = g[6]! * 65536 + g[7]!;
}

/** Writes the eight groups of the address at `words[at..at+3]` into `out`. */
export function groupsOfWords(words: Uint32Array, at: number, out: Uint16Array): void {
  for (let k = 0; k < 4; k++) {
    const w = words[at + k]!;
    out[2 * k] = w >>> 16;
    out[2 * k + 1] = w & 0xffff;
  }
}

/** The 128-bit value of the address at `words[at..at+3]`. */
export function ipv6FromWords(words: Uint32Array, at: number): bigint {
  return (
    (BigInt(words[at]!) << 96n) |
    (BigInt(words[at + 1]!) << 64n) |
    (BigInt(words[at + 2]!) << 32n) |
    BigInt(words[at + 3]!)
  );
}

/** Writes the four words of `address` (0 to 2^128 - 1) at `words[at..at+3]`. */
export function wordsOfIpv6(address: bigint, words: Uint32Array, at: number): void {
  words[at] = Number((address >> 96n) & 0xffffffffn);
  words[at + 1] = Number((address >> 64n) & 0xffffffffn);
  words[at + 2] = Number((address >> 32n) & 0xffffffffn);
  words[at + 3] = Number(address & 0xffffffffn);
}

/** The host-bit mask of word `k` (0 most significant) in a /length. */
export function hostMaskWord(length: number, k: number): number {
  const networkBits = length - 32 * k;
  if (networkBits >= 32) return 0;
  if (networkBits <= 0) return 0xffffffff;
  return 0xffffffff >>> networkBits;
}

/** Clears the host bits of the address at `words[at..at+3]`; returns whether any was set. */
export function clearHostBits(words: Uint32Array, at: number, length: number): boolean {
  let had = false;
  for (let k = 0; k < 4; k++) {
    const mask = hostMaskWord(length, k);
    const w = words[at + k]!;
    if ((w & mask) !== 0) {
      had = true;
      words[at + k] = (w & ~mask) >>> 0;
    }
  }
  return had;
}

const scratch = new Uint16Array(8);
const scratchWords = new Uint32Array(4);

/**
 * Where `::` goes in `groups`: the first longest run of two or more zero groups, as
 * `(start + 1) * 16 + length`, or 0 for none; a number, so that writing a line of a
 * list allocates nothing.
 */
function zeroRun(groups: Uint16Array): number {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  return best < 0 ? 0 : (best + 1) * 16 + bestLength;
}

/** RFC 5952 text of an IPv6 address. */
export function formatIpv6(address: bigint): string {
  wordsOfIpv6(address, scratchWords, 0);
  return formatIpv6Words(scratchWords, 0);
}

/** RFC 5952 text of the address at `words[at..at+3]`. */
export function formatIpv6Words(words: Uint32Array, at: number): string {
  groupsOfWords(words, at, scratch);
  const run = zeroRun(scratch);
  const best = (run >> 4) - 1;
  const bestLength = run & 15;
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      text += '::';
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== best + bestLength) text += ':';
    text += scratch[i]!.toString(16);
  }
  return text;
}

/** The longest canonical IPv6 line: eight groups of four, seven colons, `/128`, newline. */
export const MAX_IPV6_LINE = 44;

const HEX = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/**
 * Writes the RFC 5952 text of the address at `words[at..at+3]` and `/length` at `pos` in
 * `out` and returns the position after it: the same text as `formatIpv6Words`, without
 * building a string per line.
 */
export function writeIpv6Prefix(
  out: Uint8Array,
  pos: number,
  words: Uint32Array,
  at: number,
  length: number,
): number {
  const g8 = scratch;
  groupsOfWords(words, at, g8);
  const run = zeroRun(g8);
  const best = (run >> 4) - 1;
  const after = best + (run & 15);
  let p = pos;
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      out[p++] = 0x3a;
      out[p++] = 0x3a;
      i = after - 1;
      continue;
    }
    if (i > 0 && i !== after) out[p++] = 0x3a;
    const g = g8[i]!;
    if (g >= 0x1000) out[p++] = HEX[g >> 12]!;
    if (g >= 0x100) out[p++] = HEX[(g >> 8) & 15]!;
    if (g >= 0x10) out[p++] = HEX[(g >> 4) & 15]!;
    out[p++] = HEX[g & 15]!;
  }
  out[p++] = 0x2f;
  if (length >= 100) out[p++] = 0x31;
  if (length >= 10) out[p++] = 0x30 + (((length / 10) | 0) % 10);
  out[p++] = 0x30 + (length % 10);
  return p;
}

/** `BLOCK_SIZE_V6[len]` is the number of addresses in a /len: 2^(128 - len). */
export const BLOCK_SIZE_V6: readonly bigint[] = Array.from(
  { length: 129 },
  (_, len) => 1n << BigInt(128 - len),
);
