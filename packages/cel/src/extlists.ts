/**
 * cel-go's lists extension as the apiserver enables it: `slice`, `flatten`, `distinct`,
 * `sort`, `sortBy`, `reverse` and `lists.range`. Elements compare with CEL equality and
 * ordering (`equality.ts`); `sort` of elements of different kinds is an error.
 */

import { ParseError } from '@marcbachmann/cel-js';
import { charge } from './cost.ts';
import { celCompare, celEquals } from './equality.ts';
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
import { evalError, OVERRIDE_PREFIX, type Registrar } from './library.ts';

function slice(list: readonly unknown[], start: bigint, end: bigint): unknown[] {
  charge(1 + list.length);
  if (start < 0n || end < 0n)
    throw evalError(`cannot slice(${start}, ${end}), negative indexes not supported`);
  if (start > end)
    throw evalError(`cannot slice(${start}, ${end}), start index must be less than or equal to end index`);
  if (end > BigInt(list.length))
    throw evalError(`cannot slice(${start}, ${end}), list is length ${list.length}`);
  return list.slice(Number(start), Number(end));
}

function flatten(list: readonly unknown[], depth: bigint): unknown[] {
  if (depth < 0n) throw evalError('level must be non-negative');
  charge(1 + list.length);
  const out: unknown[] = [];
  for (const item of list) {
    if (Array.isArray(item) && depth > 0n) out.push(...flatten(item, depth - 1n));
    else out.push(item);
  }
  return out;
}

function distinct(list: readonly unknown[]): unknown[] {
  charge(1 + list.length * list.length);
  const out: unknown[] = [];
  for (const item of list) if (!out.some((x) => celEquals(x, item))) out.push(item);
  return out;
}

function sortList(list: readonly unknown[]): unknown[] {
  charge(1 + list.length * Math.ceil(Math.log2(list.length + 1)));
  return [...list].sort(celCompare);
}

function range(n: bigint): bigint[] {
  charge(1 + Number(n > 0n ? n : 0n));
  const out: bigint[] = [];
  for (let i = 0n; i < n; i++) out.push(i);
  return out;
}

function sortBy(call: MacroCall): MacroExpansion {
  const receiver = call.receiver as AstNode;
  const [v, key] = call.args as [AstNode, AstNode];
  if (v.op !== 'id' || typeof v.args !== 'string') {
    throw new ParseError({
      code: 'invalid_macro_argument',
      message: 'sortBy() variable name must be a simple identifier',
      node: locationOf(v),
    });
  }
  const name = v.args;
  let elem: TypeDecl | undefined;
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      const t = checker.check(receiver, scope);
      if (t.kind !== 'list' && t.kind !== 'dyn') {
        throw checker.createError(
          'no_matching_overload',
          `found no matching overload for 'sortBy' applied to '${checker.formatType(t)}'`,
          receiver,
        );
      }
      elem = t.valueType && t.valueType.kind !== 'param' ? t.valueType : checker.getType('dyn');
      checker.check(key, scope.forkWithVariable(name, elem));
      return t;
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const list = ev.run(receiver, scope);
      if (!Array.isArray(list)) throw evalError('sortBy() receiver must be a list');
      const inner = scope.forkWithVariable(name, elem as TypeDecl);
      const keyed = list.map((item) => {
        charge(1);
        return { item, k: ev.run(key, inner.setIterValue(item, ev)) };
      });
      keyed.sort((a, b) => celCompare(a.k, b.k));
      return keyed.map((x) => x.item);
    },
  };
}

export function registerExtLists(r: Registrar): void {
  const p = OVERRIDE_PREFIX;
  r.override('reverse', 0)
    .fn(`list<A>.${p}reverse(): list<A>`, (l: readonly unknown[]) => {
      charge(1 + l.length);
      return [...l].reverse();
    })
    .fn('list<A>.slice(int, int): list<A>', slice)
    .fn('list.flatten(): list', (l: readonly unknown[]) => flatten(l, 1n))
    .fn('list.flatten(int): list', flatten)
    .fn('list<A>.distinct(): list<A>', distinct)
    .fn('list<A>.sort(): list<A>', sortList)
    .macro('sortBy', 2, sortBy);
  const ns = r.namespace('lists');
  r.fn(`${ns}.range(int): list<int>`, (_: object, n: bigint) => range(n));
}
