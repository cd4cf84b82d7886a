/**
 * A strict check of a ProtoJSON document (what Envoy reads from YAML/JSON, and istiod
 * from an EnvoyFilter's `patch.value`) against compiled proto descriptors, loaded with
 * protobufjs from a `FileDescriptorSet`:
 *
 * 1. the document must parse as ProtoJSON, strictly: protobufjs's `ext/protojson` (a port
 *    of Google's proto3-json-serializer) rejects unknown fields, a value of the wrong JSON
 *    type, an unknown enum name, a Duration that is not a `"<seconds>[.<frac>]s"` string,
 *    an Any whose `@type` names no message of the set, two members of one oneof, and the
 *    same field under its proto and JSON names. (`Type.fromObject` is lenient; it is not
 *    used.)
 * 2. the protoc-gen-validate rules the descriptors carry (`(validate.rules)`,
 *    `(validate.required)` on a oneof), which Envoy enforces on every configuration it
 *    loads, are checked as PGV does: a scalar's rule applies to its default value when the
 *    field is absent (so `string.min_len: 1` makes a field required), a message's only when
 *    it is set, a oneof member's only when it is the one set. A rule this checker does not
 *    implement, on a value it would apply to, is reported `unchecked` rather than passed.
 * 3. Envoy's annotations: a field or enum value marked `deprecated` is a `warning` (Envoy
 *    logs it and counts `runtime.deprecated_feature_use`), an `error` when also
 *    `(envoy.annotations.disallowed_by_default)` (Envoy rejects it unless a runtime flag
 *    re-enables it); a work-in-progress field or message (xds.annotations.v3) is a
 *    `warning`; an Any's type from a FROZEN package (udpa.annotations.file_status) is a
 *    `warning`, as istiod's EnvoyFilter validation gives it.
 */
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';
import 'protobufjs/ext/descriptor.js';
import protojson from 'protobufjs/ext/protojson.js';

export type Severity = 'error' | 'warning' | 'unchecked';

export interface ProtoFinding {
  readonly severity: Severity;
  /** The field path in proto names, `http_service.server_uri.timeout`; `` for the document. */
  readonly path: string;
  readonly message: string;
}

type Json = unknown;
type JsonObject = Record<string, Json>;
/** A rule set as protobufjs decodes `validate.FieldRules` (proto field names, 64-bit integers as strings). */
type Rules = Record<string, Record<string, unknown>>;

interface FieldAnnotations {
  readonly rules?: Rules;
  readonly deprecated: boolean;
  readonly deprecatedAt?: string;
  readonly disallowedByDefault: boolean;
  readonly workInProgress: boolean;
}

interface EnumValueAnnotations {
  readonly deprecated: boolean;
  readonly deprecatedAt?: string;
  readonly disallowedByDefault: boolean;
}

interface TypeAnnotations {
  /** The field numbers of each oneof with `(validate.required)`. */
  readonly requiredOneofs: { readonly name: string; readonly numbers: readonly number[] }[];
  readonly workInProgress: boolean;
  readonly frozen: boolean;
}

/** The messages whose ProtoJSON form is not an object of their fields. */
const CUSTOM_JSON = new Set([
  '.google.protobuf.Any',
  '.google.protobuf.Duration',
  '.google.protobuf.Timestamp',
  '.google.protobuf.FieldMask',
  '.google.protobuf.Struct',
  '.google.protobuf.Value',
  '.google.protobuf.ListValue',
  '.google.protobuf.Empty',
  '.google.protobuf.DoubleValue',
  '.google.protobuf.FloatValue',
  '.google.protobuf.Int64Value',
  '.google.protobuf.UInt64Value',
  '.google.protobuf.Int32Value',
  '.google.protobuf.UInt32Value',
  '.google.protobuf.BoolValue',
  '.google.protobuf.StringValue',
  '.google.protobuf.BytesValue',
]);

const INTEGER_KINDS = new Set([
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
]);

/**
 * protoc-gen-validate's `well_known_regex` patterns (validate.proto), strict and not: a
 * header name `^:?[0-9a-zA-Z!#$%&'*+-.^_|~\x60]+$`; a header value without the control
 * characters U+0000-U+0008, U+000A-U+001F, U+007F; loosely, either without NUL, LF, CR.
 */
const WELL_KNOWN: Readonly<Record<string, (s: string) => boolean>> = {
  HTTP_HEADER_NAME: (s) => /^:?[0-9a-zA-Z!#$%&'*+\-.^_|~`]+$/.test(s),
  HTTP_HEADER_VALUE: (s) =>
    ![...s].some((ch) => isControl(ch.codePointAt(0)!, [0x00, 0x08], [0x0a, 0x1f], [0x7f, 0x7f])),
  LOOSE: (s) => ![...s].some((ch) => isControl(ch.codePointAt(0)!, [0x00, 0x00], [0x0a, 0x0a], [0x0d, 0x0d])),
};

function isControl(c: number, ...ranges: readonly (readonly [number, number])[]): boolean {
  return ranges.some(([lo, hi]) => c >= lo && c <= hi);
}

const isObject = (v: Json): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function record(v: unknown): Record<string, unknown> {
  return isObject(v) ? v : {};
}

/** A Duration's ProtoJSON string (`"0.25s"`) in nanoseconds. */
function durationNanos(s: string): bigint {
  const m = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/.exec(s);
  if (!m) throw new Error(`not a duration: ${s}`);
  const nanos = BigInt(m[2]!) * 1_000_000_000n + BigInt((m[3] ?? '').padEnd(9, '0'));
  return m[1] ? -nanos : nanos;
}

/** A decoded `google.protobuf.Duration` rule bound (`{seconds: "1", nanos: 5}`) in nanoseconds. */
function ruleDurationNanos(d: unknown): bigint {
  const { seconds, nanos } = record(d);
  return BigInt(String(seconds ?? 0)) * 1_000_000_000n + BigInt(Number(nanos ?? 0));
}

/** What Envoy makes of a deprecated field or enum value. */
function deprecation(
  what: string,
  a: { readonly deprecatedAt?: string; readonly disallowedByDefault: boolean },
): string {
  const since = a.deprecatedAt ? ` (since API ${a.deprecatedAt})` : '';
  return a.disallowedByDefault
    ? `${what}deprecated${since} and disallowed by default: Envoy rejects it`
    : `${what}deprecated${since}: Envoy accepts it with a deprecation warning`;
}

export class ProtoDescriptors {
  readonly root: protobuf.Root;
  /** The files of the set, in its order. */
  readonly files: readonly string[];
  private readonly fields = new Map<string, FieldAnnotations>();
  private readonly enumValues = new Map<string, EnumValueAnnotations>();
  private readonly types = new Map<string, TypeAnnotations>();

  /** Loads a binary `FileDescriptorSet` (`protoc --descriptor_set_out`, or `.binpb`). */
  static load(path: string): ProtoDescriptors {
    return new ProtoDescriptors(readFileSync(path));
  }

  constructor(bytes: Uint8Array) {
    this.root = protobuf.Root.fromDescriptor(bytes, { keepCase: true });
    this.root.resolveAll();
    // protobufjs's own descriptor.proto drops the custom options; decoded again with the set's
    // descriptor.proto, which the set's validate.proto and annotations extend, they are kept.
    const FileDescriptorSet = this.root.lookupType('google.protobuf.FileDescriptorSet');
    const set = FileDescriptorSet.toObject(FileDescriptorSet.decode(bytes), {
      longs: String,
      enums: String,
      defaults: false,
    });
    const files = (set.file ?? []) as JsonObject[];
    this.files = files.map((f) => String(f.name));
    for (const file of files) {
      const pkg = file.package ? `.${String(file.package)}` : '';
      const fileStatus = record(record(file.options)['.udpa.annotations.file_status']);
      const frozen = fileStatus.package_version_status === 'FROZEN';
      this.indexMessages(pkg, (file.message_type ?? []) as JsonObject[], frozen);
      this.indexEnums(pkg, (file.enum_type ?? []) as JsonObject[]);
    }
  }

  private indexMessages(scope: string, messages: readonly JsonObject[], frozen: boolean): void {
    for (const m of messages) {
      const name = `${scope}.${String(m.name)}`;
      const fields = (m.field ?? []) as JsonObject[];
      const oneofs = (m.oneof_decl ?? []) as JsonObject[];
      this.types.set(name, {
        requiredOneofs: oneofs
          .map((o, i) => ({
            name: String(o.name),
            required: record(o.options)['.validate.required'] === true,
            numbers: fields.filter((f) => f.oneof_index === i).map((f) => Number(f.number)),
          }))
          .filter((o) => o.required),
        workInProgress:
          record(record(m.options)['.xds.annotations.v3.message_status']).work_in_progress === true,
        frozen,
      });
      for (const f of fields) {
        const options = record(f.options);
        const rules = options['.validate.rules'];
        this.fields.set(`${name}#${String(f.number)}`, {
          ...(isObject(rules) ? { rules: rules as Rules } : {}),
          deprecated: options.deprecated === true,
          ...(typeof options['.envoy.annotations.deprecated_at_minor_version'] === 'string'
            ? { deprecatedAt: options['.envoy.annotations.deprecated_at_minor_version'] }
            : {}),
          disallowedByDefault: options['.envoy.annotations.disallowed_by_default'] === true,
          workInProgress: record(options['.xds.annotations.v3.field_status']).work_in_progress === true,
        });
      }
      this.indexMessages(name, (m.nested_type ?? []) as JsonObject[], frozen);
      this.indexEnums(name, (m.enum_type ?? []) as JsonObject[]);
    }
  }

  private indexEnums(scope: string, enums: readonly JsonObject[]): void {
    for (const e of enums) {
      for (const v of (e.value ?? []) as JsonObject[]) {
        const options = record(v.options);
        this.enumValues.set(`${scope}.${String(e.name)}#${String(v.number)}`, {
          deprecated: options.deprecated === true,
          ...(typeof options['.envoy.annotations.deprecated_at_minor_version_enum'] === 'string'
            ? { deprecatedAt: options['.envoy.annotations.deprecated_at_minor_version_enum'] }
            : {}),
          disallowedByDefault: options['.envoy.annotations.disallowed_by_default_enum'] === true,
        });
      }
    }
  }

  /** Every finding on `json` read as a `typeName` (`google.protobuf.Any` for a typed_config). */
  check(typeName: string, json: Json): ProtoFinding[] {
    const type = this.root.lookupType(typeName);
    try {
      protojson.fromJson(type, json);
    } catch (e) {
      return [{ severity: 'error', path: '', message: `not valid ProtoJSON: ${(e as Error).message}` }];
    }
    const findings: ProtoFinding[] = [];
    this.walkMessage(type, json, '', findings);
    return findings;
  }

  /**
   * A `google.protobuf.Any` document read as Envoy reads it: parsed strictly, packed, then its
   * payload decoded as the `@type` message (proto field names; 64-bit integers as strings).
   * @throws Error when `json` is not valid ProtoJSON for an Any.
   */
  unpackAny(json: Json): { readonly type: string; readonly message: Record<string, unknown> } {
    const any = protojson.fromJson(this.root.lookupType('google.protobuf.Any'), json) as unknown as {
      type_url: string;
      value?: Uint8Array;
    };
    if (!any.type_url) throw new Error('an Any without @type');
    const type = this.root.lookupType(any.type_url.slice(any.type_url.lastIndexOf('/') + 1));
    const message = type.toObject(type.decode(any.value ?? new Uint8Array()), {
      longs: String,
      enums: String,
    });
    return { type: type.fullName.slice(1), message };
  }

  /** `json` has parsed strictly as `type`: its shape is right, only rules and annotations remain. */
  private walkMessage(type: protobuf.Type, json: Json, path: string, out: ProtoFinding[]): void {
    if (type.fullName === '.google.protobuf.Any') {
      const any = json as JsonObject;
      const url = any['@type'];
      if (typeof url !== 'string') {
        out.push({ severity: 'error', path, message: 'an Any without @type: Envoy finds no type for it' });
        return;
      }
      const inner = this.root.lookupType(url.slice(url.lastIndexOf('/') + 1));
      const at = path ? `${path}(${inner.fullName.slice(1)})` : `(${inner.fullName.slice(1)})`;
      if (this.types.get(inner.fullName)?.frozen) {
        out.push({ severity: 'warning', path: at, message: `${url} is in a FROZEN package` });
      }
      if (CUSTOM_JSON.has(inner.fullName)) return;
      const { '@type': _, ...body } = any;
      this.walkMessage(inner, body, at, out);
      return;
    }
    if (CUSTOM_JSON.has(type.fullName)) return;
    const annotations = this.types.get(type.fullName);
    if (annotations?.workInProgress) {
      out.push({ severity: 'warning', path, message: `${type.fullName.slice(1)} is work in progress` });
    }
    const obj = json as JsonObject;
    const present = new Map<number, Json>();
    for (const field of type.fieldsArray) {
      for (const key of new Set([field.name, field.jsonName, field.protoName])) {
        if (Object.hasOwn(obj, key) && obj[key] !== null) present.set(field.id, obj[key]);
      }
    }
    for (const field of type.fieldsArray) {
      const has = present.has(field.id);
      if (field.partOf && !has) continue; // an unset oneof member (or proto3 optional): no rule applies
      const at = path ? `${path}.${field.protoName}` : field.protoName;
      const value = present.get(field.id);
      const a = this.fields.get(`${type.fullName}#${field.id}`);
      if (has && a?.deprecated) {
        out.push({
          severity: a.disallowedByDefault ? 'error' : 'warning',
          path: at,
          message: deprecation('', a),
        });
      }
      if (has && a?.workInProgress) out.push({ severity: 'warning', path: at, message: 'work in progress' });
      if (a?.rules && !this.applyFieldRules(field, a.rules, has, value, at, out)) continue;
      if (has) this.walkValue(field, value, at, out);
    }
    for (const oneof of annotations?.requiredOneofs ?? []) {
      if (!oneof.numbers.some((n) => present.has(n))) {
        const at = path ? `${path}.${oneof.name}` : oneof.name;
        out.push({
          severity: 'error',
          path: at,
          message: 'validate.required: one member of the oneof must be set',
        });
      }
    }
  }

  private walkValue(field: protobuf.Field, value: Json, at: string, out: ProtoFinding[]): void {
    const items: [string, Json][] = field.map
      ? Object.entries(value as JsonObject).map(([k, v]) => [`${at}[${k}]`, v])
      : field.repeated
        ? (value as Json[]).map((v, i) => [`${at}[${i}]`, v])
        : [[at, value]];
    for (const [p, v] of items) {
      if (field.resolvedType instanceof protobuf.Type) this.walkMessage(field.resolvedType, v, p, out);
      else if (field.resolvedType instanceof protobuf.Enum)
        this.checkEnumValue(field.resolvedType, v, p, out);
    }
  }

  private enumNumber(e: protobuf.Enum, v: Json): number {
    return typeof v === 'number' ? v : (e.values[String(v)] ?? Number.NaN);
  }

  private checkEnumValue(e: protobuf.Enum, v: Json, at: string, out: ProtoFinding[]): void {
    const a = this.enumValues.get(`${e.fullName}#${this.enumNumber(e, v)}`);
    if (a?.deprecated) {
      out.push({
        severity: a.disallowedByDefault ? 'error' : 'warning',
        path: at,
        message: deprecation(`enum value ${String(v)} is `, a),
      });
    }
  }

  /** PGV's rules of one field; false when they say not to look inside (`message.skip`). */
  private applyFieldRules(
    field: protobuf.Field,
    rules: Rules,
    has: boolean,
    value: Json,
    at: string,
    out: ProtoFinding[],
  ): boolean {
    const fail = (message: string) =>
      out.push({ severity: 'error', path: at, message: `validate: ${message}` });
    const message = rules.message;
    if (message?.required === true && !has) fail('required');
    if (message?.skip === true) return false;
    const kinds = Object.keys(rules).filter((k) => k !== 'message');
    if (field.map) {
      const r = rules.map;
      const entries = has ? Object.entries(value as JsonObject) : [];
      if (!r) return this.unchecked(kinds, has, at, out);
      if (r.ignore_empty === true && entries.length === 0) return true;
      if (r.min_pairs !== undefined && entries.length < Number(r.min_pairs))
        fail(`at least ${r.min_pairs} entries`);
      if (r.max_pairs !== undefined && entries.length > Number(r.max_pairs))
        fail(`at most ${r.max_pairs} entries`);
      for (const [k, v] of entries) {
        if (isObject(r.keys)) this.applySingular(field, r.keys as Rules, true, k, `${at}[${k}]`, out, true);
        if (isObject(r.values)) this.applySingular(field, r.values as Rules, true, v, `${at}[${k}]`, out);
      }
      return true;
    }
    if (field.repeated) {
      const r = rules.repeated;
      const items = has ? (value as Json[]) : [];
      if (!r) return this.unchecked(kinds, has, at, out);
      if (r.ignore_empty === true && items.length === 0) return true;
      if (r.min_items !== undefined && items.length < Number(r.min_items))
        fail(`at least ${r.min_items} items`);
      if (r.max_items !== undefined && items.length > Number(r.max_items))
        fail(`at most ${r.max_items} items`);
      if (r.unique === true && new Set(items.map((i) => JSON.stringify(i))).size !== items.length) {
        fail('items must be unique');
      }
      if (isObject(r.items)) {
        items.forEach((v, i) => {
          this.applySingular(field, r.items as Rules, true, v, `${at}[${i}]`, out);
        });
      }
      return true;
    }
    this.applySingular(field, rules, has, value, at, out);
    return true;
  }

  private unchecked(kinds: readonly string[], has: boolean, at: string, out: ProtoFinding[]): boolean {
    if (has && kinds.length > 0) {
      out.push({
        severity: 'unchecked',
        path: at,
        message: `validate rules ${kinds.join(', ')} not checked`,
      });
    }
    return true;
  }

  /** The rules of one value: a scalar (its default when absent), an enum, a wrapper or a WKT. */
  private applySingular(
    field: protobuf.Field,
    rules: Rules,
    has: boolean,
    value: Json,
    at: string,
    out: ProtoFinding[],
    mapKey = false,
  ): void {
    const fail = (message: string) =>
      out.push({ severity: 'error', path: at, message: `validate: ${message}` });
    const unchecked = (what: string) =>
      out.push({ severity: 'unchecked', path: at, message: `validate rule ${what} not checked` });
    const resolved = mapKey ? null : field.resolvedType;
    const isMessage = resolved instanceof protobuf.Type;
    for (const [kind, r] of Object.entries(rules)) {
      if (kind === 'message') continue;
      if (kind === 'duration' || kind === 'timestamp' || kind === 'any') {
        if (r.required === true && !has) fail('required');
        if (!has) continue;
        if (kind === 'duration') this.durationRules(r, durationNanos(String(value)), fail);
        else if (kind === 'any') {
          const url = String((value as JsonObject)['@type']);
          if (Array.isArray(r.in) && !r.in.includes(url)) fail(`type ${url} not in ${r.in.join(', ')}`);
          if (Array.isArray(r.not_in) && r.not_in.includes(url)) fail(`type ${url} not allowed`);
        } else if (Object.keys(r).some((k) => k !== 'required'))
          unchecked(`timestamp.${Object.keys(r).join(',')}`);
        continue;
      }
      // A wrapper's scalar rule applies to its value when it is set; a scalar's, to its default when not.
      if (isMessage && !has) continue;
      if (kind === 'string') {
        this.stringRules(r, has ? String(value) : '', fail, unchecked);
      } else if (kind === 'bool') {
        const b = has ? value === true || value === 'true' : false;
        if (r.const !== undefined && b !== r.const) fail(`must be ${String(r.const)}`);
      } else if (kind === 'enum') {
        const e = resolved instanceof protobuf.Enum ? resolved : null;
        const n = has && e ? this.enumNumber(e, value) : 0;
        if (r.defined_only === true && e && e.valuesById[n] === undefined)
          fail(`${n} is not a defined value`);
        this.inRules(r, n, fail);
        if (r.const !== undefined && n !== Number(r.const)) fail(`must be ${String(r.const)}`);
      } else if (kind === 'double' || kind === 'float') {
        this.numberRules(r, has ? Number(value) : 0, Number, fail);
      } else if (INTEGER_KINDS.has(kind)) {
        this.numberRules(r, has ? BigInt(value as string | number) : 0n, (x) => BigInt(String(x)), fail);
      } else if (has || kind !== 'bytes') {
        unchecked(kind);
      }
    }
  }

  private stringRules(
    r: Record<string, unknown>,
    s: string,
    fail: (m: string) => void,
    unchecked: (m: string) => void,
  ): void {
    if (r.ignore_empty === true && s === '') return;
    const chars = [...s].length;
    const bytes = Buffer.byteLength(s);
    for (const [rule, bound] of Object.entries(r)) {
      const n = Number(bound);
      switch (rule) {
        case 'const':
          if (s !== bound) fail(`must be ${JSON.stringify(bound)}`);
          break;
        case 'len':
          if (chars !== n) fail(`length must be ${n}`);
          break;
        case 'min_len':
          if (chars < n) fail(`length must be at least ${n}`);
          break;
        case 'max_len':
          if (chars > n) fail(`length must be at most ${n}`);
          break;
        case 'len_bytes':
          if (bytes !== n) fail(`must be ${n} bytes`);
          break;
        case 'min_bytes':
          if (bytes < n) fail(`must be at least ${n} bytes`);
          break;
        case 'max_bytes':
          if (bytes > n) fail(`must be at most ${n} bytes`);
          break;
        case 'prefix':
          if (!s.startsWith(String(bound))) fail(`must start with ${JSON.stringify(bound)}`);
          break;
        case 'suffix':
          if (!s.endsWith(String(bound))) fail(`must end with ${JSON.stringify(bound)}`);
          break;
        case 'contains':
          if (!s.includes(String(bound))) fail(`must contain ${JSON.stringify(bound)}`);
          break;
        case 'not_contains':
          if (s.includes(String(bound))) fail(`must not contain ${JSON.stringify(bound)}`);
          break;
        case 'pattern':
          // RE2 and JavaScript agree on the syntax Envoy's patterns use.
          if (!new RegExp(String(bound), 'u').test(s)) fail(`must match /${String(bound)}/`);
          break;
        case 'in':
        case 'not_in':
          if (Array.isArray(bound) && (rule === 'in') !== bound.includes(s))
            fail(`${rule} ${bound.join(', ')}`);
          break;
        case 'well_known_regex': {
          const strict = r.strict !== false;
          const valid =
            bound === 'HTTP_HEADER_NAME' || bound === 'HTTP_HEADER_VALUE'
              ? WELL_KNOWN[strict ? bound : 'LOOSE']
              : undefined;
          if (!valid) unchecked(`string.well_known_regex ${String(bound)}`);
          else if (!valid(s)) fail(`not a valid ${String(bound)}`);
          break;
        }
        case 'strict':
        case 'ignore_empty':
          break;
        default:
          unchecked(`string.${rule}`);
      }
    }
  }

  private inRules(r: Record<string, unknown>, n: number, fail: (m: string) => void): void {
    if (Array.isArray(r.in) && !r.in.map(Number).includes(n)) fail(`${n} not in ${r.in.join(', ')}`);
    if (Array.isArray(r.not_in) && r.not_in.map(Number).includes(n)) fail(`${n} not allowed`);
  }

  private durationRules(r: Record<string, unknown>, v: bigint, fail: (m: string) => void): void {
    const bounded = Object.fromEntries(
      ['lt', 'lte', 'gt', 'gte', 'const']
        .filter((k) => r[k] !== undefined)
        .map((k) => [k, ruleDurationNanos(r[k])]),
    ) as Partial<Record<'lt' | 'lte' | 'gt' | 'gte' | 'const', bigint>>;
    if (bounded.const !== undefined && v !== bounded.const) fail(`duration must be ${bounded.const}ns`);
    this.rangeRules(bounded, v, (m) => fail(`duration of ${v}ns ${m} (in ns)`));
    const list = (k: string) => (Array.isArray(r[k]) ? (r[k] as unknown[]).map(ruleDurationNanos) : null);
    const inList = list('in');
    const notIn = list('not_in');
    if (inList && !inList.includes(v)) fail(`duration ${v}ns not in the allowed set`);
    if (notIn?.includes(v)) fail(`duration ${v}ns not allowed`);
  }

  private numberRules<T extends number | bigint>(
    r: Record<string, unknown>,
    v: T,
    of: (x: unknown) => T,
    fail: (m: string) => void,
  ): void {
    if (r.ignore_empty === true && (v === 0 || v === 0n)) return;
    const bounded = Object.fromEntries(
      ['lt', 'lte', 'gt', 'gte'].filter((k) => r[k] !== undefined).map((k) => [k, of(r[k])]),
    ) as Partial<Record<'lt' | 'lte' | 'gt' | 'gte', T>>;
    if (r.const !== undefined && v !== of(r.const)) fail(`must be ${String(r.const)}`);
    this.rangeRules(bounded, v, (m) => fail(`${v} ${m}`));
    if (Array.isArray(r.in) && !r.in.map(of).includes(v)) fail(`${v} not in ${r.in.join(', ')}`);
    if (Array.isArray(r.not_in) && r.not_in.map(of).includes(v)) fail(`${v} not allowed`);
  }

  /** PGV's ranges: with both bounds, `lower < upper` is an inside range, otherwise an outside one. */
  private rangeRules<T extends number | bigint>(
    b: Partial<Record<'lt' | 'lte' | 'gt' | 'gte', T>>,
    v: T,
    fail: (m: string) => void,
  ): void {
    const upper = b.lt ?? b.lte;
    const lower = b.gt ?? b.gte;
    const belowUpper = upper === undefined || (b.lt !== undefined ? v < upper : v <= upper);
    const aboveLower = lower === undefined || (b.gt !== undefined ? v > lower : v >= lower);
    const describe = [
      b.gt !== undefined ? `> ${b.gt}` : b.gte !== undefined ? `>= ${b.gte}` : '',
      b.lt !== undefined ? `< ${b.lt}` : b.lte !== undefined ? `<= ${b.lte}` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    const ok =
      upper !== undefined && lower !== undefined && upper < lower
        ? belowUpper || aboveLower
        : belowUpper && aboveLower;
    if (!ok) fail(`must be ${describe}`);
  }
}
