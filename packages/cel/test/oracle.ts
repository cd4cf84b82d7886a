/**
 * How the conformance test asks the apiserver about a value: CEL text that is true
 * exactly when an expression's value equals ours, type included (`type(x) == int &&
 * x == 3`, element by element for lists and maps), and CEL text that describes a value in
 * one line when it does not, so a mismatch report shows what the apiserver computed.
 */
import { Optional } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { CIDR, IPAddress } from '../src/ip.ts';
import { Quantity } from '../src/quantity.ts';
import { KubeUrl } from '../src/url.ts';
import type { CelValue } from '../src/values.ts';

/** A CEL string literal for `s`: double-quoted, escapes for quotes, backslashes and controls. */
export function celString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return `${out}"`;
}

function celDouble(v: number): string {
  if (Number.isNaN(v)) return 'double("NaN")';
  if (v === Number.POSITIVE_INFINITY) return 'double("Infinity")';
  if (v === Number.NEGATIVE_INFINITY) return 'double("-Infinity")';
  const s = String(Math.abs(v));
  const lit = /[.e]/.test(s) ? s : `${s}.0`;
  return v < 0 || Object.is(v, -0) ? `(-${lit})` : lit;
}

function celInt(v: bigint): string {
  if (v === -9223372036854775808n) return '(-9223372036854775807 - 1)';
  return v < 0n ? `(${v})` : String(v);
}

const TYPE_NAMES: Record<string, string> = { null: 'null_type', optional: 'optional_type' };

function typeValueName(v: object): string | undefined {
  const m = /^\[object Type<(.+)>\]$/.exec(Object.prototype.toString.call(v));
  return m ? (TYPE_NAMES[m[1] as string] ?? m[1]) : undefined;
}

/** CEL text that is true iff `x` (CEL text) has value `v`, type included; undefined if `v` cannot be expressed. */
export function celCheck(x: string, v: CelValue): string | undefined {
  switch (typeof v) {
    case 'boolean':
      return `(type(${x}) == bool && ${x} == ${v})`;
    case 'bigint':
      // Beyond int64 no CEL int can be equal: the apiserver's value is then only described.
      if (v > 9223372036854775807n || v < -9223372036854775808n) return 'false';
      return `(type(${x}) == int && ${x} == ${celInt(v)})`;
    case 'number':
      return Number.isNaN(v)
        ? `(type(${x}) == double && ${x} != ${x})`
        : `(type(${x}) == double && ${x} == ${celDouble(v)})`;
    case 'string':
      return `(type(${x}) == string && ${x} == ${celString(v)})`;
    case 'object': {
      if (v === null) return `(type(${x}) == null_type)`;
      if (v instanceof UnsignedInt) return `(type(${x}) == uint && ${x} == ${v.valueOf()}u)`;
      if (v instanceof Uint8Array) {
        const bytes = Array.from(v, (b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
        return `(type(${x}) == bytes && ${x} == b"${bytes}")`;
      }
      if (v instanceof Date)
        return `(type(${x}) == google.protobuf.Timestamp && ${x} == timestamp(${celString(v.toISOString())}))`;
      if (v instanceof Duration)
        return `(type(${x}) == google.protobuf.Duration && ${x} == duration(${celString(v.toString())}))`;
      if (v instanceof Optional) {
        if (!v.hasValue()) return `(!${x}.hasValue())`;
        const inner = celCheck(`${x}.value()`, v.value() as CelValue);
        return inner && `(${x}.hasValue() && ${inner})`;
      }
      if (v instanceof Quantity) return `(${x} == quantity(${celString(v.toString())}))`;
      if (v instanceof IPAddress) return `(${x} == ip(${celString(v.toString())}))`;
      if (v instanceof CIDR) return `(${x} == cidr(${celString(v.toString())}))`;
      if (v instanceof KubeUrl) return `(${x} == url(${celString(v.toString())}))`;
      const typeName = typeValueName(v);
      if (typeName) return `(type(${x}) == type && ${x} == ${typeName})`;
      if (Array.isArray(v)) {
        const parts = [`type(${x}) == list`, `size(${x}) == ${v.length}`];
        for (let i = 0; i < v.length; i++) {
          const c = celCheck(`${x}[${i}]`, v[i] as CelValue);
          if (c === undefined) return undefined;
          parts.push(c);
        }
        return `(${parts.join(' && ')})`;
      }
      const entries: [unknown, unknown][] = v instanceof Map ? [...v.entries()] : Object.entries(v);
      const parts = [`type(${x}) == map`, `size(${x}) == ${entries.length}`];
      for (const [k, item] of entries) {
        let key: string;
        if (typeof k === 'string') key = celString(k);
        else if (typeof k === 'bigint') key = celInt(k);
        else if (typeof k === 'boolean') key = String(k);
        else return undefined;
        const c = celCheck(`${x}[${key}]`, item as CelValue);
        if (c === undefined) return undefined;
        parts.push(c);
      }
      return `(${parts.join(' && ')})`;
    }
    default:
      return undefined;
  }
}

/** CEL text evaluating to a one-line description of `x`: "int 3", "string \"a\"", "list of 2". */
export function celDescribe(x: string): string {
  return [
    `type(${x}) == string ? 'string ' + strings.quote(${x})`,
    `type(${x}) == int ? 'int ' + string(${x})`,
    `type(${x}) == uint ? 'uint ' + string(${x})`,
    `type(${x}) == double ? 'double ' + string(${x})`,
    `type(${x}) == bool ? 'bool ' + string(${x})`,
    `type(${x}) == null_type ? 'null'`,
    `type(${x}) == list ? 'list of ' + string(size(${x}))`,
    `type(${x}) == map ? 'map of ' + string(size(${x}))`,
    `'another type'`,
  ].join(' : ');
}
