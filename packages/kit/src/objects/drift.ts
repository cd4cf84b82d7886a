/**
 * Drift: would server-side applying `desired` change the live object? A reconciler
 * asks before it applies, so that a resync of thousands of unchanged objects makes
 * no write at all: the apiserver would accept a no-op apply, but each one is a
 * request, an admission pass and an etcd round trip.
 *
 * Only what `desired` states is compared, the way an apply only touches the fields it
 * sends: fields others own, server defaults, status and bookkeeping are not ours to
 * compare. Pure; the answer names the first differing path, for the log line that
 * says why an object was written.
 */
import type { KubeObject, ManagedFieldsEntry } from '../client/types.ts';

/** Why an object is drifted. */
export const DriftReason = {
  /** There is no live object: it must be created. */
  Absent: 'Absent',
  /** A field we state is missing from the live object. */
  FieldMissing: 'FieldMissing',
  /** A field we state has another value live (or another type). */
  ValueDiffers: 'ValueDiffers',
  /** A list we state has another length live. Lists are compared as wholes, element by element in order. */
  ListDiffers: 'ListDiffers',
  /**
   * A field our field manager owns live is no longer in `desired`: the apply would
   * remove it. Only detected with {@link DriftOptions.fieldManager}.
   */
  FieldDropped: 'FieldDropped',
} as const;
export type DriftReason = (typeof DriftReason)[keyof typeof DriftReason];

export type DriftResult =
  | { readonly drifted: false }
  | {
      readonly drifted: true;
      readonly reason: DriftReason;
      /** Where, e.g. `spec.template.spec.containers[0].image`; values are left out, as they may be secret. */
      readonly path: string;
    };

export interface DriftOptions {
  /**
   * The field manager our applies use. When given, and the live object still carries
   * `managedFields`, a field this manager applied before but `desired` no longer
   * states counts as drift: applying would remove it. Without it, stopping to state
   * a field is not noticed until something else changes.
   */
  readonly fieldManager?: string;
}

/** Top-level fields never compared: identity (apiVersion, kind) and what an apply to the main resource cannot set. */
const IGNORED_TOP_LEVEL: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'status']);

/** Metadata the apiserver writes; stating it in `desired` (say, a copied resourceVersion) is not a change. */
const IGNORED_METADATA: ReadonlySet<string> = new Set([
  'managedFields',
  'resourceVersion',
  'uid',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'selfLink',
]);

const IN_SYNC: DriftResult = { drifted: false };

/**
 * Whether applying `desired` would change `live`, comparing the fields `desired` states:
 *
 * - objects (maps) key by key: keys only the live object has are ignored, so labels
 *   and annotations are compared one by one, and server defaults do not count;
 * - lists as wholes: same length, elements compared in order by the same rules
 *   (so defaults filled into list elements, such as a container's
 *   `terminationMessagePath`, do not count); except `metadata.finalizers` (each of
 *   ours present) and `metadata.ownerReferences` (each of ours present, by uid),
 *   which other writers extend;
 * - scalars by value. A stated `null` is no statement. A stated `false`, `0`, `""`,
 *   `{}` or `[]` is satisfied by an absent field, because the apiserver drops such
 *   values of built-in `omitempty` fields, and they would otherwise drift forever.
 *
 * Caveats: values the apiserver normalises (quantities such as `0.5` → `500m`,
 * Secret `stringData` → `data`) drift forever; state them in their stored form.
 */
export function drift(
  desired: KubeObject,
  live: KubeObject | undefined,
  opts: DriftOptions = {},
): DriftResult {
  if (live === undefined) return { drifted: true, reason: DriftReason.Absent, path: '' };
  for (const [key, value] of Object.entries(desired)) {
    if (IGNORED_TOP_LEVEL.has(key)) continue;
    const d =
      key === 'metadata' ? compareMetadata(desired.metadata, live.metadata) : compare(value, live[key], key);
    if (d !== undefined) return d;
  }
  if (opts.fieldManager !== undefined) {
    const owned = appliedFields(live.metadata.managedFields, opts.fieldManager);
    if (owned !== undefined) {
      const path = droppedField(owned, desired, '');
      if (path !== undefined) return { drifted: true, reason: DriftReason.FieldDropped, path };
    }
  }
  return IN_SYNC;
}

/** `drift(...).drifted`. */
export function hasDrifted(
  desired: KubeObject,
  live: KubeObject | undefined,
  opts: DriftOptions = {},
): boolean {
  return drift(desired, live, opts).drifted;
}

type Drifted = Extract<DriftResult, { drifted: true }>;

function compareMetadata(desired: KubeObject['metadata'], live: KubeObject['metadata']): Drifted | undefined {
  for (const [key, value] of Object.entries(desired)) {
    if (IGNORED_METADATA.has(key)) continue;
    const path = `metadata.${key}`;
    const d =
      key === 'finalizers'
        ? containsAll(value, live.finalizers, path, (a, b) => a === b)
        : key === 'ownerReferences'
          ? containsAll(value, live.ownerReferences, path, (a, b) => sameUid(a, b) && !compare(a, b, path))
          : compare(value, (live as Record<string, unknown>)[key], path);
    if (d !== undefined) return d;
  }
  return undefined;
}

/** Each element of `desired` (a list) has a match in `live`: for lists that other writers extend. */
function containsAll(
  desired: unknown,
  live: readonly unknown[] | undefined,
  path: string,
  matches: (d: unknown, l: unknown) => boolean,
): Drifted | undefined {
  if (!Array.isArray(desired)) return compare(desired, live, path);
  for (const [i, d] of desired.entries()) {
    if (!(live ?? []).some((l) => matches(d, l))) {
      return { drifted: true, reason: DriftReason.FieldMissing, path: `${path}[${i}]` };
    }
  }
  return undefined;
}

function sameUid(a: unknown, b: unknown): boolean {
  return isObject(a) && isObject(b) && a.uid === b.uid;
}

/** The first difference of what `desired` states from `live`, or undefined. */
function compare(desired: unknown, live: unknown, path: string): Drifted | undefined {
  if (desired === null || desired === undefined) return undefined;
  if (Array.isArray(desired)) {
    if (live === undefined || live === null) {
      return desired.length === 0 ? undefined : { drifted: true, reason: DriftReason.FieldMissing, path };
    }
    if (!Array.isArray(live)) return { drifted: true, reason: DriftReason.ValueDiffers, path };
    if (live.length !== desired.length) return { drifted: true, reason: DriftReason.ListDiffers, path };
    for (const [i, d] of desired.entries()) {
      const diff = compare(d, live[i], `${path}[${i}]`);
      if (diff !== undefined) return diff;
    }
    return undefined;
  }
  if (isObject(desired)) {
    if (live !== undefined && live !== null && !isObject(live)) {
      return { drifted: true, reason: DriftReason.ValueDiffers, path };
    }
    const l = isObject(live) ? live : {};
    for (const [key, d] of Object.entries(desired)) {
      const diff = compare(d, l[key], child(path, key));
      if (diff !== undefined) return diff;
    }
    return undefined;
  }
  if (live === undefined || live === null) {
    return isZero(desired) ? undefined : { drifted: true, reason: DriftReason.FieldMissing, path };
  }
  return desired === live ? undefined : { drifted: true, reason: DriftReason.ValueDiffers, path };
}

function isZero(v: unknown): boolean {
  return v === false || v === 0 || v === '';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `spec.replicas`, or `metadata.labels["app.kubernetes.io/name"]` for keys that are not identifiers. */
function child(path: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** The fields `manager` owns through server-side apply on the main resource, as a fieldsV1 tree. */
function appliedFields(
  entries: readonly ManagedFieldsEntry[] | undefined,
  manager: string,
): Readonly<Record<string, unknown>> | undefined {
  const e = entries?.find((m) => m.manager === manager && m.operation === 'Apply' && !m.subresource);
  return e?.fieldsV1;
}

/**
 * The first field in a fieldsV1 tree (`f:name` for a field, `k:{...}` for a list
 * element by key, `v:value` for a set element, `i:n` by index, `.` for the node
 * itself) that `desired` does not state.
 */
function droppedField(
  owned: Readonly<Record<string, unknown>>,
  desired: unknown,
  path: string,
): string | undefined {
  for (const [k, sub] of Object.entries(owned)) {
    if (k === '.') continue;
    const tag = k.slice(0, 2);
    const rest = k.slice(2);
    let next: unknown;
    let at: string;
    switch (tag) {
      case 'f:':
        if (path === 'metadata' && IGNORED_METADATA.has(rest)) continue;
        next = isObject(desired) ? desired[rest] : undefined;
        at = child(path, rest);
        break;
      case 'k:': {
        const keyFields = parseJson(rest);
        next =
          Array.isArray(desired) && isObject(keyFields)
            ? desired.find((e) => isObject(e) && matchesKey(e, keyFields))
            : undefined;
        at = `${path}[${rest}]`;
        break;
      }
      case 'v:': {
        const value = parseJson(rest);
        next = Array.isArray(desired) && desired.some((e) => equalJson(e, value)) ? value : undefined;
        at = `${path}[${rest}]`;
        break;
      }
      case 'i:':
        next = Array.isArray(desired) ? desired[Number(rest)] : undefined;
        at = `${path}[${rest}]`;
        break;
      default:
        continue;
    }
    if (next === undefined || next === null) return at;
    if (isObject(sub) && Object.keys(sub).some((x) => x !== '.')) {
      const deeper = droppedField(sub, next, at);
      if (deeper !== undefined) return deeper;
    }
  }
  return undefined;
}

/**
 * A desired list element is the owned one if its key fields match. A key field it
 * leaves out matches: the apiserver defaults some (a port's `protocol`) before it
 * records the key, and the element would otherwise seem dropped on every check.
 */
function matchesKey(element: Record<string, unknown>, keyFields: Record<string, unknown>): boolean {
  return Object.entries(keyFields).every(([k, v]) => element[k] === undefined || equalJson(element[k], v));
}

function equalJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => equalJson(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => equalJson(a[k], b[k]));
  }
  return false;
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
