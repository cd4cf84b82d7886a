/**
 * The small rules of the SOPS format that decide whether sops accepts our MAC and
 * decrypts our values: how a value is printed before hashing (Go's strconv), which
 * values an encryption rule covers (any key on the path), the additional data of a
 * value and of the MAC. Oracles: literals of Go's documented output and of sops'
 * behaviour (a `data` label is encrypted too, which the real sops showed), and for
 * floats the round-trip property (the printed text reads back as the same double).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { additionalData } from '../src/sops/cipher.ts';
import {
  cryptRule,
  defaultCryptRule,
  SECRET_ENCRYPTED_REGEX,
  shouldEncrypt,
} from '../src/sops/crypt-rules.ts';
import { isSopsError, SopsErrorKind } from '../src/sops/errors.ts';
import { goFormatFloat, leafText, parseLeaf } from '../src/sops/leaf.ts';
import { formatLastModified, macAdditionalData } from '../src/sops/metadata.ts';
import { goYamlMayNotReadAsString } from '../src/sops/yaml-text.ts';

describe('values as sops hashes them', () => {
  it('prints floats like Go’s FormatFloat(f, ’f’, -1): no exponent, shortest digits', () => {
    const table: [number, string][] = [
      [0.1, '0.1'],
      [123.456, '123.456'],
      [-2.5e-10, '-0.00000000025'],
      [1e-7, '0.0000001'],
      [1.5e21, '1500000000000000000000'],
      [1e21, '1000000000000000000000'],
      [5e-324, `0.${'0'.repeat(323)}5`],
      [Number.POSITIVE_INFINITY, '+Inf'],
      [Number.NEGATIVE_INFINITY, '-Inf'],
      [Number.NaN, 'NaN'],
    ];
    for (const [n, want] of table) assert.equal(goFormatFloat(n), want, String(n));
  });

  it('prints every finite double as plain decimal that reads back as the same double', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        const s = goFormatFloat(n);
        assert.match(s, /^-?[0-9]+(\.[0-9]+)?$/);
        assert.ok(Object.is(Number(s), n) || (Object.is(n, -0) && s === '-0'), `${n} printed as ${s}`);
      }),
    );
  });

  it('prints booleans the Python way and integers in decimal, as sops.ToBytes does', () => {
    assert.equal(leafText(true), 'True');
    assert.equal(leafText(false), 'False');
    assert.equal(leafText(42), '42');
    assert.equal(leafText(-7), '-7');
    assert.equal(leafText(9007199254740993n), '9007199254740993');
    assert.equal(leafText(2.0), '2');
    assert.equal(leafText('päss'), 'päss');
  });
});

describe('decrypted values read back by their sops type, as Go’s strconv reads them', () => {
  const read = (type: string, text: string): unknown => parseLeaf(type, Buffer.from(text), 'x');

  it('reads ints, floats and booleans in the forms Go accepts', () => {
    assert.equal(read('int', '+5'), 5);
    assert.equal(read('int', '-007'), -7);
    assert.equal(read('int', '9007199254740993'), 9007199254740993n);
    assert.equal(read('float', '1.5'), 1.5);
    assert.equal(read('float', '+Inf'), Number.POSITIVE_INFINITY);
    assert.equal(read('float', '-inf'), Number.NEGATIVE_INFINITY);
    assert.ok(Number.isNaN(read('float', 'NaN')));
    assert.equal(read('bool', 'True'), true);
    assert.equal(read('bool', 'f'), false);
    assert.equal(read('str', ''), '');
  });

  it('refuses text that is not of its type, and types a Secret never holds', () => {
    assert.throws(
      () => read('int', '1_000'),
      (e: unknown) => isSopsError(e, SopsErrorKind.Malformed),
    );
    assert.throws(
      () => read('int', '1.5'),
      (e: unknown) => isSopsError(e, SopsErrorKind.Malformed),
    );
    assert.throws(
      () => read('bool', 'yes'),
      (e: unknown) => isSopsError(e, SopsErrorKind.Malformed),
    );
    assert.throws(
      () => read('float', ''),
      (e: unknown) => isSopsError(e, SopsErrorKind.Malformed),
    );
    assert.throws(
      () => read('time', '2024-01-01T00:00:00Z'),
      (e: unknown) => isSopsError(e, SopsErrorKind.Unsupported),
    );
  });
});

describe('which values are encrypted', () => {
  const secretRule = cryptRule('encrypted_regex', SECRET_ENCRYPTED_REGEX);

  it('encrypts everything under data and stringData and nothing else of a Secret', () => {
    assert.equal(shouldEncrypt(secretRule, ['data', 'password']), true);
    assert.equal(shouldEncrypt(secretRule, ['stringData', 'config.yaml']), true);
    assert.equal(shouldEncrypt(secretRule, ['metadata', 'name']), false);
    assert.equal(shouldEncrypt(secretRule, ['type']), false);
    assert.equal(shouldEncrypt(secretRule, ['metadata', 'labels', 'database']), false);
  });

  it('encrypts a key named data anywhere on the path, as sops does (a label `data` too)', () => {
    assert.equal(shouldEncrypt(secretRule, ['metadata', 'labels', 'data']), true);
    assert.equal(shouldEncrypt(secretRule, ['metadata', 'annotations', 'stringData']), true);
  });

  it('by default encrypts all but keys ending in _unencrypted, on any level', () => {
    const rule = defaultCryptRule();
    assert.equal(shouldEncrypt(rule, ['data', 'password']), true);
    assert.equal(shouldEncrypt(rule, ['name_unencrypted']), false);
    assert.equal(shouldEncrypt(rule, ['meta_unencrypted', 'name']), false);
  });

  it('follows an unencrypted_regex and an encrypted_suffix like sops', () => {
    const unencrypted = cryptRule('unencrypted_regex', '^(apiVersion|kind|metadata|type)$');
    assert.equal(shouldEncrypt(unencrypted, ['metadata', 'name']), false);
    assert.equal(shouldEncrypt(unencrypted, ['data', 'password']), true);
    const suffix = cryptRule('encrypted_suffix', '_secret');
    assert.equal(shouldEncrypt(suffix, ['db_secret', 'password']), true);
    assert.equal(shouldEncrypt(suffix, ['db', 'password']), false);
  });
});

describe('additional data', () => {
  it('binds a value to the keys leading to it, each followed by a colon', () => {
    assert.equal(additionalData(['data', 'password']), 'data:password:');
    assert.equal(additionalData(['a']), 'a:');
    assert.equal(additionalData([]), '');
  });

  it('binds the MAC to lastmodified as Go prints it back: fraction dropped, zero offset as Z', () => {
    assert.equal(macAdditionalData('2025-03-04T05:06:07Z'), '2025-03-04T05:06:07Z');
    assert.equal(macAdditionalData('2025-03-04T05:06:07.123456Z'), '2025-03-04T05:06:07Z');
    assert.equal(macAdditionalData('2025-03-04T05:06:07+00:00'), '2025-03-04T05:06:07Z');
    assert.equal(macAdditionalData('2025-03-04T05:06:07+02:00'), '2025-03-04T05:06:07+02:00');
    assert.throws(() => macAdditionalData('yesterday'), /RFC 3339/);
  });

  it('writes lastmodified in UTC to the second', () => {
    assert.equal(formatLastModified(new Date(Date.UTC(2025, 2, 4, 5, 6, 7, 891))), '2025-03-04T05:06:07Z');
  });
});

describe('YAML strings go-yaml could misread', () => {
  it('quotes words and number-like strings go-yaml resolves to other types, not ordinary words', () => {
    for (const s of [
      '',
      'true',
      'False',
      'NULL',
      '~',
      'yes',
      'On',
      '1_000',
      '0b101',
      '0o17',
      '2024-01-01',
      '.5',
      '-1',
      '+.inf',
      '<<',
    ]) {
      assert.equal(goYamlMayNotReadAsString(s), true, s);
    }
    for (const s of ['Opaque', 'v1', 'hello world', 'trueish', 'a-1', 'ENC[AES256_GCM,data:x]']) {
      assert.equal(goYamlMayNotReadAsString(s), false, s);
    }
  });
});
