/**
 * JSON (and YAML) to CEL values, the way the apiserver converts objects.
 *
 * The apiserver decodes a request body into unstructured JSON where a number written
 * without a fraction or exponent is an int64 and any other number a float64; CEL then
 * sees `int` and `double`. `parseJson` does the same from the text, so `2` is `int`
 * and `2.0` is `double`, and integers stay exact up to int64. `fromJson` converts a value
 * already parsed by `JSON.parse` or a YAML parser, where that distinction is gone: there
 * an integral number is `int`, which is also what the apiserver sees after kubectl has
 * turned YAML into JSON (`2.0` in YAML arrives as `2`).
 */
import { parse as parseYamlText } from 'yaml';
import { CelErrorKind } from './errors.ts';
import { fail, ok, type Result } from './result.ts';
import type { CelValue } from './values.ts';

const MAX_INT64 = 9223372036854775807n;
const MIN_INT64 = -9223372036854775808n;
const INTEGER_TEXT = /^-?\d+$/;

/** Node's JSON.parse reviver context (Node 22+): the source text of a primitive. */
interface ReviverContext {
  readonly source?: string;
}

function numberFromSource(value: number, source: string | undefined): CelValue {
  if (source !== undefined && INTEGER_TEXT.test(source)) {
    const big = BigInt(source);
    // Beyond int64 the apiserver's decoder falls back to float64; so do we.
    if (big <= MAX_INT64 && big >= MIN_INT64) return big;
  }
  return value;
}

/** Parses JSON text into CEL values: integers (written without fraction or exponent) become `int`. */
export function parseJson(text: string): Result<CelValue> {
  try {
    const value: unknown = JSON.parse(text, (_key: string, v: unknown, context?: ReviverContext) =>
      typeof v === 'number' ? numberFromSource(v, context?.source) : v,
    );
    return ok(value as CelValue);
  } catch (err) {
    return fail({ kind: CelErrorKind.Conversion, message: `invalid JSON: ${(err as Error).message}` });
  }
}

/** Parses YAML text (one document) into CEL values, with JSON's integer rule applied to its numbers. */
export function parseYaml(text: string): Result<CelValue> {
  let doc: unknown;
  try {
    doc = parseYamlText(text);
  } catch (err) {
    return fail({ kind: CelErrorKind.Conversion, message: `invalid YAML: ${(err as Error).message}` });
  }
  return fromJson(doc);
}

/**
 * Converts a parsed JSON value (from `JSON.parse`, a YAML parser or the kit's client) to
 * CEL values: an integral number within int64 becomes `int`, any other finite number
 * `double`. Non-finite numbers and non-JSON values (functions, dates, class instances)
 * are refused.
 */
export function fromJson(value: unknown, path = '$'): Result<CelValue> {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'bigint':
      return ok(value);
    case 'number':
      if (!Number.isFinite(value)) return conversionError(`${path}: ${value} is not a JSON number`);
      if (Number.isInteger(value) && Number.isSafeInteger(value)) return ok(BigInt(value));
      if (Number.isInteger(value)) {
        const big = BigInt(value);
        if (big <= MAX_INT64 && big >= MIN_INT64) return ok(big);
      }
      return ok(value);
    case 'object': {
      if (value === null) return ok(null);
      if (Array.isArray(value)) {
        const out: CelValue[] = new Array(value.length);
        for (let i = 0; i < value.length; i++) {
          const r = fromJson(value[i], `${path}[${i}]`);
          if (!r.ok) return r;
          out[i] = r.value;
        }
        return ok(out);
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        return conversionError(`${path}: a ${value.constructor?.name ?? 'object'} is not JSON`);
      }
      const out: Record<string, CelValue> = {};
      for (const [k, item] of Object.entries(value)) {
        const r = fromJson(item, `${path}.${k}`);
        if (!r.ok) return r;
        // defineProperty: a "__proto__" key is data, not the prototype.
        Object.defineProperty(out, k, {
          value: r.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return ok(out);
    }
    case 'undefined':
      return conversionError(`${path}: undefined is not JSON`);
    default:
      return conversionError(`${path}: a ${typeof value} is not JSON`);
  }
}

function conversionError(message: string): Result<CelValue> {
  return fail({ kind: CelErrorKind.Conversion, message });
}
