/**
 * How this package adds the Kubernetes libraries to a @marcbachmann/cel-js environment.
 *
 * The library refuses to register an overload that overlaps a built-in one, yet several
 * built-ins must change to match the apiserver (`indexOf` counts UTF-16 units where cel-go
 * counts code points, `lowerAscii` lowers non-ASCII letters, `matches` uses JavaScript
 * regexps). Its parser, though, expands a call into a macro whenever a macro overload
 * exists for that name and arity, whatever the receiver type. So we register macros on a
 * private receiver type: `override` rewrites `s.indexOf(x)` into a call of
 * `__k8s_indexOf`, whose overloads are ours; `macro` takes over a call with our own type
 * checking and evaluation (the comprehensions); `remove` turns a library-only extension
 * (`b.hex()`, `cel.bind`) into the compile error the apiserver gives.
 */
import { type Environment, EvaluationError } from '@marcbachmann/cel-js';
import { attach } from './arithmetic.ts';
import { type AstNode, isAstNode, type MacroCall, type MacroExpansion, renamedCall } from './internals.ts';
import { allowMixedLiterals } from './literals.ts';

/** Prefix of the overloads that replace built-ins; stripped from error messages. */
export const OVERRIDE_PREFIX = '__k8s_';

/**
 * Method calls without arguments cannot be macros (a macro needs an `ast` parameter), so
 * they are renamed in the parsed AST before type checking instead: see {@link renameMethods}.
 */
const zeroArityRenames = new Map<string, string>();
/** Global functions we override (`int/1`), renamed the same way. */
const globalRenames = new Map<string, string>();

/**
 * Rewrites the parsed AST in place, before type checking: renames the zero-argument
 * method calls that we override or remove, and attaches our overflow-checking arithmetic
 * (`arithmetic.ts`).
 */
export function rewriteAst(root: AstNode): void {
  const stack: [unknown, AstNode | undefined][] = [[root, undefined]];
  while (stack.length > 0) {
    const [node, parent] = stack.pop() as [unknown, AstNode | undefined];
    if (Array.isArray(node)) {
      for (const n of node) stack.push([n, parent]);
      continue;
    }
    if (!isAstNode(node)) continue;
    attach(node, parent);
    const args = node.args;
    if (node.op === 'rcall' && Array.isArray(args) && Array.isArray(args[2]) && args[2].length === 0) {
      const renamed = zeroArityRenames.get(args[0] as string);
      if (renamed !== undefined) args[0] = renamed;
    }
    if (node.op === 'rcall' && Array.isArray(args) && args[0] === 'format' && Array.isArray(args[2])) {
      allowMixedLiterals(args[2]);
    }
    if (node.op === 'call' && Array.isArray(args)) {
      const renamed = globalRenames.get(`${args[0] as string}/${(args[1] as unknown[]).length}`);
      if (renamed !== undefined) args[0] = renamed;
    }
    if (Array.isArray(args)) for (const a of args) stack.push([a, node]);
    else if (isAstNode(args)) stack.push([args, node]);
    else if (typeof args === 'object' && args !== null)
      for (const a of Object.values(args)) stack.push([a, node]);
  }
}

/** The private receiver type of our macros. Never a value. */
class MacroHost {}
const MACRO_HOST = 'KubernetesMacroHost';

const SYNC = { async: false } as const;

export type Handler = (...args: never[]) => unknown;

export class Registrar {
  readonly env: Environment;

  constructor(env: Environment) {
    this.env = env;
    env.registerType(MACRO_HOST, MacroHost);
  }

  /** Registers a synchronous overload: `'string.charAt(int): string'`. */
  fn(signature: string, handler: Handler): this {
    this.env.registerFunction(signature, handler as (...args: unknown[]) => unknown, SYNC);
    return this;
  }

  /** Registers a namespace constant (`sets`, `strings`) whose methods are the namespaced functions. */
  namespace(name: string): string {
    const typeName = `${name[0]?.toUpperCase()}${name.slice(1)}Namespace`;
    const ctor = { [typeName]: class {} }[typeName] as new () => object;
    this.env.registerType(typeName, ctor);
    this.env.registerConstant(name, typeName, new ctor());
    return typeName;
  }

  /** Routes every method call `x.name(...)` with `arity` arguments to `__k8s_name`. */
  override(name: string, arity: number): this {
    if (arity === 0) {
      zeroArityRenames.set(name, OVERRIDE_PREFIX + name);
      return this;
    }
    return this.macro(name, arity, (call) => ({ callAst: renamedCall(call, OVERRIDE_PREFIX + name) }));
  }

  /** Routes every call of the global function `name` with `arity` arguments to `__k8s_name`. */
  overrideGlobal(name: string, arity: number): this {
    globalRenames.set(`${name}/${arity}`, OVERRIDE_PREFIX + name);
    return this;
  }

  /** Takes over method calls `x.name(...)` with `arity` arguments. */
  macro(name: string, arity: number, handler: (call: MacroCall) => MacroExpansion): this {
    const params = Array.from({ length: arity }, () => 'ast').join(', ');
    this.env.registerFunction(
      `${MACRO_HOST}.${name}(${params}): dyn`,
      handler as (...args: unknown[]) => unknown,
    );
    return this;
  }

  /** Makes method calls `x.name(...)` with `arity` arguments a compile error, as in the apiserver. */
  remove(name: string, arity: number): this {
    if (arity === 0) {
      // No overload has this name: the checker reports "found no matching overload".
      zeroArityRenames.set(name, `${OVERRIDE_PREFIX}removed_${name}`);
      return this;
    }
    return this.macro(name, arity, (call) => ({
      async: false,
      typeCheck(checker) {
        throw checker.createError('undeclared_reference', `undeclared reference to '${name}'`, call.ast);
      },
      evaluate(ev) {
        throw ev.createError('undeclared_reference', `undeclared reference to '${name}'`, call.ast);
      },
    }));
  }
}

/** An evaluation error raised by a library function; the evaluator attaches its position. */
export function evalError(message: string): Error {
  return new EvaluationError(message);
}
