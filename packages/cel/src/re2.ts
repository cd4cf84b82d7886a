/**
 * Regular expressions with RE2 syntax and semantics, in linear time.
 *
 * CEL's `matches` and Kubernetes' `find`/`findAll` use Go's regexp (RE2): no
 * look-arounds, no back-references, leftmost-first matching, and a guarantee that
 * matching time is linear in the input. JavaScript's RegExp differs on all three (it
 * accepts `(?=x)`, and `(a+)+$` on a long non-matching input takes exponential time), so
 * this module parses RE2 syntax itself, rejects what Go rejects with Go's messages, and
 * matches with a Pike VM: every position is visited once per program instruction, so no
 * input can make it hang.
 *
 * Caveats: case folding under `(?i)` uses JavaScript's toLowerCase/toUpperCase of single
 * code points, which agrees with Go's simple folding except for a few exotic orbits;
 * Unicode classes (`\pL`, `\p{Greek}`) use the JavaScript engine's Unicode tables, which
 * may be a Unicode version apart from Go's.
 */

/** A syntax error, with Go's wording ("missing closing )", "invalid escape sequence: `\1`"). */
export class RegexSyntaxError extends Error {
  override readonly name = 'RegexSyntaxError';
}

type Test = (cp: number) => boolean;

type Node =
  | { readonly t: 'empty' }
  | { readonly t: 'char'; readonly test: Test }
  | { readonly t: 'assert'; readonly kind: AssertKind }
  | { readonly t: 'cat'; readonly subs: readonly Node[] }
  | { readonly t: 'alt'; readonly subs: readonly Node[] }
  | {
      readonly t: 'rep';
      readonly sub: Node;
      readonly min: number;
      readonly max: number;
      readonly greedy: boolean;
    }
  | { readonly t: 'group'; readonly sub: Node };

type AssertKind = 'bol' | 'eol' | 'bot' | 'eot' | 'wb' | 'nwb';

interface Flags {
  readonly i: boolean;
  readonly m: boolean;
  readonly s: boolean;
  readonly U: boolean;
}

const MAX_REPEAT = 1000;
const MAX_PROGRAM = 100_000;

const isWordCp = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;

const range =
  (lo: number, hi: number): Test =>
  (c) =>
    c >= lo && c <= hi;
const anyOf =
  (...tests: Test[]): Test =>
  (c) =>
    tests.some((t) => t(c));
const not =
  (t: Test): Test =>
  (c) =>
    !t(c);

const PERL: Record<string, Test> = {
  d: range(0x30, 0x39),
  s: (c) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d,
  w: isWordCp,
};

const POSIX: Record<string, Test> = {
  alnum: anyOf(range(0x30, 0x39), range(0x41, 0x5a), range(0x61, 0x7a)),
  alpha: anyOf(range(0x41, 0x5a), range(0x61, 0x7a)),
  ascii: range(0, 0x7f),
  blank: (c) => c === 0x20 || c === 0x09,
  cntrl: (c) => c <= 0x1f || c === 0x7f,
  digit: range(0x30, 0x39),
  graph: range(0x21, 0x7e),
  lower: range(0x61, 0x7a),
  print: range(0x20, 0x7e),
  punct: (c) =>
    (c >= 0x21 && c <= 0x2f) ||
    (c >= 0x3a && c <= 0x40) ||
    (c >= 0x5b && c <= 0x60) ||
    (c >= 0x7b && c <= 0x7e),
  space: (c) => c === 0x20 || (c >= 0x09 && c <= 0x0d),
  upper: range(0x41, 0x5a),
  word: isWordCp,
  xdigit: anyOf(range(0x30, 0x39), range(0x41, 0x46), range(0x61, 0x66)),
};

const unicodeClassCache = new Map<string, Test | null>();

/** A Unicode class by Go's name (`L`, `Lu`, `Greek`, `Any`), through the engine's `\p{}` tables. */
function unicodeClass(name: string): Test | null {
  const cached = unicodeClassCache.get(name);
  if (cached !== undefined) return cached;
  let test: Test | null = null;
  if (name === 'Any') test = () => true;
  else if (/^[A-Za-z_]+$/.test(name)) {
    for (const src of [`^\\p{General_Category=${name}}$`, `^\\p{Script=${name}}$`]) {
      try {
        const re = new RegExp(src, 'u');
        test = (c) => re.test(String.fromCodePoint(c));
        break;
      } catch {
        test = null;
      }
    }
  }
  unicodeClassCache.set(name, test);
  return test;
}

/** The single-code-point case variants of `c` (itself included). */
function foldVariants(c: number): number[] {
  const out = [c];
  const s = String.fromCodePoint(c);
  for (const v of [
    s.toLowerCase(),
    s.toUpperCase(),
    s.toUpperCase().toLowerCase(),
    s.toLowerCase().toUpperCase(),
  ]) {
    const cp = v.codePointAt(0);
    if (cp !== undefined && v.length === String.fromCodePoint(cp).length && !out.includes(cp)) out.push(cp);
  }
  return out;
}

function foldTest(t: Test): Test {
  return (c) => {
    if (t(c)) return true;
    for (const v of foldVariants(c)) if (v !== c && t(v)) return true;
    return false;
  };
}

class Parser {
  readonly src: readonly number[];
  pos = 0;
  flags: Flags = { i: false, m: false, s: false, U: false };
  ncap = 0;
  readonly names = new Set<string>();
  readonly text: string;

  constructor(text: string) {
    this.text = text;
    this.src = Array.from(text, (ch) => ch.codePointAt(0) ?? 0);
  }

  err(msg: string): never {
    throw new RegexSyntaxError(`error parsing regexp: ${msg}`);
  }

  peek(off = 0): number | undefined {
    return this.src[this.pos + off];
  }

  rest(from: number, to = this.src.length): string {
    return String.fromCodePoint(...this.src.slice(from, to));
  }

  eat(ch: string): boolean {
    if (this.peek() === ch.codePointAt(0)) {
      this.pos++;
      return true;
    }
    return false;
  }

  parse(): Node {
    const node = this.parseAlt(0);
    if (this.pos < this.src.length) this.err(`unexpected ): \`${this.text}\``);
    return node;
  }

  parseAlt(depth: number): Node {
    const subs: Node[] = [this.parseConcat(depth)];
    while (this.eat('|')) subs.push(this.parseConcat(depth));
    return subs.length === 1 ? (subs[0] as Node) : { t: 'alt', subs };
  }

  parseConcat(depth: number): Node {
    const subs: Node[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === 0x7c /* | */) break;
      if (c === 0x29 /* ) */) {
        if (depth === 0) this.err(`unexpected ): \`${this.text}\``);
        break;
      }
      const start = this.pos;
      if (c === 0x2a || c === 0x2b || c === 0x3f) {
        this.err(`missing argument to repetition operator: \`${String.fromCodePoint(c)}\``);
      }
      if (c === 0x7b /* { */ && this.tryRepeatCount() !== null) {
        this.pos = start;
        const end = this.scanRepeatEnd();
        this.err(`missing argument to repetition operator: \`${this.rest(start, end)}\``);
      }
      this.pos = start;
      const atom = this.parseAtom(depth);
      if (atom === null) continue;
      subs.push(this.parseRepeat(atom));
    }
    if (subs.length === 0) return { t: 'empty' };
    return subs.length === 1 ? (subs[0] as Node) : { t: 'cat', subs };
  }

  scanRepeatEnd(): number {
    let p = this.pos;
    while (p < this.src.length && this.src[p] !== 0x7d) p++;
    return Math.min(p + 1, this.src.length);
  }

  /** At `{`: parses `{n}`, `{n,}` or `{n,m}`; null (position restored) if it is a literal brace. */
  tryRepeatCount(): { min: number; max: number } | null {
    const save = this.pos;
    if (!this.eat('{')) return null;
    const num = (): number | null => {
      const s = this.pos;
      while (this.peek() !== undefined && (this.peek() as number) >= 0x30 && (this.peek() as number) <= 0x39)
        this.pos++;
      if (this.pos === s) return null;
      const text = this.rest(s, this.pos);
      // Go rejects over-long numbers the same way as counts above the maximum.
      return text.length > 8 ? MAX_REPEAT + 1 : Number(text);
    };
    const min = num();
    if (min === null) {
      this.pos = save;
      return null;
    }
    let max = min;
    if (this.eat(',')) {
      if (this.peek() === 0x7d) max = -1;
      else {
        const m = num();
        if (m === null) {
          this.pos = save;
          return null;
        }
        max = m;
      }
    }
    if (!this.eat('}')) {
      this.pos = save;
      return null;
    }
    return { min, max };
  }

  parseRepeat(atom: Node): Node {
    let node = atom;
    let lastOp: string | null = null;
    for (;;) {
      const c = this.peek();
      const start = this.pos;
      let min: number;
      let max: number;
      if (c === 0x2a) [min, max] = [0, -1];
      else if (c === 0x2b) [min, max] = [1, -1];
      else if (c === 0x3f) [min, max] = [0, 1];
      else if (c === 0x7b) {
        const r = this.tryRepeatCount();
        if (r === null) return node;
        ({ min, max } = r);
        if (min > MAX_REPEAT || max > MAX_REPEAT || (max !== -1 && max < min)) {
          this.err(`invalid repeat count: \`${this.rest(start, this.pos)}\``);
        }
      } else return node;
      if (c !== 0x7b) this.pos++;
      let greedy = true;
      if (this.eat('?')) greedy = false;
      const op = this.rest(start, this.pos);
      if (lastOp !== null) this.err(`invalid nested repetition operator: \`${lastOp}${op}\``);
      lastOp = op;
      if (this.flags.U) greedy = !greedy;
      node = { t: 'rep', sub: node, min, max, greedy };
    }
  }

  parseAtom(depth: number): Node | null {
    const c = this.peek() as number;
    switch (c) {
      case 0x28 /* ( */:
        return this.parseGroup(depth);
      case 0x5b /* [ */:
        return this.parseClass();
      case 0x2e /* . */:
        this.pos++;
        return { t: 'char', test: this.flags.s ? () => true : (x) => x !== 0x0a };
      case 0x5e /* ^ */:
        this.pos++;
        return { t: 'assert', kind: this.flags.m ? 'bol' : 'bot' };
      case 0x24 /* $ */:
        this.pos++;
        return { t: 'assert', kind: this.flags.m ? 'eol' : 'eot' };
      case 0x5c /* \ */:
        return this.parseEscapeAtom();
      default:
        this.pos++;
        return this.literal(c);
    }
  }

  literal(c: number): Node {
    if (!this.flags.i) return { t: 'char', test: (x) => x === c };
    const variants = foldVariants(c);
    return { t: 'char', test: (x) => variants.includes(x) || foldVariants(x).includes(c) };
  }

  classNode(test: Test): Node {
    return { t: 'char', test: this.flags.i ? foldTest(test) : test };
  }

  parseGroup(depth: number): Node | null {
    const start = this.pos;
    this.pos++; // (
    const saved = this.flags;
    if (!this.eat('?')) {
      this.ncap++;
      return this.groupBody(depth, saved);
    }
    const c = this.peek();
    if (c === 0x50 /* P */ || c === 0x3c /* < */) {
      if (c === 0x50) {
        this.pos++;
        if (this.peek() !== 0x3c) this.err(`invalid named capture: \`${this.rest(start)}\``);
      }
      this.pos++; // <
      const nameStart = this.pos;
      while (this.peek() !== undefined && this.peek() !== 0x3e) this.pos++;
      if (this.peek() === undefined) this.err(`invalid named capture: \`${this.rest(start)}\``);
      const name = this.rest(nameStart, this.pos);
      this.pos++; // >
      if (!/^[A-Za-z0-9_]+$/.test(name)) this.err(`invalid named capture: \`${this.rest(start, this.pos)}\``);
      if (this.names.has(name)) this.err(`duplicate capture group name: \`${this.rest(start, this.pos)}\``);
      this.names.add(name);
      this.ncap++;
      return this.groupBody(depth, saved);
    }
    // Flags, as Go's parsePerlFlags: (?i) (?i-s) (?-m:...) (?:...)
    const f = { ...this.flags };
    let negated = false;
    let sawFlag = false;
    for (;;) {
      const ch = this.peek();
      if (ch === undefined) break;
      const s = String.fromCodePoint(ch);
      this.pos++;
      if (s === 'i' || s === 'm' || s === 's' || s === 'U') {
        f[s] = !negated;
        sawFlag = true;
        continue;
      }
      if (s === '-') {
        if (negated) break;
        negated = true;
        sawFlag = false;
        continue;
      }
      if (s === ':' || s === ')') {
        if (negated && !sawFlag) break;
        this.flags = f;
        if (s === ')') return null; // flags only: they apply to the rest of the enclosing group
        return this.groupBody(depth, saved);
      }
      break;
    }
    return this.err(`invalid or unsupported Perl syntax: \`${this.rest(start, this.pos)}\``);
  }

  groupBody(depth: number, saved: Flags): Node {
    const sub = this.parseAlt(depth + 1);
    if (!this.eat(')')) this.err(`missing closing ): \`${this.text}\``);
    this.flags = saved;
    return { t: 'group', sub };
  }

  parseEscapeAtom(): Node {
    const start = this.pos;
    this.pos++; // backslash
    const c = this.peek();
    if (c === undefined) this.err('trailing backslash at end of expression: ``');
    const s = String.fromCodePoint(c);
    switch (s) {
      case 'A':
        this.pos++;
        return { t: 'assert', kind: 'bot' };
      case 'z':
        this.pos++;
        return { t: 'assert', kind: 'eot' };
      case 'b':
        this.pos++;
        return { t: 'assert', kind: 'wb' };
      case 'B':
        this.pos++;
        return { t: 'assert', kind: 'nwb' };
      case 'Q': {
        this.pos++;
        const subs: Node[] = [];
        while (this.pos < this.src.length) {
          if (this.peek() === 0x5c && this.peek(1) === 0x45) {
            this.pos += 2;
            break;
          }
          subs.push(this.literal(this.src[this.pos++] as number));
        }
        return subs.length === 1 ? (subs[0] as Node) : { t: 'cat', subs };
      }
    }
    this.pos = start;
    const cls = this.tryClassEscape();
    if (cls !== null) return this.classNode(cls);
    return this.literal(this.parseCharEscape());
  }

  /** `\d \D \s \S \w \W \pX \p{..} \PX \P{..}` at the current backslash, or null. */
  tryClassEscape(): Test | null {
    const start = this.pos;
    const c = this.peek(1);
    if (c === undefined) return null;
    const s = String.fromCodePoint(c);
    const lower = s.toLowerCase();
    if ((lower === 'd' || lower === 's' || lower === 'w') && PERL[lower]) {
      this.pos += 2;
      const t = PERL[lower] as Test;
      return s === lower ? t : not(t);
    }
    if (s === 'p' || s === 'P') {
      this.pos += 2;
      let name: string;
      if (this.peek() === 0x7b) {
        const nameStart = this.pos + 1;
        while (this.peek() !== undefined && this.peek() !== 0x7d) this.pos++;
        if (this.peek() === undefined) this.err(`invalid character class range: \`${this.rest(start)}\``);
        name = this.rest(nameStart, this.pos);
        this.pos++;
      } else {
        const n = this.peek();
        if (n === undefined) this.err(`invalid character class range: \`${this.rest(start)}\``);
        name = String.fromCodePoint(n);
        this.pos++;
      }
      let negate = s === 'P';
      if (name.startsWith('^')) {
        negate = !negate;
        name = name.slice(1);
      }
      const t = unicodeClass(name);
      if (t === null) this.err(`invalid character class range: \`${this.rest(start, this.pos)}\``);
      return negate ? not(t) : t;
    }
    return null;
  }

  /** A single-character escape at the backslash: `\n`, `\x41`, `\x{1F600}`, `\101`, `\.`. */
  parseCharEscape(): number {
    const start = this.pos;
    this.pos++;
    const c = this.peek();
    if (c === undefined) this.err('trailing backslash at end of expression: ``');
    this.pos++;
    const s = String.fromCodePoint(c);
    const bad = (): never => this.err(`invalid escape sequence: \`${this.rest(start, this.pos)}\``);
    switch (s) {
      case 'a':
        return 7;
      case 'f':
        return 12;
      case 't':
        return 9;
      case 'n':
        return 10;
      case 'r':
        return 13;
      case 'v':
        return 11;
      case 'x': {
        if (this.eat('{')) {
          const hs = this.pos;
          while (this.peek() !== undefined && this.peek() !== 0x7d) this.pos++;
          const hex = this.rest(hs, this.pos);
          if (!this.eat('}') || !/^[0-9A-Fa-f]+$/.test(hex) || Number.parseInt(hex, 16) > 0x10ffff) bad();
          return Number.parseInt(hex, 16);
        }
        const hex = this.rest(this.pos, this.pos + 2);
        if (!/^[0-9A-Fa-f]{2}$/.test(hex)) {
          this.pos = Math.min(this.pos + 2, this.src.length);
          bad();
        }
        this.pos += 2;
        return Number.parseInt(hex, 16);
      }
    }
    if (c >= 0x31 && c <= 0x37) {
      // A single non-zero digit is a back-reference, which RE2 does not support.
      const n = this.peek();
      if (n === undefined || n < 0x30 || n > 0x37) bad();
    }
    if (c >= 0x30 && c <= 0x37) {
      let v = c - 0x30;
      for (let k = 0; k < 2; k++) {
        const n = this.peek();
        if (n === undefined || n < 0x30 || n > 0x37) break;
        v = v * 8 + (n - 0x30);
        this.pos++;
      }
      return v;
    }
    if (c < 0x80 && !/[A-Za-z0-9]/.test(s)) return c;
    return bad();
  }

  parseClass(): Node {
    const start = this.pos;
    this.pos++; // [
    let negate = false;
    if (this.eat('^')) negate = true;
    const tests: Test[] = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.err(`missing closing ]: \`${this.rest(start)}\``);
      if (c === 0x5d && !first) {
        this.pos++;
        break;
      }
      first = false;
      if (c === 0x5b && this.peek(1) === 0x3a) {
        const close = this.text.indexOf(':]', 0);
        const here = this.rest(this.pos);
        const m = /^\[:(\^?)([a-z]+):\]/.exec(here);
        if (m && close >= 0) {
          const t = POSIX[m[2] as string];
          if (!t) this.err(`invalid character class range: \`${m[0]}\``);
          tests.push(m[1] ? not(t) : t);
          this.pos += Array.from(m[0]).length;
          continue;
        }
      }
      if (c === 0x5c) {
        const cls = this.tryClassEscape();
        if (cls !== null) {
          tests.push(cls);
          continue;
        }
      }
      const rangeStart = this.pos;
      const lo = this.classChar();
      let hi = lo;
      if (this.peek() === 0x2d && this.peek(1) !== undefined && this.peek(1) !== 0x5d) {
        this.pos++;
        hi = this.classChar();
        if (hi < lo) this.err(`invalid character class range: \`${this.rest(rangeStart, this.pos)}\``);
      }
      tests.push(range(lo, hi));
    }
    const union: Test = tests.length === 1 ? (tests[0] as Test) : anyOf(...tests);
    const folded = this.flags.i ? foldTest(union) : union;
    return { t: 'char', test: negate ? not(folded) : folded };
  }

  classChar(): number {
    const c = this.peek() as number;
    if (c === 0x5c) return this.parseCharEscape();
    this.pos++;
    return c;
  }
}

// Instructions of the Pike VM.
const CHAR = 0;
const SPLIT = 1;
const JMP = 2;
const ASSERT = 3;
const MATCH = 4;

interface Inst {
  op: number;
  test?: Test;
  x: number;
  y: number;
  kind?: AssertKind;
}

class Compiler {
  readonly prog: Inst[] = [];

  emit(inst: Inst): number {
    if (this.prog.length >= MAX_PROGRAM)
      throw new RegexSyntaxError('error parsing regexp: expression too large');
    this.prog.push(inst);
    return this.prog.length - 1;
  }

  // Compiles `n` so that it continues at the instruction emitted next.
  compile(n: Node): void {
    switch (n.t) {
      case 'empty':
        return;
      case 'char':
        this.emit({ op: CHAR, test: n.test, x: this.prog.length + 1, y: 0 });
        return;
      case 'assert':
        this.emit({ op: ASSERT, kind: n.kind, x: this.prog.length + 1, y: 0 });
        return;
      case 'group':
        this.compile(n.sub);
        return;
      case 'cat':
        for (const s of n.subs) this.compile(s);
        return;
      case 'alt': {
        const jumps: Inst[] = [];
        n.subs.forEach((s, i) => {
          if (i < n.subs.length - 1) {
            const split = this.prog[this.emit({ op: SPLIT, x: 0, y: 0 })] as Inst;
            split.x = this.prog.length;
            this.compile(s);
            jumps.push(this.prog[this.emit({ op: JMP, x: 0, y: 0 })] as Inst);
            split.y = this.prog.length;
          } else this.compile(s);
        });
        for (const j of jumps) j.x = this.prog.length;
        return;
      }
      case 'rep': {
        const { sub, min, max, greedy } = n;
        for (let k = 0; k < min; k++) this.compile(sub);
        if (max === -1) {
          const split = this.prog[this.emit({ op: SPLIT, x: 0, y: 0 })] as Inst;
          const loop = this.prog.length - 1;
          const body = this.prog.length;
          this.compile(sub);
          this.emit({ op: JMP, x: loop, y: 0 });
          const after = this.prog.length;
          split.x = greedy ? body : after;
          split.y = greedy ? after : body;
          return;
        }
        const exits: Inst[] = [];
        for (let k = min; k < max; k++) {
          const split = this.prog[this.emit({ op: SPLIT, x: 0, y: 0 })] as Inst;
          const body = this.prog.length;
          this.compile(sub);
          exits.push(split);
          (split as Inst & { body: number }).body = body;
        }
        const after = this.prog.length;
        for (const s of exits) {
          const body = (s as Inst & { body: number }).body;
          s.x = greedy ? body : after;
          s.y = greedy ? after : body;
        }
        return;
      }
    }
  }
}

function repeatWeight(n: Node): number {
  switch (n.t) {
    case 'rep': {
      const count = Math.max(n.min, n.max === -1 ? n.min : n.max, 1);
      return count * repeatWeight(n.sub);
    }
    case 'group':
      return repeatWeight(n.sub);
    case 'cat':
    case 'alt':
      return Math.max(1, ...n.subs.map(repeatWeight));
    default:
      return 1;
  }
}

/** A compiled RE2 expression. */
export class Re2 {
  readonly source: string;
  readonly #prog: readonly Inst[];

  private constructor(source: string, prog: readonly Inst[]) {
    this.source = source;
    this.#prog = prog;
  }

  /** Compiles `pattern`; throws {@link RegexSyntaxError} with Go's message when RE2 rejects it. */
  static compile(pattern: string): Re2 {
    const p = new Parser(pattern);
    const ast = p.parse();
    if (repeatWeight(ast) > MAX_REPEAT) {
      throw new RegexSyntaxError(`error parsing regexp: invalid repeat count: \`${pattern}\``);
    }
    const c = new Compiler();
    c.compile(ast);
    c.emit({ op: MATCH, x: 0, y: 0 });
    return new Re2(pattern, c.prog);
  }

  /** True if the pattern matches anywhere in `input` (CEL `matches`). */
  test(input: string): boolean {
    return (
      this.#exec(
        Array.from(input, (ch) => ch.codePointAt(0) ?? 0),
        0,
        true,
      ) !== null
    );
  }

  /** The leftmost-first match, or null (Go's FindString). */
  find(input: string): string | null {
    const cps = Array.from(input, (ch) => ch.codePointAt(0) ?? 0);
    const m = this.#exec(cps, 0, false);
    return m === null ? null : String.fromCodePoint(...cps.slice(m[0], m[1]));
  }

  /** Successive non-overlapping matches, at most `limit` (negative: all), like Go's FindAllString. */
  findAll(input: string, limit: number): string[] {
    const cps = Array.from(input, (ch) => ch.codePointAt(0) ?? 0);
    const out: string[] = [];
    if (limit === 0) return out;
    let pos = 0;
    let prevEnd = -1;
    while (pos <= cps.length && (limit < 0 || out.length < limit)) {
      const m = this.#exec(cps, pos, false);
      if (m === null) break;
      let accept = true;
      if (m[1] === pos) {
        // An empty match right after the previous match is skipped, as in Go.
        if (m[0] === prevEnd) accept = false;
        pos++;
      } else pos = m[1];
      prevEnd = m[1];
      if (accept) out.push(String.fromCodePoint(...cps.slice(m[0], m[1])));
    }
    return out;
  }

  #assert(kind: AssertKind, cps: readonly number[], i: number): boolean {
    switch (kind) {
      case 'bot':
        return i === 0;
      case 'eot':
        return i === cps.length;
      case 'bol':
        return i === 0 || cps[i - 1] === 0x0a;
      case 'eol':
        return i === cps.length || cps[i] === 0x0a;
      case 'wb':
      case 'nwb': {
        const before = i > 0 && isWordCp(cps[i - 1] as number);
        const after = i < cps.length && isWordCp(cps[i] as number);
        return (before !== after) === (kind === 'wb');
      }
    }
  }

  /** Pike VM: leftmost-first match starting at or after `from`; [start, end] in code points. */
  #exec(cps: readonly number[], from: number, anyMatch: boolean): [number, number] | null {
    const prog = this.#prog;
    const n = prog.length;
    let cur = { pcs: new Int32Array(n), caps: new Int32Array(n), len: 0 };
    let next = { pcs: new Int32Array(n), caps: new Int32Array(n), len: 0 };
    const seen = new Int32Array(n).fill(-1);
    const stack = new Int32Array(n * 2 + 2);
    let matched: [number, number] | null = null;

    const add = (list: typeof cur, pc0: number, cap: number, i: number, gen: number): void => {
      let sp = 0;
      stack[sp++] = pc0;
      while (sp > 0) {
        const pc = stack[--sp] as number;
        if (seen[pc] === gen) continue;
        seen[pc] = gen;
        const inst = prog[pc] as Inst;
        switch (inst.op) {
          case JMP:
            stack[sp++] = inst.x;
            break;
          case SPLIT:
            // Push y first so x (the preferred branch) is explored first.
            stack[sp++] = inst.y;
            stack[sp++] = inst.x;
            break;
          case ASSERT:
            if (this.#assert(inst.kind as AssertKind, cps, i)) stack[sp++] = inst.x;
            break;
          default:
            list.pcs[list.len] = pc;
            list.caps[list.len] = cap;
            list.len++;
        }
      }
    };

    // `seen` is marked with the position a thread list is for: the threads that step i
    // produces for position i+1 and the new seed added at i+1 share the marker, so a pc
    // already reached by an earlier-started (higher-priority) thread is not added again.
    for (let i = from; i <= cps.length; i++) {
      if (matched === null) add(cur, 0, i, i, i);
      if (cur.len === 0) {
        if (matched !== null) break;
        continue;
      }
      next.len = 0;
      const c = i < cps.length ? (cps[i] as number) : -1;
      for (let k = 0; k < cur.len; k++) {
        const pc = cur.pcs[k] as number;
        const inst = prog[pc] as Inst;
        if (inst.op === MATCH) {
          matched = [cur.caps[k] as number, i];
          if (anyMatch) return matched;
          // Lower-priority threads are cut: leftmost-first.
          break;
        }
        if (c >= 0 && (inst.test as Test)(c)) add(next, inst.x, cur.caps[k] as number, i + 1, i + 1);
      }
      [cur, next] = [next, cur];
    }
    return matched;
  }
}
