/**
 * Extensions of @marcbachmann/cel-js that the apiserver does not have, made compile
 * errors again so that an expression accepted here is accepted there: the bytes helpers
 * (`hex`, `base64`, `json`, `at`, `b.string()`) and `cel.bind`.
 */
import type { Registrar } from './library.ts';

export function registerExtras(r: Registrar): void {
  r.remove('hex', 0).remove('base64', 0).remove('json', 0).remove('at', 1).remove('string', 0).remove('bind', 3);
}
