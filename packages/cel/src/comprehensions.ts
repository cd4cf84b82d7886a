/**
 * Comprehension macros: `all`, `exists`, `exists_one`, `map`, `filter` with one
 * iteration variable, and cel-go's two-variable forms the apiserver enables since 1.32
 * (`all(k, v, p)`, `exists(k, v, p)`, `existsOne`/`exists_one`, `transformList`,
 * `transformMap`, `transformMapEntry`).
 *
 * They replace the library's own macros so that every iteration is charged to the cost
 * budget (a nested comprehension cannot run unbounded) and so that the error rules are
 * cel-go's:
 *   - `all` is false as soon as one predicate is false, even if another one errored;
 *     otherwise the first error wins; `exists` is the mirror image (true wins).
 *   - `exists_one`, `map`, `filter` and the `transform*` macros fail on the first error.
 *   - a predicate that yields a non-bool is an error ("no such overload"), never false.
 * Over a map, one variable ranges over the keys; two variables over keys and values.
 * Over a list, two variables are the index (int) and the element.
 */
import { ParseError } from '@marcbachmann/cel-js';
import { charge, isCostError } from './cost.ts';
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

/** What a comprehension computes. */
type Kind =
  | 'all'
  | 'exists'
  | 'existsOne'
  | 'map'
  | 'filter'
  | 'transformList'
  | 'transformMap'
  | 'transformMapEntry';

interface Shape {
  readonly kind: Kind;
  readonly vars: 1 | 2;
  /** Index in the arguments of the filter predicate, if the form has one. */
  readonly filter?: number;
  /** Index of the main expression (predicate or transform). */
  readonly expr: number;
}

const SHAPES: readonly (readonly [string, number, Shape])[] = [
  ['all', 2, { kind: 'all', vars: 1, expr: 1 }],
  ['exists', 2, { kind: 'exists', vars: 1, expr: 1 }],
  ['exists_one', 2, { kind: 'existsOne', vars: 1, expr: 1 }],
  ['map', 2, { kind: 'map', vars: 1, expr: 1 }],
  ['map', 3, { kind: 'map', vars: 1, filter: 1, expr: 2 }],
  ['filter', 2, { kind: 'filter', vars: 1, expr: 1 }],
  ['all', 3, { kind: 'all', vars: 2, expr: 2 }],
  ['exists', 3, { kind: 'exists', vars: 2, expr: 2 }],
  ['existsOne', 3, { kind: 'existsOne', vars: 2, expr: 2 }],
  ['exists_one', 3, { kind: 'existsOne', vars: 2, expr: 2 }],
  ['transformList', 3, { kind: 'transformList', vars: 2, expr: 2 }],
  ['transformList', 4, { kind: 'transformList', vars: 2, filter: 2, expr: 3 }],
  ['transformMap', 3, { kind: 'transformMap', vars: 2, expr: 2 }],
  ['transformMap', 4, { kind: 'transformMap', vars: 2, filter: 2, expr: 3 }],
  ['transformMapEntry', 3, { kind: 'transformMapEntry', vars: 2, expr: 2 }],
  ['transformMapEntry', 4, { kind: 'transformMapEntry', vars: 2, filter: 2, expr: 3 }],
];

/** At parse time: the iteration variables must be plain names. */
function iterVarName(node: AstNode | undefined, call: MacroCall): string {
  if (node && node.op === 'id' && typeof node.args === 'string') return node.args;
  throw new ParseError({
    code: 'invalid_macro_argument',
    message: `${call.methodName}() variable name must be a simple identifier`,
    node: locationOf(node ?? call.ast),
  });
}

function typeName(v: unknown, ev: Evaluator): string {
  try {
    return ev.debugType(v).name;
  } catch {
    return typeof v;
  }
}

function notBool(v: unknown, ev: Evaluator, node: AstNode): Error {
  return ev.createError(
    'no_such_overload',
    `no such overload: predicate returned ${typeName(v, ev)}, not bool`,
    node,
  );
}

/** The items of a range: [first variable, second variable] pairs. */
function entriesOf(
  range: unknown,
  ev: Evaluator,
  node: AstNode,
): { keys: unknown[]; values: unknown[]; list: boolean } {
  if (Array.isArray(range)) return { keys: range, values: range, list: true };
  if (range instanceof Set) {
    const items = [...range];
    return { keys: items, values: items, list: true };
  }
  if (range instanceof Map) return { keys: [...range.keys()], values: [...range.values()], list: false };
  if (typeof range === 'object' && range !== null) {
    const proto: unknown = Object.getPrototypeOf(range);
    if (proto === Object.prototype || proto === null) {
      const keys = Object.keys(range);
      return { keys, values: keys.map((k) => (range as Record<string, unknown>)[k]), list: false };
    }
  }
  throw ev.createError(
    'invalid_comprehension_range',
    `expression of type '${typeName(range, ev)}' cannot be range of a comprehension (must be list, map, or dynamic)`,
    node,
  );
}

function comprehension(shape: Shape, call: MacroCall): MacroExpansion {
  const receiver = call.receiver as AstNode;
  const v1 = iterVarName(call.args[0], call);
  const v2 = shape.vars === 2 ? iterVarName(call.args[1], call) : undefined;
  if (v2 !== undefined && v1 === v2) {
    throw new ParseError({
      code: 'invalid_macro_argument',
      message: `${call.methodName}() duplicate variable name: ${v1}`,
      node: locationOf(call.args[1] as AstNode),
    });
  }
  const expr = call.args[shape.expr] as AstNode;
  const filter = shape.filter === undefined ? undefined : (call.args[shape.filter] as AstNode);
  let t1: TypeDecl | undefined;
  let t2: TypeDecl | undefined;

  function typeCheck(checker: Checker, _macro: never, scope: Scope): TypeDecl {
    const rangeType = checker.check(receiver, scope);
    const dyn = checker.getType('dyn');
    // The element type of `[]` is a placeholder: iterate it as dyn.
    const known = (t: TypeDecl | undefined): TypeDecl => (t === undefined || t.kind === 'param' ? dyn : t);
    switch (rangeType.kind) {
      case 'list':
        t1 = shape.vars === 2 ? checker.getType('int') : known(rangeType.valueType);
        t2 = known(rangeType.valueType);
        break;
      case 'map':
        t1 = known(rangeType.keyType);
        t2 = known(rangeType.valueType);
        break;
      case 'dyn':
        t1 = dyn;
        t2 = dyn;
        break;
      default:
        throw checker.createError(
          'invalid_comprehension_range',
          `expression of type '${checker.formatType(rangeType)}' cannot be range of a comprehension (must be list, map, or dynamic)`,
          receiver,
        );
    }
    let inner = scope.forkWithVariable(v1, t1);
    if (v2 !== undefined) inner = inner.forkWithVariable(v2, t2);
    const mustBeBool = (node: AstNode): void => {
      const t = checker.check(node, inner);
      if (!t.isDynOrBool()) {
        throw checker.createError(
          'invalid_macro_argument',
          `${call.methodName}() predicate must return bool, got '${checker.formatType(t)}'`,
          node,
        );
      }
    };
    if (filter) mustBeBool(filter);
    switch (shape.kind) {
      case 'all':
      case 'exists':
      case 'existsOne':
        mustBeBool(expr);
        return checker.getType('bool');
      case 'map':
      case 'transformList':
        return checker.registry.getListType(checker.check(expr, inner));
      case 'filter':
        mustBeBool(expr);
        return checker.registry.getListType(t1);
      case 'transformMap':
        return checker.registry.getMapType(t1, checker.check(expr, inner));
      case 'transformMapEntry': {
        const t = checker.check(expr, inner);
        if (t.kind === 'map' || t.kind === 'dyn') return t.kind === 'map' ? t : checker.getType('map');
        throw checker.createError(
          'invalid_macro_argument',
          `transformMapEntry() expression must return a map, got '${checker.formatType(t)}'`,
          expr,
        );
      }
    }
  }

  function evaluate(ev: Evaluator, _macro: never, scope: Scope): unknown {
    const range = ev.run(receiver, scope);
    const { keys, values, list } = entriesOf(range, ev, receiver);
    const n = keys.length;
    const s1 = scope.forkWithVariable(v1, t1 as TypeDecl);
    const inner = v2 === undefined ? s1 : s1.forkWithVariable(v2, t2 as TypeDecl);
    const bind = (i: number): void => {
      charge(1);
      if (v2 === undefined) s1.setIterValue(keys[i], ev);
      else {
        s1.setIterValue(list ? BigInt(i) : keys[i], ev);
        inner.setIterValue(values[i], ev);
      }
    };
    const test = (node: AstNode): boolean => {
      const r = ev.run(node, inner);
      if (typeof r !== 'boolean') throw notBool(r, ev, node);
      return r;
    };
    switch (shape.kind) {
      case 'all':
      case 'exists': {
        // The value that decides: false for all, true for exists. Errors wait for it.
        const decisive = shape.kind === 'exists';
        let error: unknown;
        for (let i = 0; i < n; i++) {
          bind(i);
          let r: unknown;
          try {
            r = ev.run(expr, inner);
          } catch (err) {
            if (isCostError(err)) throw err;
            error ??= err;
            continue;
          }
          if (r === decisive) return decisive;
          if (typeof r !== 'boolean') error ??= notBool(r, ev, expr);
        }
        if (error !== undefined) throw error;
        return !decisive;
      }
      case 'existsOne': {
        let count = 0;
        for (let i = 0; i < n; i++) {
          bind(i);
          if (test(expr)) count++;
        }
        return count === 1;
      }
      case 'map':
      case 'transformList': {
        const out: unknown[] = [];
        for (let i = 0; i < n; i++) {
          bind(i);
          if (filter && !test(filter)) continue;
          out.push(ev.run(expr, inner));
        }
        return out;
      }
      case 'filter': {
        const out: unknown[] = [];
        for (let i = 0; i < n; i++) {
          bind(i);
          if (test(expr)) out.push(keys[i]);
        }
        return out;
      }
      case 'transformMap': {
        const out = new Map<unknown, unknown>();
        for (let i = 0; i < n; i++) {
          bind(i);
          if (filter && !test(filter)) continue;
          out.set(list ? BigInt(i) : keys[i], ev.run(expr, inner));
        }
        return mapValue(out);
      }
      case 'transformMapEntry': {
        const out = new Map<unknown, unknown>();
        for (let i = 0; i < n; i++) {
          bind(i);
          if (filter && !test(filter)) continue;
          const entry = ev.run(expr, inner);
          const { keys: ek, values: ev2 } = entriesOf(entry, ev, expr);
          for (let j = 0; j < ek.length; j++) {
            if (out.has(ek[j])) throw evalError(`insert failed: key ${String(ek[j])} already exists`);
            out.set(ek[j], ev2[j]);
          }
        }
        return mapValue(out);
      }
    }
  }

  return { async: false, typeCheck, evaluate };
}

/**
 * A map built by a macro: a plain object when every key is a string (the shape the rest
 * of the evaluator and `toJson` know best), a Map otherwise (integer keys stay integers).
 */
function mapValue(m: Map<unknown, unknown>): unknown {
  for (const k of m.keys()) if (typeof k !== 'string') return m;
  const out: Record<string, unknown> = {};
  for (const [k, v] of m)
    Object.defineProperty(out, k as string, {
      value: v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

export function registerComprehensions(r: Registrar): void {
  for (const [name, arity, shape] of SHAPES) r.macro(name, arity, (call) => comprehension(shape, call));
}
