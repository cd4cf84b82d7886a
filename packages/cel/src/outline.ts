/**
 * The outline of an expression: which variables it reads, down which field paths, which
 * macros loop over a collection, which test a field's presence. For callers that accept
 * only part of CEL: RFC 0002's rule D4 allows a mapping leaf to read fields and choose
 * with operators and the ternary, never to loop, and a target's name to read only the
 * fields of its source that cannot change. Both are questions about the expression's
 * structure, which its text cannot answer (`source.spec.map` reads a field named `map`,
 * `"exists("` is a string): the outline answers them from the parsed syntax tree.
 *
 * The outline is syntactic: names are not resolved against an environment and nothing is
 * type-checked (compile the expression with {@link CelEnvironment.compile} for that).
 * Macros are recognised as the parser recognises them, by name and argument count: a call
 * `x.map(v, e)` is the `map` macro whatever `x` is.
 */
import { Environment } from '@marcbachmann/cel-js';
import { toCelError } from './diagnostics.ts';
import { CelErrorKind, positionAt, type SourcePosition } from './errors.ts';
import { type AstNode, isAstNode } from './internals.ts';
import { fail, ok, type Result } from './result.ts';

/** A macro call in the expression. */
export interface CelMacroUse {
  /** The macro's name as written: `exists`, `map`, `transformList`, `has`... */
  readonly macro: string;
  /** Where the call starts (its receiver, for a method call). */
  readonly position: SourcePosition;
}

/**
 * A read of a variable the expression does not bind itself (a declared variable, or a
 * constant such as `optional`): the variable and the longest chain of field selections
 * applied to it. `source.metadata.name` reads `['metadata', 'name']`; `source` alone or
 * `source["spec"]` read `[]` (an index is not a field path: what it reads is known only
 * when evaluated); `source.spec["x"]` reads `['spec']`. `.?` selections count as fields.
 */
export interface CelRead {
  readonly variable: string;
  readonly path: readonly string[];
  readonly position: SourcePosition;
}

export interface CelOutline {
  /**
   * Every macro that iterates over a list or a map, or binds a variable as cel-go does
   * with a comprehension: `all`, `exists`, `exists_one`, `map`, `filter` and their
   * two-variable forms (`existsOne`, `transformList`, `transformMap`,
   * `transformMapEntry`), `sortBy`, `optMap`, `optFlatMap` (cel-go expands those three
   * into comprehensions too) and `cel.bind`. In source order.
   */
  readonly comprehensions: readonly CelMacroUse[];
  /** Every `has(x.f)`: a test of one field's presence, not a loop. In source order. */
  readonly presenceTests: readonly CelMacroUse[];
  /** Every read of a free variable, in source order (see {@link CelRead}). */
  readonly reads: readonly CelRead[];
}

/**
 * The variable-binding macros: method name and argument count, and which arguments are
 * the bound variables. The arguments after the variables are evaluated with them
 * bound, except `cel.bind`'s initialiser, which is evaluated outside.
 */
const BINDERS: ReadonlyMap<string, { readonly vars: number; readonly outside?: readonly number[] }> = new Map(
  [
    ['all/2', { vars: 1 }],
    ['exists/2', { vars: 1 }],
    ['exists_one/2', { vars: 1 }],
    ['map/2', { vars: 1 }],
    ['map/3', { vars: 1 }],
    ['filter/2', { vars: 1 }],
    ['all/3', { vars: 2 }],
    ['exists/3', { vars: 2 }],
    ['existsOne/3', { vars: 2 }],
    ['exists_one/3', { vars: 2 }],
    ['transformList/3', { vars: 2 }],
    ['transformList/4', { vars: 2 }],
    ['transformMap/3', { vars: 2 }],
    ['transformMap/4', { vars: 2 }],
    ['transformMapEntry/3', { vars: 2 }],
    ['transformMapEntry/4', { vars: 2 }],
    ['sortBy/2', { vars: 1 }],
    ['optMap/2', { vars: 1 }],
    ['optFlatMap/2', { vars: 1 }],
    ['bind/3', { vars: 1, outside: [1] }],
  ],
);

/** A parser only: the outline needs no variables, overloads or type checker. */
let parser: Environment | undefined;

/**
 * Parses `source` and lists its comprehensions, presence tests and reads. A syntax error
 * comes back as a `Syntax` {@link CelError}; an expression that compiles always outlines.
 */
export function outlineExpression(source: string): Result<CelOutline> {
  parser ??= new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: true });
  let root: AstNode;
  try {
    root = parser.parse(source).ast as unknown as AstNode;
  } catch (err) {
    return fail(toCelError(err, source, CelErrorKind.Syntax));
  }
  const comprehensions: CelMacroUse[] = [];
  const presenceTests: CelMacroUse[] = [];
  const reads: CelRead[] = [];
  const at = (n: AstNode): SourcePosition => positionAt(source, n.start);

  // Explicit stack: the parser's depth limit allows expressions deeper than is safe to recurse.
  const stack: [unknown, ReadonlySet<string>][] = [[root, new Set()]];
  while (stack.length > 0) {
    const [node, bound] = stack.pop() as [unknown, ReadonlySet<string>];
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], bound]);
      continue;
    }
    if (!isAstNode(node)) continue;
    switch (node.op) {
      case 'id': {
        const name = node.args as string;
        if (!bound.has(name)) reads.push({ variable: name, path: [], position: at(node) });
        break;
      }
      case '.':
      case '.?': {
        // The whole selection chain is one read when it starts at a free variable.
        const path: string[] = [];
        let base: AstNode = node;
        while ((base.op === '.' || base.op === '.?') && Array.isArray(base.args)) {
          const [inner, field] = base.args as [AstNode, string];
          path.unshift(field);
          base = inner;
        }
        if (base.op === 'id' && !bound.has(base.args as string))
          reads.push({ variable: base.args as string, path, position: at(base) });
        else stack.push([base, bound]);
        break;
      }
      case 'call': {
        const [name, args] = node.args as [string, AstNode[]];
        if (name === 'has' && args.length === 1) presenceTests.push({ macro: name, position: at(node) });
        stack.push([args, bound]);
        break;
      }
      case 'rcall': {
        const [name, receiver, args] = node.args as [string, AstNode, AstNode[]];
        const binder = BINDERS.get(`${name}/${args.length}`);
        if (!binder) {
          stack.push([args, bound], [receiver, bound]);
          break;
        }
        comprehensions.push({ macro: name, position: at(node) });
        const inner = new Set(bound);
        for (const v of args.slice(0, binder.vars)) if (v.op === 'id') inner.add(v.args as string);
        // Pushed in reverse so that reads come out in source order.
        for (let i = args.length - 1; i >= binder.vars; i--)
          stack.push([args[i], binder.outside?.includes(i) ? bound : inner]);
        stack.push([receiver, bound]);
        break;
      }
      default: {
        const args = node.args;
        if (Array.isArray(args) || isAstNode(args)) stack.push([args, bound]);
      }
    }
  }
  return ok({ comprehensions, presenceTests, reads });
}
