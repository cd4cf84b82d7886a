import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CelEnvironment,
  CelErrorKind,
  type CelValue,
  formatCelError,
  fromJson,
  parseJson,
  toJson,
} from '../src/index.ts';

const env = new CelEnvironment({ variables: { target: 'dyn', source: 'dyn', o: 'dyn' } });

function json(text: string): CelValue {
  const r = parseJson(text);
  assert.ok(r.ok, 'valid JSON');
  return r.value;
}

function run(expr: string, vars: Record<string, CelValue> = {}) {
  const p = env.compile(expr);
  assert.ok(p.ok, `compiles: ${expr}: ${p.ok ? '' : formatCelError(p.error)}`);
  return p.value.evaluate(vars);
}

function value(expr: string, vars: Record<string, CelValue> = {}): CelValue {
  const r = run(expr, vars);
  assert.ok(r.ok, `evaluates: ${expr}: ${r.ok ? '' : r.error.message}`);
  return r.value;
}

const SAFE =
  'target.spec.state == "Locked" && has(target.status) && target.status.observedGeneration == target.metadata.generation && target.status.conditions.exists(c, c.type == "Ready" && c.status == "True")';

describe('values as the apiserver sees them', () => {
  test('a JSON integer is a CEL int: generation == 3 is true and generation + 1 is 4', () => {
    const o = json('{"metadata":{"generation":3}}');
    assert.equal(value('o.metadata.generation == 3', { o }), true);
    assert.equal(value('o.metadata.generation + 1', { o }), 4n);
  });

  test('2.0 in JSON text stays a double, 2 an int', () => {
    assert.equal(value('type(o.a) == double && type(o.b) == int', { o: json('{"a":2.0,"b":2}') }), true);
  });

  test('integers stay exact up to int64; beyond, they are doubles as in the apiserver', () => {
    const o = json('{"a":9007199254740993,"b":9223372036854775808}');
    assert.equal(value('o.a', { o }), 9007199254740993n);
    assert.equal(value('type(o.b) == double', { o }), true);
  });

  test('an integer result beyond 2^53 is a conversion error, never a rounded number', () => {
    const p = env.compile('o.a * 2');
    assert.ok(p.ok);
    const r = p.value.evaluateJson({ o: json('{"a":9007199254740993}') });
    assert.equal(r.ok, false);
    assert.equal(r.ok ? undefined : r.error.kind, CelErrorKind.Conversion);
  });

  test('fromJson turns integral numbers into ints and refuses non-JSON values', () => {
    const r = fromJson({ a: 3, b: 2.5 });
    assert.ok(r.ok);
    assert.deepEqual(r.value, { a: 3n, b: 2.5 });
    assert.equal(fromJson({ d: new Date() }).ok, false);
    assert.equal(fromJson(Number.NaN).ok, false);
  });

  test('results come back as JSON: maps, lists, strings, safe integers', () => {
    const p = env.compile('{"name": [o.n + "!"], "items": o.l.map(x, string(x * 2))}');
    assert.ok(p.ok);
    const r = p.value.evaluateJson({ o: json('{"n":"x","l":[1,2]}') });
    assert.deepEqual(r, { ok: true, value: { name: ['x!'], items: ['2', '4'] } });
    const q = env.compile('size(o.l) + 9007199254740990');
    assert.ok(q.ok);
    assert.deepEqual(q.value.evaluateJson({ o: json('{"l":[1]}') }), { ok: true, value: 9007199254740991 });
  });

  test('toJson refuses NaN and optionals', () => {
    assert.equal(toJson(Number.NaN).ok, false);
    assert.equal(toJson(value('optional.of(1)')).ok, false);
  });
});

describe('compile', () => {
  test('a syntax error carries line, column and what was expected', () => {
    const p = env.compile('o.a &&\n  (o.b');
    assert.equal(p.ok, false);
    const e = p.ok ? undefined : p.error;
    assert.equal(e?.kind, CelErrorKind.Syntax);
    assert.deepEqual([e?.position?.line, e?.position?.column], [2, 7]);
    assert.equal(e?.expected, "')'");
    assert.match(e?.message ?? '', /expected '\)' but found end of input/);
  });

  test('an undeclared variable is a type error at its position', () => {
    const p = env.compile('o.a == nope');
    assert.equal(p.ok, false);
    assert.equal(p.ok ? '' : p.error.kind, CelErrorKind.Type);
    assert.equal(p.ok ? 0 : p.error.position?.column, 8);
  });

  test('a type error says what was expected', () => {
    const p = env.compile('1 + "a"');
    assert.equal(p.ok ? '' : p.error.kind, CelErrorKind.Type);
    const q = env.compile('[1].all(x, x + 1)');
    assert.equal(q.ok, false);
    assert.match(q.ok ? '' : q.error.message, /must return bool/);
  });

  test('columns count code points, like cel-go', () => {
    const p = env.compile('"😀😀" + nope');
    assert.equal(p.ok ? 0 : p.error.position?.column, 8);
  });

  test('literal regexes, durations and int literals are checked at compile time, as in the apiserver', () => {
    for (const bad of ['"a".matches("(?=a)")', 'duration("1x")', '9223372036854775808', 'b"a".hex()']) {
      assert.equal(env.compile(bad).ok, false, bad);
    }
  });

  test('the output type is inferred', () => {
    const p = env.compile('o.l.map(x, string(x))');
    assert.equal(p.ok && p.value.outputType, 'list<string>');
  });
});

describe('an error is never true', () => {
  const fixtures = {
    ready: json(
      '{"metadata":{"generation":3},"spec":{"state":"Locked"},"status":{"observedGeneration":3,"conditions":[{"type":"Ready","status":"True"}]}}',
    ),
    stale: json(
      '{"metadata":{"generation":3},"spec":{"state":"Locked"},"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True"}]}}',
    ),
    neverReconciled: json('{"metadata":{"generation":1},"spec":{"state":"Locked"}}'),
  };
  const safe = env.compile(SAFE);
  const unguarded = env.compile(SAFE.replace(' && has(target.status)', ''));
  assert.ok(safe.ok && unguarded.ok);

  test("RFC 0002's safe expression: true when reconciled, false when stale or never reconciled", () => {
    assert.deepEqual(safe.value.evaluateBool({ target: fixtures.ready }), { ok: true, value: true });
    assert.deepEqual(safe.value.evaluateBool({ target: fixtures.stale }), { ok: true, value: false });
    assert.deepEqual(safe.value.evaluateBool({ target: fixtures.neverReconciled }), {
      ok: true,
      value: false,
    });
  });

  test('without has(), a target never reconciled is an evaluation error, not false', () => {
    const r = unguarded.value.evaluateBool({ target: fixtures.neverReconciled });
    assert.equal(r.ok, false);
    assert.equal(r.ok ? '' : r.error.kind, CelErrorKind.Evaluation);
    assert.match(r.ok ? '' : r.error.message, /No such key: status/);
  });

  test('a rule that yields a non-bool is a NotBool error', () => {
    const p = env.compile('o.name');
    assert.ok(p.ok);
    const r = p.value.evaluateBool({ o: json('{"name":"x"}') });
    assert.equal(r.ok ? '' : r.error.kind, CelErrorKind.NotBool);
  });

  test('all is false when one element is false even if another errors; otherwise the error wins', () => {
    const o = json('{"l":[0,1,2]}');
    assert.equal(value('o.l.all(x, 2 / x > 5)', { o }), false);
    assert.equal(run('o.l.all(x, 2 / x > 0)', { o }).ok, false);
    assert.equal(value('o.l.exists(x, 2 / x == 1)', { o }), true);
  });
});

describe('the cost bound', () => {
  test('a runaway comprehension stops with CostLimitExceeded, quickly', () => {
    const started = Date.now();
    const r = run('lists.range(3000).all(x, lists.range(3000).all(y, x + y >= 0))');
    assert.equal(r.ok ? '' : r.error.kind, CelErrorKind.CostLimitExceeded);
    assert.ok(Date.now() - started < 5_000);
  });

  test('an exhausted budget is not absorbed by || true', () => {
    const r = run('lists.range(3000).all(x, lists.range(3000).all(y, x + y >= 0)) || true');
    assert.equal(r.ok ? '' : r.error.kind, CelErrorKind.CostLimitExceeded);
  });

  test('a string doubled by replace is stopped before it is built', () => {
    const doubling = Array.from({ length: 40 }, () => '.replace("a", "aa")').join('');
    const r = run(
      `"a".repeatless()`.replace('.repeatless()', doubling.replaceAll('"a", "aa"', '"a", "aaaa"')),
    );
    assert.equal(r.ok ? '' : r.error.kind, CelErrorKind.CostLimitExceeded);
  });

  test('the limit is configurable', () => {
    const small = new CelEnvironment({ costLimit: 10 });
    const p = small.compile('[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].all(x, x > 0)');
    assert.ok(p.ok);
    assert.equal(p.value.evaluate({}).ok, false);
  });
});

describe('Kubernetes libraries', () => {
  test('strings index by code point', () => {
    const o = json('{"s":"a😀b"}');
    assert.equal(value('o.s.charAt(1)', { o }), '😀');
    assert.equal(value('o.s.indexOf("b")', { o }), 2n);
    assert.equal(value('o.s.substring(1, 2)', { o }), '😀');
    assert.equal(value('size(o.s)', { o }), 3n);
  });

  test('lowerAscii leaves non-ASCII letters alone; trim uses Go white space', () => {
    assert.equal(value('"ÀbC".lowerAscii()'), 'Àbc');
    assert.equal(value('"\\u0085x\\ufeff".trim()'), 'x\ufeff');
  });

  test('regexes are RE2: no look-arounds, linear time on catastrophic patterns', () => {
    const started = Date.now();
    assert.equal(value(`"${'a'.repeat(5000)}!".matches("(a+)+$")`), false);
    assert.ok(Date.now() - started < 2_000);
    assert.deepEqual(value('"a1b22".findAll("[0-9]+")'), ['1', '22']);
  });

  test('quantities, IPs, CIDRs and URLs', () => {
    assert.equal(value('quantity("1Gi") == quantity("1024Mi")'), true);
    assert.equal(value('quantity("1.5Gi").isInteger()'), false);
    assert.equal(value('cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))'), true);
    assert.equal(value('string(ip("2001:DB8:0:0:0:0:0:1"))'), '2001:db8::1');
    assert.equal(value('url("https://example.com:8443/p").getPort()'), '8443');
  });

  test('sets, lists and two-variable comprehensions', () => {
    assert.equal(value('sets.equivalent([1, 2], [2, 1, 1])'), true);
    assert.equal(value('[3, 1, 2].sort() == [1, 2, 3] && [1, 2].sum() == 3'), true);
    assert.equal(value('{"a": 1, "b": 2}.all(k, v, v > 0)'), true);
  });

  test('optionals', () => {
    const o = json('{"m":{"a":1}}');
    assert.equal(value('o.?m.?b.orValue(7)', { o }), 7n);
    assert.equal(value('o.m[?"a"].value()', { o }), 1n);
  });

  test('integer overflow is an error', () => {
    for (const e of [
      '9223372036854775807 + 1',
      '-(-9223372036854775807 - 1)',
      '(-9223372036854775807 - 1) / -1',
      'int(1e19)',
    ]) {
      assert.equal(run(e).ok, false, e);
    }
  });
});
