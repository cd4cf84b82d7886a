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

const BINARY: Record<string, bigint> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const QUANTITY = /^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

function divRoundAway(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d === n ? q : n < 0n ? q - 1n : q + 1n;
}

export class Quantity {
  /** The value times 10^9. */
  readonly nanos: bigint;
  readonly format: Format;

  constructor(nanos: bigint, format: Format) {
    this.nanos = nanos;
    this.format = format;
  }

  static parse(s: string): Quantity | undefined {
    const m = QUANTITY.exec(s);
    if (!m) return undefined;
    const [, sign, num = '', suffix = ''] = m;
    const [ip = '', fp = ''] = num.split('.');
    // digits / 10^fp.length, then the suffix; kept exact as a fraction of BigInts.
    let numer = BigInt((ip || '0') + fp) * (sign === '-' ? -1n : 1n);
    let denom = 10n ** BigInt(fp.length);
    let format: Format = 'DecimalSI';
    if (suffix in BINARY) {
      numer *= BINARY[suffix] as bigint;
      format = 'BinarySI';
    } else {
      let exp: number;
      if (suffix.startsWith('e') || suffix.startsWith('E')) {
        exp = Number(suffix.slice(1));
        format = 'DecimalExponent';
        if (!Number.isSafeInteger(exp) || Math.abs(exp) > 1000) return undefined;
      } else exp = DECIMAL[suffix] ?? 0;
      if (exp >= 0) numer *= 10n ** BigInt(exp);
      else denom *= 10n ** BigInt(-exp);
    }
    return new Quantity(divRoundAway(numer * NANO, denom), format);
  }

  isInteger(): boolean {
    return this.nanos % NANO === 0n && this.nanos / NANO <= MAX_INT && this.nanos / NANO >= MIN_INT;
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
  if (!q) throw evalError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  return q;
}

function toInt(q: Quantity): bigint {
  if (!q.isInteger()) throw evalError('cannot convert value to integer');
  return q.nanos / NANO;
}

export function registerQuantity(r: Registrar): void {
  r.env.registerType('kubernetes.Quantity', Quantity);
  r.env.registerOperator('kubernetes.Quantity == kubernetes.Quantity', (a: Quantity, b: Quantity) => a.nanos === b.nanos);
  const Q = 'kubernetes.Quantity';
  r.fn(`quantity(string): ${Q}`, parseOrThrow)
    .fn('isQuantity(string): bool', (s: string) => Quantity.parse(s) !== undefined)
    .fn(`${Q}.isInteger(): bool`, (q: Quantity) => q.isInteger())
    .fn(`${Q}.asInteger(): int`, toInt)
    .fn(`${Q}.asApproximateFloat(): double`, (q: Quantity) => Number(q.nanos) / 1e9)
    .fn(`${Q}.sign(): int`, (q: Quantity) => BigInt(q.compare(new Quantity(0n, 'DecimalSI'))))
    .fn(`${Q}.add(${Q}): ${Q}`, (a: Quantity, b: Quantity) => new Quantity(a.nanos + b.nanos, a.format))
    .fn(`${Q}.add(int): ${Q}`, (a: Quantity, b: bigint) => new Quantity(a.nanos + b * NANO, a.format))
    .fn(`${Q}.sub(${Q}): ${Q}`, (a: Quantity, b: Quantity) => new Quantity(a.nanos - b.nanos, a.format))
    .fn(`${Q}.sub(int): ${Q}`, (a: Quantity, b: bigint) => new Quantity(a.nanos - b * NANO, a.format))
    .fn(`${Q}.isGreaterThan(${Q}): bool`, (a: Quantity, b: Quantity) => a.compare(b) > 0)
    .fn(`${Q}.isLessThan(${Q}): bool`, (a: Quantity, b: Quantity) => a.compare(b) < 0)
    .fn(`${Q}.compareTo(${Q}): int`, (a: Quantity, b: Quantity) => BigInt(a.compare(b)));
}
