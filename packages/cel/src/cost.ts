/**
 * The cost bound of one evaluation.
 *
 * CEL has no loops, but comprehensions nest and strings grow: `l.map(a, l.map(b, ...))`
 * over a large list, or `replace` applied to its own output, can run for minutes. The
 * apiserver bounds every evaluation with a cost limit; so do we. Comprehension steps and
 * this package's functions charge the budget of the evaluation in progress (one unit per
 * iteration, about one unit per element or character they touch); once it is spent the
 * evaluation fails with {@link CelErrorKind.CostLimitExceeded}.
 *
 * Guarantees: an exhausted budget stays exhausted, so an error absorbed by `||`, `&&` or
 * `exists` inside the expression is raised again at the end of the evaluation (see
 * `program.ts`); the result of an over-budget evaluation is never a value.
 *
 * Caveat: our units approximate cel-go's; an expression close to the limit may pass here
 * and fail in the apiserver, or the reverse. The bound is what we guarantee, not the
 * exact figure.
 */
import { CelErrorKind, CelEvaluationError } from './errors.ts';

/** The apiserver's per-expression limit (celconfig.PerCallLimit), used as our default. */
export const DEFAULT_COST_LIMIT = 1_000_000;

export class CostBudget {
  readonly limit: number;
  #spent = 0;
  constructor(limit: number) {
    this.limit = limit;
  }

  get spent(): number {
    return this.#spent;
  }

  get exhausted(): boolean {
    return this.#spent > this.limit;
  }

  charge(units: number): void {
    this.#spent += units;
    if (this.#spent > this.limit) throw costExceeded(this.limit);
  }
}

export function costExceeded(limit: number): CelEvaluationError {
  return new CelEvaluationError(
    `operation cancelled: actual cost limit exceeded (limit ${limit})`,
    CelErrorKind.CostLimitExceeded,
  );
}

// The budget of the evaluation in progress. Evaluation is synchronous, so one slot is
// enough; `withBudget` saves and restores it so that nested evaluations stay correct.
let current: CostBudget | undefined;

/** Charges the evaluation in progress; a no-op outside an evaluation (type checking, constant folding). */
export function charge(units: number): void {
  if (current !== undefined) current.charge(units);
}

export function isCostError(err: unknown): boolean {
  return err instanceof CelEvaluationError && err.kind === CelErrorKind.CostLimitExceeded;
}

export function withBudget<T>(budget: CostBudget, fn: () => T): T {
  const saved = current;
  current = budget;
  try {
    return fn();
  } finally {
    current = saved;
  }
}
