/**
 * The writes the plugins share, for objects one grant wholly owns (bindings, Kubeflow
 * objects): make a cluster hold exactly the desired set of one kind, writing nothing
 * when it already does (a resync must make zero writes), and remove only what carries
 * the grant's labels. Thin I/O; the objects themselves are computed in
 * src/domain/plugins/.
 *
 * Cost of a resync: one list per kind (by the grant's label selector, across
 * namespaces) and nothing else when every object is there and unchanged. An object
 * missing from that list is read by name first, because a same-named object written by
 * someone else must be seen before it is overwritten (unless the list was by name, which
 * shows it already).
 */
import {
  ApiErrorReason,
  type GroupVersionKind,
  isApiError,
  type JsonValue,
  jsonEqual,
  type KubeClient,
  type KubeObject,
} from '@operators/kit';
import type { PluginObject, PluginObjectRef } from '../api/role-status.ts';
import { claimOf, type Grant, grantSelector, type PluginName, writerOf } from '../domain/plugins/grant.ts';

/** Whether every field of `want` is in `have` with the same value (lists compared whole, in order). */
export function holds(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => holds(have[i], w));
  }
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return false;
    const h = have as Record<string, unknown>;
    return Object.entries(want).every(([k, v]) => v === undefined || holds(h[k], v));
  }
  return have === want;
}

const keyOf = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

/** The reference of an object for PluginObject.objects. */
export function refOf(o: KubeObject): PluginObjectRef {
  const ref = { apiVersion: o.apiVersion ?? '', kind: o.kind ?? '', name: o.metadata.name ?? '' };
  return o.metadata.namespace ? { ...ref, namespace: o.metadata.namespace } : ref;
}

/** `Kind ns/name` for messages. */
export function describe(o: KubeObject | PluginObjectRef): string {
  const meta = 'metadata' in o ? o.metadata : o;
  const where = meta.namespace ? `${meta.namespace}/${meta.name}` : (meta.name ?? '');
  return `${o.kind} ${where}`;
}

/** What syncing or removing a set of objects did. */
export interface SetResult {
  /** The objects the cluster holds for the grant (ours, now matching). */
  readonly objects: PluginObjectRef[];
  /** Failures, one line each: the apiserver's answer, or the connection error. */
  readonly errors: string[];
  /** Same-named objects someone else holds, left alone. */
  readonly foreign: { readonly ref: PluginObjectRef; readonly writer: string }[];
}

export interface SyncOptions {
  /** The plugin writing: its objects are told apart from other plugins' by label. */
  readonly plugin: PluginName;
  /** Restricts the list of what the grant holds (e.g. `metadata.name=<binding name>`). */
  readonly fieldSelector?: string;
}

/**
 * Makes the cluster hold `desired` (all of kind `gvk`) for `grant`: applies each that is
 * missing or differs, leaves each that someone else holds, and deletes what the grant
 * holds beyond it (by label, in any namespace). Never throws: errors are collected.
 */
export async function syncSet(
  client: KubeClient,
  gvk: GroupVersionKind,
  grant: Grant,
  desired: readonly KubeObject[],
  fieldManager: string,
  opts: SyncOptions,
): Promise<SetResult> {
  const result: SetResult = { objects: [], errors: [], foreign: [] };
  // Restricted by name, the list is asked without the label selector: it then shows the
  // same-named objects of others too, and a missing object needs no GET of its own (one
  // request per binding fewer when a grant is first written: 2 × 2,600 for the issue's
  // 1,000 UserRoles). What the grant holds is the part carrying all its labels, exactly
  // what the label selector would have listed.
  const byName = opts.fieldSelector !== undefined;
  let listed: KubeObject[];
  try {
    listed = (
      await client.listAll(gvk, {
        ...(byName ? {} : { labelSelector: grantSelector(grant, opts.plugin) }),
        fieldSelector: opts.fieldSelector,
      })
    ).items;
  } catch (err) {
    result.errors.push(`list ${gvk.kind}: ${failureMessage(err)}`);
    return result;
  }
  const held = byName
    ? listed.filter((o) => claimOf(o.metadata.labels, grant, opts.plugin) === 'ours')
    : listed;
  const heldByKey = new Map(held.map((o) => [keyOf(o), o]));
  const sameNamed = byName ? new Map(listed.map((o) => [keyOf(o), o])) : undefined;
  for (const want of desired) {
    try {
      const live =
        heldByKey.get(keyOf(want)) ??
        (sameNamed
          ? sameNamed.get(keyOf(want))
          : await client.find(gvk, want.metadata.name ?? '', want.metadata.namespace));
      if (live && claimOf(live.metadata.labels, grant, opts.plugin) === 'foreign') {
        result.foreign.push({ ref: refOf(want), writer: writerOf(live.metadata.labels) });
        continue;
      }
      if (!live || !holds(live, applyBody(want))) await client.apply(want, { fieldManager, force: true });
      result.objects.push(refOf(want));
    } catch (err) {
      result.errors.push(`${describe(want)}: ${failureMessage(err)}`);
    }
  }
  const wanted = new Set(desired.map(keyOf));
  for (const stale of held.filter((o) => !wanted.has(keyOf(o)))) {
    await removeOne(client, gvk, stale, result);
  }
  return result;
}

/**
 * A grant's first write, for when the role's status says nothing was ever granted there:
 * plain creates, no read before them (a create is what a bare loop would send, and an
 * apiserver serves it for less than an apply or a list). `undefined` as soon as a name
 * is taken: ours from a pass whose status was never recorded, or someone else's; the
 * caller then falls back to {@link syncSet}, which reads, tells the two apart and
 * decides. Never throws.
 */
export async function createSet(
  client: KubeClient,
  desired: readonly KubeObject[],
  fieldManager: string,
): Promise<SetResult | undefined> {
  const result: SetResult = { objects: [], errors: [], foreign: [] };
  for (const want of desired) {
    try {
      await client.create(want, { fieldManager });
      result.objects.push(refOf(want));
    } catch (err) {
      if (isApiError(err, ApiErrorReason.AlreadyExists)) return undefined;
      result.errors.push(`${describe(want)}: ${failureMessage(err)}`);
    }
  }
  return result;
}

/** Deletes everything of kind `gvk` the grant holds (by label, in any namespace). Never throws. */
export async function removeSet(
  client: KubeClient,
  gvk: GroupVersionKind,
  grant: Grant,
  opts: SyncOptions,
): Promise<SetResult> {
  return syncSet(client, gvk, grant, [], '', opts);
}

async function removeOne(
  client: KubeClient,
  gvk: GroupVersionKind,
  o: KubeObject,
  result: SetResult,
): Promise<void> {
  try {
    // The uid precondition: only the incarnation we listed (and saw our labels on).
    await client.delete(gvk, o.metadata.name ?? '', o.metadata.namespace, { uid: o.metadata.uid });
  } catch (err) {
    // Conflict: the name now holds another object, which is not ours to delete.
    if (!isApiError(err, ApiErrorReason.Conflict)) {
      result.errors.push(`delete ${gvk.kind} ${keyOf(o)}: ${failureMessage(err)}`);
    }
  }
}

/** What of an apply configuration the live object must hold for the write to be skipped. */
function applyBody(desired: KubeObject): unknown {
  const { metadata, apiVersion: _a, kind: _k, ...body } = desired as KubeObject & Record<string, unknown>;
  return { metadata: { labels: metadata.labels, annotations: metadata.annotations }, ...body };
}

/**
 * Whether the cluster serves `gvk`; false when its CRD is not installed (discovery has
 * no such kind). Other errors (unreachable, forbidden) propagate.
 */
export async function serves(client: KubeClient, gvk: GroupVersionKind): Promise<boolean> {
  try {
    await client.resolve(gvk);
    return true;
  } catch (err) {
    if (isApiError(err, ApiErrorReason.NotFound)) return false;
    throw err;
  }
}

/**
 * A failure as one line: the kit's ApiError message (the request, the reason and code,
 * and the apiserver's own message) or the error's message (a deadline, a refused
 * connection).
 */
export function failureMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Set results as one PluginObject: Failed with every error when there is any, else
 * Applied. Objects someone else holds are notes (the plugin's grant stands through
 * them: Kubeflow's own objects of the same name), or errors with `foreignIsError`
 * (the grant is not given: a binding name taken by another).
 */
export function outcome(
  results: readonly SetResult[],
  opts: { readonly errors?: readonly string[]; readonly foreignIsError?: boolean } = {},
): PluginObject {
  const objects = results.flatMap((r) => r.objects);
  const foreign = results.flatMap((r) => r.foreign.map((f) => `${describe(f.ref)} is held by ${f.writer}`));
  const errors = [
    ...(opts.errors ?? []),
    ...results.flatMap((r) => r.errors),
    ...(opts.foreignIsError ? foreign.map((f) => `${f}: not ours to overwrite`) : []),
  ];
  const notes = opts.foreignIsError ? [] : foreign.map((f) => `${f}; left as is`);
  const message = [...errors, ...notes].join('; ');
  const base = { status: errors.length > 0 ? ('Failed' as const) : ('Applied' as const), objects };
  return message ? { ...base, message } : base;
}

/** Whether two JSON values are equal, object key order aside (the apiserver may reorder keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  return jsonEqual(a as JsonValue, b as JsonValue);
}
