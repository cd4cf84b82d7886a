/**
 * The Kubernetes quantity library: `quantity("1.5Gi")`, `isQuantity`, and the methods
 * `isInteger`, `asInteger`, `asApproximateFloat`, `sign`, `add`, `sub`, `isGreaterThan`,
 * `isLessThan`, `compareTo`, with `==` comparing values (`quantity("1") == quantity("1000m")`).
 *
 * Values are exact: a quantity is held as an integer number of nano-units, the finest
 * precision Kubernetes keeps (a finer value is rounded away from zero, as
 * resource.ParseQuantity does).
 */
import { charge } from './cost.ts';
import { CEL_COMPARE, CEL_EQUALS } from './equality.ts';
import { evalError, type Registrar } from './library.ts';
import { TO_JSON_STRING } from './values.ts';

const NANO = 1_000_000_000n;
const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;

type Format = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

function divRoundAway(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d === n ? q : n < 0n ? q - 1n : q + 1n;
}

/**
 * resource.Quantity keeps small values as an int64 with a decimal scale (int64Amount)
 * and everything else as an arbitrary-precision decimal. The difference shows: only the
 * former converts to an integer, so `quantity("1.5Gi").isInteger()` is false though the
 * value is whole. We track which representation Kubernetes would have chosen.
 */
interface Int64Amount {
  readonly value: bigint;
  readonly scale: number;
}

function fitsInt64(v: bigint): boolean {
  return v <= MAX_INT && v >= MIN_INT;
}

/** int64Amount.Add, or undefined where Kubernetes falls back to a decimal. */
function addAmounts(a: Int64Amount, b: Int64Amount): Int64Amount | undefined {
  if (b.value === 0n) return a;
  if (a.value === 0n) return b;
  const scale = Math.min(a.scale, b.scale);
  const av = a.value * 10n ** BigInt(a.scale - scale);
  const bv = b.value * 10n ** BigInt(b.scale - scale);
  if (!fitsInt64(av) || !fitsInt64(bv) || !fitsInt64(av + bv)) return undefined;
  return { value: av + bv, scale };
}

export class Quantity {
  /** The value times 10^9. */
  readonly nanos: bigint;
  readonly format: Format;
  /** Set when Kubernetes holds this value as an int64Amount. */
  readonly amount: Int64Amount | undefined;

  constructor(nanos: bigint, format: Format, amount?: Int64Amount) {
    this.nanos = nanos;
    this.format = format;
    this.amount = amount;
  }

  static fromAmount(a: Int64Amount, format: Format): Quantity {
    return new Quantity(a.value * 10n ** BigInt(a.scale + 9), format, a);
  }

  /** resource.ParseQuantity. */
  static parse(s: string): Quantity | undefined {
    const m = QUANTITY.exec(s);
    if (!m) return undefined;
    const [, sign = '', intPart = '', fracPart, suffix = ''] = m;
    if (intPart === '' && (fracPart === undefined || fracPart === '')) return undefined;
    const num = intPart.replace(/^0+/, '') || '0';
    const denom = fracPart ?? '';
    const negative = sign === '-';
    let format: Format = 'DecimalSI';
    let exponent = 0;
    let binary = false;
    if (suffix in BINARY) {
      format = 'BinarySI';
      binary = true;
      exponent = Number((BINARY[suffix] as bigint).toString(2).length - 1);
    } else if (suffix.startsWith('e') || suffix.startsWith('E')) {
      if (suffix.length === 1) exponent = 18;
      else {
        format = 'DecimalExponent';
        exponent = Number(suffix.slice(1));
        if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) return undefined;
      }
    } else exponent = DECIMAL[suffix] ?? 0;

    // The int64Amount fast path, with Kubernetes' precision estimate.
    let precision: number;
    let scale = 0;
    let mantissa = 1n;
    if (!binary) {
      scale = exponent;
      precision = 18 - (num.length + denom.length);
    } else if (exponent >= 0 && denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
    } else precision = -1;
    if (precision >= 0) {
      scale -= denom.length;
      if (scale >= -9) {
        const shifted = BigInt(num + denom);
        const result = shifted * mantissa;
        if (fitsInt64(shifted) && fitsInt64(result)) {
          return Quantity.fromAmount({ value: negative ? -result : result, scale }, format);
        }
      }
    }
    // The decimal path: exact, rounded away from zero to nano precision.
    let numer = BigInt(num + denom) * (negative ? -1n : 1n);
    let den = 10n ** BigInt(denom.length);
    if (binary) numer *= 1n << BigInt(exponent);
    else if (exponent >= 0) numer *= 10n ** BigInt(exponent);
    else den *= 10n ** BigInt(-exponent);
    const nanos = divRoundAway(numer * NANO, den);
    if (binary && (nanos < 0n ? -nanos : nanos) < NANO) format = 'DecimalSI';
    return new Quantity(nanos, format);
  }

  /** Quantity.AsInt64's `ok`: an int64Amount with a non-negative scale that fits. */
  asInt64(): bigint | undefined {
    const a = this.amount;
    if (a === undefined || a.scale < 0) return undefined;
    const v = a.value * 10n ** BigInt(a.scale);
    return fitsInt64(v) ? v : undefined;
  }

  isInteger(): boolean {
    return this.asInt64() !== undefined;
  }

  approximateFloat(): number {
    const a = this.amount;
    if (a !== undefined) return a.scale === 0 ? Number(a.value) : Number(a.value) * 10 ** a.scale;
    return Number(this.nanos) * 10 ** -9;
  }

  plus(o: Quantity, negate: boolean): Quantity {
    const other = negate
      ? new Quantity(-o.nanos, o.format, o.amount && { value: -o.amount.value, scale: o.amount.scale })
      : o;
    const format = this.nanos === 0n ? o.format : this.format;
    if (this.amount && other.amount) {
      const sum = addAmounts(this.amount, other.amount);
      if (sum) return Quantity.fromAmount(sum, format);
    }
    return new Quantity(this.nanos + other.nanos, format);
  }

  compare(o: Quantity): number {
    return this.nanos < o.nanos ? -1 : this.nanos > o.nanos ? 1 : 0;
  }
  [CEL_EQUALS](o: unknown): boolean {
    return o instanceof Quantity && o.nanos === this.nanos;
  }

  [CEL_COMPARE](o: unknown): number {
    if (!(o instanceof Quantity)) throw evalError('no such overload: quantity compared with another type');
    return this.compare(o);
  }

  /** A canonical form: an integer with the largest suffix of the quantity's family that keeps it exact. */
  toString(): string {
    const n = this.nanos;
    if (n === 0n) return '0';
    if (this.format === 'BinarySI' && n % NANO === 0n) {
      let v = n / NANO;
      const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
      let i = 0;
      while (i < suffixes.length - 1 && v % 1024n === 0n) {
        v /= 1024n;
        i++;
      }
      return `${v}${suffixes[i]}`;
    }
    const suffixes = ['n', 'u', 'm', '', 'k', 'M', 'G', 'T', 'P', 'E'];
    let v = n;
    let i = 0;
    while (i < suffixes.length - 1 && v % 1000n === 0n) {
      v /= 1000n;
      i++;
    }
    return `${v}${suffixes[i]}`;
  }

  [TO_JSON_STRING](): string {
    return this.toString();
  }
}

function parseOrThrow(s: string): Quantity {
  charge(1 + Math.ceil(s.length / 10));
  const q = Quantity.parse(s);
  if (!q)
    throw evalError(
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    );
  return q;
}

function toInt(q: Quantity): bigint {
  const v = q.asInt64();
  if (v === undefined) throw evalError('cannot convert value to integer');
  return v;
}

export function registerQuantity(r: Registrar): void {
  r.env.registerType('kubernetes.Quantity', Quantity);
  r.env.registerOperator(
    'kubernetes.Quantity == kubernetes.Quantity',
    (a: Quantity, b: Quantity) => a.nanos === b.nanos,
  );
  const Q = 'kubernetes.Quantity';
  r.fn(`quantity(string): ${Q}`, parseOrThrow)
    .fn('isQuantity(string): bool', (s: string) => Quantity.parse(s) !== undefined)
    .fn(`${Q}.isInteger(): bool`, (q: Quantity) => q.isInteger())
    .fn(`${Q}.asInteger(): int`, toInt)
    .fn(`${Q}.asApproximateFloat(): double`, (q: Quantity) => q.approximateFloat())
    .fn(`${Q}.add(${Q}): ${Q}`, (a: Quantity, b: Quantity) => a.plus(b, false))
    .fn(`${Q}.add(int): ${Q}`, (a: Quantity, b: bigint) =>
      a.plus(Quantity.fromAmount({ value: b, scale: 0 }, 'DecimalExponent'), false),
    )
    .fn(`${Q}.sub(${Q}): ${Q}`, (a: Quantity, b: Quantity) => a.plus(b, true))
    .fn(`${Q}.sub(int): ${Q}`, (a: Quantity, b: bigint) =>
      a.plus(Quantity.fromAmount({ value: b, scale: 0 }, 'DecimalExponent'), true),
    )
    .fn(`${Q}.isGreaterThan(${Q}): bool`, (a: Quantity, b: Quantity) => a.compare(b) > 0)
    .fn(`${Q}.isLessThan(${Q}): bool`, (a: Quantity, b: Quantity) => a.compare(b) < 0)
    .fn(`${Q}.compareTo(${Q}): int`, (a: Quantity, b: Quantity) => BigInt(a.compare(b)));
}
