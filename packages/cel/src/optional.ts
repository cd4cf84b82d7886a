/**
 * Optional types beyond what the library provides (`.?field`, `[?index]`, `optional.of`,
 * `optional.none`, `hasValue`, `value`, `or`, `orValue`): cel-go's
 * `optional.ofNonZeroValue`, `optMap` and `optFlatMap`.
 *
 * Not supported (a parse error here, valid in the apiserver): optional entries in list
 * and map literals, `[?x]` and `{?k: v}`.
 */
import { Optional, ParseError } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import {
  type AstNode,
  type Checker,
  type Evaluator,
  locationOf,
  type MacroCall,
  type MacroExpansion,
  type Scope,
  type TypeDecl,
} from './internals.ts';
import { evalError, type Registrar } from './library.ts';

/** cel-go's zero values: 0, 0u, 0.0, false, "", b"", [], {}, null, duration 0, timestamp 0. */
function isZero(v: unknown): boolean {
  if (v === null || v === false || v === '' || v === 0n || v === 0) return true;
  if (v instanceof UnsignedInt) return v.valueOf() === 0n;
  if (v instanceof Uint8Array || Array.isArray(v)) return v.length === 0;
  if (v instanceof Map) return v.size === 0;
  if (v instanceof Duration) return v.seconds === 0n && v.nanos === 0;
  if (v instanceof Date) return v.getTime() === 0;
  if (typeof v === 'object') {
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) return Object.keys(v).length === 0;
  }
  return false;
}

function optMacro(call: MacroCall, flat: boolean): MacroExpansion {
  const receiver = call.receiver as AstNode;
  const varNode = call.args[0] as AstNode;
  const expr = call.args[1] as AstNode;
  if (varNode.op !== 'id' || typeof varNode.args !== 'string') {
    throw new ParseError({
      code: 'invalid_macro_argument',
      message: `${call.methodName}() variable name must be a simple identifier`,
      node: locationOf(varNode),
    });
  }
  const name = varNode.args;
  let elem: TypeDecl | undefined;
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const t = checker.check(receiver, scope);
      if (t.kind !== 'optional' && t.kind !== 'dyn') {
        throw checker.createError(
          'optional_expected',
          `${call.methodName}() receiver must be optional, got '${checker.formatType(t)}'`,
          receiver,
        );
      }
      elem = t.valueType ?? checker.getType('dyn');
      const rt = checker.check(expr, scope.forkWithVariable(name, elem));
      if (!flat) return checker.registry.getOptionalType(rt);
      if (rt.kind === 'optional' || rt.kind === 'dyn')
        return rt.kind === 'optional' ? rt : checker.getType('optional');
      throw checker.createError(
        'optional_expected',
        `optFlatMap() expression must return an optional, got '${checker.formatType(rt)}'`,
        expr,
      );
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const opt = ev.run(receiver, scope);
      if (!(opt instanceof Optional)) throw evalError(`${call.methodName}() receiver must be optional`);
      if (!opt.hasValue()) return opt;
      const r = ev.run(expr, scope.forkWithVariable(name, elem as TypeDecl).setIterValue(opt.value(), ev));
      if (!flat) return Optional.of(r);
      if (!(r instanceof Optional)) throw evalError('optFlatMap() expression must return an optional');
      return r;
    },
  };
}

export function registerOptional(r: Registrar): void {
  r.fn('OptionalNamespace.ofNonZeroValue(A): optional<A>', (_ns: object, v: unknown) =>
    isZero(v) ? Optional.none() : Optional.of(v),
  )
    .macro('optMap', 2, (call) => optMacro(call, false))
    .macro('optFlatMap', 2, (call) => optMacro(call, true));
}
