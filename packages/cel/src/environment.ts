/**
 * A CEL environment as the apiserver of Kubernetes 1.36 configures it, with the
 * variables of one use (`object` and `oldObject` for a policy, `source` and `target` for
 * a link rule) declared, so that `compile` can type-check against them.
 *
 * Built once per set of variables and reused: building registers a few hundred overloads.
 */
import { Environment } from '@marcbachmann/cel-js';
import { registerComprehensions } from './comprehensions.ts';
import { DEFAULT_COST_LIMIT } from './cost.ts';
import { toCelError } from './diagnostics.ts';
import { CelErrorKind } from './errors.ts';
import { registerExtLists } from './extlists.ts';
import { registerExtras } from './extras.ts';
import { registerFormat } from './format.ts';
import type { AstNode } from './internals.ts';
import { registerIp } from './ip.ts';
import { Registrar, rewriteAst } from './library.ts';
import { registerLists } from './lists.ts';
import { registerOptional } from './optional.ts';
import { CelProgram, validateLiterals } from './program.ts';
import { registerQuantity } from './quantity.ts';
import { registerRegex } from './regex.ts';
import { fail, type Result } from './result.ts';
import { registerSets } from './sets.ts';
import { registerStrings } from './strings.ts';
import { registerUrl } from './url.ts';

export interface EnvironmentOptions {
  /**
   * The variables expressions may use, with their CEL types: `'dyn'` for a Kubernetes
   * object (as the apiserver types `object` in a policy), `'map<string, dyn>'`, `'string'`,
   * `'int'`, `'list<string>'`... Undeclared names are compile errors.
   */
  readonly variables?: Readonly<Record<string, string>>;
  /** The cost budget of each evaluation; the apiserver's per-expression limit by default. */
  readonly costLimit?: number;
}

let base: Environment | undefined;

/** The shared environment with every library registered; cloned per set of variables. */
function baseEnvironment(): Environment {
  if (base) return base;
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: true });
  const r = new Registrar(env);
  registerComprehensions(r);
  registerStrings(r);
  registerFormat(r);
  registerRegex(r);
  registerLists(r);
  registerExtLists(r);
  registerSets(r);
  registerOptional(r);
  registerQuantity(r);
  registerIp(r);
  registerUrl(r);
  registerExtras(r);
  base = env;
  return env;
}

export class CelEnvironment {
  readonly #env: Environment;
  readonly costLimit: number;
  readonly variables: Readonly<Record<string, string>>;

  constructor(opts: EnvironmentOptions = {}) {
    this.variables = { ...(opts.variables ?? {}) };
    this.costLimit = opts.costLimit ?? DEFAULT_COST_LIMIT;
    const env = baseEnvironment().clone();
    for (const [name, type] of Object.entries(this.variables)) env.registerVariable(name, type);
    this.#env = env;
  }

  /**
   * Parses and type-checks `source` against the declared variables. A program comes back
   * only if the apiserver would also accept the expression; otherwise the error says
   * where (line, column) and what was expected.
   */
  compile(source: string): Result<CelProgram> {
    let parsed: ReturnType<Environment['parse']>;
    try {
      parsed = this.#env.parse(source);
    } catch (err) {
      return fail(toCelError(err, source, CelErrorKind.Syntax));
    }
    try {
      rewriteAst(parsed.ast as unknown as AstNode);
    } catch (err) {
      return fail(toCelError(err, source, CelErrorKind.Type));
    }
    let checked: ReturnType<typeof parsed.check>;
    try {
      checked = parsed.check();
    } catch (err) {
      return fail(toCelError(err, source, CelErrorKind.Type));
    }
    if (!checked.valid) return fail(toCelError(checked.error, source, CelErrorKind.Type));
    const literalError = validateLiterals(parsed.ast as unknown as AstNode, source);
    if (literalError) return fail(literalError);
    return { ok: true, value: new CelProgram(source, parsed, checked.type ?? 'dyn', this.costLimit) };
  }
}
