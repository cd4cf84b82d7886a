/**
 * The decider's prefix table, held to a naive oracle: an address is in a list when one
 * of the list's prefixes, compared bit by bit with a BigInt mask, contains it; an IPv4
 * address and its IPv4-mapped IPv6 form are one host. Lists are crowded into one small
 * region so that nested, duplicated, adjacent and overlapping prefixes, in one list and
 * across lists, are the common case; every prefix's first and last address and their
 * neighbours are probed, in text and as parsed addresses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ListKind as Kinds, type ListKind } from '../src/api/blocklist-source.ts';
import {
  type Address,
  type Lookup,
  PrefixTable,
  parseAddress,
  type TableList,
} from '../src/decider/prefix-table.ts';
import { formatIpv4, formatIpv6, type Prefix, prefixListOf } from '../src/index.ts';

type Family = 'ipv4' | 'ipv6';
const BITS: Record<Family, bigint> = { ipv4: 32n, ipv6: 128n };
const MAPPED = 0xffffn << 32n;
const MAX: Record<Family, bigint> = { ipv4: (1n << 32n) - 1n, ipv6: (1n << 128n) - 1n };

interface ModelList {
  readonly name: string;
  readonly kind: ListKind;
  readonly prefixes: readonly Prefix[];
}

/** Whether `p` contains `address` of `family`: the first `length` bits agree. */
function contains(p: Prefix, family: Family, address: bigint): boolean {
  if (p.family !== family) return false;
  const host = BITS[family] - BigInt(p.length);
  return BigInt(p.address) >> host === address >> host;
}

/** The oracle: the names of the lists holding the address, the IPv4 and mapped forms being one host. */
function oracle(lists: readonly ModelList[], family: Family, address: bigint): string[] {
  let v4: bigint | undefined;
  if (family === 'ipv4') v4 = address;
  else if (address >> 32n === 0xffffn) v4 = address & 0xffffffffn;
  const holds = (p: Prefix): boolean =>
    v4 === undefined
      ? contains(p, 'ipv6', address)
      : contains(p, 'ipv4', v4) || contains(p, 'ipv6', MAPPED | v4);
  return lists
    .filter((l) => l.prefixes.some(holds))
    .map((l) => l.name)
    .sort();
}

function namesOf(result: Lookup): string[] {
  switch (result.outcome) {
    case 'listed':
      return result.lists.map((l) => l.name);
    case 'unlisted':
      return [];
    case 'notAnAddress':
      return assert.fail(`not an address: ${result.message}`);
    default:
      return result satisfies never;
  }
}

function tableOf(lists: readonly ModelList[]): PrefixTable {
  return PrefixTable.build(
    lists.map((l): TableList => ({ name: l.name, kind: l.kind, prefixes: prefixListOf(l.prefixes) })),
  );
}

function addressOf(family: Family, a: bigint): Address {
  return family === 'ipv4' ? { family, address: Number(a) } : { family, address: a };
}

function textOf(family: Family, a: bigint): string {
  return family === 'ipv4' ? formatIpv4(Number(a)) : formatIpv6(a);
}

/** Looks `address` up every way it can be written and checks each against the oracle. */
function check(table: PrefixTable, lists: readonly ModelList[], family: Family, address: bigint): void {
  const expected = oracle(lists, family, address);
  const forms: [string, Lookup][] = [
    [`${family} text ${textOf(family, address)}`, table.lookup(textOf(family, address))],
    [`${family} value ${address}`, table.lookup(addressOf(family, address))],
  ];
  if (family === 'ipv4') {
    forms.push([
      `mapped ::ffff:${formatIpv4(Number(address))}`,
      table.lookup(`::ffff:${formatIpv4(Number(address))}`),
    ]);
    forms.push([`mapped value`, table.lookup({ family: 'ipv6', address: MAPPED | address })]);
  }
  for (const [form, result] of forms) assert.deepEqual(namesOf(result), expected, form);
}

/** The addresses where an answer can change: each prefix's first and last, and one beyond each. */
function edgesOf(lists: readonly ModelList[], family: Family): bigint[] {
  const out = new Set<bigint>([0n, MAX[family]]);
  for (const l of lists) {
    for (const p of l.prefixes) {
      // An IPv6 prefix in the mapped range is probed as the IPv4 host it is.
      const start = BigInt(p.address);
      const end = start + (1n << (BITS[p.family] - BigInt(p.length))) - 1n;
      // And the /16 boundaries around them: an IPv4 lookup searches only its /16's positions.
      const bucket = (x: bigint): bigint => x & ~0xffffn;
      const near = [bucket(start) - 1n, bucket(start), bucket(end) + 0xffffn, bucket(end) + 0x10000n];
      for (const a of [start - 1n, start, end, end + 1n, ...near]) {
        if (p.family === family && a >= 0n && a <= MAX[family]) out.add(a);
        if (p.family === 'ipv6' && family === 'ipv4' && a >> 32n === 0xffffn) out.add(a & 0xffffffffn);
      }
    }
  }
  return [...out];
}

/** A prefix of `family` inside the region `regionStart`/`regionLength`. */
function prefixIn(family: Family, regionStart: bigint, regionLength: number): fc.Arbitrary<Prefix> {
  const bits = Number(BITS[family]);
  return fc
    .record({
      offset: fc.bigInt({ min: 0n, max: (1n << BigInt(bits - regionLength)) - 1n }),
      length: fc.integer({ min: regionLength, max: bits }),
    })
    .map(({ offset, length }): Prefix => {
      const size = 1n << BigInt(bits - length);
      const network = ((regionStart + offset) / size) * size;
      return family === 'ipv4'
        ? { family, address: Number(network), length }
        : { family, address: network, length };
    });
}

/** Any prefix of the family, /0 and host routes at the edges of the space included. */
function anywhere(family: Family): fc.Arbitrary<Prefix> {
  return fc.oneof(prefixIn(family, 0n, 0), fc.constantFrom(...edgePrefixes(family)));
}

function edgePrefixes(family: Family): Prefix[] {
  return family === 'ipv4'
    ? [
        { family, address: 0, length: 0 },
        { family, address: 0, length: 32 },
        { family, address: 0xffffffff, length: 32 },
        { family, address: 0x80000000, length: 1 },
      ]
    : [
        { family, address: 0n, length: 0 },
        { family, address: 0n, length: 128 },
        { family, address: MAX.ipv6, length: 128 },
        { family, address: 0n, length: 64 },
        { family, address: 0n, length: 95 },
        { family, address: MAPPED, length: 96 },
        { family, address: MAPPED | 0x01020300n, length: 120 },
      ];
}

/**
 * One to four lists of prefixes, most inside one small region shared by all lists (a
 * /22 of IPv4, a /118 of IPv6), some anywhere. IPv6 lists also get IPv4-mapped prefixes
 * over the IPv4 lists' region, to hold the mapped rule to account.
 */
function crowdedLists(family: Family): fc.Arbitrary<{ lists: ModelList[]; region: bigint }> {
  const bits = Number(BITS[family]);
  const regionLength = bits - 10;
  return fc.bigInt({ min: 0n, max: (1n << BigInt(regionLength)) - 1n }).chain((r) => {
    const region = r << BigInt(bits - regionLength);
    const mixed: fc.Arbitrary<Prefix>[] = [prefixIn(family, region, regionLength)];
    if (family === 'ipv4') {
      // Mapped prefixes over the same region, as an IPv6 list given outside parseBlocklist would hold them.
      mixed.push(
        prefixIn('ipv4', region, regionLength).map(
          (p): Prefix => ({ family: 'ipv6', address: MAPPED | BigInt(p.address), length: p.length + 96 }),
        ),
      );
    }
    const prefix = fc.oneof(
      { weight: 10, arbitrary: fc.oneof(...mixed) },
      { weight: 1, arbitrary: anywhere(family) },
      { weight: 1, arbitrary: anywhere(family === 'ipv4' ? 'ipv6' : 'ipv4') },
    );
    const list = fc.record({
      kind: fc.constantFrom<ListKind>(Kinds.Certain, Kinds.Presumed),
      prefixes: fc.array(prefix, { maxLength: 40 }),
    });
    return fc.record({
      lists: fc
        .array(list, { minLength: 1, maxLength: 4 })
        .map((ls) => ls.map((l, i): ModelList => ({ name: `list-${i}`, ...l }))),
      region: fc.constant(region),
    });
  });
}

const RUNS = { numRuns: 300 };

describe('PrefixTable against a bit-mask oracle', () => {
  for (const family of ['ipv4', 'ipv6'] as const) {
    it(`${family}: every prefix edge and its neighbours get the lists whose prefixes contain them`, () => {
      fc.assert(
        fc.property(crowdedLists(family), ({ lists }) => {
          const table = tableOf(lists);
          for (const a of edgesOf(lists, family)) check(table, lists, family, a);
        }),
        RUNS,
      );
    });

    it(`${family}: random addresses in the crowded region agree with the oracle`, () => {
      const bits = Number(BITS[family]);
      fc.assert(
        fc.property(
          crowdedLists(family).chain(({ lists, region }) =>
            fc.record({
              lists: fc.constant(lists),
              probes: fc.array(fc.bigInt({ min: region, max: region + (1n << BigInt(10)) - 1n }), {
                maxLength: 30,
              }),
              anywhere: fc.array(fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n }), { maxLength: 5 }),
            }),
          ),
          ({ lists, probes, anywhere }) => {
            const table = tableOf(lists);
            for (const a of [...probes, ...anywhere]) check(table, lists, family, a);
          },
        ),
        RUNS,
      );
    });
  }

  it('answers carry each list with its kind, sorted by name', () => {
    const table = tableOf([
      { name: 'tor', kind: Kinds.Presumed, prefixes: [{ family: 'ipv4', address: 0x01020300, length: 24 }] },
      { name: 'cve', kind: Kinds.Certain, prefixes: [{ family: 'ipv4', address: 0x01000000, length: 8 }] },
    ]);
    assert.deepEqual(table.lookup('1.2.3.4'), {
      outcome: 'listed',
      lists: [
        { name: 'cve', kind: Kinds.Certain },
        { name: 'tor', kind: Kinds.Presumed },
      ],
    });
    assert.deepEqual(
      table.lists.map((l) => l.name),
      ['cve', 'tor'],
    );
  });
});

const v4 = (text: string): Prefix => {
  const [address, length] = text.split('/');
  const parsed = parseAddress(address!);
  assert.ok(parsed.outcome === 'address' && parsed.address.family === 'ipv4');
  return { family: 'ipv4', address: parsed.address.address, length: Number(length) };
};
const v6 = (text: string): Prefix => {
  const [address, length] = text.split('/');
  const parsed = parseAddress(address!);
  assert.ok(parsed.outcome === 'address' && parsed.address.family === 'ipv6', text);
  return { family: 'ipv6', address: parsed.address.address, length: Number(length) };
};

describe('PrefixTable: named cases', () => {
  const cases: { name: string; lists: Record<string, Prefix[]>; probes: Record<string, string[]> }[] = [
    {
      name: 'the first and last address of a prefix are in it, their neighbours are not',
      lists: { a: [v4('10.0.0.0/24')] },
      probes: { '9.255.255.255': [], '10.0.0.0': ['a'], '10.0.0.255': ['a'], '10.0.1.0': [] },
    },
    {
      name: '/0 holds every IPv4 address, /32 exactly one',
      lists: { all: [v4('0.0.0.0/0')], one: [v4('255.255.255.255/32'), v4('0.0.0.0/32')] },
      probes: {
        '0.0.0.0': ['all', 'one'],
        '0.0.0.1': ['all'],
        '255.255.255.254': ['all'],
        '255.255.255.255': ['all', 'one'],
      },
    },
    {
      name: 'IPv6 /0 and /128 at both ends of the space',
      lists: { all: [v6('::/0')], one: [v6('::/128'), v6('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128')] },
      probes: {
        '::': ['all', 'one'],
        '::1': ['all'],
        'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe': ['all'],
        'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff': ['all', 'one'],
      },
    },
    {
      name: 'adjacent prefixes leave no hole and nothing beyond',
      lists: { a: [v4('10.0.0.0/25'), v4('10.0.0.128/25'), v4('10.0.1.0/32')] },
      probes: { '10.0.0.127': ['a'], '10.0.0.128': ['a'], '10.0.1.0': ['a'], '10.0.1.1': [] },
    },
    {
      name: 'a nested prefix adds nothing to its list, and the outer one still answers around it',
      lists: { a: [v4('10.0.0.0/16'), v4('10.0.5.0/24')], b: [v4('10.0.5.7/32')] },
      probes: { '10.0.5.6': ['a'], '10.0.5.7': ['a', 'b'], '10.0.5.8': ['a'], '10.1.0.0': [] },
    },
    {
      name: 'one list ends where another starts',
      lists: { a: [v4('10.0.0.0/24')], b: [v4('10.0.1.0/24')] },
      probes: { '10.0.0.255': ['a'], '10.0.1.0': ['b'] },
    },
    {
      name: 'IPv6 adjacent, nested and across a word boundary',
      lists: { a: [v6('2001:db8::/64'), v6('2001:db8:0:1::/64')], b: [v6('2001:db8::ffff:ffff/128')] },
      probes: {
        '2001:db8::ffff:ffff': ['a', 'b'],
        '2001:db8::1:0:0': ['a'],
        '2001:db8:0:1:ffff:ffff:ffff:ffff': ['a'],
        '2001:db8:0:2::': [],
        '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff': [],
      },
    },
    {
      name: 'IPv4-mapped IPv6 is looked up as the IPv4 address it maps',
      lists: { a: [v4('1.2.3.0/24')] },
      probes: { '::ffff:1.2.3.4': ['a'], '::ffff:102:304': ['a'], '::ffff:1.2.4.0': [], '::1.2.3.4': [] },
    },
    {
      name: 'an IPv6 prefix covering ::ffff:0:0/96 holds every IPv4 address',
      lists: { wide: [v6('::/64')], none: [v6('::/96')] },
      probes: { '1.2.3.4': ['wide'], '::ffff:1.2.3.4': ['wide'], '::1': ['none', 'wide'], '1::': [] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const table = PrefixTable.build(
        Object.entries(c.lists).map(([name, prefixes]) => ({
          name,
          kind: Kinds.Presumed,
          prefixes: prefixListOf(prefixes),
        })),
      );
      for (const [address, expected] of Object.entries(c.probes)) {
        assert.deepEqual(namesOf(table.lookup(address)), expected, address);
      }
    });
  }

  it('a range costs two intervals: touching prefixes are one range, and 0 opens no second interval', () => {
    const table = PrefixTable.build([
      // Touching but not mergeable into one prefix: one range 10.0.0.0 to 10.0.1.127.
      { name: 'a', kind: Kinds.Certain, prefixes: prefixListOf([v4('10.0.0.0/24'), v4('10.0.1.0/25')]) },
      // Starts at 0: it replaces the set of the first interval.
      {
        name: 'b',
        kind: Kinds.Certain,
        prefixes: prefixListOf([v4('0.0.0.0/8'), v6('2001::/16'), v6('2002::/16')]),
      },
    ]);
    // 0.0.0.0 {b}, 1.0.0.0 {}, 10.0.0.0 {a}, 10.0.1.128 {}; :: {}, 2001:: {b}, 2003:: {}.
    assert.equal(table.stats.ipv4Intervals, 4);
    assert.equal(table.stats.ipv6Intervals, 3);
  });

  it('an empty table lists nothing, and no list at all is a table', () => {
    const table = PrefixTable.build([]);
    assert.equal(table.lookup('1.2.3.4').outcome, 'unlisted');
    assert.equal(table.lookup('2001:db8::1').outcome, 'unlisted');
    const empty = PrefixTable.build([{ name: 'a', kind: Kinds.Certain, prefixes: prefixListOf([]) }]);
    assert.equal(empty.lookup('0.0.0.0').outcome, 'unlisted');
  });

  it('a released table frees its arrays at once and refuses lookups instead of answering wrong', () => {
    const table = tableOf([
      { name: 'a', kind: Kinds.Certain, prefixes: [v4('10.0.0.0/8'), v6('2001:db8::/32')] },
    ]);
    const parts = table.parts;
    assert.equal(table.lookup('10.1.2.3').outcome, 'listed');
    table.release();
    for (const a of [parts.v4Positions, parts.v4Index, parts.v4Sets, parts.v6Positions, parts.v6Sets]) {
      assert.equal(a.byteLength, 0, 'a detached array');
    }
    assert.throws(() => table.lookup('10.1.2.3'), /released/);
    assert.throws(() => table.lookup('2001:db8::1'), /released/);
  });

  it('a list given twice is refused at build, naming it', () => {
    const list = { name: 'cve', kind: Kinds.Certain, prefixes: prefixListOf([]) };
    assert.throws(() => PrefixTable.build([list, list]), /list cve is given twice/);
  });

  it('what names no address is notAnAddress, never a throw', () => {
    const table = tableOf([{ name: 'a', kind: Kinds.Certain, prefixes: [v4('0.0.0.0/0'), v6('::/0')] }]);
    const texts = [
      '',
      '1.2.3',
      '01.2.3.4',
      '1.2.3.256',
      '1.2.3.4/32',
      '1.2.3.4:80',
      ' 1.2.3.4',
      '1.2.3.4 ',
      '[::1]',
      'fe80::1%eth0',
      '2001:db8::1/128',
      '1::2::3',
      '::ffff:1.2.3.256',
      'localhost',
      'é.1.2.3',
      '1'.repeat(100),
    ];
    for (const text of texts) {
      const result = table.lookup(text);
      assert.equal(result.outcome, 'notAnAddress', JSON.stringify(text));
      assert.equal(parseAddress(text).outcome, 'notAnAddress', JSON.stringify(text));
    }
    const values: Address[] = [
      { family: 'ipv4', address: -1 },
      { family: 'ipv4', address: 2 ** 32 },
      { family: 'ipv4', address: 1.5 },
      { family: 'ipv4', address: Number.NaN },
      { family: 'ipv6', address: -1n },
      { family: 'ipv6', address: 1n << 128n },
    ];
    for (const value of values)
      assert.equal(table.lookup(value).outcome, 'notAnAddress', String(value.address));
  });

  it('parseAddress gives IPv4-mapped IPv6 as IPv4', () => {
    assert.deepEqual(parseAddress('::ffff:1.2.3.4'), {
      outcome: 'address',
      address: { family: 'ipv4', address: 0x01020304 },
    });
    assert.deepEqual(parseAddress('2001:db8::1'), {
      outcome: 'address',
      address: { family: 'ipv6', address: 0x20010db8000000000000000000000001n },
    });
  });

  it('a listed answer is a shared object: looking up allocates no answer', () => {
    const table = tableOf([{ name: 'a', kind: Kinds.Certain, prefixes: [v4('10.0.0.0/8')] }]);
    assert.equal(table.lookup('10.1.2.3'), table.lookup('10.200.0.1'));
    assert.ok(Object.isFrozen(table.lookup('10.1.2.3')));
  });
});

describe('PrefixTable: size and speed, for information', () => {
  it('200,000 random IPv4 host routes: bytes per prefix and time per lookup (printed, not asserted)', (t) => {
    let seed = 1;
    const next = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed;
    };
    const n = 200_000;
    const addresses = new Uint32Array(n);
    for (let i = 0; i < n; i++) addresses[i] = next();
    const started = performance.now();
    const table = PrefixTable.build([
      {
        name: 'random',
        kind: Kinds.Presumed,
        prefixes: {
          ipv4: { addresses, lengths: new Uint8Array(n).fill(32) },
          ipv6: { words: new Uint32Array(0), lengths: new Uint8Array(0) },
        },
      },
    ]);
    const built = performance.now() - started;
    // Half listed, half (almost surely) not.
    const probes = Array.from({ length: 10_000 }, (_, i) => formatIpv4(i % 2 === 0 ? addresses[i]! : next()));
    const from = performance.now();
    let listed = 0;
    for (let round = 0; round < 10; round++) {
      for (const p of probes) if (table.lookup(p).outcome === 'listed') listed++;
    }
    const perLookup = ((performance.now() - from) * 1000) / (10 * probes.length);
    t.diagnostic(
      `build ${built.toFixed(0)} ms, ${(table.stats.bytes / n).toFixed(1)} bytes/prefix, ` +
        `${perLookup.toFixed(2)} µs/lookup (text), ${listed} listed`,
    );
    assert.ok(table.stats.ipv4Intervals > 0);
  });
});
