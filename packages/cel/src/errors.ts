/**
 * What can go wrong with a CEL expression, as values callers branch on.
 *
 * Every failure of this package is a {@link CelError}: a closed {@link CelErrorKind}, a
 * human message, and where the source is known, the line and column of the culprit.
 * Nothing here ever turns an error into `true` or `false`: see `result.ts`.
 */

/** The closed set of error kinds. */
export const CelErrorKind = {
  /**
   * The text is not CEL: an unexpected token, an unterminated string, a bad escape.
   * Found at compile time; the position points at the offending token and the message
   * says what was expected there.
   */
  Syntax: 'Syntax',
  /**
   * The expression parses but does not type-check against the declared variables: an
   * undeclared variable, no overload for these argument types, a literal regex, duration
   * or timestamp that cannot be valid. Found at compile time, as the apiserver does when
   * a policy or CRD is written.
   */
  Type: 'Type',
  /**
   * Evaluation failed: a missing field read without `has()`, an index out of range, a
   * division by zero, an integer overflow, a function given a value it rejects. The
   * apiserver fails the same evaluation; a rule that errors never admits an object.
   */
  Evaluation: 'Evaluation',
  /**
   * The evaluation spent more than its cost budget (see `cost.ts`): a runaway expression
   * is stopped with this error instead of hanging the caller.
   */
  CostLimitExceeded: 'CostLimitExceeded',
  /**
   * A value could not cross the JSON boundary: invalid JSON text, a JavaScript value that
   * has no CEL counterpart, or a CEL result that JSON cannot carry exactly (an integer
   * beyond 2^53, NaN, a map with non-string keys).
   */
  Conversion: 'Conversion',
  /**
   * A boolean evaluation produced something else. Rules and `safe` expressions must be
   * bool; a string or a null there is a mistake in the rule, never a silent false.
   */
  NotBool: 'NotBool',
} as const;
export type CelErrorKind = (typeof CelErrorKind)[keyof typeof CelErrorKind];

/** A position in the expression text, 1-based, counted in Unicode code points like cel-go. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
  /** 0-based offset in UTF-16 units, for slicing the JavaScript string. */
  readonly offset: number;
}

export interface CelError {
  readonly kind: CelErrorKind;
  /** One line, without the source excerpt: "undeclared reference to 'x'". */
  readonly message: string;
  /** Where in the expression, when known. */
  readonly position?: SourcePosition;
  /** What the parser or checker expected at that position, when it knows ("')'", "bool"). */
  readonly expected?: string;
  /** The expression text, to render an excerpt. */
  readonly source?: string;
}

/** The error thrown through the evaluator by this package's own functions; caught at the boundary. */
export class CelEvaluationError extends Error {
  override readonly name = 'CelEvaluationError';
  readonly kind: CelErrorKind;
  constructor(message: string, kind: CelErrorKind = CelErrorKind.Evaluation) {
    super(message);
    this.kind = kind;
  }
}

/** Position of a 0-based UTF-16 offset in `source`, 1-based line and code-point column. */
export function positionAt(source: string, offset: number): SourcePosition {
  let line = 1;
  let column = 1;
  let i = 0;
  const end = Math.max(0, Math.min(offset, source.length));
  while (i < end) {
    const cp = source.codePointAt(i) ?? 0;
    if (cp === 0x0a) {
      line++;
      column = 1;
    } else {
      column++;
    }
    i += cp > 0xffff ? 2 : 1;
  }
  return { line, column, offset: end };
}

/**
 * Renders an error for a person: "line:column: message", then the source line with a
 * caret under the culprit, like cel-go's messages in apiserver rejections.
 */
export function formatCelError(err: CelError): string {
  const where = err.position ? `${err.position.line}:${err.position.column}: ` : '';
  const head = `${where}${err.message}`;
  if (!err.position || err.source === undefined) return head;
  const lines = err.source.split('\n');
  const text = lines[err.position.line - 1] ?? '';
  const caret = `${' '.repeat(Math.max(0, err.position.column - 1))}^`;
  return `${head}\n | ${text}\n | ${caret}`;
}
