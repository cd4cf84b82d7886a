/** The outline of an expression: its loops, presence tests and field reads, from the syntax tree. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CelEnvironment, CelErrorKind, type CelOutline, outlineExpression } from '../src/index.ts';

const env = new CelEnvironment({ variables: { source: 'dyn' } });

function outline(expr: string): CelOutline {
  const o = outlineExpression(expr);
  assert.ok(o.ok, expr);
  return o.value;
}

const macros = (expr: string): string[] => outline(expr).comprehensions.map((m) => m.macro);
const reads = (expr: string): string[] => outline(expr).reads.map((r) => [r.variable, ...r.path].join('.'));

describe('outlineExpression', () => {
  it('lists every looping macro our CEL accepts, including two-variable forms, sortBy and optMap', () => {
    const cases: [string, string][] = [
      ['source.l.all(x, x > 0)', 'all'],
      ['source.l.exists(x, x > 0)', 'exists'],
      ['source.l.exists_one(x, x > 0)', 'exists_one'],
      ['source.l.map(x, x + 1)', 'map'],
      ['source.l.map(x, x > 0, x + 1)', 'map'],
      ['source.l.filter(x, x > 0)', 'filter'],
      ['source.m.all(k, v, v > 0)', 'all'],
      ['source.m.exists(k, v, v > 0)', 'exists'],
      ['source.m.existsOne(k, v, v > 0)', 'existsOne'],
      ['source.m.exists_one(k, v, v > 0)', 'exists_one'],
      ['source.l.transformList(i, v, v + 1)', 'transformList'],
      ['source.l.transformList(i, v, v > 0, v + 1)', 'transformList'],
      ['source.m.transformMap(k, v, v + 1)', 'transformMap'],
      ['source.m.transformMap(k, v, v > 0, v + 1)', 'transformMap'],
      ['source.m.transformMapEntry(k, v, {k: v})', 'transformMapEntry'],
      ['source.m.transformMapEntry(k, v, v > 0, {k: v})', 'transformMapEntry'],
      ['source.l.sortBy(x, x.name)', 'sortBy'],
      ['source.?o.optMap(x, x + 1)', 'optMap'],
      ['source.?o.optFlatMap(x, optional.of(x))', 'optFlatMap'],
    ];
    for (const [expr, macro] of cases) {
      assert.ok(env.compile(expr).ok, `our CEL accepts ${expr}`);
      assert.deepEqual(macros(expr), [macro], expr);
    }
    // The apiserver refuses cel.bind; the outline still names it as the comprehension it is.
    assert.deepEqual(macros('cel.bind(x, source.a, x + 1)'), ['bind']);
  });

  it('gives each macro its line and column, in source order', () => {
    const o = outline('source.a.map(x, x)\n  + source.b.filter(y, y.exists(z, z))');
    assert.deepEqual(
      o.comprehensions.map((m) => [m.macro, m.position.line, m.position.column]),
      [
        ['map', 1, 1],
        ['filter', 2, 5],
        ['exists', 2, 24],
      ],
    );
  });

  it('has() is a presence test, not a loop', () => {
    const o = outline('has(source.spec.x) ? source.spec.x : "none"');
    assert.deepEqual(o.comprehensions, []);
    assert.deepEqual(
      o.presenceTests.map((m) => m.macro),
      ['has'],
    );
    assert.deepEqual(reads('has(source.spec.x) ? source.spec.x : "none"'), [
      'source.spec.x',
      'source.spec.x',
    ]);
  });

  it('a field named like a macro, or a string that spells one, is not a loop', () => {
    for (const expr of [
      'source.spec.map',
      'source.map.filter.exists',
      '"exists(c, true)"',
      'source.spec.name + ".map(x, x)"',
      'source.spec.name.startsWith("all(")',
    ]) {
      assert.ok(env.compile(expr).ok, expr);
      assert.deepEqual(macros(expr), [], expr);
    }
    assert.deepEqual(reads('source.map.filter.exists'), ['source.map.filter.exists']);
  });

  it('reads follow field selections; an index or a call ends the path', () => {
    assert.deepEqual(reads('source.metadata.name + "-" + source.metadata.namespace'), [
      'source.metadata.name',
      'source.metadata.namespace',
    ]);
    assert.deepEqual(reads('source'), ['source']);
    assert.deepEqual(reads('source["spec"].name'), ['source']);
    assert.deepEqual(reads('source.spec["x"]'), ['source.spec']);
    assert.deepEqual(reads('source.?spec.name.orValue("")'), ['source.spec.name']);
    assert.deepEqual(reads('source.metadata.name.lowerAscii().size()'), ['source.metadata.name']);
    assert.deepEqual(reads('{"k": [source.a, source.b.c]}'), ['source.a', 'source.b.c']);
    assert.deepEqual(
      outline('a.b').reads.map((r) => [r.variable, r.path, r.position.column]),
      [['a', ['b'], 1]],
    );
  });

  it('iteration variables are not reads of a declared variable of the same name', () => {
    assert.deepEqual(reads('source.l.map(x, x.name)'), ['source.l']);
    assert.deepEqual(reads('source.l.map(source, source.name)'), ['source.l']);
    assert.deepEqual(reads('source.m.all(k, v, k == v && source.x)'), ['source.m', 'source.x']);
    // cel.bind's initialiser is evaluated outside the binding.
    assert.deepEqual(reads('cel.bind(source, source.a, source.b)'), ['cel', 'source.a']);
  });

  it('a syntax error is a Syntax error with its position, not an outline', () => {
    const o = outlineExpression('source.spec.name +');
    assert.equal(o.ok, false);
    if (!o.ok) {
      assert.equal(o.error.kind, CelErrorKind.Syntax);
      assert.equal(o.error.position?.line, 1);
    }
  });

  it('expressions of reads, operators and ternaries have no loop; any of them inside a macro has one', () => {
    const field = fc.constantFrom('name', 'map', 'exists', 'filter', 'all', 'spec', 'x');
    const path = fc.array(field, { minLength: 1, maxLength: 3 });
    const leaf = fc.oneof(
      path.map((p) => ({ text: `source.${p.join('.')}`, reads: [`source.${p.join('.')}`] })),
      fc.constantFrom('"exists(c, true)"', '1', 'true', '"map"').map((t) => ({ text: t, reads: [] })),
    );
    type Expr = { text: string; reads: string[] };
    const expr: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
      e: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc
          .tuple(tie('e'), fc.constantFrom('+', '==', '&&', '||', '<'), tie('e'))
          .map(([a, op, b]) => ({ text: `(${a.text} ${op} ${b.text})`, reads: [...a.reads, ...b.reads] })),
        fc.tuple(tie('e'), tie('e'), tie('e')).map(([c, a, b]) => ({
          text: `(${c.text} ? ${a.text} : ${b.text})`,
          reads: [...c.reads, ...a.reads, ...b.reads],
        })),
        tie('e').map((a) => ({ text: `!${a.text}`, reads: a.reads })),
      ),
    })).e;
    const wrap = fc.constantFrom(
      (e: string) => [`source.l.map(x, ${e})`, 'map'],
      (e: string) => [`source.l.exists(x, ${e})`, 'exists'],
      (e: string) => [`source.l.filter(x, ${e})`, 'filter'],
      (e: string) => [`source.m.transformMap(k, v, ${e})`, 'transformMap'],
      (e: string) => [`[${e}].all(x, x)`, 'all'],
    );
    fc.assert(
      fc.property(expr, wrap, (e, w) => {
        const o = outline(e.text);
        assert.deepEqual(o.comprehensions, []);
        assert.deepEqual(
          o.reads.map((r) => [r.variable, ...r.path].join('.')),
          e.reads,
        );
        const [wrapped, macro] = w(e.text);
        assert.deepEqual(macros(wrapped as string), [macro]);
      }),
    );
  });
});
