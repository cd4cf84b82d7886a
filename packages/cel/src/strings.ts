/**
 * The Kubernetes string library (cel-go ext.Strings version 2, as the apiserver of 1.36
 * configures it), with cel-go's semantics: indexes count code points, `lowerAscii`
 * touches ASCII only, `trim` uses Go's notion of white space, `split` and `replace` follow
 * Go's strings package (an empty separator splits into code points). `format` lives in
 * `format.ts`. Not included, as in the apiserver: `reverse` (version 3).
 */
import { charge } from './cost.ts';
import { evalError, type Registrar } from './library.ts';
import { hasSurrogates, isGoSpace, runes, toValidUnicode } from './text.ts';

/** Cost of touching a string of `n` code units: cel-go's traversal factor is 0.1 per character. */
export function chargeText(n: number): void {
  charge(1 + Math.ceil(n / 10));
}

function outOfRange(i: bigint | number): Error {
  return evalError(`index out of range: ${i}`);
}

function charAt(s: string, index: bigint): string {
  chargeText(s.length);
  const r = runes(s);
  if (index < 0n || index > BigInt(r.length)) throw outOfRange(index);
  return r[Number(index)] ?? '';
}

function runeIndexOf(hay: readonly string[], needle: readonly string[], from: number): number {
  for (let i = from; i <= hay.length - needle.length; i++) {
    let found = true;
    for (let j = 0; j < needle.length; j++) {
      if (hay[i + j] !== needle[j]) {
        found = false;
        break;
      }
    }
    if (found) return i;
  }
  return -1;
}

function runeLastIndexOf(hay: readonly string[], needle: readonly string[], from: number): number {
  for (let i = Math.min(from, hay.length - needle.length); i >= 0; i--) {
    let found = true;
    for (let j = 0; j < needle.length; j++) {
      if (hay[i + j] !== needle[j]) {
        found = false;
        break;
      }
    }
    if (found) return i;
  }
  return -1;
}

function indexOf(s: string, sub: string): bigint {
  chargeText(s.length);
  if (sub === '') return 0n;
  if (!hasSurrogates(s) && !hasSurrogates(sub)) return BigInt(s.indexOf(sub));
  return BigInt(runeIndexOf(runes(s), runes(sub), 0));
}

function indexOfFrom(s: string, sub: string, offset: bigint): bigint {
  chargeText(s.length);
  if (sub === '') return offset;
  const hay = runes(s);
  if (offset < 0n) throw outOfRange(offset);
  // Past the end there is nothing to find: -1, not an error (cel-go since v0.2x).
  if (offset >= BigInt(hay.length)) return -1n;
  return BigInt(runeIndexOf(hay, runes(sub), Number(offset)));
}

function lastIndexOf(s: string, sub: string): bigint {
  chargeText(s.length);
  const hay = runes(s);
  if (sub === '') return BigInt(hay.length);
  const needle = runes(sub);
  if (hay.length < needle.length) return -1n;
  return BigInt(runeLastIndexOf(hay, needle, hay.length - needle.length));
}

function lastIndexOfFrom(s: string, sub: string, offset: bigint): bigint {
  chargeText(s.length);
  if (sub === '') return offset;
  const hay = runes(s);
  if (offset < 0n) throw outOfRange(offset);
  if (offset >= BigInt(hay.length)) return -1n;
  return BigInt(runeLastIndexOf(hay, runes(sub), Number(offset)));
}

function substring(s: string, start: bigint): string {
  chargeText(s.length);
  const r = runes(s);
  if (start < 0n || start > BigInt(r.length)) throw outOfRange(start);
  return r.slice(Number(start)).join('');
}

function substringRange(s: string, start: bigint, end: bigint): string {
  chargeText(s.length);
  const r = runes(s);
  const len = BigInt(r.length);
  if (start > end) throw evalError(`invalid substring range. start: ${start}, end: ${end}`);
  if (start < 0n || start > len) throw outOfRange(start);
  if (end < 0n || end > len) throw outOfRange(end);
  return r.slice(Number(start), Number(end)).join('');
}

function lowerAscii(s: string): string {
  chargeText(s.length);
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

function upperAscii(s: string): string {
  chargeText(s.length);
  return s.replace(/[a-z]+/g, (m) => m.toUpperCase());
}

function trim(s: string): string {
  chargeText(s.length);
  const r = runes(s);
  let a = 0;
  let b = r.length;
  while (a < b && isGoSpace((r[a] as string).codePointAt(0) ?? 0)) a++;
  while (b > a && isGoSpace((r[b - 1] as string).codePointAt(0) ?? 0)) b--;
  return r.slice(a, b).join('');
}

/** Go's strings.Replace(s, old, new, n); n < 0 replaces all. */
export function goReplace(s: string, old: string, repl: string, n: number): string {
  chargeText(s.length);
  if (old === repl || n === 0) return s;
  if (old === '') {
    const r = runes(s);
    const count = n < 0 ? r.length + 1 : Math.min(n, r.length + 1);
    chargeText(s.length + count * repl.length);
    let out = '';
    for (let i = 0; i < r.length; i++) out += (i < count ? repl : '') + r[i];
    if (count > r.length) out += repl;
    return out;
  }
  const parts = s.split(old);
  const count = n < 0 ? parts.length - 1 : Math.min(n, parts.length - 1);
  // Charge the output before building it: a replace feeding its own output doubles each time.
  chargeText(s.length + count * Math.max(0, repl.length - old.length));
  if (count === parts.length - 1) return parts.join(repl);
  return parts.slice(0, count + 1).join(repl) + old + parts.slice(count + 1).join(old);
}

/** Go's strings.SplitN(s, sep, n); n < 0 splits all. */
export function goSplit(s: string, sep: string, n: number): string[] {
  chargeText(s.length);
  if (n === 0) return [];
  if (sep === '') {
    const r = runes(s);
    if (n < 0 || n >= r.length) return r;
    return [...r.slice(0, n - 1), r.slice(n - 1).join('')];
  }
  const parts = s.split(sep);
  if (n < 0 || parts.length <= n) return parts;
  return [...parts.slice(0, n - 1), parts.slice(n - 1).join(sep)];
}

const QUOTE_ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** cel-go's strings.quote: double quotes, C escapes for control characters, invalid UTF-8 replaced. */
export function quote(s: string): string {
  chargeText(s.length);
  let out = '"';
  for (const ch of toValidUnicode(s)) out += QUOTE_ESCAPES[ch] ?? ch;
  return `${out}"`;
}

export function registerStrings(r: Registrar): void {
  for (const [name, arity] of [
    ['indexOf', 1],
    ['indexOf', 2],
    ['lastIndexOf', 1],
    ['lastIndexOf', 2],
    ['substring', 1],
    ['substring', 2],
    ['lowerAscii', 0],
    ['upperAscii', 0],
    ['trim', 0],
    ['split', 1],
    ['split', 2],
  ] as const) {
    r.override(name, arity);
  }
  const p = '__k8s_';
  r.fn('string.charAt(int): string', charAt)
    .fn(`string.${p}indexOf(string): int`, indexOf)
    .fn(`string.${p}indexOf(string, int): int`, indexOfFrom)
    .fn(`string.${p}lastIndexOf(string): int`, lastIndexOf)
    .fn(`string.${p}lastIndexOf(string, int): int`, lastIndexOfFrom)
    .fn(`string.${p}substring(int): string`, substring)
    .fn(`string.${p}substring(int, int): string`, substringRange)
    .fn(`string.${p}lowerAscii(): string`, lowerAscii)
    .fn(`string.${p}upperAscii(): string`, upperAscii)
    .fn(`string.${p}trim(): string`, trim)
    .fn(`string.${p}split(string): list<string>`, (s: string, sep: string) => goSplit(s, sep, -1))
    .fn(`string.${p}split(string, int): list<string>`, (s: string, sep: string, n: bigint) =>
      goSplit(s, sep, Number(n)),
    )
    .fn('string.replace(string, string): string', (s: string, a: string, b: string) => goReplace(s, a, b, -1))
    .fn('string.replace(string, string, int): string', (s: string, a: string, b: string, n: bigint) =>
      goReplace(s, a, b, Number(n)),
    );
  const ns = r.namespace('strings');
  r.fn(`${ns}.quote(string): string`, (_ns: object, s: string) => quote(s));
}
