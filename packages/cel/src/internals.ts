/**
 * The parts of @marcbachmann/cel-js's internals that this package's macros touch, typed.
 *
 * The library lets a function overload take `ast` arguments; such a "macro" receives the
 * parsed call at parse time and returns either a replacement AST (`callAst`) or its own
 * `typeCheck` and `evaluate` hooks. The hooks receive the library's checker, evaluator
 * and variable contexts, which its type declarations leave untyped; these interfaces
 * name what we use, so that a library upgrade that changes them fails type checking or
 * the unit tests rather than silently misbehaving.
 */

/** A node of the library's AST. */
export interface AstNode {
  readonly op: string;
  readonly args: unknown;
  readonly start: number;
  readonly end: number;
  readonly pos: number;
  readonly input: string;
  readonly meta: { readonly check: unknown; readonly evaluate: unknown };
  readonly maybeAsync: boolean;
  clone(
    op: { readonly name: string; readonly check: unknown; readonly evaluate: unknown },
    args: unknown,
  ): AstNode;
  setMeta(key: string, value: unknown): AstNode;
}

/** The library's type declaration objects (`int`, `list<string>`, `dyn`, ...). */
export interface TypeDecl {
  readonly kind: string;
  readonly name: string;
  readonly type: string;
  readonly valueType?: TypeDecl;
  readonly keyType?: TypeDecl;
  readonly hasDynType: boolean;
  isDynOrBool(): boolean;
  unify(registry: Registry, other: TypeDecl): TypeDecl | null;
}

export interface Registry {
  getType(name: string): TypeDecl;
  getListType(t: TypeDecl): TypeDecl;
  getMapType(k: TypeDecl, v: TypeDecl): TypeDecl;
  getOptionalType(t: TypeDecl): TypeDecl;
}

/** A variable scope: the root (declared variables) or an overlay for an iteration variable. */
export interface Scope {
  forkWithVariable(name: string, type: TypeDecl): Scope;
  setIterValue(value: unknown, ev: Evaluator): Scope;
}

export interface Checker {
  readonly registry: Registry;
  check(node: AstNode, scope: Scope): TypeDecl;
  getType(name: string): TypeDecl;
  formatType(t: TypeDecl): string;
  createError(code: string, message: string, node?: AstNode): Error;
}

export interface Evaluator {
  run(node: AstNode, scope: Scope): unknown;
  debugType(value: unknown): TypeDecl;
  createError(code: string, message: string, node?: AstNode): Error;
}

/** What a macro handler receives at parse time. */
export interface MacroCall {
  readonly ast: AstNode;
  readonly args: readonly AstNode[];
  readonly receiver: AstNode | null;
  readonly methodName: string;
}

/** What a macro handler returns: a replacement AST, or hooks. */
export type MacroExpansion =
  | { readonly callAst: AstNode }
  | {
      readonly async: false;
      typeCheck(checker: Checker, macro: never, scope: Scope): TypeDecl;
      evaluate(ev: Evaluator, macro: never, scope: Scope): unknown;
    };

export function isAstNode(v: unknown): v is AstNode {
  return typeof v === 'object' && v !== null && typeof (v as { op?: unknown }).op === 'string' && 'args' in v;
}

/** A node replacing `call` with a call (or method call) of another function name. */
export function renamedCall(call: MacroCall, name: string): AstNode {
  const op = { name: call.ast.op, check: call.ast.meta.check, evaluate: call.ast.meta.evaluate };
  return call.receiver
    ? call.ast.clone(op, [name, call.receiver, call.args])
    : call.ast.clone(op, [name, call.args]);
}

/** A node's position as the library's error constructors take it. */
export function locationOf(n: AstNode): { pos: number; start: number; end: number; input: string } {
  return { pos: n.pos, start: n.start, end: n.end, input: n.input };
}
