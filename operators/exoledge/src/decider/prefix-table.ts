/**
 * The decider's lookup: which published lists hold a client address. Built once per
 * list version from the lists' prefixes, then read only, answering each request in about
 * a microsecond without allocating.
 *
 * Layout. Each list's prefixes are merged (`mergeIpv4`, `mergeIpv6`: sorted, disjoint) and
 * touching prefixes joined, so each list is a sorted run of disjoint address ranges. The
 * ranges of all lists are then cut at every range start and end into elementary
 * intervals, inside each of which the set of lists holding the address is constant:
 *
 * - `positions`: the first address of every interval, ascending; position 0 is always 0,
 *   so every address falls in exactly one interval. IPv4 as one `Uint32Array` word per
 *   position, IPv6 as four (most significant first, as `Ipv6Prefixes` holds them).
 * - `sets`: for every interval, the id of its set of lists, in the smallest typed array
 *   that holds the ids (one byte while there are at most 256 distinct sets).
 * - `results`: for every set id, the frozen answer, built once; a lookup returns it as is.
 *
 * - `v4Index`: for every value of an IPv4 address's top 16 bits, the number of positions
 *   below that /16 (65,537 words, 256 kB). An IPv4 lookup searches only the positions of
 *   its /16 (and the one before them): with three million ranges, about 45 positions in
 *   a cache line or two instead of 23 MB, where a plain binary search took a dozen cache
 *   and TLB misses, several microseconds a verdict.
 *
 * One list of N disjoint, non-touching ranges gives 2N positions: 10 bytes a range for
 * IPv4 (a 4-byte position and a 1-byte id, twice), 34 for IPv6. A lookup is one binary
 * search over the positions, whatever the number of lists.
 *
 * Why membership in the merged ranges is the answer. A list is the union of its prefixes;
 * `merge` returns the minimal exact cover of that union (no address more, none less), and
 * joining touching prefixes changes no address either. So an address lies in one of the
 * list's ranges exactly when some prefix of the list contains it. A router needs the
 * longest matching prefix because each prefix carries its own next hop; here every prefix
 * of a list carries the same verdict, the list's, so a membership decision needs only
 * whether some prefix matches, and a prefix nested in another adds nothing to it.
 *
 * IPv4-mapped IPv6 (`::ffff:1.2.3.4`, which a dual-stack socket reports for an IPv4
 * client) is the IPv4 address it maps, as `parseBlocklist` reads it in a list: the same
 * host, so the same answer whichever way it is written. Mapped addresses are looked up as
 * IPv4; for that to stay exact, an IPv6 prefix that covers part or all of `::ffff:0:0/96`
 * (`::/64`, or a mapped prefix given outside `parseBlocklist`) also lists, in IPv4, the
 * IPv4 addresses it covers.
 */
import type { ListKind } from '../api/blocklist-source.ts';
import { BLOCK_SIZE_V4 } from '../domain/blocklist/ipv4.ts';
import {
  hostMaskWord,
  readDottedQuad,
  readIpv6Groups,
  wordsFromGroups,
  wordsOfIpv6,
} from '../domain/blocklist/ipv6.ts';
import { mergeIpv4, mergeIpv6 } from '../domain/blocklist/merge.ts';
import type { Ipv4Prefixes, Ipv6Prefixes, PrefixList } from '../domain/blocklist/prefix-list.ts';

/** One published list, as the table is built from it. */
export interface TableList {
  /** The BlocklistSource's name; unique in a table. */
  readonly name: string;
  readonly kind: ListKind;
  /** In any order, overlaps and duplicates allowed (they are merged). */
  readonly prefixes: PrefixList;
}

/** A list in an answer. */
export interface ListRef {
  readonly name: string;
  readonly kind: ListKind;
}

/**
 * A parsed address. IPv4 as an unsigned 32-bit integer (1.2.3.4 is 0x01020304), IPv6 as
 * its 128-bit value, as `Prefix` holds single addresses.
 */
export type Address =
  | { readonly family: 'ipv4'; readonly address: number }
  | { readonly family: 'ipv6'; readonly address: bigint };

/**
 * The input names no address: not strict dotted-quad IPv4, not RFC 4291 IPv6 (no zone,
 * no brackets, no port, no prefix length), or a parsed value out of range. A request
 * whose client address does not read is the caller's decision, not an exception.
 */
export interface NotAnAddress {
  readonly outcome: 'notAnAddress';
  /** What is wrong, for a log line. */
  readonly message: string;
}

/** What `PrefixTable.lookup` answers. */
export type Lookup =
  /** In these lists (at least one), sorted by name. The object is shared: do not modify it. */
  | { readonly outcome: 'listed'; readonly lists: readonly ListRef[] }
  /** In no list. */
  | { readonly outcome: 'unlisted' }
  | NotAnAddress;

/** What `parseAddress` answers. */
export type ParsedAddress = { readonly outcome: 'address'; readonly address: Address } | NotAnAddress;

/** The longest IPv6 text: six groups of four and an embedded `255.255.255.255`. */
const MAX_ADDRESS_TEXT = 45;
const TWO_32 = 4294967296;
const MAX_IPV6 = (1n << 128n) - 1n;

/** Scratch for reading addresses: one lookup at a time in a JavaScript thread. */
const textBytes = new Uint8Array(MAX_ADDRESS_TEXT);
const groups = new Uint16Array(8);
const words = new Uint32Array(4);

const UNLISTED: Lookup = Object.freeze({ outcome: 'unlisted' });

function notAnAddress(message: string): NotAnAddress {
  return { outcome: 'notAnAddress', message };
}

/**
 * Reads `text` into `groups` (IPv6) or returns its IPv4 value: a number when the text is
 * IPv4 or IPv4-mapped IPv6, `undefined` when `groups` holds an IPv6 address, or a message.
 */
function readAddress(text: string): number | string | undefined {
  const n = text.length;
  if (n === 0) return 'empty';
  if (n > MAX_ADDRESS_TEXT) return 'longer than any IPv4 or IPv6 address';
  let colon = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7e) return 'a character that no address has';
    if (c === 0x3a) colon = true;
    textBytes[i] = c;
  }
  if (!colon) return readDottedQuad(textBytes, 0, n);
  const error = readIpv6Groups(textBytes, 0, n, groups);
  if (error !== undefined) return error;
  if (isMapped(groups)) return groups[6]! * 65536 + groups[7]!;
  return undefined;
}

/** Whether the eight groups are `::ffff:a.b.c.d`. */
function isMapped(g: Uint16Array): boolean {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff;
}

/**
 * The address in `text`, for a caller that looks the same address up more than once or
 * wants its family. IPv4-mapped IPv6 comes back as IPv4. `PrefixTable.lookup` takes the
 * text directly and does not allocate.
 */
export function parseAddress(text: string): ParsedAddress {
  const v4 = readAddress(text);
  if (typeof v4 === 'string') return notAnAddress(v4);
  if (typeof v4 === 'number') return { outcome: 'address', address: { family: 'ipv4', address: v4 } };
  wordsFromGroups(groups, words, 0);
  const address =
    (BigInt(words[0]!) << 96n) | (BigInt(words[1]!) << 64n) | (BigInt(words[2]!) << 32n) | BigInt(words[3]!);
  return { outcome: 'address', address: { family: 'ipv6', address } };
}

/** Sizes, for logs and metrics. */
export interface TableStats {
  readonly lists: number;
  /** Elementary intervals of each family. */
  readonly ipv4Intervals: number;
  readonly ipv6Intervals: number;
  /** Distinct sets of lists, the empty set included. */
  readonly sets: number;
  /**
   * Bytes of the typed arrays' views (their buffers may hold up to a tenth more, never
   * touched; the answers are a few objects per set).
   */
  readonly bytes: number;
}

type SetIds = Uint8Array | Uint16Array | Uint32Array;

/**
 * A table as plain data, for `postMessage`: the typed arrays (whose buffers can be
 * transferred rather than copied) and, for every set id, the indexes of its lists in
 * `lists`. Built in a worker (`list-worker.ts`), the table arrives whole this way.
 */
export interface TableParts {
  readonly v4Positions: Uint32Array;
  readonly v4Index: Uint32Array;
  readonly v4Sets: SetIds;
  readonly v6Positions: Uint32Array;
  readonly v6Sets: SetIds;
  readonly lists: readonly ListRef[];
  readonly sets: readonly (readonly number[])[];
}

/** An immutable lookup of client addresses in published lists; see the module comment. */
export class PrefixTable {
  readonly #v4Positions: Uint32Array;
  readonly #v4Index: Uint32Array;
  readonly #v4Sets: SetIds;
  readonly #v6Positions: Uint32Array;
  readonly #v6Sets: SetIds;
  readonly #results: readonly Lookup[];
  readonly #lists: readonly ListRef[];
  #released = false;

  private constructor(
    v4: { positions: Uint32Array; index: Uint32Array; sets: SetIds },
    v6: { positions: Uint32Array; sets: SetIds },
    results: readonly Lookup[],
    lists: readonly ListRef[],
  ) {
    this.#v4Positions = v4.positions;
    this.#v4Index = v4.index;
    this.#v4Sets = v4.sets;
    this.#v6Positions = v6.positions;
    this.#v6Sets = v6.sets;
    this.#results = results;
    this.#lists = lists;
  }

  /**
   * The table of `lists`. Names must be unique (a RangeError otherwise: one list per
   * BlocklistSource is the caller's invariant). The prefixes are not modified. Three
   * million IPv4 host routes take about half a second, two thirds of it in `mergeIpv4`:
   * build off the request path, or accept that pause once per list version.
   */
  static build(lists: readonly TableList[]): PrefixTable {
    const sorted = [...lists].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]!.name === sorted[i - 1]!.name) {
        throw new RangeError(`list ${sorted[i]!.name} is given twice; a table holds each list once`);
      }
    }
    const refs = sorted.map((l): ListRef => Object.freeze({ name: l.name, kind: l.kind }));
    const sets = new SetInterner(sorted.length);
    const v4 = sweepIpv4(
      sorted.map((l) => mergeIpv4(withMappedAsIpv4(l.prefixes))),
      sets,
    ).build();
    const v6 = sweepIpv6(
      sorted.map((l) => ipv6Boundaries(mergeIpv6(l.prefixes.ipv6))),
      sets,
    ).build();
    return new PrefixTable(
      { ...v4, index: v4IndexOf(v4.positions) },
      v6,
      sets.results(refs),
      Object.freeze(refs),
    );
  }

  /** The table `parts` describes (see `parts`); the arrays are used as they are, not copied. */
  static fromParts(parts: TableParts): PrefixTable {
    const refs = parts.lists.map((l): ListRef => Object.freeze({ name: l.name, kind: l.kind }));
    return new PrefixTable(
      { positions: parts.v4Positions, index: parts.v4Index, sets: parts.v4Sets },
      { positions: parts.v6Positions, sets: parts.v6Sets },
      resultsOf(parts.sets, refs),
      Object.freeze(refs),
    );
  }

  /**
   * This table as plain data. The arrays are this table's own: once their buffers are
   * transferred, this table no longer answers.
   */
  get parts(): TableParts {
    const index = new Map(this.#lists.map((l, i) => [l, i]));
    return {
      v4Positions: this.#v4Positions,
      v4Index: this.#v4Index,
      v4Sets: this.#v4Sets,
      v6Positions: this.#v6Positions,
      v6Sets: this.#v6Sets,
      lists: this.#lists.map((l) => ({ name: l.name, kind: l.kind })),
      sets: this.#results.map((r) => (r.outcome === 'listed' ? r.lists.map((l) => index.get(l)!) : [])),
    };
  }

  /**
   * Frees the table's arrays now, rather than at the garbage collection that would
   * otherwise follow: with three million prefixes they are 40 MB outside V8's heap, and
   * a decider at rest may not collect for a long while after a swap. The table answers
   * no more (a lookup throws): call it on a table nothing can read again.
   */
  release(): void {
    this.#released = true;
    for (const a of [this.#v4Positions, this.#v4Index, this.#v4Sets, this.#v6Positions, this.#v6Sets]) {
      const buffer = a.buffer as ArrayBuffer;
      if (!buffer.detached) buffer.transfer(0);
    }
  }

  /** The lists of the table, sorted by name. */
  get lists(): readonly ListRef[] {
    return this.#lists;
  }

  get stats(): TableStats {
    return {
      lists: this.#lists.length,
      ipv4Intervals: this.#v4Sets.length,
      ipv6Intervals: this.#v6Sets.length,
      sets: this.#results.length,
      bytes:
        this.#v4Positions.byteLength +
        this.#v4Index.byteLength +
        this.#v4Sets.byteLength +
        this.#v6Positions.byteLength +
        this.#v6Sets.byteLength,
    };
  }

  /**
   * The lists holding `address`: text (`1.2.3.4`, `2001:db8::1`, `::ffff:1.2.3.4`) or an
   * `Address`. Never throws: input that names no address is `notAnAddress`. A `listed`
   * or `unlisted` answer is a shared frozen object, so a lookup allocates nothing.
   */
  lookup(address: string | Address): Lookup {
    if (this.#released)
      throw new Error('this lookup table was released; look up in the one that replaced it');
    if (typeof address === 'string') {
      const v4 = readAddress(address);
      if (typeof v4 === 'string') return notAnAddress(v4);
      if (typeof v4 === 'number') return this.#ipv4(v4);
      wordsFromGroups(groups, words, 0);
      return this.#ipv6(words);
    }
    switch (address.family) {
      case 'ipv4': {
        const a = address.address;
        if (!(Number.isInteger(a) && a >= 0 && a < TWO_32)) {
          return notAnAddress(`${a} is not an unsigned 32-bit IPv4 address`);
        }
        return this.#ipv4(a);
      }
      case 'ipv6': {
        const a = address.address;
        if (typeof a !== 'bigint' || a < 0n || a > MAX_IPV6)
          return notAnAddress(`${a} is not a 128-bit IPv6 address`);
        wordsOfIpv6(a, words, 0);
        if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) return this.#ipv4(words[3]!);
        return this.#ipv6(words);
      }
      default:
        return address satisfies never;
    }
  }

  #ipv4(a: number): Lookup {
    const positions = this.#v4Positions;
    // The last position at or below a; positions[0] is 0, so there is one. It is the last
    // position of a's /16, or, when a lies below that /16's first position (or the /16
    // has none), the last position before the /16: never further.
    const top = a >>> 16;
    let lo = Math.max(0, this.#v4Index[top]! - 1);
    let hi = Math.max(lo, this.#v4Index[top + 1]! - 1);
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (positions[mid]! <= a) lo = mid;
      else hi = mid - 1;
    }
    return this.#results[this.#v4Sets[lo]!] ?? UNLISTED;
  }

  #ipv6(w: Uint32Array): Lookup {
    const positions = this.#v6Positions;
    const w0 = w[0]!;
    const w1 = w[1]!;
    const w2 = w[2]!;
    const w3 = w[3]!;
    let lo = 0;
    let hi = (positions.length >>> 2) - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (compareWords(positions, 4 * mid, w0, w1, w2, w3) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return this.#results[this.#v6Sets[lo]!] ?? UNLISTED;
  }
}

/** For each top 16 bits `h` (and 65,536 at the end), how many of `positions` (ascending) lie below `h << 16`. */
function v4IndexOf(positions: Uint32Array): Uint32Array {
  const index = new Uint32Array(V4_BUCKETS + 1);
  let i = 0;
  for (let h = 0; h <= V4_BUCKETS; h++) {
    const start = h * V4_BUCKET_SIZE;
    while (i < positions.length && positions[i]! < start) i++;
    index[h] = i;
  }
  return index;
}

/** IPv4 addresses by their top 16 bits: 65,536 /16s of 65,536 addresses each. */
const V4_BUCKETS = 65_536;
const V4_BUCKET_SIZE = 65_536;

/** The sign of `words[at..at+3]` minus (w0, w1, w2, w3). */
function compareWords(ws: Uint32Array, at: number, w0: number, w1: number, w2: number, w3: number): number {
  let d = ws[at]! - w0;
  if (d !== 0) return d;
  d = ws[at + 1]! - w1;
  if (d !== 0) return d;
  d = ws[at + 2]! - w2;
  if (d !== 0) return d;
  return ws[at + 3]! - w3;
}

/**
 * The list's IPv4 prefixes and, as IPv4, the part of `::ffff:0:0/96` its IPv6 prefixes
 * cover (see the module comment): all of IPv4 for a prefix of /96 or shorter containing
 * it, the mapped prefix (length - 96) for one inside it. The input itself when there is
 * none, the common case: `parseBlocklist` reads mapped entries as IPv4 already.
 */
function withMappedAsIpv4(list: PrefixList): Ipv4Prefixes {
  const { words: w, lengths } = list.ipv6;
  const addresses: number[] = [];
  const mappedLengths: number[] = [];
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    const at = 4 * i;
    if (length <= 96) {
      // Host bits are zero, so the prefix contains ::ffff:0:0/96 when the mapped address,
      // cut to the prefix length, is the prefix.
      if (w[at] === 0 && w[at + 1] === 0 && w[at + 2] === (0xffff & ~hostMaskWord(length, 2)) >>> 0) {
        addresses.push(0);
        mappedLengths.push(0);
      }
    } else if (w[at] === 0 && w[at + 1] === 0 && w[at + 2] === 0xffff) {
      addresses.push(w[at + 3]!);
      mappedLengths.push(length - 96);
    }
  }
  if (addresses.length === 0) return list.ipv4;
  const n = list.ipv4.addresses.length;
  const outAddresses = new Uint32Array(n + addresses.length);
  const outLengths = new Uint8Array(n + addresses.length);
  outAddresses.set(list.ipv4.addresses);
  outLengths.set(list.ipv4.lengths);
  outAddresses.set(addresses, n);
  outLengths.set(mappedLengths, n);
  return { addresses: outAddresses, lengths: outLengths };
}

/**
 * A merged IPv4 list read as the boundaries of its ranges, one at a time: each range's
 * start, then its exclusive end, ascending, touching prefixes joined into one range. An
 * end of 2^32 (a range running to 255.255.255.255) is no boundary: nothing starts there.
 * Read in place rather than written out: three million prefixes' boundaries are 24 MB of
 * fresh memory, and fresh memory costs a page fault per 4 KiB.
 */
class Ipv4Walk {
  readonly #addresses: Uint32Array;
  readonly #lengths: Uint8Array;
  /** The prefix the next range starts at, or the one after the current range. */
  #next = 0;
  /** Whether `head` is the end of a range (else its start). */
  #atEnd = false;
  /** The next boundary; infinity once there is none. */
  head: number;

  constructor(merged: Ipv4Prefixes) {
    this.#addresses = merged.addresses;
    this.#lengths = merged.lengths;
    this.head = merged.addresses.length > 0 ? merged.addresses[0]! : Number.POSITIVE_INFINITY;
  }

  /** Moves `head` to the next boundary. */
  advance(): void {
    const addresses = this.#addresses;
    const n = addresses.length;
    if (this.#atEnd) {
      this.#atEnd = false;
      this.head = this.#next < n ? addresses[this.#next]! : Number.POSITIVE_INFINITY;
      return;
    }
    let i = this.#next;
    let end = addresses[i]! + BLOCK_SIZE_V4[this.#lengths[i]!]!;
    while (i + 1 < n && addresses[i + 1] === end) {
      i++;
      end = addresses[i]! + BLOCK_SIZE_V4[this.#lengths[i]!]!;
    }
    this.#next = i + 1;
    this.#atEnd = true;
    this.head = end < TWO_32 ? end : Number.POSITIVE_INFINITY;
  }
}

/** The same for IPv6, four words a boundary; an end of 2^128 is left out. */
function ipv6Boundaries(merged: Ipv6Prefixes): Uint32Array {
  const { words: w, lengths } = merged;
  const out = new Uint32Array(8 * lengths.length);
  let n = 0;
  for (let i = 0; i < lengths.length; i++) {
    const at = 4 * i;
    const touches = n > 0 && compareWords(out, 4 * (n - 1), w[at]!, w[at + 1]!, w[at + 2]!, w[at + 3]!) === 0;
    // A range touching the previous one extends it: its end is written over the previous end.
    if (touches) n--;
    else out.set(w.subarray(at, at + 4), 4 * n++);
    out.set(w.subarray(at, at + 4), 4 * n);
    if (!addBlock(out, 4 * n, lengths[i]!)) return out.subarray(0, 4 * n);
    n++;
  }
  return out.subarray(0, 4 * n);
}

/** Adds 2^(128 - length) to `ws[at..at+3]`; false when the sum reaches 2^128. */
function addBlock(ws: Uint32Array, at: number, length: number): boolean {
  const bit = 128 - length;
  let k = 3 - Math.floor(bit / 32);
  let add = 2 ** (bit % 32);
  while (k >= 0) {
    const v = ws[at + k]! + add;
    if (v < TWO_32) {
      ws[at + k] = v;
      return true;
    }
    ws[at + k] = v - TWO_32;
    add = 1;
    k--;
  }
  return false;
}

/**
 * Sets of lists by id (0 is the empty set), and the set one list entering or leaving
 * turns another into, cached: the sweep makes one step per range boundary, millions, and
 * the distinct sets are few.
 */
class SetInterner {
  readonly #lists: number;
  readonly #members: number[][] = [[]];
  readonly #byKey = new Map<string, number>([['', 0]]);
  /**
   * `set * lists + list` to the set `toggle(set, list)` gives: only the transitions met,
   * so the cache stays small whatever the number of lists.
   */
  readonly #toggled = new Map<number, number>();

  constructor(lists: number) {
    this.#lists = lists;
  }

  /** The set `set` with list `list` added if absent, removed if present. */
  toggle(set: number, list: number): number {
    const key = set * this.#lists + list;
    const cached = this.#toggled.get(key);
    if (cached !== undefined) return cached;
    const members = this.#members[set]!;
    const next = members.includes(list)
      ? members.filter((m) => m !== list)
      : [...members, list].sort((a, b) => a - b);
    const text = next.join(',');
    let id = this.#byKey.get(text);
    if (id === undefined) {
      id = this.#members.length;
      this.#members.push(next);
      this.#byKey.set(text, id);
    }
    this.#toggled.set(key, id);
    return id;
  }

  /** The answer for every set id. */
  results(refs: readonly ListRef[]): Lookup[] {
    return resultsOf(this.#members, refs);
  }
}

/** The frozen answer of each set of lists (indexes into `refs`). */
function resultsOf(members: readonly (readonly number[])[], refs: readonly ListRef[]): Lookup[] {
  return members.map((m) =>
    m.length === 0
      ? UNLISTED
      : Object.freeze({ outcome: 'listed' as const, lists: Object.freeze(m.map((i) => refs[i]!)) }),
  );
}

/**
 * Intervals as a sweep opens them: positions (`width` words each) and set ids. The first
 * interval starts at 0, in no list; a boundary at 0 replaces its set. Set ids go in the
 * smallest typed array that holds them, widened when a larger id comes: one byte each
 * while there are at most 256 sets, the usual case.
 */
class Intervals {
  readonly #width: number;
  readonly #positions: Uint32Array;
  #sets: SetIds;
  #count = 1;

  /** Room for `boundaries` boundaries. */
  constructor(boundaries: number, width: number) {
    this.#width = width;
    this.#positions = new Uint32Array(width * (boundaries + 1));
    this.#sets = new Uint8Array(boundaries + 1);
  }

  /** Opens an interval of `set` at `from[at..]`. */
  open(from: Uint32Array, at: number, set: number): void {
    const width = this.#width;
    let zero = true;
    for (let w = 0; w < width; w++) if (from[at + w] !== 0) zero = false;
    if (zero) {
      this.#store(0, set);
      return;
    }
    // Each boundary toggles its lists once, so the set always changes here: no merging.
    for (let w = 0; w < width; w++) this.#positions[width * this.#count + w] = from[at + w]!;
    this.#store(this.#count++, set);
  }

  #store(i: number, set: number): void {
    if (set > 255 && this.#sets instanceof Uint8Array) this.#sets = Uint16Array.from(this.#sets);
    if (set > 65535 && !(this.#sets instanceof Uint32Array)) this.#sets = Uint32Array.from(this.#sets);
    this.#sets[i] = set;
  }

  /**
   * The intervals opened. Copied when the room left unused is more than a tenth (touching
   * or shared boundaries); otherwise views, which spares copying tens of megabytes.
   */
  build(): { positions: Uint32Array; sets: SetIds } {
    const count = this.#count;
    const fit = count * 10 >= this.#sets.length * 9;
    const positions = this.#positions.subarray(0, this.#width * count);
    const sets = this.#sets.subarray(0, count);
    return fit ? { positions, sets } : { positions: positions.slice(), sets: sets.slice() };
  }
}

/**
 * Cuts the lists' IPv4 ranges into intervals of constant sets (see the module comment),
 * taking the boundaries of all lists in ascending order: each list's are ascending, so
 * the next is the least of the lists' next ones. A scan of the lists' heads per boundary
 * rather than a heap: a decider holds tens of lists, and a heap's calls cost more.
 */
function sweepIpv4(lists: readonly Ipv4Prefixes[], sets: SetInterner): Intervals {
  const walks = lists.map((merged) => new Ipv4Walk(merged));
  // At most a start and an end per prefix; room never written costs no memory.
  const out = new Intervals(2 * lists.reduce((n, l) => n + l.addresses.length, 0), 1);
  const position = new Uint32Array(1);
  let set = 0;
  for (;;) {
    let p = Number.POSITIVE_INFINITY;
    for (const walk of walks) if (walk.head < p) p = walk.head;
    if (p === Number.POSITIVE_INFINITY) return out;
    // Every list with a boundary here enters or leaves before the interval opens.
    for (let l = 0; l < walks.length; l++) {
      const walk = walks[l]!;
      if (walk.head !== p) continue;
      set = sets.toggle(set, l);
      walk.advance();
    }
    position[0] = p;
    out.open(position, 0, set);
  }
}

/** The same for IPv6, on four words a boundary. */
function sweepIpv6(boundaries: readonly Uint32Array[], sets: SetInterner): Intervals {
  const lists = boundaries.length;
  /** Word offset of each list's next boundary; the list's length once done. */
  const cursors = new Uint32Array(lists);
  let total = 0;
  for (const b of boundaries) total += b.length / 4;
  const out = new Intervals(total, 4);
  const position = new Uint32Array(4);
  let set = 0;
  for (;;) {
    let least = -1;
    for (let l = 0; l < lists; l++) {
      const b = boundaries[l]!;
      const c = cursors[l]!;
      if (c === b.length) continue;
      if (least < 0 || compareWords(b, c, position[0]!, position[1]!, position[2]!, position[3]!) < 0) {
        least = l;
        position.set(b.subarray(c, c + 4));
      }
    }
    if (least < 0) return out;
    for (let l = least; l < lists; l++) {
      const b = boundaries[l]!;
      const c = cursors[l]!;
      if (c === b.length || compareWords(b, c, position[0]!, position[1]!, position[2]!, position[3]!) !== 0)
        continue;
      set = sets.toggle(set, l);
      cursors[l] = c + 4;
    }
    out.open(position, 0, set);
  }
}
