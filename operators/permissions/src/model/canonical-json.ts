/**
 * Canonical JSON: one text for one value, so that a hash of it names the content.
 * Object keys are sorted at every level (by UTF-16 code units, as RFC 8785 does),
 * keys whose value is `undefined` are left out (as JSON.stringify does), arrays keep
 * their order (callers put them in a defined order first) and there is no whitespace.
 * Strings and numbers are written by JSON.stringify, which is deterministic. The
 * bundle's `data.json` is this text, and its revision the sha256 of it.
 */

/** A value canonical JSON can write. */
export type Json =
  | null
  | boolean
  | number
  | string
  | readonly Json[]
  | { readonly [key: string]: Json | undefined };

export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      // JSON.stringify would write null: a silent change of content.
      throw new TypeError(`canonical JSON has no representation for ${value}`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i ? ',' : ''}${canonicalJson(value[i] as Json)}`;
    return `${out}]`;
  }
  const obj = value as { readonly [key: string]: Json | undefined };
  let out = '{';
  let first = true;
  for (const key of Object.keys(obj).sort()) {
    const v = obj[key];
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}
