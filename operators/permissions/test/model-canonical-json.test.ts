/**
 * Canonical JSON: keys sorted at every level, arrays in their order, no whitespace,
 * undefined members left out; checked on literal texts, and as properties: it parses
 * back to the same value, and objects equal up to key order give one text.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalJson, type Json } from '../src/model/canonical-json.ts';

describe('canonicalJson', () => {
  it('sorts keys at every level by UTF-16 code units and keeps array order', () => {
    assert.equal(
      canonicalJson({ b: [3, 1, { z: 1, a: null }], a: { y: true, x: 'é"\n' }, B: 0, é: 1, 'a b': -1.5 }),
      '{"B":0,"a":{"x":"é\\"\\n","y":true},"a b":-1.5,"b":[3,1,{"a":null,"z":1}],"é":1}',
    );
  });

  it('leaves out members whose value is undefined, as JSON.stringify does', () => {
    assert.equal(canonicalJson({ a: undefined, b: 1 }), '{"b":1}');
  });

  it('refuses numbers JSON cannot carry rather than writing null', () => {
    assert.throws(() => canonicalJson({ a: Number.NaN }), /no representation/);
    assert.throws(() => canonicalJson([Number.POSITIVE_INFINITY]), /no representation/);
  });

  it('parses back to the value it wrote (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        assert.deepEqual(JSON.parse(canonicalJson(v as Json)), JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('gives one text for objects that differ only in key order (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        assert.equal(canonicalJson(reversed as Json), canonicalJson(o as Json));
      }),
    );
  });
});
