/**
 * cel-go's sets extension, as enabled in the apiserver since 1.29: `sets.contains(a, b)`
 * (every element of b is in a), `sets.equivalent(a, b)` (same elements, ignoring order and
 * duplicates), `sets.intersects(a, b)`. Membership is CEL equality, so `1` and `1.0` match.
 *
 * Macros rather than overloads: the two lists must have the same element type when both
 * are known at compile time (`sets.contains([1], ["a"])` does not compile), but lists of
 * dynamic elements mix freely at run time (`sets.contains(object.ints, [1.0])`).
 */
import { charge } from './cost.ts';
import { celEquals } from './equality.ts';
import type { AstNode, Checker, Evaluator, MacroCall, MacroExpansion, Scope, TypeDecl } from './internals.ts';
import { evalError, type Registrar } from './library.ts';

type SetOp = (a: readonly unknown[], b: readonly unknown[]) => boolean;

function contains(a: readonly unknown[], b: readonly unknown[]): boolean {
  charge(1 + a.length * b.length);
  return b.every((x) => a.some((y) => celEquals(x, y)));
}

const OPS: Record<string, SetOp> = {
  contains,
  equivalent: (a, b) => contains(a, b) && contains(b, a),
  intersects: (a, b) => {
    charge(1 + a.length * b.length);
    return b.some((x) => a.some((y) => celEquals(x, y)));
  },
};

function setMacro(name: string, call: MacroCall): MacroExpansion {
  const receiver = call.receiver;
  if (receiver?.op !== 'id' || receiver.args !== 'sets') {
    return {
      async: false,
      typeCheck(checker: Checker): TypeDecl {
        throw checker.createError(
          'no_matching_overload',
          `found no matching overload for '${name}'`,
          call.ast,
        );
      },
      evaluate(ev: Evaluator): unknown {
        throw ev.createError('no_matching_overload', `found no matching overload for '${name}'`, call.ast);
      },
    };
  }
  const op = OPS[name] as SetOp;
  const [a, b] = call.args as [AstNode, AstNode];
  const elem = (t: TypeDecl): TypeDecl | undefined =>
    t.kind === 'list' && t.valueType && t.valueType.kind !== 'dyn' && t.valueType.kind !== 'param'
      ? t.valueType
      : undefined;
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const ta = checker.check(a, scope);
      const tb = checker.check(b, scope);
      for (const [t, n] of [
        [ta, a],
        [tb, b],
      ] as const) {
        if (t.kind !== 'list' && t.kind !== 'dyn') {
          throw checker.createError(
            'no_matching_overload',
            `found no matching overload for 'sets.${name}' applied to '${checker.formatType(t)}'`,
            n,
          );
        }
      }
      const ea = elem(ta);
      const eb = elem(tb);
      if (ea && eb && ea.name !== eb.name) {
        throw checker.createError(
          'no_matching_overload',
          `found no matching overload for 'sets.${name}' applied to '(${checker.formatType(ta)}, ${checker.formatType(tb)})'`,
          call.ast,
        );
      }
      return checker.getType('bool');
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const va = ev.run(a, scope);
      const vb = ev.run(b, scope);
      if (!Array.isArray(va) || !Array.isArray(vb))
        throw evalError(`no such overload: sets.${name} takes two lists`);
      return op(va, vb);
    },
  };
}

export function registerSets(r: Registrar): void {
  // Nothing else in the environment is called `x.contains(a, b)` and so on with two arguments.
  for (const name of Object.keys(OPS)) r.macro(name, 2, (call) => setMacro(name, call));
  r.namespace('sets');
}
