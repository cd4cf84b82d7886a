/**
 * merge: the minimal exact CIDR cover. The properties are checked against a brute-force
 * model (see blocklist-support.ts), on lists crowded into small regions so that the
 * interesting cases (touching, overlapping, duplicated, nested) are the common ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { sortIpv4, sortIpv6 } from '../src/domain/blocklist/sort.ts';
import {
  canonicalStrings,
  merge,
  type Prefix,
  parseBlocklist,
  prefixCount,
  prefixesOf,
  prefixListOf,
} from '../src/index.ts';
import {
  coversWhole,
  crowdedMixedPrefixes,
  crowdedPrefixes,
  type Family,
  listOf,
  parentOf,
  type Range,
  rangesOf,
  sameAddresses,
} from './blocklist-support.ts';

function mergedStrings(text: string): string[] {
  return canonicalStrings(merge(parseBlocklist(text).entries));
}

const RUNS = { numRuns: 400 };

function checkCover(input: readonly Prefix[]): void {
  const out = rangesOf(merge(listOf(input)));
  const inRanges = rangesOf(listOf(input));
  const same = sameAddresses(inRanges, out);
  assert.ok(same.equal, `input and output differ at ${same.witness}`);
}

function checkMinimalAndCanonical(input: readonly Prefix[]): void {
  const out = rangesOf(merge(listOf(input)));
  const byFamily = (f: Family): Range[] => out.filter((r) => r.family === f);
  // IPv4 first, then IPv6.
  const families = out.map((r) => r.family);
  assert.deepEqual(families, [...byFamily('ipv4').map(() => 'ipv4'), ...byFamily('ipv6').map(() => 'ipv6')]);
  for (const f of ['ipv4', 'ipv6'] as const) {
    const rs = byFamily(f);
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i]!;
      // Host bits zero.
      assert.equal(r.start % (r.end - r.start + 1n), 0n, 'a network address with host bits set');
      // Ascending, disjoint.
      if (i > 0) assert.ok(rs[i - 1]!.end < r.start, 'outputs overlap or are out of order');
      // Maximal: the parent is not inside the set, so no shorter prefix could replace this one.
      if (r.length > 0) assert.ok(!coversWhole(rs, parentOf(r)), `the parent of a /${r.length} is covered`);
    }
    // No two outputs mergeable: never two halves of one parent.
    for (let i = 1; i < rs.length; i++) {
      const a = rs[i - 1]!;
      const b = rs[i]!;
      const mergeable = a.length === b.length && a.length > 0 && parentOf(a).start === parentOf(b).start;
      assert.ok(!mergeable, 'two outputs are halves of one prefix');
    }
  }
}

describe('merge: properties', () => {
  for (const family of ['ipv4', 'ipv6'] as const) {
    it(`covers exactly the input's addresses (${family})`, () => {
      fc.assert(fc.property(crowdedPrefixes(family), checkCover), RUNS);
    });

    it(`is minimal and canonical: sorted, disjoint, every prefix maximal, none mergeable (${family})`, () => {
      fc.assert(fc.property(crowdedPrefixes(family), checkMinimalAndCanonical), RUNS);
    });
  }

  it('handles both families in one list, IPv4 first', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), (input) => {
        checkCover(input);
        checkMinimalAndCanonical(input);
      }),
      RUNS,
    );
  });

  it('depends on the address set only: any order, any duplication, gives the same list', () => {
    fc.assert(
      fc.property(
        crowdedMixedPrefixes().chain((input) =>
          fc.tuple(fc.constant(input), fc.shuffledSubarray(input, { minLength: input.length })),
        ),
        fc.integer({ min: 0, max: 3 }),
        ([input, shuffled], copies) => {
          const doubled = [...shuffled, ...shuffled.slice(0, copies)];
          assert.deepEqual(canonicalStrings(merge(listOf(doubled))), canonicalStrings(merge(listOf(input))));
        },
      ),
      RUNS,
    );
  });

  it('is idempotent: merging a merged list changes nothing', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), (input) => {
        const once = merge(listOf(input));
        assert.deepEqual(canonicalStrings(merge(once)), canonicalStrings(once));
      }),
      RUNS,
    );
  });

  it('takes the sorted fast path and the radix sort to the same result', () => {
    // A sorted input skips the sort: check it against the same set given unsorted.
    fc.assert(
      fc.property(crowdedPrefixes('ipv4'), (input) => {
        const sorted = [...input].sort(
          (a, b) => Number(a.address) - Number(b.address) || a.length - b.length,
        );
        assert.deepEqual(canonicalStrings(merge(listOf(sorted))), canonicalStrings(merge(listOf(input))));
      }),
      RUNS,
    );
  });
});

describe('merge: examples', () => {
  it('four contiguous /24 become one /22', () => {
    assert.deepEqual(mergedStrings('10.0.2.0/24\n10.0.0.0/24\n10.0.3.0/24\n10.0.1.0/24\n'), ['10.0.0.0/22']);
  });

  it('three contiguous /24 stay a /23 and a /24: no prefix covers exactly their union', () => {
    assert.deepEqual(mergedStrings('10.0.0.0/24\n10.0.1.0/24\n10.0.2.0/24\n'), [
      '10.0.0.0/23',
      '10.0.2.0/24',
    ]);
  });

  it('two /24 that touch but are not halves of one /23 stay two', () => {
    assert.deepEqual(mergedStrings('10.0.1.0/24\n10.0.2.0/24\n'), ['10.0.1.0/24', '10.0.2.0/24']);
  });

  it('duplicates and prefixes inside others vanish', () => {
    assert.deepEqual(mergedStrings('1.2.3.4\n1.2.3.4\n1.2.3.0/24\n1.2.3.128/25\n1.2.3.4/32\n'), [
      '1.2.3.0/24',
    ]);
  });

  it('overlapping prefixes become the minimal cover of their union', () => {
    // 10.0.0.0/23 and 10.0.1.0/24 overlap; with 10.0.2.0/23 they fill 10.0.0.0/22.
    assert.deepEqual(mergedStrings('10.0.0.0/23\n10.0.1.0/24\n10.0.2.0/23\n'), ['10.0.0.0/22']);
  });

  it('consecutive addresses become the largest aligned blocks', () => {
    const lines = Array.from({ length: 11 }, (_, i) => `192.0.2.${5 + i}`).join('\n');
    // 5..15: 5/32, 6/31, 8/29.
    assert.deepEqual(mergedStrings(lines), ['192.0.2.5/32', '192.0.2.6/31', '192.0.2.8/29']);
  });

  it('the whole IPv4 space from its two halves, and its edges stay exact', () => {
    assert.deepEqual(mergedStrings('0.0.0.0/1\n128.0.0.0/1\n'), ['0.0.0.0/0']);
    assert.deepEqual(mergedStrings('255.255.255.255\n0.0.0.0\n255.255.255.254\n'), [
      '0.0.0.0/32',
      '255.255.255.254/31',
    ]);
  });

  it('IPv6 neighbours merge the same way and print compressed', () => {
    assert.deepEqual(mergedStrings('2001:db8:0:1::/64\n2001:db8::/64\n2001:DB8:0:2::/63\n'), [
      '2001:db8::/62',
    ]);
    assert.deepEqual(mergedStrings('::\n::1\n'), ['::/127']);
    assert.deepEqual(mergedStrings('::/1\n8000::/1\n'), ['::/0']);
  });

  it('an IPv4-mapped IPv6 entry merges with the IPv4 addresses it names, and is written as IPv4', () => {
    assert.deepEqual(mergedStrings('1.2.3.4\n::ffff:1.2.3.4\n'), ['1.2.3.4/32']);
    assert.deepEqual(mergedStrings('1.2.3.0/25\n::ffff:1.2.3.128/121\n2001:db8::1\n'), [
      '1.2.3.0/24',
      '2001:db8::1/128',
    ]);
  });

  it('an empty list merges to an empty list', () => {
    assert.equal(prefixCount(merge(parseBlocklist('# nothing\n').entries)), 0);
  });
});

/** sortIpv6 orders `prefixes` as a comparison sort of their bigint addresses does, lengths travelling along. */
function sortsIpv6LikeBigints(prefixes: readonly Prefix[]): void {
  const list = prefixListOf(prefixes);
  const sorted = [...prefixesOf({ ipv4: list.ipv4, ipv6: sortIpv6(list.ipv6) })];
  const byAddress = [...prefixes].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : 0,
  );
  assert.deepEqual(
    sorted.map((p) => p.address),
    byAddress.map((p) => p.address),
  );
  const key = (p: Prefix): string => `${p.address}/${p.length}`;
  assert.deepEqual(sorted.map(key).sort(), prefixes.map(key).sort());
}

describe('sort: large lists, every bucket size', () => {
  // Merge's property tests use short lists; the radix sorts switch methods with bucket
  // size (insertion, counting passes, skipped shared bytes), so these draw thousands of
  // addresses into a few /16s (IPv4) or one /48 (IPv6), checked against Array#sort.
  it('orders IPv4 like a comparison sort, lengths travelling with their addresses', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 32 })), {
          minLength: 200,
          maxLength: 3000,
          size: 'max',
        }),
        (highs, draws) => {
          const prefixes: Prefix[] = draws.map(([h, low, length]) => {
            const a = (highs[h % highs.length]! * 65536 + low) >>> 0;
            const size = 2 ** (32 - length);
            return { family: 'ipv4', address: Math.floor(a / size) * size, length };
          });
          const sorted = [
            ...prefixesOf({ ipv4: sortIpv4(prefixListOf(prefixes).ipv4), ipv6: prefixListOf([]).ipv6 }),
          ];
          const key = (p: Prefix): string => `${p.address}/${p.length}`;
          assert.deepEqual(
            sorted.map((p) => Number(p.address)),
            prefixes.map((p) => Number(p.address)).sort((a, b) => a - b),
          );
          assert.deepEqual(sorted.map(key).sort(), prefixes.map(key).sort());
        },
      ),
      { numRuns: 40 },
    );
  });

  it('orders IPv6 like a comparison sort of bigints', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.bigInt({ min: 0n, max: (1n << 80n) - 1n }), fc.integer({ min: 48, max: 128 })), {
          minLength: 200,
          maxLength: 2000,
          size: 'max',
        }),
        fc.bigInt({ min: 0n, max: (1n << 48n) - 1n }),
        (draws, site) => {
          const prefixes: Prefix[] = draws.map(([low, length]) => {
            const size = 1n << BigInt(128 - length);
            return { family: 'ipv6', address: (((site << 80n) | low) / size) * size, length };
          });
          sortsIpv6LikeBigints(prefixes);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('orders IPv6 spread over many top-16-bit buckets, small and large, like a comparison sort', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 40 }),
        fc.array(
          fc.tuple(
            fc.nat(),
            fc.bigInt({ min: 0n, max: (1n << 112n) - 1n }),
            fc.integer({ min: 0, max: 128 }),
          ),
          { minLength: 1, maxLength: 1500, size: 'max' },
        ),
        (highs, draws) => {
          const prefixes: Prefix[] = draws.map(([h, low, length]) => {
            const size = 1n << BigInt(128 - length);
            const address = (BigInt(highs[h % highs.length]!) << 112n) | low;
            return { family: 'ipv6', address: (address / size) * size, length };
          });
          sortsIpv6LikeBigints(prefixes);
        },
      ),
      { numRuns: 60 },
    );
  });
});
