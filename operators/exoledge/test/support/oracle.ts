/**
 * An independent model of what a BlocklistSource publishes, for end-to-end tests to hold
 * the operator to. It shares no code with `src/`: it reads the lists the tests write
 * (addresses and prefixes, comments, blank lines; anything else is skipped), turns every
 * prefix into an inclusive bigint range, merges ranges, cuts them back into the fewest
 * CIDR blocks, applies the budget rules as `docs/exoledge.md` states them, and writes
 * the canonical text with its own formatter. Written to be obviously right, not fast:
 * lists of a few hundred lines.
 */
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export type OracleFamily = 'ipv4' | 'ipv6';

/** A CIDR block: its first address and its length. */
export interface Block {
  readonly family: OracleFamily;
  readonly start: bigint;
  readonly length: number;
}

const WIDTH: Record<OracleFamily, number> = { ipv4: 32, ipv6: 128 };

/** How many addresses a block holds. */
export function sizeOf(b: Block): bigint {
  return 1n << BigInt(WIDTH[b.family] - b.length);
}

function ipv4ToBigint(text: string): bigint {
  return text.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

/** IPv6 text to a number: expand `::` into the missing zero groups, then read 8 groups of 16 bits. */
function ipv6ToBigint(text: string): bigint {
  let groups: string[];
  if (text.includes('::')) {
    const [head = '', tail = ''] = text.split('::');
    const h = head === '' ? [] : head.split(':');
    const t = tail === '' ? [] : tail.split(':');
    groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  } else {
    groups = text.split(':');
  }
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

/**
 * The blocks of a list, host bits cleared, in file order. Comments (`#`, `;`) and blank
 * lines are skipped, and so is any line that is not an address or prefix: the tests'
 * malformed lines are chosen to be obviously so.
 */
export function parseList(text: string): Block[] {
  const out: Block[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.split('#')[0]?.split(';')[0]?.trim() ?? '';
    if (line === '') continue;
    const [address = '', lengthText, ...rest] = line.split('/');
    if (rest.length > 0) continue;
    const family: OracleFamily | undefined = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    if (!family) continue;
    const width = WIDTH[family];
    const length = lengthText === undefined ? width : Number(lengthText);
    if (!/^\d+$/.test(lengthText ?? '0') || length > width) continue;
    const value = family === 'ipv4' ? ipv4ToBigint(address) : ipv6ToBigint(address);
    const hostBits = BigInt(width - length);
    out.push({ family, start: (value >> hostBits) << hostBits, length });
  }
  return out;
}

/** Inclusive address ranges of one family, sorted and coalesced (overlapping or adjacent). */
function coalesce(blocks: readonly Block[], family: OracleFamily): [bigint, bigint][] {
  const ranges = blocks
    .filter((b) => b.family === family)
    .map((b): [bigint, bigint] => [b.start, b.start + sizeOf(b) - 1n])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [lo, hi] of ranges) {
    const last = out.at(-1);
    if (last && lo <= last[1] + 1n) {
      if (hi > last[1]) last[1] = hi;
    } else {
      out.push([lo, hi]);
    }
  }
  return out;
}

/** The fewest blocks covering [lo, hi]: from lo, the largest aligned block that fits, again and again. */
function blocksOfRange(family: OracleFamily, lo: bigint, hi: bigint): Block[] {
  const width = WIDTH[family];
  const out: Block[] = [];
  let at = lo;
  while (at <= hi) {
    let length = width;
    while (length > 0) {
      const bigger = 1n << BigInt(width - length + 1);
      if (at % bigger !== 0n || at + bigger - 1n > hi) break;
      length--;
    }
    out.push({ family, start: at, length });
    at += 1n << BigInt(width - length);
  }
  return out;
}

/** The canonical merged set: IPv4 then IPv6, ascending, disjoint, the fewest blocks. */
export function mergeBlocks(blocks: readonly Block[]): Block[] {
  return (['ipv4', 'ipv6'] as const).flatMap((family) =>
    coalesce(blocks, family).flatMap(([lo, hi]) => blocksOfRange(family, lo, hi)),
  );
}

/** One dropped group, as `status.dropped` shows it. */
export interface OracleDrop {
  readonly reason: 'LongerThanMinPrefixLength' | 'OverMaxEntries';
  readonly family: 'IPv4' | 'IPv6';
  readonly prefixLength: number;
  readonly count: number;
}

/**
 * The budget as the docs state it: (1) `minPrefixLength` N drops IPv4 longer than /N and
 * IPv6 longer than /(N+96); (2) over `maxEntries`, the smallest blocks go first, IPv6
 * before IPv4 at equal size, the highest addresses first within one size. Returns what
 * is kept, in canonical order, and every dropped block.
 */
export function applyBudget(
  merged: readonly Block[],
  opts: { readonly maxEntries?: number; readonly minPrefixLength?: number },
): { kept: Block[]; droppedByLength: Block[]; droppedByCount: Block[] } {
  const tooLong = (b: Block) =>
    opts.minPrefixLength !== undefined && b.length > opts.minPrefixLength + (b.family === 'ipv6' ? 96 : 0);
  const droppedByLength = merged.filter(tooLong);
  let kept = merged.filter((b) => !tooLong(b));
  const over = opts.maxEntries === undefined ? 0 : Math.max(0, kept.length - opts.maxEntries);
  // Drop order: smallest block first; IPv6 first at equal size; highest address first.
  const dropOrder = [...kept].sort((a, b) => {
    const sa = sizeOf(a);
    const sb = sizeOf(b);
    if (sa !== sb) return sa < sb ? -1 : 1;
    if (a.family !== b.family) return a.family === 'ipv6' ? -1 : 1;
    return a.start > b.start ? -1 : a.start < b.start ? 1 : 0;
  });
  const droppedByCount = dropOrder.slice(0, over);
  kept = kept.filter((b) => !droppedByCount.includes(b));
  return { kept, droppedByLength, droppedByCount };
}

function ipv4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join('.');
}

/** RFC 5952: lower-case hex without leading zeros; the longest run of two or more zero groups (the first of equals) becomes `::`. */
function ipv6Text(value: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** `1.2.3.0/24`, `2001:db8::/32`: always with the length. */
export function blockText(b: Block): string {
  return `${b.family === 'ipv4' ? ipv4Text(b.start) : ipv6Text(b.start)}/${b.length}`;
}

/** The canonical text: one block per line, each line ended by a newline. */
export function canonicalText(blocks: readonly Block[]): string {
  return blocks.map((b) => `${blockText(b)}\n`).join('');
}

/** SHA-256 of the canonical text, hex: what `status.fingerprint` must say. */
export function fingerprintOf(blocks: readonly Block[]): string {
  return createHash('sha256').update(canonicalText(blocks)).digest('hex');
}

/** What a source publishes from `list` under a budget: the kept blocks as text and their fingerprint. */
export function expectedSet(
  list: string,
  opts: { readonly maxEntries?: number; readonly minPrefixLength?: number } = {},
): { prefixes: string[]; fingerprint: string; merged: number } {
  const merged = mergeBlocks(parseList(list));
  const { kept } = applyBudget(merged, opts);
  return { prefixes: kept.map(blockText), fingerprint: fingerprintOf(kept), merged: merged.length };
}

/** Whether the union of `blocks` holds `address` of `family`. */
export function coversAddress(blocks: readonly Block[], family: OracleFamily, address: bigint): boolean {
  return blocks.some((b) => b.family === family && b.start <= address && address < b.start + sizeOf(b));
}

/**
 * An address of `must` (a set of blocks) that `union` does not hold, if any. Both unions
 * are constant between block boundaries, so probing the first and last address of every
 * block of `must` after coalescing `union` into ranges decides it: a hole inside a block
 * of `must` starts right after some range of `union` ends, and that point is probed too.
 */
export function uncovered(must: readonly Block[], union: readonly Block[]): string | undefined {
  for (const family of ['ipv4', 'ipv6'] as const) {
    const have = coalesce(union, family);
    for (const [lo, hi] of coalesce(must, family)) {
      const probes = [lo, hi, ...have.flatMap(([, end]) => [end + 1n]).filter((p) => p >= lo && p <= hi)];
      for (const p of probes) {
        if (!have.some(([a, b]) => a <= p && p <= b)) {
          return family === 'ipv4' ? ipv4Text(p) : ipv6Text(p);
        }
      }
    }
  }
  return undefined;
}
