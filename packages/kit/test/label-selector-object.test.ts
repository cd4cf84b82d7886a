/**
 * Structured label selectors convert as apimachinery converts them: `{}` selects all, no
 * selector selects nothing, and a selector the apiserver stored but would not convert is
 * refused with the reason, never read as "match nothing" silently.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseLabelSelector } from '../src/cache/label-selector.ts';
import { convertLabelSelector, type LabelSelectorObject } from '../src/cache/label-selector-object.ts';

function matches(sel: LabelSelectorObject | undefined, labels: Record<string, string>): boolean {
  const c = convertLabelSelector(sel);
  assert.ok(c.ok, 'expected a valid selector');
  return c.selector.matches(labels);
}

describe('convertLabelSelector', () => {
  it('selects nothing without a selector and everything with an empty one', () => {
    assert.equal(matches(undefined, {}), false);
    assert.equal(matches(undefined, { a: 'b' }), false);
    assert.equal(matches({}, {}), true);
    assert.equal(matches({ matchLabels: {}, matchExpressions: [] }, { a: 'b' }), true);
  });

  it('ANDs matchLabels and every expression, with NotIn and DoesNotExist matching an absent label', () => {
    const sel: LabelSelectorObject = {
      matchLabels: { team: 'a' },
      matchExpressions: [
        { key: 'env', operator: 'NotIn', values: ['prod'] },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    };
    assert.equal(matches(sel, { team: 'a' }), true);
    assert.equal(matches(sel, { team: 'a', env: 'dev' }), true);
    assert.equal(matches(sel, { team: 'a', env: 'prod' }), false);
    assert.equal(matches(sel, { team: 'a', legacy: '' }), false);
    assert.equal(matches(sel, { team: 'b' }), false);
  });

  it('does not read inherited properties as labels', () => {
    assert.equal(matches({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {}), false);
  });

  const refused: [string, LabelSelectorObject, RegExp][] = [
    [
      'In without values',
      { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] },
      /In needs at least one value/,
    ],
    [
      'NotIn without values',
      { matchExpressions: [{ key: 'a', operator: 'NotIn' }] },
      /NotIn needs at least one value/,
    ],
    [
      'Exists with values',
      { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      /takes no values/,
    ],
    [
      'an unknown operator',
      { matchExpressions: [{ key: 'a', operator: 'in', values: ['x'] }] },
      /"in" is not one of/,
    ],
    ['a key with a space', { matchLabels: { 'a b': 'x' } }, /key "a b"/],
    ['a key with an empty prefix', { matchLabels: { '/a': 'x' } }, /prefix/],
    ['a value ending in a dash', { matchLabels: { a: 'x-' } }, /value "x-"/],
    ['a 64-character value', { matchLabels: { a: 'x'.repeat(64) } }, /value/],
  ];
  for (const [what, sel, message] of refused) {
    it(`refuses ${what}, saying why`, () => {
      const c = convertLabelSelector(sel);
      assert.equal(c.ok, false);
      assert.match(c.ok ? '' : c.message, message);
    });
  }

  it('matches as the string selector of the same requirements does (a second implementation)', () => {
    const key = fc.constantFrom('a', 'b', 'example.com/c');
    const value = fc.constantFrom('x', 'y', 'z');
    const expr = fc.oneof(
      fc.record({
        key,
        operator: fc.constantFrom('In', 'NotIn'),
        values: fc.uniqueArray(value, { minLength: 1 }),
      }),
      fc.record({ key, operator: fc.constantFrom('Exists', 'DoesNotExist') }),
    );
    const selector = fc.record(
      { matchLabels: fc.dictionary(key, value), matchExpressions: fc.array(expr, { maxLength: 3 }) },
      { requiredKeys: [] },
    );
    const labels = fc.dictionary(key, value);
    fc.assert(
      fc.property(selector, labels, (sel, l) => {
        const text = [
          ...Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
          ...(sel.matchExpressions ?? []).map((e) => {
            if (e.operator === 'Exists') return e.key;
            if (e.operator === 'DoesNotExist') return `!${e.key}`;
            const values = 'values' in e ? e.values.join(',') : '';
            return `${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${values})`;
          }),
        ].join(',');
        assert.equal(matches(sel, l), parseLabelSelector(text).matches(l));
      }),
      { numRuns: 500 },
    );
  });
});
