import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CelEnvironment, type CelValue, fromJson, parseJson, toJson } from '../src/index.ts';
import { Re2 } from '../src/re2.ts';

const env = new CelEnvironment({ variables: { s: 'string', i: 'int', a: 'int', b: 'int', v: 'dyn' } });

function compiled(expr: string) {
  const p = env.compile(expr);
  assert.ok(p.ok, expr);
  return p.value;
}

const MAX = 9223372036854775807n;
const MIN = -9223372036854775808n;

test('JSON survives the round trip through CEL values (integers exact up to 2^53)', () => {
  const identity = compiled('v');
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 3 }), (j) => {
      const text = JSON.stringify(j);
      const cel = parseJson(text);
      assert.ok(cel.ok);
      const back = identity.evaluateJson({ v: cel.value });
      if (!back.ok) {
        // Only numbers beyond 2^53 may refuse to come back.
        assert.match(back.error.message, /beyond 2\^53/);
        return;
      }
      assert.equal(JSON.stringify(back.value), JSON.stringify(JSON.parse(text)));
    }),
  );
});

test('parseJson and fromJson agree wherever JSON numbers are exact', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 2 }), (j) => {
      const a = parseJson(JSON.stringify(j));
      const b = fromJson(JSON.parse(JSON.stringify(j)));
      assert.ok(a.ok && b.ok);
      // JSON.stringify never writes "2.0", so both sides see the same ints; beyond 2^53
      // the text is exact and the parsed double is not, and both refuse to come back.
      const ja = toJson(a.value as CelValue);
      const jb = toJson(b.value as CelValue);
      assert.equal(ja.ok, jb.ok);
      if (ja.ok && jb.ok) assert.deepEqual(ja.value, jb.value);
    }),
  );
});

test('charAt, size and substring count code points', () => {
  const charAt = compiled('s.charAt(i)');
  const size = compiled('size(s)');
  const sub = compiled('s.substring(i)');
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), fc.nat(12), (s, n) => {
      const runes = Array.from(s);
      assert.deepEqual(size.evaluate({ s }), { ok: true, value: BigInt(runes.length) });
      const r = charAt.evaluate({ s, i: BigInt(n) });
      if (n > runes.length) assert.equal(r.ok, false);
      else assert.deepEqual(r, { ok: true, value: runes[n] ?? '' });
      const t = sub.evaluate({ s, i: BigInt(n) });
      if (n > runes.length) assert.equal(t.ok, false);
      else assert.deepEqual(t, { ok: true, value: runes.slice(n).join('') });
    }),
  );
});

test('int arithmetic is exact or an overflow error, never a wrapped value', () => {
  const ops = ['a + b', 'a - b', 'a * b'].map((e) => [e, compiled(e)] as const);
  const int64 = fc.bigInt({ min: MIN, max: MAX });
  fc.assert(
    fc.property(int64, int64, (a, b) => {
      for (const [e, p] of ops) {
        const exact = e === 'a + b' ? a + b : e === 'a - b' ? a - b : a * b;
        const r = p.evaluate({ a, b });
        if (exact > MAX || exact < MIN) assert.equal(r.ok, false, `${e} overflows`);
        else assert.deepEqual(r, { ok: true, value: exact });
      }
    }),
  );
});

test('RE2 agrees with JavaScript on patterns both accept the same way', () => {
  const atom = fc.constantFrom('a', 'b', '.', '[ab]', '(a|b)', 'a*', 'b+', 'a?', '\\d');
  fc.assert(
    fc.property(
      fc.array(atom, { minLength: 1, maxLength: 5 }),
      fc.stringMatching(/^[ab1.]{0,12}$/),
      (parts, input) => {
        const pattern = parts.join('');
        const re = Re2.compile(pattern);
        const js = new RegExp(pattern);
        assert.equal(re.test(input), js.test(input), `${pattern} on ${input}`);
        assert.equal(re.find(input), js.exec(input)?.[0] ?? null, `${pattern} on ${input}`);
      },
    ),
  );
});
