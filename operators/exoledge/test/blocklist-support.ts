/**
 * Test helpers for the blocklist pipeline: an independent, obviously-correct model of
 * address sets (bigint ranges, membership by brute force) to hold the fast code to, and
 * fast-check generators of prefixes crowded into small regions, so that overlaps,
 * duplicates and mergeable neighbours are common rather than rare.
 */
import fc from 'fast-check';
import { type Prefix, type PrefixList, prefixesOf, prefixListOf } from '../src/index.ts';

export type Family = 'ipv4' | 'ipv6';

export const BITS: Record<Family, number> = { ipv4: 32, ipv6: 128 };

/** A prefix as an inclusive bigint range, in its family. */
export interface Range {
  readonly family: Family;
  readonly start: bigint;
  readonly end: bigint;
  readonly length: number;
}

export function rangeOf(p: Prefix): Range {
  const bits = BITS[p.family];
  const start = BigInt(p.address);
  return { family: p.family, start, end: start + (1n << BigInt(bits - p.length)) - 1n, length: p.length };
}

export function rangesOf(list: PrefixList): Range[] {
  return [...prefixesOf(list)].map(rangeOf);
}

export function covers(ranges: readonly Range[], family: Family, address: bigint): boolean {
  return ranges.some((r) => r.family === family && r.start <= address && address <= r.end);
}

/**
 * Whether two unions of ranges hold the same addresses. Both are constant between the
 * starts and ends of their ranges, so probing at every start and end, and one past each,
 * decides it exactly.
 */
export function sameAddresses(
  a: readonly Range[],
  b: readonly Range[],
): { equal: boolean; witness?: string } {
  for (const r of [...a, ...b]) {
    const max = (1n << BigInt(BITS[r.family])) - 1n;
    for (const probe of [r.start - 1n, r.start, r.end, r.end + 1n]) {
      if (probe < 0n || probe > max) continue;
      if (covers(a, r.family, probe) !== covers(b, r.family, probe)) {
        return { equal: false, witness: `${r.family} ${probe}` };
      }
    }
  }
  return { equal: true };
}

/** Whether `ranges` (disjoint) hold every address of `target`. */
export function coversWhole(ranges: readonly Range[], target: Range): boolean {
  let inside = 0n;
  for (const r of ranges) {
    if (r.family !== target.family) continue;
    // Math.min and Math.max do not take bigints.
    let lo = r.start;
    if (target.start > lo) lo = target.start;
    let hi = r.end;
    if (target.end < hi) hi = target.end;
    if (lo <= hi) inside += hi - lo + 1n;
  }
  return inside === target.end - target.start + 1n;
}

/** The enclosing prefix one bit shorter. */
export function parentOf(r: Range): Range {
  const bits = BITS[r.family];
  const size = 1n << BigInt(bits - r.length + 1);
  const start = (r.start / size) * size;
  return { family: r.family, start, end: start + size - 1n, length: r.length - 1 };
}

function prefixIn(family: Family, regionStart: bigint, regionLength: number, length: fc.Arbitrary<number>) {
  const bits = BITS[family];
  const regionSize = 1n << BigInt(bits - regionLength);
  return fc
    .record({ offset: fc.bigInt({ min: 0n, max: regionSize - 1n }), length })
    .map(({ offset, length }): Prefix => {
      const size = 1n << BigInt(bits - length);
      const network = ((regionStart + offset) / size) * size;
      return family === 'ipv4'
        ? { family, address: Number(network), length }
        : { family, address: network, length };
    });
}

/** Any prefix of the family, host bits zero; short ones rarer, since one /3 swallows the rest. */
export function anyPrefix(family: Family) {
  const bits = BITS[family];
  const length = fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: bits / 2, max: bits }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: bits }) },
  );
  return prefixIn(family, 0n, 0, length);
}

/**
 * Lists of prefixes mostly inside one small region (a /22 for IPv4, a /118 for IPv6), so
 * that neighbours, duplicates and overlaps are frequent, plus a few anywhere, including
 * the edges of the address space.
 */
export function crowdedPrefixes(family: Family) {
  const bits = BITS[family];
  const regionLength = bits - 10;
  const max = (1n << BigInt(bits)) - 1n;
  const edges: Prefix[] =
    family === 'ipv4'
      ? [
          { family, address: 0, length: 32 },
          { family, address: 0xffffffff, length: 32 },
        ]
      : [
          { family, address: 0n, length: 128 },
          { family, address: max, length: 128 },
        ];
  return fc.bigInt({ min: 0n, max: (1n << BigInt(regionLength)) - 1n }).chain((region) => {
    const start = region << BigInt(bits - regionLength);
    return fc.array(
      fc.oneof(
        {
          weight: 12,
          arbitrary: prefixIn(family, start, regionLength, fc.integer({ min: regionLength, max: bits })),
        },
        { weight: 1, arbitrary: anyPrefix(family) },
        { weight: 1, arbitrary: fc.constantFrom(...edges) },
      ),
      { maxLength: 60 },
    );
  });
}

/** Both families at once, interleaved. */
export function crowdedMixedPrefixes() {
  return fc
    .tuple(crowdedPrefixes('ipv4'), crowdedPrefixes('ipv6'))
    .chain(([a, b]) => fc.shuffledSubarray([...a, ...b], { minLength: a.length + b.length }));
}

export function listOf(prefixes: readonly Prefix[]): PrefixList {
  return prefixListOf(prefixes);
}
