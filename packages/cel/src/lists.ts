/**
 * The Kubernetes list library (k8s.io/apiserver/pkg/cel/library/lists.go): `isSorted`,
 * `sum`, `min`, `max`, `indexOf`, `lastIndexOf`. Elements are compared with CEL equality
 * and ordering (`equality.ts`); `min` and `max` of an empty list are errors, `sum` of an
 * empty list is zero. Integer sums overflow into an error like every int operation.
 */
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { charge } from './cost.ts';
import { celCompare, celEquals } from './equality.ts';
import { evalError, OVERRIDE_PREFIX, type Registrar } from './library.ts';

const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;
const MAX_UINT = 18446744073709551615n;

function isSorted(list: readonly unknown[]): boolean {
  charge(1 + list.length);
  for (let i = 1; i < list.length; i++) if (celCompare(list[i - 1], list[i]) > 0) return false;
  return true;
}

function extreme(list: readonly unknown[], sign: 1 | -1, name: string): unknown {
  charge(1 + list.length);
  if (list.length === 0) throw evalError(`${name} called on empty list`);
  let best = list[0];
  for (let i = 1; i < list.length; i++) if (celCompare(list[i], best) * sign > 0) best = list[i];
  return best;
}

function sumInts(list: readonly bigint[]): bigint {
  charge(1 + list.length);
  let total = 0n;
  for (const v of list) {
    if (typeof v !== 'bigint') throw evalError('no such overload: sum of a list that is not all int');
    total += v;
    if (total > MAX_INT || total < MIN_INT) throw evalError('integer overflow');
  }
  return total;
}

function sumUints(list: readonly UnsignedInt[]): UnsignedInt {
  charge(1 + list.length);
  let total = 0n;
  for (const v of list) {
    total += v.valueOf();
    if (total > MAX_UINT) throw evalError('unsigned integer overflow');
  }
  return new UnsignedInt(total);
}

function sumDoubles(list: readonly number[]): number {
  charge(1 + list.length);
  let total = 0;
  for (const v of list) {
    if (typeof v !== 'number') throw evalError('no such overload: sum of a list that is not all double');
    total += v;
  }
  return total;
}

function sumDurations(list: readonly Duration[]): Duration {
  charge(1 + list.length);
  let total = new Duration(0n, 0);
  for (const v of list) total = total.addDuration(v);
  return total;
}

function indexOf(list: readonly unknown[], v: unknown): bigint {
  charge(1 + list.length);
  for (let i = 0; i < list.length; i++) if (celEquals(list[i], v)) return BigInt(i);
  return -1n;
}

function lastIndexOf(list: readonly unknown[], v: unknown): bigint {
  charge(1 + list.length);
  for (let i = list.length - 1; i >= 0; i--) if (celEquals(list[i], v)) return BigInt(i);
  return -1n;
}

export function registerLists(r: Registrar): void {
  const p = OVERRIDE_PREFIX;
  const comparable = [
    'int',
    'uint',
    'double',
    'bool',
    'string',
    'bytes',
    'google.protobuf.Duration',
    'google.protobuf.Timestamp',
  ];
  for (const t of comparable) {
    r.fn(`list<${t}>.isSorted(): bool`, isSorted)
      .fn(`list<${t}>.min(): ${t}`, (l: readonly unknown[]) => extreme(l, -1, 'min'))
      .fn(`list<${t}>.max(): ${t}`, (l: readonly unknown[]) => extreme(l, 1, 'max'));
  }
  r.fn('list<int>.sum(): int', sumInts)
    .fn('list<uint>.sum(): uint', sumUints)
    .fn('list<double>.sum(): double', sumDoubles)
    .fn('list<google.protobuf.Duration>.sum(): google.protobuf.Duration', sumDurations)
    // indexOf/lastIndexOf share their names with the string functions, which are overridden.
    .fn(`list<A>.${p}indexOf(A): int`, indexOf)
    .fn(`list<A>.${p}lastIndexOf(A): int`, lastIndexOf);
}
