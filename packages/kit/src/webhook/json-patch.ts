/**
 * The RFC 6902 JSON patch that turns one JSON document into another: what a mutating
 * webhook answers when its handler returns the object it wants instead of patch
 * operations.
 *
 * Guarantees: applying `jsonPatchDiff(from, to)` to `from` yields a document deeply equal
 * to `to` (the property test checks it on arbitrary documents, keys with `/` and `~`
 * included). Objects are compared key by key and recursed into; arrays element by
 * element over their common length, then the tail is appended or removed from the end
 * backwards, so every index a later operation names is valid when it is applied.
 * Unchanged values produce no operation: an idempotent mutation answers an empty patch.
 *
 * Written here rather than taken from npm: the diff is fifty lines, and the common
 * library (`fast-json-patch`) has had no release since 2022 and carries an applier,
 * an observer and a validator we do not need in every operator's image. The patch is
 * not minimal for arrays (an insertion at the front rewrites every element): the
 * apiserver applies it once to the very object it sent, so size is all it costs.
 */
import type { JsonPatchOp } from '../client/client.ts';

/** A JSON value as it travels in an AdmissionReview: no undefined, no functions, no Dates. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

/** One segment of a JSON pointer (RFC 6901): `~` is `~0` and `/` is `~1`, in that order. */
export function escapePointerSegment(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function isObject(v: JsonValue): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep equality of two JSON values (key order ignored, as JSON objects are unordered). */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i] as JsonValue));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k] as JsonValue, b[k] as JsonValue));
}

/** The operations that turn `from` into `to`; `[]` when they are equal. */
export function jsonPatchDiff(from: JsonValue, to: JsonValue): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  diffInto(from, to, '', ops);
  return ops;
}

function diffInto(from: JsonValue, to: JsonValue, path: string, ops: JsonPatchOp[]): void {
  if (isObject(from) && isObject(to)) {
    for (const k of Object.keys(from)) {
      if (!Object.hasOwn(to, k)) ops.push({ op: 'remove', path: `${path}/${escapePointerSegment(k)}` });
    }
    for (const [k, v] of Object.entries(to)) {
      const p = `${path}/${escapePointerSegment(k)}`;
      if (Object.hasOwn(from, k)) diffInto(from[k] as JsonValue, v, p, ops);
      else ops.push({ op: 'add', path: p, value: v });
    }
    return;
  }
  if (Array.isArray(from) && Array.isArray(to)) {
    const common = Math.min(from.length, to.length);
    for (let i = 0; i < common; i++) diffInto(from[i] as JsonValue, to[i] as JsonValue, `${path}/${i}`, ops);
    for (let i = common; i < to.length; i++) ops.push({ op: 'add', path: `${path}/${i}`, value: to[i] });
    // From the end backwards: removing index i shifts every later index down.
    for (let i = from.length - 1; i >= common; i--) ops.push({ op: 'remove', path: `${path}/${i}` });
    return;
  }
  if (!jsonEqual(from, to)) ops.push({ op: 'replace', path, value: to });
}
