/**
 * budget: over maxEntries the most specific prefixes go first, minPrefixLength drops
 * lone addresses and longer prefixes, and what is dropped is reported exactly; nothing is
 * ever cut silently.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type BudgetOptions,
  budget,
  canonicalStrings,
  DropReason,
  merge,
  type PrefixList,
  parseBlocklist,
  prefixCount,
  prefixesOf,
} from '../src/index.ts';
import { crowdedMixedPrefixes, listOf } from './blocklist-support.ts';

function merged(text: string): PrefixList {
  return merge(parseBlocklist(text).entries);
}

/** Addresses a prefix covers, as a power of two: the scale on which specificity is compared. */
function hostBits(p: { family: 'ipv4' | 'ipv6'; length: number }): number {
  return (p.family === 'ipv4' ? 32 : 128) - p.length;
}

describe('budget: examples', () => {
  it('without a budget keeps everything and drops nothing', () => {
    const list = merged('1.2.3.4\n10.0.0.0/8\n2001:db8::/32\n');
    const r = budget(list);
    assert.deepEqual(canonicalStrings(r.kept), canonicalStrings(list));
    assert.equal(prefixCount(r.dropped), 0);
    assert.deepEqual(r.drops, []);
  });

  it('over maxEntries drops the most specific first: lone addresses before /28 before /24', () => {
    const r = budget(merged('10.0.0.0/24\n10.0.2.0/24\n1.0.0.1\n1.0.0.3\n1.0.0.5\n1.0.1.0/28\n'), {
      maxEntries: 2,
    });
    assert.deepEqual(canonicalStrings(r.kept), ['10.0.0.0/24', '10.0.2.0/24']);
    assert.deepEqual(canonicalStrings(r.dropped), ['1.0.0.1/32', '1.0.0.3/32', '1.0.0.5/32', '1.0.1.0/28']);
    assert.deepEqual(r.drops, [
      { reason: DropReason.OverMaxEntries, family: 'ipv4', length: 32, dropped: 3, kept: 0 },
      { reason: DropReason.OverMaxEntries, family: 'ipv4', length: 28, dropped: 1, kept: 0 },
    ]);
  });

  it('where the cut falls inside one length, drops the highest addresses and says how many of that length were kept', () => {
    const r = budget(merged('1.0.0.7\n1.0.0.1\n1.0.0.5\n1.0.0.3\n2.0.0.0/24\n'), { maxEntries: 3 });
    assert.deepEqual(canonicalStrings(r.kept), ['1.0.0.1/32', '1.0.0.3/32', '2.0.0.0/24']);
    assert.deepEqual(canonicalStrings(r.dropped), ['1.0.0.5/32', '1.0.0.7/32']);
    assert.deepEqual(r.drops, [
      { reason: DropReason.OverMaxEntries, family: 'ipv4', length: 32, dropped: 2, kept: 2 },
    ]);
  });

  it('minPrefixLength drops lone addresses and longer prefixes, IPv6 held to the same block size (+96)', () => {
    const list = merged(
      '1.2.3.4\n1.2.4.0/25\n1.2.5.0/24\n10.0.0.0/8\n2001:db8::1\n2001:db8:1::/121\n2001:db8:2::/120\n2001:db8:3::/64\n',
    );
    const r = budget(list, { minPrefixLength: 24 });
    assert.deepEqual(canonicalStrings(r.kept), [
      '1.2.5.0/24',
      '10.0.0.0/8',
      '2001:db8:2::/120',
      '2001:db8:3::/64',
    ]);
    assert.deepEqual(canonicalStrings(r.dropped), [
      '1.2.3.4/32',
      '1.2.4.0/25',
      '2001:db8::1/128',
      '2001:db8:1::/121',
    ]);
    assert.deepEqual(
      r.drops.map((d) => [d.reason, d.family, d.length, d.dropped]),
      [
        [DropReason.LongerThanMinPrefixLength, 'ipv4', 32, 1],
        [DropReason.LongerThanMinPrefixLength, 'ipv4', 25, 1],
        [DropReason.LongerThanMinPrefixLength, 'ipv6', 128, 1],
        [DropReason.LongerThanMinPrefixLength, 'ipv6', 121, 1],
      ],
    );
  });

  it('applies minPrefixLength first, then maxEntries to what is left', () => {
    const r = budget(merged('1.2.3.4\n1.0.0.0/24\n2.0.0.0/16\n3.0.0.0/8\n'), {
      minPrefixLength: 24,
      maxEntries: 2,
    });
    assert.deepEqual(canonicalStrings(r.kept), ['2.0.0.0/16', '3.0.0.0/8']);
    assert.deepEqual(
      r.drops.map((d) => [d.reason, d.length]),
      [
        [DropReason.LongerThanMinPrefixLength, 32],
        [DropReason.OverMaxEntries, 24],
      ],
    );
  });

  it('compares families by block size: an IPv4 /24 goes before an IPv6 /64; at one address each, IPv6 goes first', () => {
    const a = budget(merged('1.0.0.0/24\n2001:db8::/64\n'), { maxEntries: 1 });
    assert.deepEqual(canonicalStrings(a.kept), ['2001:db8::/64']);
    const b = budget(merged('1.0.0.1\n2001:db8::1\n'), { maxEntries: 1 });
    assert.deepEqual(canonicalStrings(b.kept), ['1.0.0.1/32']);
    assert.deepEqual(b.drops, [
      { reason: DropReason.OverMaxEntries, family: 'ipv6', length: 128, dropped: 1, kept: 0 },
    ]);
  });

  it('refuses options outside their ranges rather than guessing', () => {
    const list = merged('1.2.3.4\n');
    for (const options of [
      { maxEntries: 0 },
      { maxEntries: 1.5 },
      { minPrefixLength: 33 },
      { minPrefixLength: -1 },
    ]) {
      assert.throws(() => budget(list, options), RangeError, JSON.stringify(options));
    }
  });
});

describe('budget: properties', () => {
  const options = fc.record(
    { maxEntries: fc.integer({ min: 1, max: 40 }), minPrefixLength: fc.integer({ min: 0, max: 32 }) },
    { requiredKeys: [] },
  );

  it('kept and dropped split the merged list exactly; the report adds up to the dropped list', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), options, (input, o: BudgetOptions) => {
        const list = merge(listOf(input));
        const r = budget(list, o);
        const all = canonicalStrings(list);
        const kept = canonicalStrings(r.kept);
        const dropped = canonicalStrings(r.dropped);
        assert.deepEqual([...kept, ...dropped].sort(), [...all].sort());
        assert.deepEqual(
          kept,
          all.filter((p) => kept.includes(p)),
          'kept is not in canonical order',
        );
        assert.deepEqual(
          dropped,
          all.filter((p) => dropped.includes(p)),
          'dropped is not in canonical order',
        );
        const tally = new Map<string, number>();
        for (const p of prefixesOf(r.dropped))
          tally.set(`${p.family}/${p.length}`, (tally.get(`${p.family}/${p.length}`) ?? 0) + 1);
        const reported = new Map<string, number>();
        for (const d of r.drops)
          reported.set(`${d.family}/${d.length}`, (reported.get(`${d.family}/${d.length}`) ?? 0) + d.dropped);
        assert.deepEqual(reported, tally);
      }),
      { numRuns: 400 },
    );
  });

  it('keeps at most maxEntries, and exactly that many when enough pass minPrefixLength', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), options, (input, o: BudgetOptions) => {
        const list = merge(listOf(input));
        const r = budget(list, o);
        const min = o.minPrefixLength;
        const passing = [...prefixesOf(list)].filter(
          (p) => min === undefined || hostBits(p) >= 32 - min,
        ).length;
        assert.equal(prefixCount(r.kept), Math.min(passing, o.maxEntries ?? Number.POSITIVE_INFINITY));
        for (const p of prefixesOf(r.kept)) if (min !== undefined) assert.ok(hostBits(p) >= 32 - min);
      }),
      { numRuns: 400 },
    );
  });

  it('drops the most specific first: nothing dropped over maxEntries is larger than anything kept', () => {
    fc.assert(
      fc.property(crowdedMixedPrefixes(), options, (input, o: BudgetOptions) => {
        const r = budget(merge(listOf(input)), o);
        const overBudget = new Set(
          r.drops.filter((d) => d.reason === DropReason.OverMaxEntries).map((d) => `${d.family}/${d.length}`),
        );
        const dropped = [...prefixesOf(r.dropped)].filter((p) => overBudget.has(`${p.family}/${p.length}`));
        const smallestKept = Math.min(...[...prefixesOf(r.kept)].map(hostBits));
        for (const p of dropped) assert.ok(hostBits(p) <= smallestKept);
      }),
      { numRuns: 400 },
    );
  });
});
