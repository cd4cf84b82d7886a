/**
 * A leaf of the SOPS tree (a scalar that is not null) and its text as sops sees it.
 *
 * sops hashes each leaf into the MAC, and encrypts it, as the bytes Go's
 * `strconv` prints for its type: integers in decimal, floats in the shortest
 * round-tripping form without an exponent ('f', -1), booleans as `True`/`False` (a
 * relic of the Python original), strings as their UTF-8. Both sides must print
 * exactly these bytes or the MAC does not verify.
 */
import { SopsError, SopsErrorKind } from './errors.ts';

export type LeafValue = string | number | bigint | boolean;

/** The `type:` tags of sops' encrypted values that a Secret's tree can hold. */
export type LeafType = 'str' | 'int' | 'float' | 'bool';

/** Go's strconv.ParseBool, which sops uses to read back a `type:bool` value. */
const GO_BOOL_TEXT: Readonly<Record<string, boolean>> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** The non-finite floats Go's ParseFloat reads: a signed infinity or NaN, any case. */
const GO_FLOAT_SPECIAL = /^(?:([+-]?)(inf(?:inity)?)|nan)$/i;

/** Go's Atoi: an optional sign and decimal digits, nothing else. */
const GO_DECIMAL_INT = /^[+-]?[0-9]+$/;

/** The sops type of a value: integers that a float64 holds exactly are ints, other numbers floats. */
export function leafType(v: LeafValue): LeafType {
  switch (typeof v) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return Number.isSafeInteger(v) ? 'int' : 'float';
  }
}

/** The text sops hashes and encrypts for a value (Go's `sops.ToBytes`, before UTF-8). */
export function leafText(v: LeafValue): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'boolean':
      return v ? 'True' : 'False';
    case 'bigint':
      return v.toString();
    case 'number':
      // -0 and integral floats print as integers in both of Go's forms.
      return Number.isInteger(v) ? BigInt(v).toString() : goFormatFloat(v);
  }
}

/** The bytes of a value in the MAC. */
export function leafBytes(v: LeafValue): Buffer {
  return Buffer.from(leafText(v), 'utf8');
}

/**
 * Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest digits that read back
 * as the same float64 (which is what JavaScript prints too), written out in full
 * where JavaScript would use an exponent.
 */
export function goFormatFloat(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Number.POSITIVE_INFINITY) return '+Inf';
  if (n === Number.NEGATIVE_INFINITY) return '-Inf';
  const sign = n < 0 || Object.is(n, -0) ? '-' : '';
  const s = Math.abs(n).toString();
  const e = s.indexOf('e');
  if (e < 0) return sign + s;
  const mantissa = s.slice(0, e);
  const exponent = Number.parseInt(s.slice(e + 1), 10);
  const dot = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const point = (dot < 0 ? mantissa.length : dot) + exponent;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * Reads back the plaintext of an encrypted value by its `type:` tag, as sops does.
 * `bytes` (which sops can read but never writes) comes back as a string.
 */
export function parseLeaf(type: string, plaintext: Buffer, where: string): LeafValue {
  const text = plaintext.toString('utf8');
  switch (type) {
    case 'str':
    case 'bytes':
      return text;
    case 'int': {
      if (!GO_DECIMAL_INT.test(text)) break;
      const big = BigInt(text);
      return Number.isSafeInteger(Number(big)) ? Number(big) : big;
    }
    case 'float': {
      // Go prints infinities as +Inf/-Inf and reads them case-insensitively; Number() does not.
      const special = GO_FLOAT_SPECIAL.exec(text);
      if (special) return special[2] ? (special[1] === '-' ? -Infinity : Infinity) : Number.NaN;
      const n = Number(text);
      if (text.trim() !== '' && !Number.isNaN(n)) return n;
      break;
    }
    case 'bool': {
      const b = GO_BOOL_TEXT[text];
      if (b !== undefined) return b;
      break;
    }
    default:
      throw new SopsError(
        SopsErrorKind.Unsupported,
        `${where}: encrypted value of sops type "${type}" is not supported here (only str, int, float, bool)`,
      );
  }
  throw new SopsError(SopsErrorKind.Malformed, `${where}: decrypted text is not a valid sops ${type}`);
}
