/**
 * `matches` and the Kubernetes regex library (`find`, `findAll`) on RE2 (see `re2.ts`).
 *
 * As in the apiserver, a pattern written as a literal is compiled at compile time, so
 * `s.matches('(?=x)')` is a compile error, not a rule that fails on every object.
 * Compiled patterns are cached (the apiserver caches them per program; we keep the most
 * recent few hundred across programs).
 */
import { TypeError as CelTypeError } from '@marcbachmann/cel-js';
import { charge } from './cost.ts';
import { type AstNode, locationOf, type MacroCall, renamedCall } from './internals.ts';
import { evalError, OVERRIDE_PREFIX, type Registrar } from './library.ts';
import { Re2, RegexSyntaxError } from './re2.ts';
import { chargeText } from './strings.ts';

const CACHE_SIZE = 256;
const cache = new Map<string, Re2>();

/** The compiled pattern, from the cache; throws the evaluation error cel-go gives for a bad pattern. */
export function compiledRegex(pattern: string): Re2 {
  const hit = cache.get(pattern);
  if (hit) return hit;
  charge(1 + pattern.length);
  let re: Re2;
  try {
    re = Re2.compile(pattern);
  } catch (err) {
    if (err instanceof RegexSyntaxError) throw evalError(err.message);
    throw err;
  }
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, re);
  return re;
}

/** At parse time: a literal pattern must compile, or the expression does not. */
function checkLiteralPattern(call: MacroCall, what: string): void {
  const arg: AstNode | undefined = call.receiver ? call.args[0] : call.args[1];
  if (arg?.op !== 'value' || typeof arg.args !== 'string') return;
  try {
    Re2.compile(arg.args);
  } catch (err) {
    if (!(err instanceof RegexSyntaxError)) throw err;
    throw new CelTypeError({
      code: 'invalid_regex',
      message: `invalid ${what} argument: ${err.message}`,
      node: locationOf(arg),
    });
  }
}

export function registerRegex(r: Registrar): void {
  const p = OVERRIDE_PREFIX;
  for (const [name, arity] of [
    ['matches', 1],
    ['find', 1],
    ['findAll', 1],
    ['findAll', 2],
  ] as const) {
    r.macro(name, arity, (call) => {
      checkLiteralPattern(call, name);
      return { callAst: renamedCall(call, p + name) };
    });
  }
  r.fn(`string.${p}matches(string): bool`, (s: string, re: string) => {
    chargeText(s.length);
    return compiledRegex(re).test(s);
  })
    .fn('matches(string, string): bool', (s: string, re: string) => {
      chargeText(s.length);
      return compiledRegex(re).test(s);
    })
    .fn(`string.${p}find(string): string`, (s: string, re: string) => {
      chargeText(s.length);
      return compiledRegex(re).find(s) ?? '';
    })
    .fn(`string.${p}findAll(string): list<string>`, (s: string, re: string) => {
      chargeText(s.length);
      return compiledRegex(re).findAll(s, -1);
    })
    .fn(`string.${p}findAll(string, int): list<string>`, (s: string, re: string, n: bigint) => {
      chargeText(s.length);
      return compiledRegex(re).findAll(s, Number(n));
    });
}
