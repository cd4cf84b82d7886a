/**
 * CEL equality and ordering for the library functions that compare elements (`in`-like
 * lookups in `indexOf`, `sets.*`, `isSorted`, `min`, `max`).
 *
 * Equality is cel-go's heterogeneous equality: numbers compare by value across int, uint
 * and double (`1 == 1.0` inside a list lookup), values of different kinds are unequal
 * (never an error), lists and maps compare element-wise. Ordering is defined between
 * values of one kind (numbers across kinds); anything else is an error.
 */
import { Optional } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { evalError } from './library.ts';

/** Implemented by this package's library types (quantity, IP, CIDR, URL). */
export const CEL_EQUALS: unique symbol = Symbol('cel.equals');
export const CEL_COMPARE: unique symbol = Symbol('cel.compare');

interface Equatable {
  [CEL_EQUALS](other: unknown): boolean;
}
interface Comparable {
  [CEL_COMPARE](other: unknown): number;
}

function asNumber(v: unknown): number | bigint | undefined {
  if (typeof v === 'bigint' || typeof v === 'number') return v;
  if (v instanceof UnsignedInt) return v.valueOf();
  return undefined;
}

function compareNumbers(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'number' && Number.isNaN(a)) return Number.NaN;
  if (typeof b === 'number' && Number.isNaN(b)) return Number.NaN;
  return a < b ? -1 : a > b ? 1 : 0;
}

function isPlainMap(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function mapEntries(v: unknown): Map<unknown, unknown> | undefined {
  if (v instanceof Map) return v;
  if (isPlainMap(v)) return new Map(Object.entries(v));
  return undefined;
}

export function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return typeof a !== 'number' || !Number.isNaN(a);
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na !== undefined || nb !== undefined) {
    return na !== undefined && nb !== undefined && compareNumbers(na, nb) === 0;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!celEquals(a[i], b[i])) return false;
    return true;
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.compare(a, b) === 0;
  }
  if (a instanceof Date || b instanceof Date)
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (a instanceof Duration || b instanceof Duration) {
    return a instanceof Duration && b instanceof Duration && a.seconds === b.seconds && a.nanos === b.nanos;
  }
  if (a instanceof Optional || b instanceof Optional) {
    if (!(a instanceof Optional && b instanceof Optional)) return false;
    if (a.hasValue() !== b.hasValue()) return false;
    return !a.hasValue() || celEquals(a.value(), b.value());
  }
  if (CEL_EQUALS in a) return (a as Equatable)[CEL_EQUALS](b);
  const ma = mapEntries(a);
  const mb = mapEntries(b);
  if (ma && mb) {
    if (ma.size !== mb.size) return false;
    for (const [k, v] of ma) {
      if (!mb.has(k) || !celEquals(v, mb.get(k))) return false;
    }
    return true;
  }
  return false;
}

/** Go compares strings as UTF-8 bytes, which is code-point order (not UTF-16 order). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** Orders two values of one kind; throws "no such overload" for kinds that have no order. */
export function celCompare(a: unknown, b: unknown): number {
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na !== undefined && nb !== undefined) return compareNumbers(na, nb);
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  if (a instanceof Duration && b instanceof Duration) {
    return a.seconds !== b.seconds ? (a.seconds < b.seconds ? -1 : 1) : Math.sign(a.nanos - b.nanos);
  }
  if (typeof a === 'object' && a !== null && CEL_COMPARE in a) return (a as Comparable)[CEL_COMPARE](b);
  throw evalError('no such overload: values are not comparable');
}
