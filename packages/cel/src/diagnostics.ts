/**
 * Turns what the evaluator throws into a {@link CelError}: a kind, a one-line message
 * without our internal names, a line and column, and for syntax errors what was expected.
 */
import { type CelError, CelErrorKind, CelEvaluationError, positionAt } from './errors.ts';
import { OVERRIDE_PREFIX } from './library.ts';

const TOKEN_TEXT: Record<string, string> = {
  EOF: 'end of input',
  NUMBER: 'a number',
  STRING: 'a string',
  BYTES: 'a bytes literal',
  BOOLEAN: 'a bool',
  NULL: 'null',
  IDENTIFIER: 'an identifier',
  PLUS: "'+'",
  MINUS: "'-'",
  MULTIPLY: "'*'",
  DIVIDE: "'/'",
  MODULO: "'%'",
  EQ: "'=='",
  NE: "'!='",
  LT: "'<'",
  LE: "'<='",
  GT: "'>'",
  GE: "'>='",
  AND: "'&&'",
  OR: "'||'",
  NOT: "'!'",
  IN: "'in'",
  LPAREN: "'('",
  RPAREN: "')'",
  LBRACKET: "'['",
  RBRACKET: "']'",
  LBRACE: "'{'",
  RBRACE: "'}'",
  DOT: "'.'",
  COMMA: "','",
  COLON: "':'",
  QUESTION: "'?'",
};

interface LibraryError {
  readonly name: string;
  readonly summary?: string;
  readonly message: string;
  readonly range?: { readonly start: number; readonly end: number };
}

function isLibraryError(err: unknown): err is LibraryError {
  return (
    err instanceof Error &&
    (err.name === 'ParseError' || err.name === 'TypeError' || err.name === 'EvaluationError')
  );
}

function clean(message: string): string {
  return message.split('\n')[0]?.replaceAll(OVERRIDE_PREFIX, '') ?? '';
}

/** Rewrites the parser's token names ("Expected RPAREN, got EOF") into what a person reads. */
function explainSyntax(summary: string): { message: string; expected?: string } {
  const m = /^Expected (\w+), got (\w+)$/.exec(summary);
  if (m) {
    const expected = TOKEN_TEXT[m[1] as string] ?? (m[1] as string);
    const got = TOKEN_TEXT[m[2] as string] ?? (m[2] as string);
    return { message: `syntax error: expected ${expected} but found ${got}`, expected };
  }
  const u = /^Unexpected token: (\w+)$/.exec(summary);
  if (u) {
    const got = TOKEN_TEXT[u[1] as string] ?? (u[1] as string);
    return { message: `syntax error: expected an expression but found ${got}`, expected: 'an expression' };
  }
  const c = /^Unexpected character: '?(.*?)'?$/.exec(summary);
  if (c) {
    return {
      message: `syntax error: unexpected character '${c[1]}'; expected an operator or the end of the expression`,
      expected: 'an operator or the end of the expression',
    };
  }
  return { message: `syntax error: ${summary}` };
}

/** Expected type for type errors the checker phrases with "must be X" or "requires X". */
function expectedOf(message: string): string | undefined {
  return /(?:must (?:be|return)|requires) (?:an? )?([\w<>, ]+?)(?: operands)?(?:,|$)/.exec(message)?.[1];
}

export function toCelError(err: unknown, source: string | undefined, fallbackKind: CelErrorKind): CelError {
  if (err instanceof CelEvaluationError) return { kind: err.kind, message: clean(err.message), source };
  if (isLibraryError(err)) {
    const summary = clean(err.summary ?? err.message);
    const position = source !== undefined && err.range ? positionAt(source, err.range.start) : undefined;
    const base = { ...(position ? { position } : {}), ...(source !== undefined ? { source } : {}) };
    switch (err.name) {
      case 'ParseError': {
        const { message, expected } = explainSyntax(summary);
        return { kind: CelErrorKind.Syntax, message, ...(expected ? { expected } : {}), ...base };
      }
      case 'TypeError': {
        const expected = expectedOf(summary);
        return { kind: CelErrorKind.Type, message: summary, ...(expected ? { expected } : {}), ...base };
      }
      default:
        return { kind: fallbackKind, message: summary, ...base };
    }
  }
  if (err instanceof RangeError) {
    // "Invalid string length", "Maximum call stack size exceeded": a value too large to build.
    return { kind: CelErrorKind.Evaluation, message: `evaluation failed: ${err.message}`, source };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { kind: fallbackKind, message: `internal error: ${clean(message)}`, source };
}
