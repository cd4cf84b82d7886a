/**
 * Canonical text: what the CLI prints, the shards hold and the fingerprint hashes. IPv4
 * always with its length; IPv6 as RFC 5952 section 4 writes it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalStrings, canonicalText, formatIpv6, parseBlocklist, prefixListOf } from '../src/index.ts';

function canonical(text: string): string[] {
  return canonicalStrings(parseBlocklist(text).entries);
}

/** Groups with many zeros, so that zero runs of every length and position occur, and every digit count. */
const groups = fc.array(
  fc.oneof(
    fc.constant(0),
    fc.constant(0),
    fc.constantFrom(0x1, 0xf, 0x10, 0xff, 0x100, 0xfff, 0x1000, 0xffff),
    fc.integer({ min: 0, max: 0xffff }),
  ),
  { minLength: 8, maxLength: 8 },
);

/**
 * RFC 5952 section 4, the plain way, as the oracle: lower-case hex without leading
 * zeros; the longest run of two or more zero groups (the first on a tie) as `::`.
 */
function plainRfc5952(gs: readonly number[]): string {
  let best: [number, number] | undefined;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && gs[j] === 0) j++;
    if (j - i >= 2 && (best === undefined || j - i > best[1] - best[0])) best = [i, j];
  }
  const hex = gs.map((g) => g.toString(16));
  return best === undefined
    ? hex.join(':')
    : `${hex.slice(0, best[0]).join(':')}::${hex.slice(best[1]).join(':')}`;
}

function addressOf(gs: readonly number[]): bigint {
  return gs.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

describe('format: RFC 5952', () => {
  it('writes the examples of RFC 5952 as the RFC does', () => {
    const cases: [string, string][] = [
      ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
      ['2001:DB8::1', '2001:db8::1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
      ['0:0:0:0:0:0:0:0', '::'],
      ['0:0:0:0:0:0:0:1', '::1'],
      ['1:0:0:0:0:0:0:0', '1::'],
      ['2001:db8:0:0:0:0:2:1', '2001:db8::2:1'],
      ['2001:db8::0:1', '2001:db8::1'],
      ['2001:0:0:0:1:0:0:0', '2001::1:0:0:0'],
      ['2001:db8:aaaa:bbbb:cccc:dddd:eeee:AAAA', '2001:db8:aaaa:bbbb:cccc:dddd:eeee:aaaa'],
      ['0:0:1:0:0:0:1:0', '0:0:1::1:0'],
      ['::ffff:0:0:1', '::ffff:0:0:1'],
    ];
    for (const [input, text] of cases) assert.deepEqual(canonical(input), [`${text}/128`], input);
  });

  it('writes an IPv4-mapped address as the IPv4 address it is, never as ::ffff:…', () => {
    // RFC 5952 section 5 would write ::ffff:192.0.2.1; we read it as 192.0.2.1, so it
    // never reaches the IPv6 writer.
    assert.deepEqual(canonical('::ffff:192.0.2.1\n::ffff:c000:200/120\n'), ['192.0.2.1/32', '192.0.2.0/24']);
  });

  it('is lower case, without leading zeros, compressing the first longest run of two or more zero groups', () => {
    fc.assert(
      fc.property(groups, fc.integer({ min: 0, max: 128 }), (gs, length) => {
        const text = formatIpv6(addressOf(gs));
        const want = plainRfc5952(gs);
        assert.equal(text, want);
        // The writer the CLI and the shards use, not only the string formatter.
        const network = (addressOf(gs) >> BigInt(128 - length)) << BigInt(128 - length);
        const networkGroups = Array.from({ length: 8 }, (_, i) =>
          Number((network >> BigInt(112 - 16 * i)) & 0xffffn),
        );
        assert.equal(
          canonicalText(prefixListOf([{ family: 'ipv6', address: network, length }])).toString('latin1'),
          `${plainRfc5952(networkGroups)}/${length}\n`,
        );
        if (!(gs.slice(0, 5).every((g) => g === 0) && gs[5] === 0xffff)) {
          assert.deepEqual(canonical(text), [`${text}/128`]);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('format: lists', () => {
  it('always writes the prefix length, even for lone addresses', () => {
    assert.deepEqual(canonical('1.2.3.4\n::1\n'), ['1.2.3.4/32', '::1/128']);
  });

  it('canonical text is the canonical strings, one per line, each ended by a newline', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }))),
        fc.array(fc.tuple(groups, fc.integer({ min: 0, max: 128 })), { maxLength: 4 }),
        (v4, v6) => {
          const list = prefixListOf([
            ...v4.map(([a, l]) => ({
              family: 'ipv4' as const,
              address: l === 0 ? 0 : (a >>> (32 - l)) * 2 ** (32 - l),
              length: l,
            })),
            ...v6.map(([gs, l]) => ({
              family: 'ipv6' as const,
              address: (addressOf(gs) >> BigInt(128 - l)) << BigInt(128 - l),
              length: l,
            })),
          ]);
          const strings = canonicalStrings(list);
          assert.equal(canonicalText(list).toString('latin1'), strings.map((s) => `${s}\n`).join(''));
        },
      ),
    );
  });
});
