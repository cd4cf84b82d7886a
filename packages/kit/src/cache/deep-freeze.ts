/**
 * Read-only cached objects: `deepFreeze` freezes an object graph once (the reflector
 * does it when an object version arrives), and `DeepReadonly<T>` says the same to the
 * type checker. A frozen object costs no memory more than a thawed one, and nobody can
 * change what every later reader of the cache sees.
 */

/** `T` with every property, at every depth, read-only; arrays become readonly arrays. */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer E)[]
    ? readonly DeepReadonly<E>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

/**
 * Freezes `obj` and everything reachable from it, in place; returns it. Parsed JSON
 * only (plain objects and arrays): it stops at anything frozen already, so shared
 * frozen parts are walked once.
 */
export function deepFreeze<T>(obj: T): T {
  const pending: object[] = [];
  if (typeof obj === 'object' && obj !== null) pending.push(obj);
  for (let o = pending.pop(); o !== undefined; o = pending.pop()) {
    if (Object.isFrozen(o)) continue;
    Object.freeze(o);
    for (const v of Object.values(o)) {
      if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) pending.push(v);
    }
  }
  return obj;
}
