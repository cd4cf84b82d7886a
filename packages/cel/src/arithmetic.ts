/**
 * Integer arithmetic that overflows into an error, as cel-go's does, where the library
 * wraps silently: unary minus (`-(-9223372036854775807 - 1)`), division and modulo of
 * the smallest int64 by -1, and int literals beyond int64 (a compile error).
 *
 * The library's built-in operators cannot be re-registered, so the parsed nodes of `-x`,
 * `a / b` and `a % b` get our type check and evaluation attached (`attach`, called by the
 * AST rewrite in `library.ts` before type checking).
 */
import { TypeError as CelTypeError, EvaluationError } from '@marcbachmann/cel-js';
import { UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { compareStrings } from './equality.ts';
import {
  type AstNode,
  type Checker,
  type Evaluator,
  locationOf,
  type Scope,
  type TypeDecl,
} from './internals.ts';

const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;

function overflow(node: AstNode): Error {
  return new EvaluationError({
    code: 'numeric_overflow',
    message: 'integer overflow',
    node: locationOf(node),
  });
}

function noOverload(ev: Evaluator, node: AstNode, text: string): Error {
  return ev.createError('no_such_overload', `no such overload: ${text}`, node);
}

function kindOf(v: unknown): string {
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'double';
  if (v instanceof UnsignedInt) return 'uint';
  return typeof v === 'string' ? 'string' : 'value';
}

function negate(node: AstNode) {
  const operand = node.args as AstNode;
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const t = checker.check(operand, scope);
      if (t.kind === 'dyn' || t.name === 'int' || t.name === 'double') return t;
      throw checker.createError('no_such_overload', `no such overload: -${checker.formatType(t)}`, node);
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const v = ev.run(operand, scope);
      if (typeof v === 'bigint') {
        if (v === MIN_INT) throw overflow(node);
        return -v;
      }
      if (typeof v === 'number') return -v;
      throw noOverload(ev, node, `-${kindOf(v)}`);
    },
  };
}

function divide(node: AstNode, op: '/' | '%') {
  const [left, right] = node.args as [AstNode, AstNode];
  const allowed = op === '/' ? ['int', 'uint', 'double'] : ['int', 'uint'];
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const l = checker.check(left, scope);
      const r = checker.check(right, scope);
      const ln = l.kind === 'dyn' ? undefined : l.name;
      const rn = r.kind === 'dyn' ? undefined : r.name;
      if (ln !== undefined && rn !== undefined) {
        if (ln === rn && allowed.includes(ln)) return l;
        throw checker.createError('no_such_overload', `no such overload: ${ln} ${op} ${rn}`, node);
      }
      const known = ln ?? rn;
      if (known !== undefined && !allowed.includes(known)) {
        throw checker.createError(
          'no_such_overload',
          `no such overload: ${ln ?? 'dyn'} ${op} ${rn ?? 'dyn'}`,
          node,
        );
      }
      // One side dyn: the result is dyn too, as in cel-go.
      return ln === undefined ? l : r;
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const a = ev.run(left, scope);
      const b = ev.run(right, scope);
      if (typeof a === 'bigint' && typeof b === 'bigint') {
        if (b === 0n)
          throw ev.createError(
            op === '/' ? 'division_by_zero' : 'modulo_by_zero',
            op === '/' ? 'division by zero' : 'modulus by zero',
            node,
          );
        if (a === MIN_INT && b === -1n) throw overflow(node);
        return op === '/' ? a / b : a % b;
      }
      if (a instanceof UnsignedInt && b instanceof UnsignedInt) {
        if (b.valueOf() === 0n)
          throw ev.createError('division_by_zero', op === '/' ? 'division by zero' : 'modulus by zero', node);
        return new UnsignedInt(op === '/' ? a.valueOf() / b.valueOf() : a.valueOf() % b.valueOf());
      }
      if (op === '/' && typeof a === 'number' && typeof b === 'number') return a / b;
      throw noOverload(ev, node, `${kindOf(a)} ${op} ${kindOf(b)}`);
    },
  };
}

const ORDER: Record<string, (c: number) => boolean> = {
  '<': (c) => c < 0,
  '<=': (c) => c <= 0,
  '>': (c) => c > 0,
  '>=': (c) => c >= 0,
};

/**
 * `<`, `<=`, `>`, `>=`: the library's checks and overloads, except that two strings are
 * ordered by code point (Go compares UTF-8 bytes; JavaScript's `<` compares UTF-16
 * units, which disagree once a string holds characters beyond U+FFFF).
 */
function relational(node: AstNode, op: string) {
  const [left, right] = node.args as [AstNode, AstNode];
  const test = ORDER[op] as (c: number) => boolean;
  const original = node.meta.check as (chk: Checker, ast: AstNode, scope: Scope) => TypeDecl;
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const l = checker.check(left, scope);
      const r = checker.check(right, scope);
      // The library has no order on bytes; cel-go compares them bytewise.
      if (l.name === 'bytes' && r.name === 'bytes') return checker.getType('bool');
      return original(checker, node, scope);
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const a = ev.run(left, scope);
      const b = ev.run(right, scope);
      if (typeof a === 'string' && typeof b === 'string') return test(compareStrings(a, b));
      if (a instanceof Uint8Array && b instanceof Uint8Array) return test(Buffer.compare(a, b));
      return (
        node as AstNode & { handle: (a: unknown, b: unknown, n: AstNode, e: Evaluator) => unknown }
      ).handle(a, b, node, ev);
    },
  };
}

/** Attaches our semantics to the node if it is `-x`, `a / b` or `a % b`; checks int literals. */
export function attach(node: AstNode, parent: AstNode | undefined): void {
  switch (node.op) {
    case '-_':
      node.setMeta('macro', negate(node)).setMeta('async', false);
      return;
    case '/':
    case '%':
      node.setMeta('macro', divide(node, node.op)).setMeta('async', false);
      return;
    case '<':
    case '<=':
    case '>':
    case '>=':
      node.setMeta('macro', relational(node, node.op)).setMeta('async', false);
      return;
    case 'value':
      if (typeof node.args === 'bigint' && (node.args > MAX_INT || node.args < MIN_INT)) {
        // 9223372036854775808 is valid only as the operand of a minus.
        if (node.args === -MIN_INT && parent?.op === '-_') return;
        throw new CelTypeError({
          code: 'invalid_int_literal',
          message: 'invalid int literal',
          node: locationOf(node),
        });
      }
      return;
  }
}
