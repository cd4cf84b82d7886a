/**
 * CEL values as this package hands them to the evaluator, and back to JSON.
 *
 * The representation is @marcbachmann/cel-js's: `bigint` is CEL `int`, `number` is
 * `double`, arrays are lists, plain objects are maps with string keys, `Uint8Array` is
 * bytes, `null` is null; library values (timestamps, durations, optionals, quantities,
 * IPs, CIDRs, URLs) are class instances. `toJson` is the way back: it refuses what JSON
 * cannot carry exactly instead of rounding it.
 */
import { Optional } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { CelErrorKind } from './errors.ts';
import { fail, ok, type Result } from './result.ts';

export type CelList = readonly CelValue[];
export interface CelMap {
  readonly [key: string]: CelValue;
}
/**
 * A CEL value. `object` stands for the library's class instances (Date for timestamps,
 * Duration, Optional, UnsignedInt, Quantity, IP, CIDR, URL, type values), which have no
 * common TypeScript shape.
 */
export type CelValue = null | boolean | bigint | number | string | Uint8Array | CelList | CelMap | object;

/** JSON as `JSON.parse` returns it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/** Implemented by this package's library types that have a canonical string form in JSON. */
export const TO_JSON_STRING: unique symbol = Symbol('cel.toJsonString');
export interface JsonStringable {
  [TO_JSON_STRING](): string;
}

function isJsonStringable(v: object): v is JsonStringable {
  return TO_JSON_STRING in v;
}

/** The largest integer JSON numbers carry exactly (2^53 - 1). */
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

function conversion(message: string): Result<JsonValue> {
  return fail({ kind: CelErrorKind.Conversion, message });
}

/**
 * A CEL value as JSON. Integers beyond ±(2^53 - 1), NaN and infinities, optionals and
 * type values are errors: JSON cannot carry them, and rounding would be silent.
 * Timestamps become RFC 3339 strings, durations "1.5s", bytes base64, quantities, IPs,
 * CIDRs and URLs their canonical strings.
 */
export function toJson(v: CelValue, path = '$'): Result<JsonValue> {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return ok(v);
    case 'bigint':
      if (v > MAX_EXACT || v < -MAX_EXACT) {
        return conversion(`${path}: integer ${v} is beyond 2^53 and cannot be represented exactly in JSON`);
      }
      return ok(Number(v));
    case 'number':
      if (!Number.isFinite(v)) return conversion(`${path}: ${v} has no JSON representation`);
      return ok(v);
    case 'object': {
      if (v === null) return ok(null);
      if (Array.isArray(v)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < v.length; i++) {
          const r = toJson(v[i] as CelValue, `${path}[${i}]`);
          if (!r.ok) return r;
          out.push(r.value);
        }
        return ok(out);
      }
      if (v instanceof UnsignedInt) return toJson(v.valueOf(), path);
      if (v instanceof Uint8Array) return ok(Buffer.from(v).toString('base64'));
      if (v instanceof Date) return ok(v.toISOString());
      if (v instanceof Duration) return ok(v.toString());
      if (v instanceof Optional) {
        return conversion(`${path}: an optional has no JSON form; unwrap it with .orValue() or .value()`);
      }
      if (isJsonStringable(v)) return ok(v[TO_JSON_STRING]());
      if (v instanceof Map) {
        const out: Record<string, JsonValue> = {};
        for (const [k, item] of v) {
          if (typeof k !== 'string') return conversion(`${path}: map key ${String(k)} is not a string`);
          const r = toJson(item as CelValue, `${path}.${k}`);
          if (!r.ok) return r;
          out[k] = r.value;
        }
        return ok(out);
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) {
        const out: Record<string, JsonValue> = {};
        for (const [k, item] of Object.entries(v)) {
          const r = toJson(item as CelValue, `${path}.${k}`);
          if (!r.ok) return r;
          Object.defineProperty(out, k, {
            value: r.value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return ok(out);
      }
      return conversion(`${path}: a value of type ${v.constructor?.name ?? 'object'} has no JSON form`);
    }
    default:
      return conversion(`${path}: a JavaScript ${typeof v} is not a CEL value`);
  }
}
