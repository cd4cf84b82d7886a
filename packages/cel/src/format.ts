/**
 * `"...".format([args])`, cel-go's string formatting (ext.Strings): `%s` (any value),
 * `%d` (integers), `%f` / `%.Nf` and `%e` (numbers), `%b`, `%o`, `%x`, `%X`, `%%`.
 * Inside lists and maps, `%s` quotes strings and spells timestamps and durations as
 * their constructor calls, as cel-go does.
 */
import { Optional } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { charge } from './cost.ts';
import { compareStrings } from './equality.ts';
import { goFormatFloat } from './extras.ts';
import { evalError, type Registrar } from './library.ts';
import { quote } from './strings.ts';

function formatError(message: string): Error {
  return evalError(`error during formatting: ${message}`);
}

function timestampText(d: Date): string {
  return d.toISOString().replace('.000Z', 'Z');
}

const SUPERSCRIPT = '⁰¹²³⁴⁵⁶⁷⁸⁹';

function doubleText(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return 'Infinity';
  if (v === Number.NEGATIVE_INFINITY) return '-Infinity';
  return goFormatFloat(v);
}

function isPlainMap(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return v instanceof Map || proto === Object.prototype || proto === null;
}

/** `%s` of a value; `nested` inside a list or map, where strings are quoted. */
function stringOf(v: unknown, nested: boolean): string {
  charge(1);
  switch (typeof v) {
    case 'string':
      return nested ? quote(v) : v;
    case 'boolean':
    case 'bigint':
      return String(v);
    case 'number':
      // Inside a list or map cel-go prints doubles with %f's six decimals.
      return nested ? fixed(v, 6) : doubleText(v);
    case 'object': {
      if (v === null) return 'null';
      if (v instanceof UnsignedInt) return String(v.valueOf());
      if (v instanceof Uint8Array)
        return nested ? `b${quote(Buffer.from(v).toString('utf8'))}` : Buffer.from(v).toString('utf8');
      if (Array.isArray(v)) return `[${v.map((x) => stringOf(x, true)).join(', ')}]`;
      if (v instanceof Date) return nested ? `timestamp(${quote(timestampText(v))})` : timestampText(v);
      if (v instanceof Duration) return nested ? `duration(${quote(v.toString())})` : v.toString();
      if (v instanceof Optional)
        return v.hasValue() ? `optional(${stringOf(v.value(), true)})` : 'optional.none()';
      if (isPlainMap(v)) {
        const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
        const rendered = entries.map(([k, x]) => [stringOf(k, true), stringOf(x, true)] as const);
        rendered.sort((a, b) => compareStrings(a[0], b[0]));
        return `{${rendered.map(([k, x]) => `${k}:${x}`).join(', ')}}`;
      }
      return String(v);
    }
    default:
      throw formatError(`unsupported type ${typeof v}`);
  }
}

function integerOf(v: unknown, clause: string): bigint {
  if (typeof v === 'bigint') return v;
  if (v instanceof UnsignedInt) return v.valueOf();
  throw formatError(`${clause} clause can only be used on integers, was given ${typeNameOf(v)}`);
}

function typeNameOf(v: unknown): string {
  if (v === null) return 'null_type';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'bigint':
      return 'int';
    case 'number':
      return 'double';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    default:
      return v instanceof Uint8Array ? 'bytes' : v instanceof UnsignedInt ? 'uint' : 'map';
  }
}

function numberOf(v: unknown, clause: string): number {
  if (typeof v === 'number') return v;
  throw formatError(`${clause} clause can only be used on doubles, was given ${typeNameOf(v)}`);
}

function fixed(v: number, precision: number): string {
  if (!Number.isFinite(v)) return doubleText(v);
  return v.toFixed(precision);
}

/** cel-go spells the exponent with superscript digits: 1.000000×10⁰³. */
function scientific(v: number, precision: number): string {
  if (!Number.isFinite(v)) return doubleText(v);
  const [m, e = '0'] = v.toExponential(precision).split('e');
  const exp = Number(e);
  const digits = String(Math.abs(exp))
    .padStart(2, '0')
    .replace(/\d/g, (d) => SUPERSCRIPT[Number(d)] as string);
  return `${m}×10${exp < 0 ? '⁻' : ''}${digits}`;
}

function hex(v: unknown, upper: boolean): string {
  let out: string;
  if (typeof v === 'string') out = Buffer.from(v, 'utf8').toString('hex');
  else if (v instanceof Uint8Array) out = Buffer.from(v).toString('hex');
  else {
    const n = integerOf(v, 'hex');
    out = n < 0n ? `-${(-n).toString(16)}` : n.toString(16);
  }
  return upper ? out.toUpperCase() : out;
}

export function format(template: string, args: readonly unknown[]): string {
  charge(1 + Math.ceil(template.length / 10));
  let out = '';
  let argIndex = 0;
  const next = (): unknown => {
    if (argIndex >= args.length) throw formatError(`index ${argIndex} out of range`);
    return args[argIndex++];
  };
  for (let i = 0; i < template.length; i++) {
    const ch = template[i];
    if (ch !== '%') {
      out += ch;
      continue;
    }
    i++;
    if (template[i] === '%') {
      out += '%';
      continue;
    }
    let precision: number | undefined;
    if (template[i] === '.') {
      const m = /^\.(\d+)/.exec(template.slice(i));
      if (!m)
        throw formatError('could not parse formatting clause: unable to find end of precision specifier');
      precision = Number(m[1]);
      i += (m[0] as string).length;
    }
    const verb = template[i];
    switch (verb) {
      case 's':
        out += stringOf(next(), false);
        break;
      case 'd':
        out += String(integerOf(next(), 'decimal'));
        break;
      case 'f':
        out += fixed(numberOf(next(), 'fixed-point'), precision ?? 6);
        break;
      case 'e':
        // cel-go prints six decimals here whatever the precision asked.
        out += scientific(numberOf(next(), 'scientific'), 6);
        break;
      case 'b': {
        const v = next();
        const n = typeof v === 'boolean' ? BigInt(v) : integerOf(v, 'binary');
        out += n < 0n ? `-${(-n).toString(2)}` : n.toString(2);
        break;
      }
      case 'o': {
        const n = integerOf(next(), 'octal');
        out += n < 0n ? `-${(-n).toString(8)}` : n.toString(8);
        break;
      }
      case 'x':
      case 'X':
        out += hex(next(), verb === 'X');
        break;
      default:
        throw formatError(
          `could not parse formatting clause: unrecognized formatting clause "${verb ?? ''}"`,
        );
    }
    if (out.length > 1_000_000) charge(out.length / 10);
  }
  if (argIndex < args.length) {
    throw formatError(
      `too many arguments supplied to string.format (expected ${argIndex}, got ${args.length})`,
    );
  }
  charge(Math.ceil(out.length / 10));
  return out;
}

export function registerFormat(r: Registrar): void {
  r.fn('string.format(list): string', format);
}
