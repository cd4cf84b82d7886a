/**
 * Tamper: what others did to the objects we publish, and what to do about it.
 *
 * An apply compares only the fields it states, and a forced apply takes back only those:
 * a key another manager added to `endpointSelector.matchLabels` (narrowing the policy to
 * fewer endpoints), an allow rule added under `spec`, a data key added to a decider
 * ConfigMap would stay forever, invisible. So drift is judged by field ownership, the way
 * server-side apply judges it, from `metadata.managedFields`:
 *
 * - a field we state that differs, or that we owned and no longer state: rewrite it (the
 *   kit's `drift`, plus the atomic fields the kit cannot look into: `endpointSelector`
 *   is atomic in Cilium's schema, so our ownership of it is one leaf, and a selector key
 *   dropped from `podSelector` is found here);
 * - a field under the content (everything but `metadata` and `status`) that we do not
 *   state and another manager owns: someone else added it. A forced apply leaves such
 *   fields in place, so they are removed first by a JSON patch (`repairPatch`), guarded by
 *   a `test` of the resourceVersion the paths were computed on. The patch removes only
 *   what we do not state: a field we state is never removed, only rewritten by the apply
 *   that follows, so repair opens no gap in what is blocked.
 *
 * Labels, annotations and owner references others add are theirs and stay; `status` is
 * Cilium's and is never written. A field nobody owns (a server default) is not drift:
 * removing it would only see it defaulted again. An object without any managedFields
 * (stripped by hand) is treated as the apiserver treats it on the next apply: every field
 * belongs to someone else (`before-first-apply`).
 *
 * Generic over kinds: it knows field ownership, not BlocklistSources. Pure.
 */
import {
  DriftReason,
  drift,
  type JsonPatchOp,
  type JsonValue,
  jsonEqual,
  type KubeObject,
  type ManagedFieldsEntry,
} from '@operators/kit';

/** Why a published object is rewritten: the kit's reasons, and one of ours. */
export const TamperReason = {
  ...DriftReason,
  /**
   * A field under the content that we do not state and another field manager owns:
   * someone else added it (a selector key, a rule, a CIDR, a data key). Removed, then
   * the object is applied again.
   */
  AddedByOthers: 'AddedByOthers',
} as const;
export type TamperReason = (typeof TamperReason)[keyof typeof TamperReason];

export type Tamper =
  | { readonly drifted: false }
  | {
      readonly drifted: true;
      readonly reason: TamperReason;
      /** The first such path, e.g. `spec.endpointSelector.matchLabels.zone`: for the log. */
      readonly path: string;
    };

/** Top-level fields that are not an object's content. */
const NOT_CONTENT: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'metadata', 'status']);

type Tree = Readonly<Record<string, unknown>>;

/** Who owns one node: wholly (an atomic ancestor, or a leaf), or in part through these subtrees. */
interface Owners {
  readonly whole: boolean;
  readonly trees: readonly Tree[];
}

const NOBODY: Owners = { whole: false, trees: [] };
const EVERYONE: Owners = { whole: true, trees: [] };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function owns(o: Owners): boolean {
  return o.whole || o.trees.length > 0;
}

/** A fieldsV1 node with no children but `.` owns its whole value. */
function isLeaf(t: Tree): boolean {
  return Object.keys(t).every((k) => k === '.');
}

function descend(o: Owners, pick: (t: Tree) => unknown): Owners {
  if (o.whole) return EVERYONE;
  const trees: Tree[] = [];
  for (const t of o.trees) {
    const c = pick(t);
    if (!isObject(c)) continue;
    if (isLeaf(c)) return EVERYONE;
    trees.push(c);
  }
  return trees.length ? { whole: false, trees } : NOBODY;
}

function fieldOwners(o: Owners, key: string): Owners {
  return descend(o, (t) => t[`f:${key}`]);
}

/** The owners of element `i` of a list, by index (`i:`), value (`v:`) or key fields (`k:`). */
function elementOwners(o: Owners, element: unknown, i: number): Owners {
  return descend(o, (t) => {
    for (const [k, sub] of Object.entries(t)) {
      const tag = k.slice(0, 2);
      const rest = k.slice(2);
      if (tag === 'i:' && Number(rest) === i) return sub;
      if (tag === 'v:' && equalJson(parseJson(rest), element)) return sub;
      if (tag === 'k:') {
        const key = parseJson(rest);
        if (
          isObject(key) &&
          isObject(element) &&
          Object.entries(key).every(([f, v]) => equalJson(element[f], v))
        )
          return sub;
      }
    }
    return undefined;
  });
}

/** Our trees and the others' (main resource only: status is a subresource). */
function ownersOf(live: KubeObject, fieldManager: string): { ours: Owners; others: Owners } {
  const entries: readonly ManagedFieldsEntry[] = live.metadata.managedFields ?? [];
  if (entries.length === 0) return { ours: NOBODY, others: EVERYONE };
  const trees = (mine: boolean): Owners => {
    const ts = entries
      .filter((e) => !e.subresource && (e.manager === fieldManager) === mine && isObject(e.fieldsV1))
      .map((e) => e.fieldsV1 as Tree);
    return ts.length ? { whole: false, trees: ts } : NOBODY;
  };
  return { ours: trees(true), others: trees(false) };
}

/** A path in both forms: JSON pointer for the patch, dotted for the log. */
interface Path {
  readonly pointer: string;
  readonly display: string;
}

function childPath(p: Path, key: string | number): Path {
  const k = String(key);
  const display =
    typeof key === 'number'
      ? `${p.display}[${key}]`
      : /^[A-Za-z_$][\w$-]*$/.test(k)
        ? p.display === ''
          ? k
          : `${p.display}.${k}`
        : `${p.display}[${JSON.stringify(k)}]`;
  return { pointer: `${p.pointer}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`, display };
}

interface Findings {
  /** Fields others added, in document order. */
  readonly foreign: Path[];
  /** The first field we own but no longer state. */
  dropped?: Path;
}

/**
 * Walks `live` against what `desired` states. A live field `desired` does not state is
 * foreign if another manager owns it, dropped if only we do, and nobody's (a default)
 * otherwise. A list element is stated when some element of the desired list states
 * nothing it contradicts (the kit's rule: fields only live has do not count).
 */
function walk(live: unknown, desired: unknown, ours: Owners, others: Owners, at: Path, out: Findings): void {
  const unstated = (o: Owners, x: Owners, p: Path) => {
    if (owns(x)) out.foreign.push(p);
    else if (owns(o)) out.dropped ??= p;
  };
  if (isObject(live)) {
    const d = isObject(desired) ? desired : {};
    for (const [k, v] of Object.entries(live)) {
      const o = fieldOwners(ours, k);
      const x = fieldOwners(others, k);
      const p = childPath(at, k);
      if (d[k] === undefined || d[k] === null) unstated(o, x, p);
      else walk(v, d[k], o, x, p, out);
    }
  } else if (Array.isArray(live)) {
    const ds = Array.isArray(desired) ? desired : [];
    for (const [i, e] of live.entries()) {
      const o = elementOwners(ours, e, i);
      const x = elementOwners(others, e, i);
      const p = childPath(at, i);
      const match = statesNothingElse(ds[i], e) ? ds[i] : ds.find((d) => statesNothingElse(d, e));
      if (match === undefined) unstated(o, x, p);
      else walk(e, match, o, x, p, out);
    }
  }
}

/** Every field `desired` states has its value in `live` (lists element by element, same length). */
function statesNothingElse(desired: unknown, live: unknown): boolean {
  if (desired === undefined) return false;
  if (isObject(desired)) {
    if (!isObject(live)) return false;
    return Object.entries(desired).every(
      ([k, d]) => d === undefined || d === null || statesNothingElse(d, live[k]),
    );
  }
  if (Array.isArray(desired)) {
    return (
      Array.isArray(live) &&
      live.length === desired.length &&
      desired.every((d, i) => statesNothingElse(d, live[i]))
    );
  }
  return desired === live;
}

function findings(desired: KubeObject, live: KubeObject, fieldManager: string): Findings {
  const { ours, others } = ownersOf(live, fieldManager);
  const out: Findings = { foreign: [] };
  const root: Path = { pointer: '', display: '' };
  for (const [k, v] of Object.entries(live)) {
    if (NOT_CONTENT.has(k)) continue;
    const p = childPath(root, k);
    const o = fieldOwners(ours, k);
    const x = fieldOwners(others, k);
    const d = desired[k];
    if (d === undefined || d === null) {
      if (owns(x)) out.foreign.push(p);
      else if (owns(o)) out.dropped ??= p;
    } else walk(v, d, o, x, p, out);
  }
  return out;
}

/**
 * Would publishing `desired` change `live`? The kit's drift on what we state (and what
 * our manager owned), then fields others added under the content, then atomic fields we
 * own holding more than we state. Pure.
 */
export function tamper(desired: KubeObject, live: KubeObject | undefined, fieldManager: string): Tamper {
  const d = drift(desired, live, { fieldManager });
  if (d.drifted || live === undefined) return d;
  const f = findings(desired, live, fieldManager);
  const first = f.foreign[0];
  if (first) return { drifted: true, reason: TamperReason.AddedByOthers, path: first.display };
  if (f.dropped) return { drifted: true, reason: TamperReason.FieldDropped, path: f.dropped.display };
  return { drifted: false };
}

/**
 * The JSON patch that removes the fields others added under `live`'s content, or none.
 * It tests the resourceVersion first: the paths (list indices among them) hold for that
 * version only, and the apiserver refuses the patch if the object changed since. Removals
 * go in reverse document order, so that removing a list element never shifts another
 * removal's index. Metadata and status are never in it.
 */
export function repairPatch(
  desired: KubeObject,
  live: KubeObject,
  fieldManager: string,
): readonly JsonPatchOp[] | undefined {
  const { foreign } = findings(desired, live, fieldManager);
  if (foreign.length === 0) return undefined;
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
    ...foreign.reverse().map((p): JsonPatchOp => ({ op: 'remove', path: p.pointer })),
  ];
}

/** The kit's JSON equality, for values read from objects (JSON by construction). */
function equalJson(a: unknown, b: unknown): boolean {
  return jsonEqual(a as JsonValue, b as JsonValue);
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
