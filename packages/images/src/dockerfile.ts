/**
 * A small Dockerfile reader, enough for the test that keeps `images/*.Dockerfile` in
 * step with the daemonless recipe: instructions with their line continuations joined
 * and comments dropped, grouped by stage; the exec (JSON) form told from the shell
 * form; COPY's flags, sources and destination; ENV's and LABEL's `key=value` pairs.
 *
 * What it refuses rather than misread: an `escape` directive choosing another escape
 * character, heredocs, ENV's legacy `ENV key value` form, and `$` variables in ENV or
 * LABEL values (Docker would expand them; this reader does not).
 */

export interface Instruction {
  /** Upper-case: `FROM`, `COPY`, ... */
  readonly keyword: string;
  /** Leading `--name=value` options (`--from=deps`); a bare `--link` maps to ''. FROM, COPY, ADD and RUN only. */
  readonly flags: Readonly<Record<string, string>>;
  /** The arguments after the flags, continuations joined, trimmed. */
  readonly args: string;
  /** The arguments in exec form, when they are a JSON array of strings. */
  readonly json?: readonly string[];
  /** The line the instruction starts on, from 1. */
  readonly line: number;
}

export interface Stage {
  /** The image the stage starts from. */
  readonly from: string;
  /** `AS name`, if any. */
  readonly name?: string;
  /** The instructions after FROM. */
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** ARGs before the first FROM. */
  readonly globalArgs: readonly Instruction[];
  readonly stages: readonly Stage[];
}

const FLAGGED = new Set(['FROM', 'COPY', 'ADD', 'RUN']);

/** The instructions of `text`, in order. */
export function parseInstructions(text: string): Instruction[] {
  const lines = text.split(/\r?\n/);
  const out: Instruction[] = [];
  let directives = true;
  let pending: { text: string; line: number } | undefined;
  for (const [i, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (directives) {
      const directive = /^#\s*([a-zA-Z]+)\s*=\s*(.*)$/.exec(trimmed);
      if (directive !== null) {
        // Another escape character would change how continuations read; other directives do not.
        if (directive[1]!.toLowerCase() === 'escape' && directive[2]!.trim() !== '\\') {
          throw new Error(`line ${i + 1}: the escape directive is not supported`);
        }
        continue;
      }
      directives = false;
    }
    // Comment and blank lines go, within a continuation too.
    if (trimmed.startsWith('#') || trimmed === '') continue;
    const body = raw.replace(/\s+$/, '');
    const continued = body.endsWith('\\');
    const piece = continued ? body.slice(0, -1) : body;
    pending =
      pending === undefined
        ? { text: piece.trimStart(), line: i + 1 }
        : { ...pending, text: pending.text + piece };
    if (!continued) {
      out.push(instruction(pending.text, pending.line));
      pending = undefined;
    }
  }
  if (pending !== undefined) throw new Error(`line ${pending.line}: a continuation runs past the end`);
  return out;
}

function instruction(text: string, line: number): Instruction {
  const m = /^(\S+)\s*([\s\S]*)$/.exec(text)!;
  const keyword = m[1]!.toUpperCase();
  let rest = m[2]!.trim();
  const flags: Record<string, string> = {};
  if (FLAGGED.has(keyword)) {
    for (;;) {
      const f = /^--([a-zA-Z][\w-]*)(?:=(\S*))?(?:\s+|$)/.exec(rest);
      if (f === null) break;
      flags[f[1]!] = f[2] ?? '';
      rest = rest.slice(f[0].length);
    }
  }
  if (/<<-?["']?[A-Za-z_]/.test(rest) && (keyword === 'RUN' || keyword === 'COPY')) {
    throw new Error(`line ${line}: heredocs are not supported`);
  }
  const json = execForm(rest);
  return json === undefined
    ? { keyword, flags, args: rest, line }
    : { keyword, flags, args: rest, json, line };
}

/** `args` as a JSON array of strings, or undefined for the shell form (Docker's rule: JSON that fails to parse is shell form). */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

/** `text`'s instructions grouped by stage. */
export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Instruction[] = [];
  const stages: { from: string; name?: string; instructions: Instruction[] }[] = [];
  for (const ins of parseInstructions(text)) {
    if (ins.keyword === 'FROM') {
      const m = /^(\S+)(?:\s+as\s+(\S+))?$/i.exec(ins.args);
      if (m === null)
        throw new Error(`line ${ins.line}: FROM ${ins.args}: expected an image and maybe AS name`);
      stages.push(
        m[2] === undefined
          ? { from: m[1]!, instructions: [] }
          : { from: m[1]!, name: m[2], instructions: [] },
      );
    } else if (stages.length === 0) {
      if (ins.keyword !== 'ARG') throw new Error(`line ${ins.line}: ${ins.keyword} before the first FROM`);
      globalArgs.push(ins);
    } else {
      stages.at(-1)!.instructions.push(ins);
    }
  }
  if (stages.length === 0) throw new Error('no FROM: not a Dockerfile');
  return { globalArgs, stages };
}

/** A COPY's sources and destination, from either form (the shell form splits on whitespace, as Docker does). */
export function copyPaths(ins: Instruction): { sources: string[]; dest: string } {
  const words = ins.json ?? ins.args.split(/\s+/).filter((w) => w !== '');
  if (words.length < 2) throw new Error(`line ${ins.line}: ${ins.keyword} needs a source and a destination`);
  return { sources: words.slice(0, -1), dest: words.at(-1)! };
}

/**
 * Words as Docker's shell lexer splits ENV and LABEL arguments: whitespace separates,
 * single quotes keep everything, double quotes keep all but `\"`, `\\` and `\$`, a
 * backslash outside quotes escapes the next character. An unescaped `$` is refused.
 */
export function shellWords(text: string, line = 0): string[] {
  const words: string[] = [];
  let word: string | undefined;
  const add = (s: string): void => {
    word = (word ?? '') + s;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error(`line ${line}: unterminated single quote`);
      add(text.slice(i + 1, end));
      i = end;
    } else if (c === '"') {
      add('');
      for (i++; ; i++) {
        if (i >= text.length) throw new Error(`line ${line}: unterminated double quote`);
        const d = text[i]!;
        if (d === '"') break;
        if (d === '$') throw new Error(`line ${line}: variable substitution is not supported`);
        if (d === '\\' && i + 1 < text.length && '"\\$'.includes(text[i + 1]!)) add(text[++i]!);
        else add(d);
      }
    } else if (c === '\\') {
      if (i + 1 < text.length) add(text[++i]!);
    } else if (c === '$') {
      throw new Error(`line ${line}: variable substitution is not supported`);
    } else {
      add(c);
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** An ENV's or LABEL's `key=value` pairs, in order. */
export function keyValues(ins: Instruction): [string, string][] {
  return shellWords(ins.args, ins.line).map((w) => {
    const eq = w.indexOf('=');
    if (eq <= 0) {
      throw new Error(
        `line ${ins.line}: ${ins.keyword} ${ins.args}: expected key=value pairs (the legacy form is not supported)`,
      );
    }
    return [w.slice(0, eq), w.slice(eq + 1)];
  });
}
