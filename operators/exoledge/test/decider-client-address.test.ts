/**
 * Whose request it is. Addresses are written by hand from their numbers (dotted quads
 * from bytes, IPv6 as eight groups in random case and padding), never with the code
 * under test; Node's `net.isIP` is a second opinion on what reads as an address.
 */
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { clientAddress, formatAddress, readAddress } from '../src/domain/decider/client-address.ts';
import { clientKey } from '../src/domain/decider/client-key.ts';

const v4 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const v6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).filter((a) => a >> 32n !== 0xffffn);

function dotted(a: number): string {
  return [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255].join('.');
}

/** Eight groups, each in the case and zero padding `style` picks. */
function groups(a: bigint, style: readonly boolean[]): string {
  const out: string[] = [];
  for (let i = 7; i >= 0; i--) {
    const g = Number((a >> BigInt(16 * i)) & 0xffffn);
    const upper = style[i % style.length] ?? false;
    const hex = g.toString(16);
    out.push(upper ? hex.toUpperCase().padStart(4, '0') : hex);
  }
  return out.join(':');
}

/** Texts close to addresses: an address with one character inserted, deleted or doubled, or random text. */
const nearAddresses: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[0-9a-fA-F:.[\]%/ g-z]{0,50}$/),
  fc
    .tuple(
      fc.oneof(
        v4.map(dotted),
        v6.map((a) => groups(a, [false])),
        v4.map((a) => `::ffff:${dotted(a)}`),
      ),
      fc.nat(),
      fc.constantFrom('0', '9', 'f', 'g', ':', '.', '%', '/', '[', ']', ' ', ''),
      fc.constantFrom('insert', 'delete', 'double'),
    )
    .map(([text, at, c, edit]) => {
      const i = at % (text.length + 1);
      if (edit === 'insert') return text.slice(0, i) + c + text.slice(i);
      if (edit === 'delete') return text.slice(0, i) + text.slice(i + 1);
      return text.slice(0, i) + text.charAt(i) + text.slice(i);
    }),
);

describe('readAddress', () => {
  it('reads any IPv4 address, plain, with a port, and IPv4-mapped in every IPv6 form, as the IPv4 address', () => {
    fc.assert(
      fc.property(v4, fc.integer({ min: 0, max: 65535 }), (a, port) => {
        const hi = (a >>> 16).toString(16);
        const lo = (a & 0xffff).toString(16);
        for (const text of [
          dotted(a),
          `${dotted(a)}:${port}`,
          `::ffff:${dotted(a)}`,
          `::FFFF:${hi}:${lo}`,
          `0:0:0:0:0:ffff:${dotted(a)}`,
          `[::ffff:${dotted(a)}]:${port}`,
        ]) {
          assert.deepEqual(readAddress(text), { family: 'ipv4', address: a }, text);
        }
      }),
    );
  });

  it('reads any IPv6 address in any case and padding, bare or bracketed, to the same value', () => {
    fc.assert(
      fc.property(v6, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (a, style) => {
        const text = groups(a, style);
        for (const form of [text, `[${text}]`, `[${text}]:443`, ` ${text} `]) {
          assert.deepEqual(readAddress(form), { family: 'ipv6', address: a }, form);
        }
      }),
    );
  });

  it('reads nothing Node would not call an address, and refuses what a lax reader would guess at', () => {
    fc.assert(
      fc.property(nearAddresses, (text) => {
        const read = readAddress(text);
        if (typeof read === 'string') return;
        assert.ok(!/[g-z%/]/.test(text), `${JSON.stringify(text)} holds no address`);
        const bare = text
          .trim()
          .replace(/^\[(.*)\](:[0-9]+)?$/, '$1')
          .replace(/^([0-9.]+):[0-9]+$/, '$1');
        assert.notEqual(isIP(bare), 0, `${JSON.stringify(text)} read as an address`);
      }),
      { numRuns: 3000 },
    );
    for (const garbage of [
      '',
      'hello',
      '1.2.3',
      '16909060',
      '010.0.0.1',
      '1.2.3.256',
      '1.2.3.4.5',
      '1.2.3.4/24',
      '1.2.3.4:http',
      'fe80::1%eth0',
      '1::2::3',
      ':::1',
      '[1.2.3.4]',
      '[::1',
      '::1]',
      '2001:db8::12345',
      'unknown',
    ]) {
      assert.equal(typeof readAddress(garbage), 'string', JSON.stringify(garbage));
    }
  });
});

describe('clientAddress', () => {
  const entry = fc.oneof(
    v4.map(dotted),
    v6.map((a) => groups(a, [false])),
  );
  const peer = v4.map(dotted);

  it('never reads X-Forwarded-For with no trusted hop: the peer is the client', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), peer, (xff, p) => {
        const got = clientAddress({ forwardedFor: xff.join(', '), peer: p }, 0);
        assert.equal(got.kind === 'address' && got.source, 'peer');
        assert.deepEqual(got.kind === 'address' && got.address, readAddress(p));
      }),
    );
  });

  it('takes the N-th X-Forwarded-For entry from the right with N trusted hops, the first when fewer', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 8 }),
        peer,
        (xff, hops, p) => {
          const got = clientAddress({ forwardedFor: xff.join(' ,'), peer: p }, hops);
          const expected = xff[Math.max(0, xff.length - hops)]!;
          assert.equal(got.kind, 'address');
          if (got.kind !== 'address') return;
          assert.equal(got.source, 'x-forwarded-for');
          assert.deepEqual(got.address, readAddress(expected));
        },
      ),
    );
  });

  it('prefers x-envoy-external-address to everything else, and never falls back when it does not read', () => {
    fc.assert(
      fc.property(
        entry,
        fc.array(entry, { maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        peer,
        (ext, xff, hops, p) => {
          const got = clientAddress({ externalAddress: ext, forwardedFor: xff.join(','), peer: p }, hops);
          assert.equal(got.kind === 'address' && got.source, 'x-envoy-external-address');
          assert.deepEqual(got.kind === 'address' && got.address, readAddress(ext));
        },
      ),
    );
    const bad = clientAddress({ externalAddress: 'not-an-ip', peer: '10.0.0.1' }, 0);
    assert.equal(bad.kind, 'unreadable');
  });

  it('reads the IPv4-mapped peer of a dual-stack socket as IPv4, in canonical text', () => {
    const got = clientAddress({ peer: '::ffff:192.0.2.10' }, 0);
    assert.deepEqual(got, {
      kind: 'address',
      address: { family: 'ipv4', address: 0xc000020a },
      source: 'peer',
    });
    const v6text = clientAddress({ peer: '2001:DB8:0:0:0:0:0:1' }, 0);
    assert.equal(v6text.kind === 'address' && formatAddress(v6text.address), '2001:db8::1');
  });
});

describe('clientKey', () => {
  it('is one key per IPv4 address and per IPv6 /64', () => {
    fc.assert(
      fc.property(v6, v6, (a, b) => {
        const same = clientKey({ family: 'ipv6', address: a }) === clientKey({ family: 'ipv6', address: b });
        assert.equal(same, a >> 64n === b >> 64n);
      }),
    );
    assert.equal(clientKey({ family: 'ipv6', address: (0x20010db8n << 96n) | 0x1234n }), '2001:db8::/64');
    assert.equal(clientKey({ family: 'ipv4', address: 0xc000020a }), '192.0.2.10');
  });
});
