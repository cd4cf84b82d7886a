/**
 * Where @marcbachmann/cel-js and the apiserver disagree outside any Kubernetes library:
 *   - the library's extensions the apiserver does not have (the bytes helpers `hex`,
 *     `base64`, `json`, `at`, `b.string()`, and `cel.bind`) are compile errors again;
 *   - `int()` refuses doubles beyond int64 and unparsable strings as cel-go does (the
 *     library truncates `int(1e19)` to a value no int64 can hold).
 */
import type { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { evalError, OVERRIDE_PREFIX, type Registrar } from './library.ts';

const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;
/** 2^63 as a double: the first double beyond int64. */
const TWO_63 = 2 ** 63;

function intOfDouble(v: number): bigint {
  if (!Number.isFinite(v) || v >= TWO_63 || v <= -TWO_63) throw evalError('integer overflow');
  return BigInt(Math.trunc(v));
}

function intOfString(s: string): bigint {
  if (!/^[+-]?\d+$/.test(s)) throw evalError(`cannot convert string "${s}" to int`);
  const v = BigInt(s);
  if (v > MAX_INT || v < MIN_INT) throw evalError(`cannot convert string "${s}" to int: out of range`);
  return v;
}

/**
 * Go's strconv.FormatFloat(v, 'g', -1, 64), which cel-go's string(double) uses: the
 * shortest digits that round-trip, in exponent form when the exponent is below -4 or at
 * least 6 ("1.23456789e+08", "1e-07").
 */
export function goFormatFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const [mantissa = '', e = '0'] = v.toExponential().split('e');
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const neg = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  let out: string;
  if (exp >= 0) {
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    out = frac ? `${intPart}.${frac}` : intPart;
  } else out = `0.${'0'.repeat(-exp - 1)}${digits}`;
  return neg ? `-${out}` : out;
}

function timestampString(d: Date): string {
  return d.toISOString().replace('.000Z', 'Z');
}

function durationString(d: Duration): string {
  const total = Number(d.seconds) + d.nanos / 1e9;
  return `${goFormatFloatFixed(total)}s`;
}

/** FormatFloat(v, 'f', -1, 64): shortest round-trip digits, never an exponent. */
function goFormatFloatFixed(v: number): string {
  if (Number.isInteger(v)) return v.toFixed(0);
  const s = String(v);
  if (!s.includes('e')) return s;
  return v.toFixed(20).replace(/0+$/, '');
}

function bytesToString(b: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(b);
  } catch {
    throw evalError('invalid UTF-8 in bytes, cannot convert to string');
  }
}

export function registerExtras(r: Registrar): void {
  r.remove('hex', 0)
    .remove('base64', 0)
    .remove('json', 0)
    .remove('at', 1)
    .remove('string', 0)
    .remove('bind', 3);
  const p = OVERRIDE_PREFIX;
  r.overrideGlobal('int', 1)
    .fn(`${p}int(int): int`, (v: bigint) => v)
    .fn(`${p}int(double): int`, intOfDouble)
    .fn(`${p}int(string): int`, intOfString)
    .fn(`${p}int(uint): int`, (v: UnsignedInt) => {
      if (v.valueOf() > MAX_INT) throw evalError('integer overflow');
      return v.valueOf();
    })
    .fn(`${p}int(google.protobuf.Timestamp): int`, (d: Date) => BigInt(Math.floor(d.getTime() / 1000)));
  // string(): Go's float formatting, and the timestamp and duration conversions the library lacks.
  r.overrideGlobal('string', 1)
    .fn(`${p}string(string): string`, (v: string) => v)
    .fn(`${p}string(bool): string`, (v: boolean) => String(v))
    .fn(`${p}string(int): string`, (v: bigint) => String(v))
    .fn(`${p}string(uint): string`, (v: UnsignedInt) => String(v.valueOf()))
    .fn(`${p}string(double): string`, goFormatFloat)
    .fn(`${p}string(bytes): string`, bytesToString)
    .fn(`${p}string(google.protobuf.Timestamp): string`, timestampString)
    .fn(`${p}string(google.protobuf.Duration): string`, durationString);
}
