/**
 * A compiled expression, evaluated against variables.
 *
 * Every evaluation returns a {@link Result}: a value, or an error with a kind. There is
 * no "evaluate or false" helper, on purpose: RFC 0002 found that a `safe` expression
 * whose field is missing must leave the target waiting, not count as safe or unsafe.
 */
import { Environment } from '@marcbachmann/cel-js';
import { CostBudget, costExceeded, withBudget } from './cost.ts';
import { toCelError } from './diagnostics.ts';
import { type CelError, CelErrorKind, positionAt } from './errors.ts';
import { type AstNode, isAstNode } from './internals.ts';
import { fail, ok, type Result } from './result.ts';
import { type CelValue, type JsonValue, toJson } from './values.ts';

/** The evaluator behind a compiled expression: the library's parse result. */
type Evaluate = (context?: Record<string, unknown>) => unknown;

/** Variables for one evaluation: CEL values by name (see `json.ts` to build them). */
export type Variables = Readonly<Record<string, CelValue>>;

export class CelProgram {
  readonly source: string;
  /** The type the checker inferred: 'bool', 'string', 'list<string>', 'dyn'... */
  readonly outputType: string;
  readonly costLimit: number;
  readonly #evaluate: Evaluate;

  constructor(source: string, evaluate: Evaluate, outputType: string, costLimit: number) {
    this.source = source;
    this.#evaluate = evaluate;
    this.outputType = outputType;
    this.costLimit = costLimit;
  }

  /** Evaluates to a CEL value (BigInt for int, see `values.ts`), or an error. */
  evaluate(variables: Variables): Result<CelValue> {
    const budget = new CostBudget(this.costLimit);
    let value: unknown;
    try {
      value = withBudget(budget, () => this.#evaluate(variables as Record<string, unknown>));
    } catch (err) {
      return fail(this.#error(err, budget));
    }
    // An exhausted budget wins over any value: `expensive || true` must not be true.
    if (budget.exhausted) return fail(this.#error(costExceeded(budget.limit), budget));
    return ok(value as CelValue);
  }

  /** Evaluates a rule: a bool, or an error (a non-bool result is a {@link CelErrorKind.NotBool} error). */
  evaluateBool(variables: Variables): Result<boolean> {
    const r = this.evaluate(variables);
    if (!r.ok) return r;
    if (typeof r.value === 'boolean') return ok(r.value);
    return fail({
      kind: CelErrorKind.NotBool,
      message: `expected bool, got ${describe(r.value)}`,
      expected: 'bool',
      source: this.source,
    });
  }

  /** Evaluates a mapping: a JSON value, or an error (including values JSON cannot carry exactly). */
  evaluateJson(variables: Variables): Result<JsonValue> {
    const r = this.evaluate(variables);
    if (!r.ok) return r;
    return toJson(r.value);
  }

  #error(err: unknown, budget: CostBudget): CelError {
    const e = toCelError(err, this.source, CelErrorKind.Evaluation);
    if (budget.exhausted && e.kind !== CelErrorKind.CostLimitExceeded) {
      return { ...toCelError(costExceeded(budget.limit), this.source, CelErrorKind.Evaluation) };
    }
    return e;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'bigint':
      return `int ${v}`;
    case 'number':
      return `double ${v}`;
    case 'string':
      return `string ${JSON.stringify(v)}`;
    case 'object':
      return v.constructor === Object || Object.getPrototypeOf(v) === null
        ? 'map'
        : (v.constructor?.name ?? 'object');
    default:
      return typeof v;
  }
}

/** A helper environment that evaluates literal arguments of `duration()` and `timestamp()`. */
let literalEnv: Environment | undefined;

/**
 * As the apiserver (cel.ValidateDurationLiterals, ValidateTimestampLiterals), a literal
 * that can never be valid is a compile error rather than a rule that always fails.
 */
export function validateLiterals(root: AstNode, source: string): CelError | undefined {
  literalEnv ??= new Environment().registerVariable('s', 'string');
  const env = literalEnv;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (!isAstNode(node)) continue;
    if (node.op === 'call' && Array.isArray(node.args)) {
      const [name, args] = node.args as [string, AstNode[]];
      const arg = args[0];
      if (
        (name === 'duration' || name === 'timestamp') &&
        args.length === 1 &&
        arg?.op === 'value' &&
        typeof arg.args === 'string'
      ) {
        try {
          env.evaluate(`${name}(s)`, { s: arg.args });
        } catch (err) {
          return {
            kind: CelErrorKind.Type,
            message: `invalid ${name} literal: ${toCelError(err, undefined, CelErrorKind.Type).message}`,
            position: positionAt(source, arg.start),
            source,
          };
        }
      }
    }
    const args = node.args;
    if (Array.isArray(args)) stack.push(...args);
    else if (isAstNode(args)) stack.push(args);
    else if (typeof args === 'object' && args !== null) stack.push(...Object.values(args));
  }
  return undefined;
}
