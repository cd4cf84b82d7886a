/**
 * parseBlocklist: every valid way of writing an entry is read back exactly, and every
 * malformed one is refused with its line number, never read as some other address.
 * Node's own `net.isIP` (strict: no inet_aton forms) and `net.BlockList` serve as
 * independent oracles.
 */
import assert from 'node:assert/strict';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  BlocklistParser,
  canonicalStrings,
  DEFAULT_SHORTEST_PREFIX,
  formatIpv4,
  formatIpv6,
  formatPrefix,
  MalformedReason,
  type ParseResult,
  type Prefix,
  parseBlocklist,
  prefixesOf,
} from '../src/index.ts';
import { anyPrefix } from './blocklist-support.ts';

const RUNS = { numRuns: 500 };

function entries(r: ParseResult): string[] {
  return canonicalStrings(r.entries);
}

function only(text: string): { entry: string | undefined; result: ParseResult } {
  const result = parseBlocklist(text);
  return { entry: entries(result)[0], result };
}

// ---- How valid entries may be written ---------------------------------------------------

const blank = fc.constantFrom('', ' ', '\t', '  \t ');
const comment = fc.constantFrom('', ' # seen 3 times', '\t; SBL256894', '#x', ';', ' ;; #');
const eol = fc.constantFrom('\n', '\r\n');

/** An IPv4 address with host bits possibly set, a length, and how it is written. */
const ipv4Entry = fc
  .record({
    address: fc.integer({ min: 0, max: 0xffffffff }),
    length: fc.integer({ min: 0, max: 32 }),
    bare: fc.boolean(),
  })
  .map(({ address, length, bare }) => ({
    text: bare && length === 32 ? formatIpv4(address) : `${formatIpv4(address)}/${length}`,
    address: BigInt(address),
    length,
    family: 'ipv4' as const,
  }));

/** Eight groups written in any RFC 4291 way: any zero run as `::`, leading zeros, any case, a dotted tail. */
const ipv6Entry = fc
  .record({
    groups: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), {
      minLength: 8,
      maxLength: 8,
    }),
    length: fc.integer({ min: 0, max: 128 }),
    bare: fc.boolean(),
    pads: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
    upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
    dotted: fc.boolean(),
    compressPick: fc.nat(),
  })
  .map(({ groups: drawn, length, bare, pads, upper, dotted, compressPick }) => {
    // An IPv4-mapped address (::ffff:0:0/96) reads as IPv4: it has tests of its own.
    const mapped = drawn.slice(0, 5).every((g) => g === 0) && drawn[5] === 0xffff;
    const groups = mapped ? [...drawn.slice(0, 5), 0xfffe, ...drawn.slice(6)] : drawn;
    // With a dotted tail, the last two groups are the IPv4 part and `::` must end before it.
    const last = dotted ? 6 : 8;
    const runs: [number, number][] = [];
    for (let i = 0; i < last; i++) {
      for (let j = i + 1; j <= last && groups[j - 1] === 0; j++) runs.push([i, j]);
    }
    const run = runs.length > 0 && compressPick % 3 !== 0 ? runs[compressPick % runs.length] : undefined;
    const hex = (i: number): string => {
      const h = groups[i]!.toString(16);
      const padded = h.padStart(Math.min(4, h.length + pads[i]!), '0');
      return upper[i] ? padded.toUpperCase() : padded;
    };
    const part = (from: number, to: number): string =>
      Array.from({ length: to - from }, (_, k) => hex(from + k)).join(':');
    let text = run === undefined ? part(0, last) : `${part(0, run[0])}::${part(run[1], last)}`;
    if (dotted) {
      const v4 = `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
      text += run !== undefined && run[1] === last ? v4 : `:${v4}`;
    }
    const address = groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
    return {
      text: bare ? text : `${text}/${length}`,
      address,
      length: bare ? 128 : length,
      family: 'ipv6' as const,
    };
  });

function networkOf(address: bigint, length: number, bits: number): bigint {
  const size = 1n << BigInt(bits - length);
  return (address / size) * size;
}

function expected(e: { address: bigint; length: number; family: 'ipv4' | 'ipv6' }): string {
  const bits = e.family === 'ipv4' ? 32 : 128;
  const network = networkOf(e.address, e.length, bits);
  return e.family === 'ipv4'
    ? `${formatIpv4(Number(network))}/${e.length}`
    : `${formatIpv6(network)}/${e.length}`;
}

describe('parse: every valid form is read back exactly', () => {
  for (const [family, entry] of [
    ['IPv4', ipv4Entry],
    ['IPv6', ipv6Entry],
  ] as const) {
    it(`${family}: bare or with a length, blanks, comments, CRLF; host bits cleared and reported`, () => {
      fc.assert(
        fc.property(entry, blank, blank, comment, eol, (e, before, after, note, end) => {
          const { entry: got, result } = only(`${before}${e.text}${after}${note}${end}`);
          assert.equal(got, expected(e));
          assert.equal(result.counts.malformed, 0);
          const bits = e.family === 'ipv4' ? 32 : 128;
          const hadHostBits = networkOf(e.address, e.length, bits) !== e.address;
          assert.equal(result.counts.normalised, hadHostBits ? 1 : 0);
          if (hadHostBits)
            assert.deepEqual(result.normalised[0], { line: 1, text: e.text, prefix: expected(e) });
        }),
        RUNS,
      );
    });
  }

  it('canonical text round-trips: parse(format(p)) is p', () => {
    fc.assert(
      fc.property(fc.oneof(anyPrefix('ipv4'), anyPrefix('ipv6')), (p: Prefix) => {
        const result = parseBlocklist(formatPrefix(p));
        assert.deepEqual([...prefixesOf(result.entries)], [p]);
        assert.equal(result.counts.normalised, 0);
      }),
      RUNS,
    );
  });

  it('the value matches an independent reader (node:net BlockList)', () => {
    fc.assert(
      fc.property(fc.oneof(ipv4Entry, ipv6Entry), (e) => {
        const [addressText, lengthText] = e.text.split('/');
        const list = new BlockList();
        list.addSubnet(addressText!, Number(lengthText ?? (e.family === 'ipv4' ? 32 : 128)), e.family);
        const [p] = [...prefixesOf(parseBlocklist(e.text).entries)];
        assert.ok(p !== undefined);
        const text = p.family === 'ipv4' ? formatIpv4(p.address) : formatIpv6(p.address);
        assert.ok(list.check(text, e.family), `${e.text} read as ${formatPrefix(p)}`);
      }),
      RUNS,
    );
  });
});

// ---- Malformed forms ---------------------------------------------------------------------

const octet = fc.integer({ min: 0, max: 255 });
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'));

/** Every malformed form the issue lists, and the reason each must be refused with. */
const malformed: fc.Arbitrary<{ text: string; reason: MalformedReason }> = fc.oneof(
  // inet_aton shorthands: `1.2.3` is not 1.2.0.3, `16909060` is not 1.2.3.4.
  fc.tuple(octet, octet, octet).map((o) => ({ text: o.join('.'), reason: MalformedReason.Ipv4Syntax })),
  fc.tuple(octet, octet).map((o) => ({ text: o.join('.'), reason: MalformedReason.Ipv4Syntax })),
  fc
    .integer({ min: 0, max: 0xffffffff })
    .map((n) => ({ text: String(n), reason: MalformedReason.Ipv4Syntax })),
  fc.tuple(quad, octet).map(([q, o]) => ({ text: `${q}.${o}`, reason: MalformedReason.Ipv4Syntax })),
  fc
    .tuple(octet, octet, octet)
    .map(([a, b, c]) => ({ text: `${a}..${b}.${c}`, reason: MalformedReason.Ipv4Syntax })),
  fc
    .tuple(octet, octet, octet)
    .map(([a, b, c]) => ({ text: `0x${a.toString(16)}.${b}.${c}.1`, reason: MalformedReason.Ipv4Syntax })),
  // `010.0.0.1` is octal 8 to inet_aton.
  fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 99 }), quad).map(([at, v, q]) => {
    const parts = q.split('.');
    parts[at] = `0${v}`;
    return { text: parts.join('.'), reason: MalformedReason.LeadingZero };
  }),
  fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 256, max: 999 }), quad).map(([at, v, q]) => {
    const parts = q.split('.');
    parts[at] = String(v);
    return { text: parts.join('.'), reason: MalformedReason.OctetOutOfRange };
  }),
  // No /33.
  fc
    .tuple(quad, fc.integer({ min: 33, max: 999 }))
    .map(([q, l]) => ({ text: `${q}/${l}`, reason: MalformedReason.PrefixLength })),
  quad.map((q) => ({ text: `${q}/`, reason: MalformedReason.PrefixLength })),
  fc
    .tuple(quad, fc.integer({ min: 0, max: 32 }))
    .map(([q, l]) => ({ text: `${q}/0${l}`, reason: MalformedReason.LeadingZero })),
  // No ip:port, no range, no second address: nothing is guessed.
  fc
    .tuple(quad, fc.integer({ min: 0, max: 65535 }))
    .map(([q, p]) => ({ text: `${q}:${p}`, reason: MalformedReason.TrailingText })),
  fc.tuple(quad, quad).map(([a, b]) => ({ text: `${a}-${b}`, reason: MalformedReason.TrailingText })),
  fc.tuple(quad, quad).map(([a, b]) => ({ text: `${a} ${b}`, reason: MalformedReason.TrailingText })),
  fc
    .tuple(quad, fc.integer({ min: 0, max: 32 }))
    .map(([q, l]) => ({ text: `${q}/${l}/8`, reason: MalformedReason.TrailingText })),
  // IPv6 beyond RFC 4291.
  fc.constantFrom(
    { text: '2001:db8::1::1', reason: MalformedReason.Ipv6Syntax },
    { text: '2001:db8:::1', reason: MalformedReason.Ipv6Syntax },
    { text: '1:2:3:4:5:6:7:8:9', reason: MalformedReason.Ipv6Syntax },
    { text: '1:2:3:4:5:6:7', reason: MalformedReason.Ipv6Syntax },
    { text: '1:2:3:4:5:6:7::8', reason: MalformedReason.Ipv6Syntax },
    { text: '1:2:3:4:5:6:7:1.2.3.4', reason: MalformedReason.Ipv6Syntax },
    { text: '::1:2:3:4:5:6:1.2.3.4', reason: MalformedReason.Ipv6Syntax },
    { text: '12345::1', reason: MalformedReason.Ipv6Syntax },
    { text: '2001:db8:', reason: MalformedReason.Ipv6Syntax },
    { text: ':1::', reason: MalformedReason.Ipv6Syntax },
    { text: '1::2:', reason: MalformedReason.Ipv6Syntax },
    { text: 'fe80::1%eth0', reason: MalformedReason.Ipv6Syntax },
    { text: '::ffff:1.2.3', reason: MalformedReason.Ipv6Syntax },
    { text: '::ffff:01.2.3.4', reason: MalformedReason.Ipv6Syntax },
    { text: '::1.2.3.4:5', reason: MalformedReason.Ipv6Syntax },
    { text: '2001:db8::g', reason: MalformedReason.Ipv6Syntax },
    { text: '2001:db8::/129', reason: MalformedReason.PrefixLength },
    { text: '2001:db8::/', reason: MalformedReason.PrefixLength },
    { text: '2001:db8::/064', reason: MalformedReason.LeadingZero },
    { text: '2001:db8::/64x', reason: MalformedReason.TrailingText },
    { text: '2001:db8::1 2001:db8::2', reason: MalformedReason.TrailingText },
  ),
  // Not an address at all.
  fc.constantFrom(
    { text: 'hello', reason: MalformedReason.NotAnAddress },
    { text: 'example.com', reason: MalformedReason.NotAnAddress },
    { text: 'deadbeef', reason: MalformedReason.NotAnAddress },
    { text: '[2001:db8::1]:443', reason: MalformedReason.NotAnAddress },
    { text: '-1.2.3.4', reason: MalformedReason.NotAnAddress },
    { text: '\u00a01.2.3.4', reason: MalformedReason.NotAnAddress },
  ),
);

describe('parse: every malformed form is refused, never read as another address', () => {
  it('a malformed line among valid ones is counted with its line number and reason, and adds nothing', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(ipv4Entry, ipv6Entry), { maxLength: 8 }),
        malformed,
        fc.nat(),
        blank,
        (valid, bad, at, around) => {
          const position = at % (valid.length + 1);
          const lines = valid.map((e) => e.text);
          lines.splice(position, 0, `${around}${bad.text}${around}`);
          const result = parseBlocklist(lines.join('\n'));
          // Entries come IPv4 first, each family in file order.
          const inOrder = [
            ...valid.filter((e) => e.family === 'ipv4'),
            ...valid.filter((e) => e.family === 'ipv6'),
          ];
          assert.deepEqual(entries(result), inOrder.map(expected));
          assert.equal(result.counts.malformed, 1);
          const [m] = result.malformed;
          assert.equal(m?.line, position + 1);
          assert.equal(m?.reason, bad.reason, `${JSON.stringify(bad.text)}: ${m?.message}`);
          assert.equal(m?.text, bad.text.trim());
        },
      ),
      RUNS,
    );
  });

  it('accepts a line exactly when a strict reader does (node:net isIP, no zone), whatever the mutation', () => {
    const alphabet = fc.constantFrom(...'0123456789abcdefABCDEF.:/ %x-#;0'.split(''));
    const mutated = fc
      .tuple(
        fc.oneof(ipv4Entry, ipv6Entry).map((e) => e.text),
        fc.array(fc.tuple(fc.nat(), fc.nat(3), alphabet), { minLength: 1, maxLength: 3 }),
      )
      .map(([text, edits]) => {
        let t = text;
        for (const [where, kind, char] of edits) {
          const at = where % (t.length + 1);
          if (kind === 0) t = t.slice(0, at) + t.slice(at + 1);
          else if (kind === 1) t = t.slice(0, at) + char + t.slice(at);
          else if (kind === 2) t = t.slice(0, at) + char + t.slice(at + 1);
          else t = t.slice(0, at) + t.slice(at, at + 3) + t.slice(at);
        }
        return t;
      });
    fc.assert(
      fc.property(mutated, (line) => {
        const result = parseBlocklist(line);
        const content = line.split(/[#;]/)[0]!.trim();
        if (content === '') {
          assert.equal(result.counts.ipv4 + result.counts.ipv6 + result.counts.malformed, 0);
          return;
        }
        const [addressText, lengthText, ...rest] = content.split('/');
        const family = isIPv4(addressText!)
          ? 'ipv4'
          : isIPv6(addressText!) && !addressText!.includes('%')
            ? 'ipv6'
            : undefined;
        const bits = family === 'ipv4' ? 32 : 128;
        const lengthOk =
          lengthText === undefined || (/^(0|[1-9][0-9]*)$/.test(lengthText) && Number(lengthText) <= bits);
        const valid = family !== undefined && lengthOk && rest.length === 0 && !/\s/.test(content);
        assert.equal(
          result.counts.malformed,
          valid ? 0 : 1,
          `${JSON.stringify(line)}: ${result.malformed[0]?.message}`,
        );
        assert.equal(result.counts.ipv4 + result.counts.ipv6, valid ? 1 : 0, JSON.stringify(line));
        if (valid && family !== undefined) {
          const list = new BlockList();
          list.addSubnet(addressText!, Number(lengthText ?? bits), family);
          const [p] = [...prefixesOf(result.entries)];
          assert.ok(p !== undefined && p.family === family);
          assert.ok(list.check(p.family === 'ipv4' ? formatIpv4(p.address) : formatIpv6(p.address), family));
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('the fast path for plain lines and the general reader agree on every line', () => {
    // A leading blank sends a line past the fast path: results must not change.
    fc.assert(
      fc.property(
        fc.oneof(
          ipv4Entry.map((e) => e.text),
          malformed.map((m) => m.text),
        ),
        (line) => {
          const fast = parseBlocklist(line);
          const general = parseBlocklist(` ${line}`);
          assert.deepEqual(entries(fast), entries(general));
          assert.deepEqual(
            fast.malformed.map((m) => m.reason),
            general.malformed.map((m) => m.reason),
          );
          assert.equal(fast.counts.normalised, general.counts.normalised);
        },
      ),
      RUNS,
    );
  });
});

describe('parse: the seed rules, by example', () => {
  it('reads # and ; comments, whole-line and inline, as in Spamhaus DROP', () => {
    const r = parseBlocklist(
      '; Spamhaus DROP List\n# comment\n1.10.16.0/20 ; SBL256894\n1.19.0.0/16#SBL434604\n',
    );
    assert.deepEqual(entries(r), ['1.10.16.0/20', '1.19.0.0/16']);
    assert.equal(r.counts.comments, 2);
  });

  it('skips blank and whitespace-only lines, and counts them', () => {
    const r = parseBlocklist('\n   \n\t\n1.2.3.4\n\n');
    assert.deepEqual(entries(r), ['1.2.3.4/32']);
    assert.equal(r.counts.blank, 4);
    assert.equal(r.counts.lines, 5);
  });

  it('reads CRLF files, surrounding spaces and tabs, a byte order mark, a missing final newline', () => {
    const r = parseBlocklist('\ufeff1.2.3.4\r\n  5.6.7.0/24 \t\r\n\t2001:db8::1\r\n9.9.9.9');
    assert.deepEqual(entries(r), ['1.2.3.4/32', '5.6.7.0/24', '9.9.9.9/32', '2001:db8::1/128']);
    assert.equal(r.counts.lines, 4);
    assert.equal(r.counts.malformed, 0);
  });

  it('reads a byte order mark as nothing, even alone', () => {
    assert.deepEqual(parseBlocklist('\ufeff').counts, parseBlocklist('').counts);
    assert.equal(parseBlocklist('\ufeff\n').counts.blank, 1);
    assert.equal(parseBlocklist('\ufeff\ufeff1.2.3.4').counts.malformed, 1);
  });

  it('normalises host bits in a prefix and reports each with its line', () => {
    const r = parseBlocklist('10.0.0.0/8\n1.2.3.77/24\n2001:db8::1/32\n');
    assert.deepEqual(entries(r), ['10.0.0.0/8', '1.2.3.0/24', '2001:db8::/32']);
    assert.deepEqual(r.normalised, [
      { line: 2, text: '1.2.3.77/24', prefix: '1.2.3.0/24' },
      { line: 3, text: '2001:db8::1/32', prefix: '2001:db8::/32' },
    ]);
  });

  it('refuses inet_aton leniency: 1.2.3 is not 1.2.0.3, 010.0.0.1 is not 8.0.0.1', () => {
    const r = parseBlocklist('1.2.3\n010.0.0.1\n0x7f.0.0.1\n16909060\n');
    assert.deepEqual(entries(r), []);
    assert.deepEqual(
      r.malformed.map((m) => [m.line, m.reason]),
      [
        [1, MalformedReason.Ipv4Syntax],
        [2, MalformedReason.LeadingZero],
        [3, MalformedReason.Ipv4Syntax],
        [4, MalformedReason.Ipv4Syntax],
      ],
    );
  });

  it('refuses /33 and ip:port rather than guessing', () => {
    const r = parseBlocklist('1.2.3.4/33\n1.2.3.4:8080\n2001:db8::/129\n');
    assert.deepEqual(entries(r), []);
    assert.deepEqual(
      r.malformed.map((m) => m.reason),
      [MalformedReason.PrefixLength, MalformedReason.TrailingText, MalformedReason.PrefixLength],
    );
  });

  it('reads 2001:db8::1 as IPv6, where iprange reads 0.0.7.209', () => {
    assert.deepEqual(entries(parseBlocklist('2001:db8::1\n')), ['2001:db8::1/128']);
  });

  it('counts every malformed line but describes only the first detailLimit', () => {
    const r = parseBlocklist('x\n'.repeat(50), { detailLimit: 3 });
    assert.equal(r.counts.malformed, 50);
    assert.deepEqual(
      r.malformed.map((m) => m.line),
      [1, 2, 3],
    );
  });

  it('cuts very long malformed lines in the report', () => {
    const r = parseBlocklist('x'.repeat(10_000));
    assert.ok((r.malformed[0]?.text.length ?? 0) <= 121);
  });
  it('reads an IPv4-mapped IPv6 address as the IPv4 address it maps, dotted or in hex', () => {
    const r = parseBlocklist('::ffff:1.2.3.4\n::FFFF:0102:0305\n0:0:0:0:0:ffff:1.2.3.6/128\n');
    assert.deepEqual(entries(r), ['1.2.3.4/32', '1.2.3.5/32', '1.2.3.6/32']);
    assert.deepEqual([r.counts.ipv4, r.counts.ipv6, r.counts.malformed], [3, 0, 0]);
  });

  it('reads a mapped prefix of /96 or longer as the IPv4 prefix of length - 96, host bits reported', () => {
    const r = parseBlocklist(
      '::ffff:1.2.3.0/120\n::ffff:10.0.0.0/104\n::ffff:1.2.3.77/120\n::ffff:0.0.0.0/96\n',
    );
    assert.deepEqual(entries(r), ['1.2.3.0/24', '10.0.0.0/8', '1.2.3.0/24', '0.0.0.0/0']);
    assert.deepEqual(r.normalised, [{ line: 3, text: '::ffff:1.2.3.77/120', prefix: '1.2.3.0/24' }]);
  });

  it('keeps a mapped prefix shorter than /96, and the neighbours of ::ffff:0:0/96, as IPv6', () => {
    const r = parseBlocklist('::ffff:0:0/95\n::fffe:1.2.3.4\n::1:ffff:1.2.3.4\n::1.2.3.4\n');
    assert.deepEqual(entries(r), [
      '::fffe:0:0/95',
      '::fffe:102:304/128',
      '::1:ffff:102:304/128',
      '::102:304/128',
    ]);
    assert.deepEqual([r.counts.ipv4, r.counts.ipv6], [0, 4]);
  });
});

describe('parse: the shortest prefix accepted', () => {
  const floors = { shortestPrefix: DEFAULT_SHORTEST_PREFIX };

  it('is /8 for IPv4 and /32 for IPv6 by default', () => {
    assert.deepEqual(DEFAULT_SHORTEST_PREFIX, { ipv4: 8, ipv6: 32 });
  });

  it('refuses 0.0.0.0/0, ::/0 and anything under the floor, reports each line, publishes the rest', () => {
    const r = parseBlocklist(
      '0.0.0.0/0\n1.2.3.4\n::/0 # everything\n1.0.0.0/7\n2001:db8::/31\n10.0.0.0/8\n2001:db8::/32\n  128.0.0.0/1	\n::ffff:0.0.0.0/96\n',
      floors,
    );
    assert.deepEqual(entries(r), ['1.2.3.4/32', '10.0.0.0/8', '2001:db8::/32']);
    assert.deepEqual(r.tooShort, [
      { line: 1, text: '0.0.0.0/0', prefix: '0.0.0.0/0' },
      { line: 3, text: '::/0 # everything', prefix: '::/0' },
      { line: 4, text: '1.0.0.0/7', prefix: '0.0.0.0/7' },
      { line: 5, text: '2001:db8::/31', prefix: '2001:db8::/31' },
      { line: 8, text: '128.0.0.0/1', prefix: '128.0.0.0/1' },
      { line: 9, text: '::ffff:0.0.0.0/96', prefix: '0.0.0.0/0' },
    ]);
    assert.deepEqual(
      [r.counts.tooShort, r.counts.malformed, r.counts.ipv4, r.counts.ipv6, r.counts.normalised],
      [6, 0, 2, 1, 0],
    );
  });

  it('refuses nothing for its length when no floor is given', () => {
    const r = parseBlocklist('0.0.0.0/0\n::/0\n');
    assert.deepEqual(entries(r), ['0.0.0.0/0', '::/0']);
    assert.deepEqual([r.counts.tooShort, r.tooShort.length], [0, 0]);
  });

  it('counts every refused line but describes only the first detailLimit', () => {
    const r = parseBlocklist('0.0.0.0/0\n'.repeat(20), { ...floors, detailLimit: 2 });
    assert.equal(r.counts.tooShort, 20);
    assert.deepEqual(
      r.tooShort.map((t) => t.line),
      [1, 2],
    );
  });

  const anyEntry = fc.oneof(ipv4Entry, ipv6Entry);
  const floor = fc.record({ ipv4: fc.integer({ min: 0, max: 33 }), ipv6: fc.integer({ min: 0, max: 129 }) });

  it('never lets a prefix under the floor into the entries, and every line is counted exactly once', () => {
    const line = fc.oneof(
      { weight: 6, arbitrary: anyEntry.map((e) => ({ text: e.text, entry: e })) },
      { weight: 1, arbitrary: malformed.map((m) => ({ text: m.text, entry: undefined })) },
      { weight: 1, arbitrary: fc.constantFrom('', '# c', ' ').map((text) => ({ text, entry: undefined })) },
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), floor, (lines, shortestPrefix) => {
        const r = parseBlocklist(lines.map((l) => `${l.text}\n`).join(''), { shortestPrefix });
        const under = lines.filter(
          (l) => l.entry !== undefined && l.entry.length < shortestPrefix[l.entry.family],
        );
        const over = lines.filter(
          (l) => l.entry !== undefined && l.entry.length >= shortestPrefix[l.entry.family],
        );
        for (const p of prefixesOf(r.entries))
          assert.ok(p.length >= shortestPrefix[p.family], formatPrefix(p));
        assert.equal(r.counts.tooShort, under.length);
        assert.deepEqual(
          r.tooShort.map((t) => t.line),
          lines.flatMap((l, i) => (under.includes(l) ? [i + 1] : [])),
        );
        assert.deepEqual(entries(r).sort(), over.map((l) => expected(l.entry!)).sort());
        const c = r.counts;
        assert.equal(c.lines, lines.length);
        assert.equal(c.blank + c.comments + c.ipv4 + c.ipv6 + c.malformed + c.tooShort, c.lines);
      }),
      RUNS,
    );
  });

  it('the fast path and the general reader refuse the same lines', () => {
    fc.assert(
      fc.property(ipv4Entry, floor, (e, shortestPrefix) => {
        const fast = parseBlocklist(e.text, { shortestPrefix });
        const general = parseBlocklist(` ${e.text}`, { shortestPrefix });
        assert.deepEqual(entries(fast), entries(general));
        assert.equal(fast.counts.tooShort, general.counts.tooShort);
        assert.equal(fast.counts.tooShort, e.length < shortestPrefix.ipv4 ? 1 : 0);
      }),
      RUNS,
    );
  });
});

describe('parse: piece by piece', () => {
  const line = fc.oneof(
    fc.oneof(ipv4Entry, ipv6Entry).map((e) => e.text),
    malformed.map((m) => m.text),
    fc.constantFrom('', '  ', '# comment', '; note', '1.2.3.77/24 # host bits'),
  );
  const text = fc
    .tuple(fc.boolean(), fc.array(fc.tuple(line, eol), { maxLength: 12 }), fc.boolean())
    .map(([bom, lines, finalNewline]) => {
      const body = lines.map(([l, end]) => l + end).join('');
      return (bom ? '\ufeff' : '') + (finalNewline ? body : body.replace(/\r?\n$/, ''));
    });

  it('gives the same result however the input is cut, even through a reused buffer', () => {
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 6 }), (input, cuts) => {
        const whole = Buffer.from(input, 'utf8');
        const at = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
        const parser = new BlocklistParser({ shortestPrefix: { ipv4: 16, ipv6: 48 } });
        const scratch = Buffer.alloc(whole.length);
        let from = 0;
        for (const to of [...at, whole.length]) {
          // The caller reuses its buffer: what was pushed must have been copied if kept.
          whole.copy(scratch, 0, from, to);
          parser.push(scratch.subarray(0, to - from));
          scratch.fill(0x41);
          from = to;
        }
        const pieces = parser.finish();
        const once = parseBlocklist(whole, { shortestPrefix: { ipv4: 16, ipv6: 48 } });
        assert.deepEqual(entries(pieces), entries(once));
        assert.deepEqual(pieces.counts, once.counts);
        assert.deepEqual(pieces.malformed, once.malformed);
        assert.deepEqual(pieces.normalised, once.normalised);
        assert.deepEqual(pieces.tooShort, once.tooShort);
      }),
      RUNS,
    );
  });

  it('refuses to be used after finish', () => {
    const parser = new BlocklistParser();
    parser.push(Buffer.from('1.2.3.4\n'));
    parser.finish();
    assert.throws(() => parser.push(Buffer.from('5.6.7.8\n')), /after finish/);
  });
});

describe('parse: the fast paths and the general reader agree', () => {
  /**
   * A line alone goes through the fast path when it can; the same line with a trailing
   * blank never can (the fast paths want the newline right after the entry), so it is
   * read by the general reader. Both must read it the same way: the same entries, the
   * same counts, the same refusals with the same reasons.
   */
  const summary = (r: ParseResult) => ({
    entries: entries(r),
    counts: r.counts,
    malformed: r.malformed.map((m) => [m.line, m.reason, m.text]),
    normalised: r.normalised.map((n) => [n.line, n.prefix]),
    tooShort: r.tooShort.map((t) => [t.line, t.prefix]),
  });
  const agree = (line: string) => {
    const options = { shortestPrefix: DEFAULT_SHORTEST_PREFIX };
    assert.deepEqual(
      summary(parseBlocklist(`${line}\n`, options)),
      summary(parseBlocklist(`${line} \n`, options)),
      JSON.stringify(line),
    );
  };

  it('on every valid IPv6 form, host bits, mapped addresses and short prefixes included', () => {
    fc.assert(
      fc.property(ipv6Entry, (e) => agree(e.text)),
      { numRuns: 2000 },
    );
    for (const line of [
      '::',
      '::/0',
      '::1',
      '1::',
      '1:2:3:4:5:6:7::',
      '::ffff:1.2.3.4',
      '::ffff:102:304/120',
      '2001:db8::1/64',
      '2001:db8::/31',
      '2001:db8::/128',
      'ABCD:EF01::/32',
    ]) {
      agree(line);
    }
  });

  it('on garbage made of the characters of addresses', () => {
    const garbage = fc
      .array(fc.constantFrom(...'0123456789abcdefABCDEF:::::..//%'), { maxLength: 48 })
      .map((cs) => cs.join(''));
    fc.assert(
      fc.property(garbage, (line) => agree(line)),
      { numRuns: 5000 },
    );
  });
});
