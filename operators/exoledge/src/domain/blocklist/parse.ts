/**
 * Reading a blocklist: one IPv4 or IPv6 address or prefix per line, `#` and `;` comments
 * (whole-line or after the entry: `1.10.16.0/20 ; SBL256894`), blank lines, CRLF, spaces
 * and tabs around the entry, an optional UTF-8 byte order mark.
 *
 * The rule that matters: a line we cannot read exactly is refused, counted and reported
 * with its number, never turned into some other address. `inet_aton` reads `1.2.3` as
 * 1.2.0.3 and `010.0.0.1` as 8.0.0.1; FireHOL's iprange reads `2001:db8::1` as 0.0.7.209
 * and `1.2.3.4:80` as 1.2.3.4. On a blocklist each of those guesses blocks someone the
 * list never named. Host bits set in a prefix (`1.2.3.77/24`) are the one thing fixed
 * up, because the intent is unambiguous: the prefix is read as 1.2.3.0/24 and the fix is
 * reported.
 *
 * Two more rules shape what an entry is. An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`,
 * or a mapped prefix of /96 or longer, `::ffff:1.2.3.0/120`) is the IPv4 address or
 * prefix it maps (length - 96): the same host, so the same entry. And with
 * `shortestPrefix`, a prefix shorter than the floor (`0.0.0.0/0`) is refused and
 * reported: well-formed, but denying it would deny the world.
 *
 * Speed: three million lines are read from the bytes as they are, with no string per
 * line, no regular expression and no object per entry; IPv4 entries go straight into
 * typed arrays, plain `a.b.c.d` lines through a fast path; IPv6 entries as four 32-bit
 * words each. Only reported lines allocate. `BlocklistParser` takes the input piece by piece,
 * so that nobody needs to hold a whole list in memory to read it.
 */
import { formatIpv4, MASK_V4 } from './ipv4.ts';
import { clearHostBits, formatIpv6Words, hexValue, readIpv6Groups, wordsFromGroups } from './ipv6.ts';
import type { PrefixList } from './prefix-list.ts';

/** Why a line was refused. */
export const MalformedReason = {
  /** The line starts with something no address starts with: a word, a hostname, a bracket, a dash. */
  NotAnAddress: 'NotAnAddress',
  /**
   * An IPv4 address must be exactly four decimal parts separated by dots. `1.2.3` and
   * `16909060` are refused (inet_aton reads them as 1.2.0.3 and 1.2.3.4), as are
   * `1.2.3.4.5`, `1..2.3` and `0x7f.0.0.1`.
   */
  Ipv4Syntax: 'Ipv4Syntax',
  /**
   * A decimal part written with a leading zero: `010.0.0.1` is octal 8 to inet_aton and
   * decimal 10 to other readers, so it names no address for sure. Prefix lengths too
   * (`/024`), as Go's netip refuses them and Cilium reads prefixes with it.
   */
  LeadingZero: 'LeadingZero',
  /** An IPv4 part above 255. */
  OctetOutOfRange: 'OctetOutOfRange',
  /** The prefix length after `/` is missing, not decimal, or above 32 (IPv4) or 128 (IPv6). */
  PrefixLength: 'PrefixLength',
  /**
   * Something after the entry that is not a comment: a port (`1.2.3.4:80`), a second
   * address, a range (`1.2.3.4-1.2.3.9`), a second `/`. We do not guess which part the
   * author meant.
   */
  TrailingText: 'TrailingText',
  /** IPv6 text that RFC 4291 does not allow: two `::`, nine groups, five hex digits, a zone index. */
  Ipv6Syntax: 'Ipv6Syntax',
} as const;
export type MalformedReason = (typeof MalformedReason)[keyof typeof MalformedReason];

/** A refused line. */
export interface MalformedLine {
  /** 1-based line number in the input. */
  readonly line: number;
  readonly reason: MalformedReason;
  /** What exactly is wrong, for a human. */
  readonly message: string;
  /** The line as written, trimmed, cut at `MAX_REPORTED_TEXT` characters. */
  readonly text: string;
}

/** A prefix whose host bits were set, read as its network. */
export interface NormalisedLine {
  readonly line: number;
  /** The entry as written: `1.2.3.77/24`. */
  readonly text: string;
  /** The prefix it was read as: `1.2.3.0/24`. */
  readonly prefix: string;
}

/** A well-formed entry refused because its prefix is shorter than the floor. */
export interface RefusedLine {
  readonly line: number;
  /** The line as written, trimmed, cut at `MAX_REPORTED_TEXT` characters. */
  readonly text: string;
  /** The prefix it reads as: `0.0.0.0/0`, `1.0.0.0/7`. */
  readonly prefix: string;
}

/** The shortest prefix length accepted in each family; shorter ones are refused. */
export interface ShortestPrefix {
  readonly ipv4: number;
  readonly ipv6: number;
}

/**
 * The operator's floor: nobody blocks a /7 of IPv4 or a /31 of IPv6 on purpose, and a
 * stray `0.0.0.0/0` or `::/0` in a list would, with `enforce`, deny the whole world.
 */
export const DEFAULT_SHORTEST_PREFIX: ShortestPrefix = { ipv4: 8, ipv6: 32 };

export interface ParseOptions {
  /**
   * How many malformed, refused and normalised lines to describe one by one (the counts
   * are always exact). A list of three million garbage lines must not cost three million
   * report objects. Default `DEFAULT_DETAIL_LIMIT`.
   */
  readonly detailLimit?: number;
  /**
   * Entries with a prefix shorter than this (`0.0.0.0/0` under a /8 floor) are not
   * entries: they are counted in `tooShort` and described in `ParseResult.tooShort`,
   * never in `entries`. They are well-formed, so they are not `malformed`. Absent:
   * nothing is refused for its length. An IPv4-mapped IPv6 entry is held to the IPv4
   * floor, as the IPv4 prefix it is read as.
   */
  readonly shortestPrefix?: ShortestPrefix;
}

export const DEFAULT_DETAIL_LIMIT = 1000;
/** Reported lines are cut at this many characters: a report names the line, it does not copy it. */
export const MAX_REPORTED_TEXT = 120;

export interface ParseCounts {
  /** Lines in the input; a final line without a newline counts, an empty end does not. */
  readonly lines: number;
  readonly blank: number;
  /** Lines holding only a comment. */
  readonly comments: number;
  readonly ipv4: number;
  readonly ipv6: number;
  readonly malformed: number;
  /**
   * Well-formed entries refused for a prefix shorter than `shortestPrefix`. Every line
   * is exactly one of blank, comments, ipv4, ipv6, malformed, tooShort.
   */
  readonly tooShort: number;
  /** Entries whose host bits were set and cleared (refused ones not included). */
  readonly normalised: number;
}

export interface ParseResult {
  /** Every entry read, in file order, host bits cleared; duplicates and overlaps kept. */
  readonly entries: PrefixList;
  readonly counts: ParseCounts;
  /** The first `detailLimit` refused lines, in file order. */
  readonly malformed: readonly MalformedLine[];
  /** The first `detailLimit` entries refused for a too-short prefix, in file order. */
  readonly tooShort: readonly RefusedLine[];
  /** The first `detailLimit` normalised prefixes, in file order. */
  readonly normalised: readonly NormalisedLine[];
}

const LF = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const SP = 0x20;
const HASH = 0x23;
const SEMI = 0x3b;
const SLASH = 0x2f;
const DOT = 0x2e;
const COLON = 0x3a;
const D0 = 0x30;
const D9 = 0x39;

/** Ends an entry: a blank, the end of the line, or the start of a comment. */
function endsEntry(c: number): boolean {
  return c === SP || c === TAB || c === CR || c === LF || c === HASH || c === SEMI;
}

function isHexLetter(c: number): boolean {
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66;
}

/**
 * Why a line failed, as small integers while reading; turned into a `MalformedReason`
 * and a message only for the lines that are reported.
 */
const Fail = {
  None: 0,
  NotAnAddress: 1,
  Ipv4PartCount: 2,
  Ipv4EmptyPart: 3,
  LeadingZero: 4,
  OctetOutOfRange: 5,
  PrefixLengthMissing: 6,
  PrefixLengthLeadingZero: 7,
  PrefixLengthTooLong: 8,
  TrailingText: 9,
  Ipv6: 10,
} as const;
type Fail = (typeof Fail)[keyof typeof Fail];

function describeFail(fail: Fail, ipv6Message: string): { reason: MalformedReason; message: string } {
  switch (fail) {
    case Fail.None:
    case Fail.NotAnAddress:
      return { reason: MalformedReason.NotAnAddress, message: 'not an IPv4 or IPv6 address' };
    case Fail.Ipv4PartCount:
      return {
        reason: MalformedReason.Ipv4Syntax,
        message: 'an IPv4 address has exactly four decimal parts (no inet_aton shorthand)',
      };
    case Fail.Ipv4EmptyPart:
      return { reason: MalformedReason.Ipv4Syntax, message: 'an IPv4 part is empty or not decimal' };
    case Fail.LeadingZero:
      return {
        reason: MalformedReason.LeadingZero,
        message: 'an IPv4 part has a leading zero (octal to inet_aton, decimal elsewhere)',
      };
    case Fail.OctetOutOfRange:
      return { reason: MalformedReason.OctetOutOfRange, message: 'an IPv4 part is above 255' };
    case Fail.PrefixLengthMissing:
      return { reason: MalformedReason.PrefixLength, message: 'no decimal prefix length after "/"' };
    case Fail.PrefixLengthLeadingZero:
      return { reason: MalformedReason.LeadingZero, message: 'the prefix length has a leading zero' };
    case Fail.PrefixLengthTooLong:
      return {
        reason: MalformedReason.PrefixLength,
        message: 'the prefix length is above 32 (IPv4) or 128 (IPv6)',
      };
    case Fail.TrailingText:
      return {
        reason: MalformedReason.TrailingText,
        message: 'text after the entry that is not a comment (a port, a range, a second address)',
      };
    case Fail.Ipv6:
      return { reason: MalformedReason.Ipv6Syntax, message: ipv6Message };
    default:
      return fail satisfies never;
  }
}

function tokenText(bytes: Uint8Array, from: number, to: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from).toString('latin1');
}

/** Everything a parse accumulates across the pieces of its input. */
class ParseState {
  /** The piece being read: the general reader and the reports read from it. */
  bytes: Uint8Array = new Uint8Array(0);
  readonly detailLimit: number;
  v4Addresses: Uint32Array;
  v4Lengths: Uint8Array;
  v4Count = 0;
  v6Words = new Uint32Array(0);
  v6Lengths = new Uint8Array(0);
  v6Count = 0;
  /** The input size if known: the first IPv6 entry sizes the IPv6 columns by it. */
  readonly expectedBytes: number;
  /** Scratch for the IPv6 reader. */
  readonly groups = new Uint16Array(8);
  readonly scratchWords = new Uint32Array(4);
  readonly malformed: MalformedLine[] = [];
  readonly normalised: NormalisedLine[] = [];
  readonly tooShort: RefusedLine[] = [];
  /** The shortest lengths accepted; 0 when nothing is refused for its length. */
  readonly v4Floor: number;
  readonly v6Floor: number;
  line = 0;
  blank = 0;
  comments = 0;
  malformedCount = 0;
  normalisedCount = 0;
  tooShortCount = 0;

  constructor(detailLimit: number, expectedBytes: number, shortest: ShortestPrefix | undefined) {
    this.detailLimit = detailLimit;
    this.expectedBytes = expectedBytes;
    this.v4Floor = shortest?.ipv4 ?? 0;
    this.v6Floor = shortest?.ipv6 ?? 0;
    const capacity = ipv4Bound(expectedBytes);
    this.v4Addresses = new Uint32Array(capacity);
    this.v4Lengths = new Uint8Array(capacity);
  }

  /** Makes room for every IPv4 entry `bytes` more bytes can hold, so the hot loop never checks. */
  reserve(bytes: number): void {
    const needed = this.v4Count + ipv4Bound(bytes);
    if (needed <= this.v4Addresses.length) return;
    const capacity = Math.max(needed, this.v4Addresses.length * 2);
    const addresses = new Uint32Array(capacity);
    addresses.set(this.v4Addresses.subarray(0, this.v4Count));
    this.v4Addresses = addresses;
    const lengths = new Uint8Array(capacity);
    lengths.set(this.v4Lengths.subarray(0, this.v4Count));
    this.v4Lengths = lengths;
  }

  /** Where the next IPv6 entry's words go, making room for it. */
  nextIpv6(): number {
    if (this.v6Count === this.v6Lengths.length) {
      // Sized at once for a list of IPv6 lines of a typical length (growing means
      // copying); untouched pages cost nothing, so a list of mostly IPv4 loses nothing.
      const capacity = Math.max(
        1024,
        this.v6Lengths.length * 2,
        Math.ceil(this.expectedBytes / IPV6_TYPICAL_LINE),
      );
      const words = new Uint32Array(4 * capacity);
      words.set(this.v6Words);
      this.v6Words = words;
      const lengths = new Uint8Array(capacity);
      lengths.set(this.v6Lengths);
      this.v6Lengths = lengths;
    }
    return 4 * this.v6Count;
  }

  normalisedIpv4(line: number, from: number, to: number, network: number, length: number): void {
    this.normalisedCount++;
    if (this.normalised.length < this.detailLimit) {
      this.normalised.push({
        line,
        text: tokenText(this.bytes, from, to),
        prefix: `${formatIpv4(network)}/${length}`,
      });
    }
  }

  /** A well-formed entry under the floor; `prefix` is built only for the lines described. */
  refusedShort(line: number, lineStart: number, prefix: () => string): void {
    this.tooShortCount++;
    if (this.tooShort.length < this.detailLimit) {
      this.tooShort.push({ line, text: lineText(this.bytes, lineStart), prefix: prefix() });
    }
  }

  /**
   * Records an IPv4 entry read by the general reader (plain, or IPv4-mapped IPv6): refused
   * under the floor, else host bits cleared (and reported) and stored.
   */
  ipv4Entry(
    line: number,
    lineStart: number,
    tokenStart: number,
    tokenEnd: number,
    address: number,
    length: number,
  ): void {
    const network = (address & MASK_V4[length]!) >>> 0;
    if (length < this.v4Floor) {
      this.refusedShort(line, lineStart, () => `${formatIpv4(network)}/${length}`);
      return;
    }
    if (network !== address) this.normalisedIpv4(line, tokenStart, tokenEnd, network, length);
    this.v4Addresses[this.v4Count] = network;
    this.v4Lengths[this.v4Count] = length;
    this.v4Count++;
  }

  refused(line: number, lineStart: number, fail: Fail, ipv6Message: string): void {
    this.malformedCount++;
    if (this.malformed.length < this.detailLimit) {
      this.malformed.push({
        line,
        ...describeFail(fail, ipv6Message),
        text: lineText(this.bytes, lineStart),
      });
    }
  }
}

/** A typical IPv6 line with its newline (`2001:db8:85a3::8a2e:370:7334\n` is 29). */
const IPV6_TYPICAL_LINE = 24;

/**
 * How many IPv4 entries `bytes` bytes can hold at most: each takes 8 with its newline
 * (`1.1.1.1\n`). Arrays are sized by it; pages never written to are never touched, so
 * the excess costs no memory.
 */
function ipv4Bound(bytes: number): number {
  return Math.floor((bytes + 1) / 8) + 1;
}

// The report helpers and the readers live outside the classes, so that the hot loop
// stays small: V8 optimises a small loop sooner, and a closure over `bytes` would move
// it into a context object and slow every read.

function lineText(bytes: Uint8Array, from: number): string {
  // Enough bytes for the characters shown (four at most each, and some blanks to trim):
  // a garbage line may be megabytes long.
  const end = Math.min(endOfLine(bytes, from), from + MAX_REPORTED_TEXT * 4 + 64);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + from, end - from)
    .toString('utf8')
    .trim();
  return text.length > MAX_REPORTED_TEXT ? text.slice(0, MAX_REPORTED_TEXT) + '…' : text;
}

/** A copy, where `Buffer#slice` would give a view into a buffer its owner may reuse. */
function copyOf(bytes: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(bytes);
}

/**
 * Reads a blocklist piece by piece as it arrives (file reads, HTTP body chunks), so that
 * nobody has to hold the whole text: push the pieces in order, then `finish`. A line may
 * be split across pieces. Pieces are not kept: a caller may reuse its buffer.
 */
export class BlocklistParser {
  readonly #state: ParseState;
  /**
   * The start of a line whose end has not arrived yet, in copied pieces (pieces are not
   * kept), joined once when the end arrives: joining at every piece would make one long
   * line cost quadratic time.
   */
  #carry: Uint8Array[] = [];
  #started = false;
  #finished = false;

  /** `expectedBytes`: the input size if known, to size the arrays once. */
  constructor(options: ParseOptions & { readonly expectedBytes?: number } = {}) {
    this.#state = new ParseState(
      options.detailLimit ?? DEFAULT_DETAIL_LIMIT,
      options.expectedBytes ?? 0,
      options.shortestPrefix,
    );
  }

  push(piece: Uint8Array): void {
    if (this.#finished) throw new Error('BlocklistParser: push after finish');
    let bytes = piece;
    if (this.#carry.length > 0) {
      const newline = bytes.indexOf(LF);
      if (newline < 0) {
        this.#carry.push(copyOf(bytes));
        return;
      }
      const line = Buffer.concat([...this.#carry, bytes.subarray(0, newline + 1)]);
      this.#carry = [];
      this.#read(line, line.length);
      bytes = bytes.subarray(newline + 1);
    }
    const last = bytes.lastIndexOf(LF);
    if (last >= 0) this.#read(bytes, last + 1);
    if (last + 1 < bytes.length) this.#carry.push(copyOf(bytes.subarray(last + 1)));
  }

  finish(): ParseResult {
    if (this.#finished) throw new Error('BlocklistParser: finish twice');
    // The last line may have no newline: read on its own, its end reads as one.
    if (this.#carry.length > 0) {
      const line = Buffer.concat(this.#carry);
      this.#carry = [];
      this.#read(line, line.length);
    }
    this.#finished = true;
    const state = this.#state;
    return {
      entries: {
        // Views, not copies: the unused tail was never written, so it holds no memory.
        ipv4: {
          addresses: state.v4Addresses.subarray(0, state.v4Count),
          lengths: state.v4Lengths.subarray(0, state.v4Count),
        },
        ipv6: {
          words: state.v6Words.subarray(0, 4 * state.v6Count),
          lengths: state.v6Lengths.subarray(0, state.v6Count),
        },
      },
      counts: {
        lines: state.line,
        blank: state.blank,
        comments: state.comments,
        ipv4: state.v4Count,
        ipv6: state.v6Count,
        malformed: state.malformedCount,
        tooShort: state.tooShortCount,
        normalised: state.normalisedCount,
      },
      malformed: state.malformed,
      tooShort: state.tooShort,
      normalised: state.normalised,
    };
  }

  /** Reads the whole lines in bytes[0, to): `to` ends a line, or the input. */
  #read(bytes: Uint8Array, to: number): void {
    let from = 0;
    if (!this.#started) {
      this.#started = true;
      // A byte order mark is an encoding artefact, not part of the first line.
      if (to >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) from = 3;
    }
    this.#state.reserve(to - from);
    readLines(this.#state, bytes, from, to);
  }
}

/**
 * Reads a whole blocklist. Takes bytes as read from a file or an HTTP body (UTF-8; only
 * ASCII can form an entry), or a string. Pure: the input is not modified.
 */
export function parseBlocklist(input: Uint8Array | string, options: ParseOptions = {}): ParseResult {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const parser = new BlocklistParser({ ...options, expectedBytes: bytes.length });
  parser.push(bytes);
  return parser.finish();
}

/**
 * The hot loop: every line starting in bytes[from, to). Every line ends with a newline
 * before `to`, or at the end of `bytes` (reading past it yields LF), so no read ever
 * runs into the next piece.
 */
function readLines(state: ParseState, bytes: Uint8Array, from: number, to: number): void {
  state.bytes = bytes;
  const { v4Addresses, v4Lengths, v4Floor } = state;
  let v4Count = state.v4Count;
  let line = state.line;
  let i = from;
  while (i < to) {
    line++;
    const newline = readPlainIpv4(bytes, i, v4Addresses, v4Lengths, v4Count, v4Floor);
    if (newline >= 0) {
      v4Count++;
      i = newline + 1;
      continue;
    }
    const v6Newline = readPlainIpv6(bytes, i, state);
    if (v6Newline >= 0) {
      i = v6Newline + 1;
      continue;
    }
    state.v4Count = v4Count;
    i = readLine(state, i, line);
    v4Count = state.v4Count;
  }
  state.v4Count = v4Count;
  state.line = line;
}

/**
 * The fast path, for the shape of nearly every line of a big list: `a.b.c.d` or
 * `a.b.c.d/len` without host bits and not under the floor, at the very start of the
 * line, then the newline.
 * Writes the address and the length at `at` and returns the index of the newline; or
 * returns -1 and leaves the line to `readLine`, which decides everything else, every
 * refusal and every report included. It accepts nothing `readLine` would refuse. Reading
 * past the end yields LF: the last line needs no newline.
 */
function readPlainIpv4(
  bytes: Uint8Array,
  i: number,
  addresses: Uint32Array,
  lengths: Uint8Array,
  at: number,
  floor: number,
): number {
  let p = i;
  let address = 0;
  let d = (bytes[p] ?? LF) - D0;
  for (let part = 0; ; part++) {
    if (d < 0 || d > 9) return -1;
    let octet = d;
    d = (bytes[++p] ?? LF) - D0;
    if (d >= 0 && d <= 9) {
      if (octet === 0) return -1;
      octet = octet * 10 + d;
      d = (bytes[++p] ?? LF) - D0;
      if (d >= 0 && d <= 9) {
        octet = octet * 10 + d;
        if (octet > 255) return -1;
        d = (bytes[++p] ?? LF) - D0;
      }
    }
    address = address * 256 + octet;
    if (part === 3) break;
    if (d !== DOT - D0) return -1;
    d = (bytes[++p] ?? LF) - D0;
  }
  let length = 32;
  if (d === SLASH - D0) {
    d = (bytes[++p] ?? LF) - D0;
    if (d < 0 || d > 9) return -1;
    length = d;
    d = (bytes[++p] ?? LF) - D0;
    if (d >= 0 && d <= 9) {
      if (length === 0) return -1;
      length = length * 10 + d;
      if (length > 32) return -1;
      d = (bytes[++p] ?? LF) - D0;
    }
  }
  // Host bits set or under the floor: a line to report, which the general reader does.
  if (d !== LF - D0 || length < floor || (address & MASK_V4[length]!) >>> 0 !== address) return -1;
  addresses[at] = address;
  lengths[at] = length;
  return p;
}

/**
 * The IPv6 fast path, for the shape of nearly every line of an IPv6 list: groups of one
 * to four hex digits with at most one `::`, an optional `/len`, then the newline, at the
 * very start of the line; not under the floor, no host bits, not IPv4-mapped, no dotted
 * tail. One pass, straight into the IPv6 columns. Returns the index of the newline; or
 * -1, storing nothing, and the line goes to `readLine`, which decides everything else,
 * every refusal and report included. It accepts nothing `readLine` would refuse.
 */
function readPlainIpv6(bytes: Uint8Array, i: number, state: ParseState): number {
  const g = state.groups;
  let p = i;
  let c = bytes[p] ?? LF;
  let count = 0;
  /** Index in `g` where the groups after `::` begin, or -1 without `::`. */
  let gap = -1;
  if (c === COLON) {
    if ((bytes[p + 1] ?? LF) !== COLON) return -1;
    gap = 0;
    p += 2;
    c = bytes[p] ?? LF;
  }
  for (;;) {
    let h = hexValue(c);
    if (h < 0) {
      // Only after `::` may the address end here (`2001:db8::`, `::`).
      if (gap !== count) return -1;
      break;
    }
    let value = 0;
    let digits = 0;
    while (h >= 0) {
      if (++digits > 4) return -1;
      value = value * 16 + h;
      c = bytes[++p] ?? LF;
      h = hexValue(c);
    }
    if (count === 8) return -1;
    g[count++] = value;
    if (c !== COLON) break;
    c = bytes[++p] ?? LF;
    if (c === COLON) {
      if (gap >= 0) return -1;
      gap = count;
      c = bytes[++p] ?? LF;
    }
  }
  if (gap < 0 ? count !== 8 : count > 7) return -1;
  let length = 128;
  if (c === SLASH) {
    c = bytes[++p] ?? LF;
    if (c < D0 || c > D9) return -1;
    length = c - D0;
    c = bytes[++p] ?? LF;
    for (let digits = 1; c >= D0 && c <= D9; digits++) {
      if (length === 0 || digits === 3) return -1;
      length = length * 10 + (c - D0);
      c = bytes[++p] ?? LF;
    }
    if (length > 128) return -1;
  }
  if (c !== LF || length < state.v6Floor) return -1;
  if (gap >= 0) {
    const tail = count - gap;
    for (let k = 0; k < tail; k++) g[7 - k] = g[count - 1 - k]!;
    for (let k = gap; k < 8 - tail; k++) g[k] = 0;
  }
  if (length >= 96 && g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return -1;
  }
  const at = state.nextIpv6();
  const words = state.v6Words;
  wordsFromGroups(g, words, at);
  // Host bits set: the general reader clears and reports them (the slot is not counted).
  if (clearHostBits(words, at, length)) return -1;
  state.v6Lengths[state.v6Count++] = length;
  return p;
}

/**
 * The general reader: one whole line starting at `lineStart`, with every rule of this
 * module. Records what it read or refused in `state` and returns where the next line
 * starts.
 */
function readLine(state: ParseState, lineStart: number, line: number): number {
  const { bytes } = state;
  let i = lineStart;
  let c = bytes[i] ?? LF;
  while (c === SP || c === TAB || c === CR) c = bytes[++i] ?? LF;
  if (c === LF) {
    state.blank++;
    return i + 1;
  }
  if (c === HASH || c === SEMI) {
    state.comments++;
    return endOfLine(bytes, i) + 1;
  }
  const tokenStart = i;
  let fail: Fail = Fail.None;
  let ipv6Message = '';
  let isIpv6 = false;

  if (c >= D0 && c <= D9) {
    // IPv4: four decimal parts, each 0-255 without leading zero.
    let address = 0;
    let part = 0;
    for (;;) {
      if (c < D0 || c > D9) {
        fail = Fail.Ipv4EmptyPart;
        break;
      }
      const first = c;
      let octet = c - D0;
      let digits = 1;
      c = bytes[++i] ?? LF;
      while (c >= D0 && c <= D9) {
        octet = octet * 10 + (c - D0);
        digits++;
        c = bytes[++i] ?? LF;
      }
      if (part === 0 && (c === COLON || isHexLetter(c))) {
        // `2001:db8::`, `1a::`: an IPv6 address that happens to start with a digit.
        isIpv6 = true;
        break;
      }
      if (part < 3 && c !== DOT) {
        // `1.2.3` and `16909060` end early: the inet_aton shorthands. `0x7f.0.0.1` does not end.
        fail = endsEntry(c) ? Fail.Ipv4PartCount : Fail.Ipv4EmptyPart;
        break;
      }
      if (first === D0 && digits > 1) {
        fail = Fail.LeadingZero;
        break;
      }
      if (octet > 255) {
        fail = Fail.OctetOutOfRange;
        break;
      }
      address = address * 256 + octet;
      if (++part === 4) break;
      c = bytes[++i] ?? LF;
    }
    if (!isIpv6) {
      if (fail === Fail.None && c === DOT) fail = Fail.Ipv4PartCount;
      let length = 32;
      if (fail === Fail.None && c === SLASH) {
        c = bytes[++i] ?? LF;
        if (c < D0 || c > D9) {
          fail = Fail.PrefixLengthMissing;
        } else {
          const first = c;
          length = c - D0;
          let digits = 1;
          c = bytes[++i] ?? LF;
          while (c >= D0 && c <= D9) {
            length = length * 10 + (c - D0);
            digits++;
            c = bytes[++i] ?? LF;
          }
          if (first === D0 && digits > 1) fail = Fail.PrefixLengthLeadingZero;
          else if (length > 32) fail = Fail.PrefixLengthTooLong;
        }
      }
      const tokenEnd = i;
      if (fail === Fail.None) {
        while (c === SP || c === TAB || c === CR) c = bytes[++i] ?? LF;
        if (c !== LF && c !== HASH && c !== SEMI) fail = Fail.TrailingText;
      }
      if (fail === Fail.None) {
        state.ipv4Entry(line, lineStart, tokenStart, tokenEnd, address, length);
        return endOfLine(bytes, i) + 1;
      }
    }
  } else if (c === COLON || isHexLetter(c)) {
    isIpv6 = true;
  } else {
    fail = Fail.NotAnAddress;
  }

  if (isIpv6) {
    let end = tokenStart;
    let slash = -1;
    let colons = 0;
    for (c = bytes[end] ?? LF; !endsEntry(c); c = bytes[++end] ?? LF) {
      if (c === SLASH && slash < 0) slash = end;
      else if (c === COLON) colons++;
    }
    const addressEnd = slash < 0 ? end : slash;
    let length = 128;
    if (colons === 0) {
      fail = Fail.NotAnAddress;
    } else {
      const problem = readIpv6Groups(bytes, tokenStart, addressEnd, state.groups);
      if (problem !== undefined) {
        fail = Fail.Ipv6;
        ipv6Message = `not an IPv6 address: ${problem}`;
      } else if (slash >= 0) {
        let p = slash + 1;
        length = 0;
        for (; p < end; p++) {
          const digit = bytes[p]! - D0;
          if (digit < 0 || digit > 9) break;
          length = length * 10 + digit;
        }
        if (p === slash + 1) fail = Fail.PrefixLengthMissing;
        else if (p !== end) fail = Fail.TrailingText;
        else if (p - slash > 2 && bytes[slash + 1] === D0) fail = Fail.PrefixLengthLeadingZero;
        else if (length > 128) fail = Fail.PrefixLengthTooLong;
      }
    }
    if (fail === Fail.None) {
      i = end;
      c = bytes[i] ?? LF;
      while (c === SP || c === TAB || c === CR) c = bytes[++i] ?? LF;
      if (c !== LF && c !== HASH && c !== SEMI) fail = Fail.TrailingText;
    }
    if (fail === Fail.None && length >= 96 && isIpv4Mapped(state.groups)) {
      // `::ffff:1.2.3.4` is 1.2.3.4 as an IPv6 socket sees it: the same host, so the same
      // entry, merged and written as IPv4 (RFC 4291 section 2.5.5.2).
      const g = state.groups;
      state.ipv4Entry(line, lineStart, tokenStart, end, g[6]! * 65536 + g[7]!, length - 96);
      return endOfLine(bytes, i) + 1;
    }
    if (fail === Fail.None && length < state.v6Floor) {
      const network = state.scratchWords;
      wordsFromGroups(state.groups, network, 0);
      clearHostBits(network, 0, length);
      state.refusedShort(line, lineStart, () => `${formatIpv6Words(network, 0)}/${length}`);
      return endOfLine(bytes, i) + 1;
    }
    if (fail === Fail.None) {
      const at = state.nextIpv6();
      wordsFromGroups(state.groups, state.v6Words, at);
      if (clearHostBits(state.v6Words, at, length)) {
        state.normalisedCount++;
        if (state.normalised.length < state.detailLimit) {
          state.normalised.push({
            line,
            text: tokenText(bytes, tokenStart, end),
            prefix: `${formatIpv6Words(state.v6Words, at)}/${length}`,
          });
        }
      }
      state.v6Lengths[state.v6Count++] = length;
      return endOfLine(bytes, i) + 1;
    }
  }

  state.refused(line, lineStart, fail, ipv6Message);
  return endOfLine(bytes, tokenStart) + 1;
}

/** Whether eight groups are `::ffff:0:0/96`, the IPv4-mapped addresses. */
function isIpv4Mapped(g: Uint16Array): boolean {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff;
}

/** The index of the newline ending the line that `i` is in, or the input length. */
function endOfLine(bytes: Uint8Array, i: number): number {
  let p = i;
  while ((bytes[p] ?? LF) !== LF) p++;
  return p;
}
