/**
 * List and map literals passed straight to `format` may mix element types, as in the
 * apiserver: cel-go's homogeneous-literal validator exempts the argument of `format`
 * (`"%s".format([[1, "a", 2.5]])` compiles). Everywhere else mixed literals are compile
 * errors. The library checks homogeneity inside its own literal nodes, so the literals
 * under a `format` argument get our check and evaluation instead.
 */
import {
  type AstNode,
  type Checker,
  type Evaluator,
  isAstNode,
  type Scope,
  type TypeDecl,
} from './internals.ts';

function mixedList(node: AstNode) {
  const items = node.args as AstNode[];
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      for (const item of items) checker.check(item, scope);
      return checker.getType('list');
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      return items.map((item) => ev.run(item, scope));
    },
  };
}

function mixedMap(node: AstNode) {
  const entries = node.args as [AstNode, AstNode][];
  return {
    async: false,
    typeCheck(checker: Checker, _m: never, scope: Scope): TypeDecl {
      for (const [k, v] of entries) {
        checker.check(k, scope);
        checker.check(v, scope);
      }
      return checker.getType('map');
    },
    evaluate(ev: Evaluator, _m: never, scope: Scope): unknown {
      const out = new Map<unknown, unknown>();
      for (const [k, v] of entries) out.set(ev.run(k, scope), ev.run(v, scope));
      if ([...out.keys()].some((k) => typeof k !== 'string')) return out;
      const obj: Record<string, unknown> = {};
      for (const [k, v] of out)
        Object.defineProperty(obj, k as string, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return obj;
    },
  };
}

/** Lets every list and map literal in the subtree of `node` mix element types. */
export function allowMixedLiterals(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) allowMixedLiterals(n);
    return;
  }
  if (!isAstNode(node)) return;
  if (node.op === 'list') node.setMeta('macro', mixedList(node)).setMeta('async', false);
  else if (node.op === 'map') node.setMeta('macro', mixedMap(node)).setMeta('async', false);
  else return;
  allowMixedLiterals(node.args);
}
