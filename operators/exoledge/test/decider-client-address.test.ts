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

  /** Envoy's rule, written out here: the (hops+1)-th entry from the right, the last when there are fewer. */
  const envoyTrusted = (xff: readonly string[], hops: number): string =>
    xff.length > hops ? xff[xff.length - 1 - hops]! : xff[xff.length - 1]!;

  it("takes the entry Envoy's xff_num_trusted_hops rule trusts: the (N+1)-th from the right, the last when fewer", () => {
    fc.assert(
      fc.property(
        fc.array(entry, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 8 }),
        peer,
        (xff, hops, p) => {
          const got = clientAddress({ forwardedFor: xff.join(' ,'), peer: p }, hops);
          assert.equal(got.kind, 'address');
          if (got.kind !== 'address') return;
          assert.equal(got.source, 'x-forwarded-for');
          assert.deepEqual(got.address, readAddress(envoyTrusted(xff, hops)));
        },
      ),
    );
    // Fixed cases, as Envoy's documentation gives them (use_remote_address: the gateway
    // appended its peer, the last entry, before ext_authz saw the header).
    const at = (xff: string, hops: number) => {
      const got = clientAddress({ forwardedFor: xff, peer: '10.0.0.9' }, hops);
      return got.kind === 'address' ? formatAddress(got.address) : got.kind;
    };
    assert.equal(at('192.0.2.10', 0), '192.0.2.10');
    assert.equal(at('203.0.113.128, 192.0.2.10', 0), '192.0.2.10');
    assert.equal(at('203.0.113.128, 203.0.113.10, 192.0.2.1', 1), '203.0.113.10');
    assert.equal(at('203.0.113.128, 203.0.113.10, 192.0.2.1', 2), '203.0.113.128');
    assert.equal(at('192.0.2.1', 2), '192.0.2.1');
  });

  it('as an attacker: entries a client prepends to X-Forwarded-For change nothing, for 0, 1 and 2 trusted hops', () => {
    // Anything a client can write: addresses, garbage, empty entries, whole lists.
    const forged = fc.array(fc.oneof(entry, fc.stringMatching(/^[^,]{0,30}$/)), { maxLength: 5 });
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1, 2),
        forged,
        entry,
        fc.array(entry, { minLength: 2, maxLength: 2 }),
        (hops, prefix, client, proxies) => {
          // What the trusted hops appended: the client, then each trusted proxy's peer.
          const trusted = [client, ...proxies.slice(0, hops)];
          const honest = clientAddress({ forwardedFor: trusted.join(', '), peer: '10.0.0.1' }, hops);
          const attacked = clientAddress(
            { forwardedFor: [...prefix, ...trusted].join(', '), peer: '10.0.0.1' },
            hops,
          );
          assert.deepEqual(attacked, honest);
          assert.deepEqual(honest.kind === 'address' && honest.address, readAddress(client));
        },
      ),
    );
  });

  it('reads the peer only when no X-Forwarded-For came (a request that did not pass the gateway)', () => {
    fc.assert(
      fc.property(peer, fc.integer({ min: 0, max: 3 }), (p, hops) => {
        const got = clientAddress({ peer: p }, hops);
        assert.equal(got.kind === 'address' && got.source, 'peer');
        assert.deepEqual(got.kind === 'address' && got.address, readAddress(p));
      }),
    );
  });

  it('reads a header the operator named before X-Forwarded-For, and never falls back when it does not read', () => {
    fc.assert(
      fc.property(
        entry,
        fc.array(entry, { maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        (named, xff, hops) => {
          const got = clientAddress({ named, forwardedFor: xff.join(','), peer: '10.0.0.1' }, hops);
          assert.equal(got.kind === 'address' && got.source, 'named-header');
          assert.deepEqual(got.kind === 'address' && got.address, readAddress(named));
        },
      ),
    );
    assert.equal(clientAddress({ named: 'not-an-ip', forwardedFor: '192.0.2.1' }, 0).kind, 'unreadable');
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
