/**
 * Evaluating a rule: the target a source asks for, the safe state a target is brought
 * to when its source leaves, and whether the target is safe. Pure: objects in, objects
 * or errors out. An evaluation error is a value here, never `true` and never a partial
 * object: a mapping with one failing leaf is not applied at all.
 */
import { type CelValue, fromJson, type JsonValue } from '@operators/cel';
import { deepFreeze, type KubeObject } from '@operators/kit';
import {
  fieldManagerOf,
  LINK_LABEL,
  type LinkState,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SOURCE_ANNOTATION,
  SOURCE_UID_ANNOTATION,
  STATE_LABEL,
} from './headers.ts';
import { isRecord, type MappingNode, type Rule } from './rules.ts';

export type Evaluation<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly path: string; readonly message: string };

/** The source's reference as the target records it: `<group>/<Kind>/<namespace>/<name>`. */
export function sourceRef(rule: Rule, source: KubeObject): string {
  const group = rule.source.apiVersion.includes('/') ? rule.source.apiVersion.split('/')[0] : '';
  return `${group}/${rule.source.kind}/${source.metadata.namespace ?? ''}/${source.metadata.name ?? ''}`;
}

/** The namespace and name of the source a target records, if it is of this rule's source kind. */
export function parseSourceRef(
  rule: Rule,
  ref: string | undefined,
): { readonly namespace: string; readonly name: string } | undefined {
  if (!ref) return undefined;
  const parts = ref.split('/');
  if (parts.length !== 4) return undefined;
  const [group, kind, namespace, name] = parts as [string, string, string, string];
  const ruleGroup = rule.source.apiVersion.includes('/') ? rule.source.apiVersion.split('/')[0] : '';
  if (group !== ruleGroup || kind !== rule.source.kind || !namespace || !name) return undefined;
  return { namespace, name };
}

/**
 * An object as CEL sees it, converted once per object: the caches hold immutable objects
 * (a change arrives as a new object), and one source is read many times (its target's
 * name on every change, the mapping on every reconcile of its target). Objects passed
 * here must not be mutated afterwards.
 */
const celInputs = new WeakMap<KubeObject, Evaluation<CelValue>>();

function celInput(obj: KubeObject): Evaluation<CelValue> {
  let input = celInputs.get(obj);
  if (input === undefined) {
    // Through JSON: cached objects may carry `undefined` fields (the kit drops managedFields
    // that way), which are not JSON values; absent is what CEL must see.
    const v = fromJson(JSON.parse(JSON.stringify(obj)));
    input = v.ok ? v : { ok: false, path: '', message: v.error.message };
    celInputs.set(obj, input);
  }
  return input;
}

function evaluateNode(node: MappingNode, vars: Readonly<Record<string, CelValue>>): Evaluation<JsonValue> {
  switch (node.kind) {
    case 'literal':
      return { ok: true, value: node.value };
    case 'cel': {
      const r = node.program.evaluateJson(vars);
      return r.ok
        ? { ok: true, value: r.value }
        : { ok: false, path: node.path, message: `${node.path} (${node.expression}): ${r.error.message}` };
    }
    case 'object': {
      const out: Record<string, JsonValue> = {};
      for (const [k, child] of Object.entries(node.fields)) {
        const r = evaluateNode(child, vars);
        if (!r.ok) return r;
        // A leaf evaluating to null states nothing, as a null in an apply would remove the field.
        if (r.value !== null) out[k] = r.value;
      }
      return { ok: true, value: out };
    }
    case 'list': {
      const out: JsonValue[] = [];
      for (const child of node.items) {
        const r = evaluateNode(child, vars);
        if (!r.ok) return r;
        out.push(r.value);
      }
      return { ok: true, value: out };
    }
    default:
      return assertNever(node);
  }
}

/**
 * What a source asks for under a rule, evaluated once per (rule, source object): a
 * source's target name is read on each of its changes (twice: the source index and the
 * controller's queue) and on each reconcile of its target, and its mapping on each
 * reconcile (the one that applies, and the one its own write brings back). Cached
 * objects are immutable, so an answer never goes stale; the answers are deep-frozen,
 * since every caller shares them.
 */
interface Asked {
  name?: Evaluation<string>;
  desired?: Evaluation<KubeObject>;
}
const asked = new WeakMap<Rule, WeakMap<KubeObject, Asked>>();

function askedOf(rule: Rule, source: KubeObject): Asked {
  let byRule = asked.get(rule);
  if (!byRule) {
    byRule = new WeakMap();
    asked.set(rule, byRule);
  }
  let a = byRule.get(source);
  if (!a) {
    a = {};
    byRule.set(source, a);
  }
  return a;
}

/** The target's name for this source; a string or an error. */
export function targetNameOf(rule: Rule, source: KubeObject): Evaluation<string> {
  const a = askedOf(rule, source);
  a.name ??= deepFreeze(evaluateName(rule, source));
  return a.name;
}

function evaluateName(rule: Rule, source: KubeObject): Evaluation<string> {
  const input = celInput(source);
  if (!input.ok) return input;
  const r = evaluateNode(rule.target.name, { source: input.value });
  if (!r.ok) return r;
  if (
    typeof r.value !== 'string' ||
    !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(r.value) ||
    r.value.length > 253
  )
    return {
      ok: false,
      path: 'target.name',
      message: `target.name gave ${JSON.stringify(r.value)}, not a valid object name`,
    };
  return { ok: true, value: r.value };
}

/** The key (`namespace/name`) of the target this source maps to. */
export function targetKeyOf(rule: Rule, source: KubeObject): Evaluation<string> {
  const name = targetNameOf(rule, source);
  return name.ok ? { ok: true, value: `${rule.target.namespace}/${name.value}` } : name;
}

function headers(
  rule: Rule,
  state: LinkState,
  ref: string,
  uid: string,
): Pick<KubeObject['metadata'], 'labels' | 'annotations'> {
  return {
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [LINK_LABEL]: rule.name, [STATE_LABEL]: state },
    annotations: { [SOURCE_ANNOTATION]: ref, [SOURCE_UID_ANNOTATION]: uid },
  };
}

/**
 * The target a source asks for, as weebo-link applies it with its field manager: the
 * mapped spec and the headers, nothing else (the target operator's finalizers and status
 * are never stated, so never touched).
 */
export function desiredTarget(rule: Rule, source: KubeObject): Evaluation<KubeObject> {
  const a = askedOf(rule, source);
  a.desired ??= deepFreeze(evaluateTarget(rule, source));
  return a.desired;
}

function evaluateTarget(rule: Rule, source: KubeObject): Evaluation<KubeObject> {
  const input = celInput(source);
  if (!input.ok) return input;
  const name = targetNameOf(rule, source);
  if (!name.ok) return name;
  const spec = evaluateNode(rule.target.spec, { source: input.value });
  if (!spec.ok) return spec;
  return {
    ok: true,
    value: {
      apiVersion: rule.target.apiVersion,
      kind: rule.target.kind,
      metadata: {
        name: name.value,
        namespace: rule.target.namespace,
        ...headers(rule, 'Linked', sourceRef(rule, source), source.metadata.uid ?? ''),
      },
      spec: spec.value,
    },
  };
}

/**
 * The target in its safe state, for a departure: the fields weebo-link applied before
 * (the mapping's paths, read from the live target, since the source is gone) with
 * `onRemoval.patch` over them, and the headers with `state`. Applying it keeps every
 * mapped field (an apply that omitted one would remove it) and records the departure.
 * The source headers stay: they are the trace of where the target came from.
 */
export function safeStateTarget(rule: Rule, live: KubeObject, state: LinkState): KubeObject {
  const kept = pick(rule.target.spec, live.spec);
  const spec = merge(kept ?? {}, rule.onRemoval.patch.spec ?? {});
  const ann = live.metadata.annotations ?? {};
  return {
    apiVersion: rule.target.apiVersion,
    kind: rule.target.kind,
    metadata: {
      name: live.metadata.name,
      namespace: live.metadata.namespace,
      ...headers(rule, state, ann[SOURCE_ANNOTATION] ?? '', ann[SOURCE_UID_ANNOTATION] ?? ''),
    },
    spec,
  };
}

/** The live values at the mapping's paths (lists as wholes). */
function pick(node: MappingNode, live: unknown): JsonValue | undefined {
  if (live === undefined) return undefined;
  if (node.kind === 'object') {
    if (!isRecord(live)) return undefined;
    const out: Record<string, JsonValue> = {};
    for (const [k, child] of Object.entries(node.fields)) {
      const v = pick(child, live[k]);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  return live as JsonValue;
}

function merge(base: JsonValue, over: JsonValue): JsonValue {
  if (isRecord(base) && isRecord(over)) {
    const out: Record<string, JsonValue> = { ...(base as Record<string, JsonValue>) };
    for (const [k, v] of Object.entries(over)) {
      out[k] = k in out ? merge(out[k] as JsonValue, v as JsonValue) : (v as JsonValue);
    }
    return out;
  }
  return over;
}

/** The first `immutable` path whose mapped value differs from the live target's, if any. */
export function immutableChange(
  rule: Rule,
  desired: KubeObject,
  live: KubeObject,
): { readonly path: string; readonly live: unknown; readonly desired: unknown } | undefined {
  for (const path of rule.target.immutable) {
    const segs = path.split('.');
    const d = valueAt(desired, segs);
    const l = valueAt(live, segs);
    if (l === undefined) continue;
    if (JSON.stringify(d) !== JSON.stringify(l)) return { path, live: l, desired: d };
  }
  return undefined;
}

function valueAt(obj: unknown, path: readonly string[]): unknown {
  let v: unknown = obj;
  for (const s of path) {
    if (!isRecord(v)) return undefined;
    v = v[s];
  }
  return v;
}

/** `safe` over the target: true, false, or an error (which is never true). */
export function evaluateSafe(rule: Rule, target: KubeObject): Evaluation<boolean> {
  const node = rule.onRemoval.safe;
  if (node.kind === 'literal') return { ok: true, value: node.value === true };
  if (node.kind !== 'cel') return { ok: false, path: 'onRemoval.safe', message: 'not a leaf' };
  const input = celInput(target);
  if (!input.ok) return input;
  const r = node.program.evaluateBool({ target: input.value });
  return r.ok
    ? { ok: true, value: r.value }
    : { ok: false, path: 'onRemoval.safe', message: `onRemoval.safe: ${r.error.message}` };
}

export { fieldManagerOf };

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
