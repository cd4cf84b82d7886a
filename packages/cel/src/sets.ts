/**
 * cel-go's sets extension, as enabled in the apiserver since 1.29: `sets.contains(a, b)`
 * (every element of b is in a), `sets.equivalent(a, b)` (same elements, ignoring order and
 * duplicates), `sets.intersects(a, b)`. Membership is CEL equality, so `1` and `1.0` match.
 */
import { charge } from './cost.ts';
import { celEquals } from './equality.ts';
import type { Registrar } from './library.ts';

function contains(a: readonly unknown[], b: readonly unknown[]): boolean {
  charge(1 + a.length * b.length);
  return b.every((x) => a.some((y) => celEquals(x, y)));
}

function intersects(a: readonly unknown[], b: readonly unknown[]): boolean {
  charge(1 + a.length * b.length);
  return b.some((x) => a.some((y) => celEquals(x, y)));
}

export function registerSets(r: Registrar): void {
  const ns = r.namespace('sets');
  r.fn(`${ns}.contains(list<A>, list<A>): bool`, (_: object, a: unknown[], b: unknown[]) => contains(a, b))
    .fn(`${ns}.equivalent(list<A>, list<A>): bool`, (_: object, a: unknown[], b: unknown[]) => contains(a, b) && contains(b, a))
    .fn(`${ns}.intersects(list<A>, list<A>): bool`, (_: object, a: unknown[], b: unknown[]) => intersects(a, b));
}
