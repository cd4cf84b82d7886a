/**
 * ValidatingAdmissionPolicies and their bindings evaluated offline, as the apiserver would
 * for one request: a binding applies when its policy's `matchConstraints` and its own
 * `matchResources` match the request; then variables in order, validations in order,
 * failurePolicy for errors, and the binding's validationActions decide whether a failed
 * validation denies. check-rules uses it to try the chart's rendered policies against
 * sample requests without a cluster; test/check-rules.test.ts holds it equal to the
 * apiserver on the RFC's verification matrix.
 *
 * Modelled: `resourceRules` (apiGroups, apiVersions, resources with the apiserver's
 * subresource forms, operations), `namespaceSelector` (on the policy and on the binding),
 * `variables`, `validations` (expression, message, messageExpression), `failurePolicy`,
 * `validationActions`. A policy or binding using anything else (matchConditions,
 * paramKind, objectSelector, excludeResourceRules, resourceNames, paramRef) is reported by
 * `unmodelled`, so a verdict is never silently wrong; weebo-link's policies use none. A
 * request is matched by its own group, version and resource: the apiserver's
 * `matchPolicy: Equivalent` (matching through another version of the same resource) makes
 * no difference to rules with `apiVersions: ["*"]`, as the chart renders them.
 */
import { CelEnvironment, type CelValue, fromJson, toJson } from '@operators/cel';
import type { KubeObject } from '@operators/kit';
import { isRecord } from './rules.ts';

/** The resource a request is for, as the apiserver matches it against `resourceRules`. */
export interface RequestResource {
  /** API group; "" for the core group. */
  readonly group: string;
  readonly version: string;
  /** Plural resource name, as served (a CRD's `spec.names.plural`). */
  readonly resource: string;
  /** "status", "scale"...: the request is on that subresource. */
  readonly subresource?: string;
}

export interface AdmissionRequest {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly resource: RequestResource;
  /** The request's namespace; none for a cluster-scoped resource. */
  readonly namespace?: string;
  /** That namespace's labels, for namespaceSelectors (kubernetes.io/metadata.name is implied). */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  readonly object: KubeObject | null;
  readonly oldObject: KubeObject | null;
  readonly userInfo: { readonly username: string; readonly groups?: readonly string[] };
}

/** One policy's answer: `matched: false` when its matchConstraints leave the request out. */
export type PolicyVerdict =
  | { readonly matched: false }
  | { readonly matched: true; readonly allowed: true }
  | { readonly matched: true; readonly allowed: false; readonly message: string; readonly error?: string };

/** A policy whose validation failed, under one binding. */
export interface PolicyDenial {
  readonly policy: string;
  readonly binding: string;
  readonly message: string;
  /** The binding's validationActions: a failure denies only when they include Deny. */
  readonly actions: readonly string[];
}

/**
 * The answer of a set of policies and bindings to one request.
 * - `not-covered`: no binding applies (no policy's matchConstraints, or no binding's
 *   matchResources, match): the policies say nothing, the request is not checked by them.
 * - `allowed`: at least one binding applies and none denies; `unenforced` lists the failed
 *   validations whose binding only audits or warns.
 * - `denied`: a binding with Deny has a failed validation (all such are listed).
 */
export type AdmissionVerdict =
  | { readonly kind: 'not-covered' }
  | { readonly kind: 'allowed'; readonly unenforced: readonly PolicyDenial[] }
  | { readonly kind: 'denied'; readonly denials: readonly PolicyDenial[] };

const env = new CelEnvironment({
  variables: { object: 'dyn', oldObject: 'dyn', request: 'dyn', variables: 'map<string, dyn>' },
});

interface Validation {
  readonly expression: string;
  readonly message?: string;
  readonly messageExpression?: string;
}

const spec = (o: KubeObject): Record<string, unknown> => (isRecord(o.spec) ? o.spec : {});

/** One policy on one request, bindings aside. */
export function evaluatePolicy(policy: KubeObject, req: AdmissionRequest): PolicyVerdict {
  const s = spec(policy);
  const mc = isRecord(s.matchConstraints) ? s.matchConstraints : {};
  if (!matchesResourceRules(mc.resourceRules, req) || !matchesNamespace(mc.namespaceSelector, req))
    return { matched: false };
  const failClosed = s.failurePolicy !== 'Ignore';
  const fail = (error: string): PolicyVerdict =>
    failClosed
      ? { matched: true, allowed: false, message: `policy ${policy.metadata.name} failed: ${error}`, error }
      : { matched: true, allowed: true };

  const input = fromJson({
    object: req.object,
    oldObject: req.oldObject,
    request: {
      operation: req.operation,
      userInfo: { username: req.userInfo.username, groups: req.userInfo.groups ?? [] },
      resource: { group: req.resource.group, version: req.resource.version, resource: req.resource.resource },
      subResource: req.resource.subresource ?? '',
      namespace: req.namespace ?? '',
      name: (req.object ?? req.oldObject)?.metadata.name ?? '',
    },
  });
  if (!input.ok) return fail(input.error.message);
  const base = input.value as Record<string, CelValue>;
  const variables: Record<string, CelValue> = {};
  const vars = (): Record<string, CelValue> => ({ ...base, variables });

  for (const v of (Array.isArray(s.variables) ? s.variables : []) as {
    name: string;
    expression: string;
  }[]) {
    const p = env.compile(v.expression);
    if (!p.ok) return fail(`variable ${v.name}: ${p.error.message}`);
    const r = p.value.evaluate(vars());
    // The apiserver evaluates variables lazily; weebo-link's policies read every variable,
    // so evaluating them eagerly gives the same verdicts.
    if (!r.ok) return fail(`variable ${v.name}: ${r.error.message}`);
    variables[v.name] = r.value;
  }
  for (const val of (Array.isArray(s.validations) ? s.validations : []) as Validation[]) {
    const p = env.compile(val.expression);
    if (!p.ok) return fail(p.error.message);
    const r = p.value.evaluateBool(vars());
    if (!r.ok) return fail(r.error.message);
    if (r.value) continue;
    let message = val.message ?? `failed expression: ${val.expression}`;
    if (val.messageExpression) {
      const m = env.compile(val.messageExpression);
      const mv = m.ok ? m.value.evaluate(vars()) : undefined;
      const js = mv?.ok ? toJson(mv.value) : undefined;
      if (js?.ok && typeof js.value === 'string') message = js.value;
    }
    return { matched: true, allowed: false, message };
  }
  return { matched: true, allowed: true };
}

const isPolicy = (o: KubeObject): boolean => o.kind === 'ValidatingAdmissionPolicy';
const isBinding = (o: KubeObject): boolean => o.kind === 'ValidatingAdmissionPolicyBinding';

/**
 * Every binding of `objects` (rendered manifests; other kinds are ignored) on one request.
 * As on the apiserver, a policy without a binding is not enforced, and a binding acts only
 * through its policy.
 */
export function admit(objects: readonly KubeObject[], req: AdmissionRequest): AdmissionVerdict {
  const policies = new Map(objects.filter(isPolicy).map((p) => [p.metadata.name, p]));
  let covered = false;
  const denials: PolicyDenial[] = [];
  const unenforced: PolicyDenial[] = [];
  for (const binding of objects.filter(isBinding)) {
    const b = spec(binding);
    const policy = typeof b.policyName === 'string' ? policies.get(b.policyName) : undefined;
    if (!policy) continue;
    const mr = isRecord(b.matchResources) ? b.matchResources : {};
    if (!matchesNamespace(mr.namespaceSelector, req)) continue;
    if (mr.resourceRules !== undefined && !matchesResourceRules(mr.resourceRules, req)) continue;
    const v = evaluatePolicy(policy, req);
    if (!v.matched) continue;
    covered = true;
    if (v.allowed) continue;
    const actions = Array.isArray(b.validationActions) ? b.validationActions.map(String) : [];
    const d = {
      policy: policy.metadata.name ?? '',
      binding: binding.metadata.name ?? '',
      message: v.message,
      actions,
    };
    (actions.includes('Deny') ? denials : unenforced).push(d);
  }
  if (!covered) return { kind: 'not-covered' };
  return denials.length ? { kind: 'denied', denials } : { kind: 'allowed', unenforced };
}

/**
 * What in these policies and bindings `admit` does not evaluate, one message each: a
 * verdict on them could differ from the apiserver's.
 */
export function unmodelled(objects: readonly KubeObject[]): string[] {
  const out: string[] = [];
  for (const o of objects) {
    const s = spec(o);
    const what = `${o.kind} ${o.metadata.name}`;
    const has = (v: unknown): boolean =>
      v !== undefined && v !== null && !(isRecord(v) && Object.keys(v).length === 0);
    const check = (where: string, m: unknown): void => {
      if (!isRecord(m)) return;
      for (const k of ['objectSelector', 'excludeResourceRules'])
        if (has(m[k]) && !(Array.isArray(m[k]) && m[k].length === 0)) out.push(`${what}: ${where}.${k}`);
      for (const r of Array.isArray(m.resourceRules) ? m.resourceRules : [])
        if (isRecord(r) && Array.isArray(r.resourceNames) && r.resourceNames.length)
          out.push(`${what}: ${where}.resourceRules[].resourceNames`);
    };
    if (isPolicy(o)) {
      check('matchConstraints', s.matchConstraints);
      if (Array.isArray(s.matchConditions) && s.matchConditions.length) out.push(`${what}: matchConditions`);
      if (has(s.paramKind)) out.push(`${what}: paramKind`);
    } else if (isBinding(o)) {
      check('matchResources', s.matchResources);
      if (has(s.paramRef)) out.push(`${what}: paramRef`);
    }
  }
  return out;
}

/**
 * `resourceRules` as the apiserver reads them: "*" is every resource but no subresource,
 * "pods/*" every subresource of pods, "*\/scale" that subresource of every resource, "*\/*"
 * everything.
 */
function matchesResourceRules(rules: unknown, req: AdmissionRequest): boolean {
  const { group, version, resource, subresource } = req.resource;
  const name = subresource ? `${resource}/${subresource}` : resource;
  const has = (list: unknown, v: string): boolean =>
    Array.isArray(list) && (list.includes('*') || list.includes(v));
  const hasResource = (list: unknown): boolean =>
    Array.isArray(list) &&
    list.some(
      (r) =>
        r === name ||
        r === '*/*' ||
        (r === '*' && !subresource) ||
        (subresource !== undefined && (r === `${resource}/*` || r === `*/${subresource}`)),
    );
  return (
    Array.isArray(rules) &&
    rules.some(
      (r: unknown) =>
        isRecord(r) &&
        has(r.apiGroups, group) &&
        has(r.apiVersions, version) &&
        hasResource(r.resources) &&
        has(r.operations, req.operation),
    )
  );
}

/**
 * A namespaceSelector (matchLabels, matchExpressions) against the request's namespace. An
 * absent or empty selector matches everything; a cluster-scoped request (no namespace) is
 * never left out by it, as on the apiserver.
 */
function matchesNamespace(selector: unknown, req: AdmissionRequest): boolean {
  if (!isRecord(selector) || req.namespace === undefined) return true;
  const labels: Record<string, string> = {
    ...req.namespaceLabels,
    'kubernetes.io/metadata.name': req.namespace,
  };
  const ml = isRecord(selector.matchLabels) ? selector.matchLabels : {};
  if (!Object.entries(ml).every(([k, v]) => labels[k] === v)) return false;
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  return exprs.every((e: unknown) => {
    if (!isRecord(e) || typeof e.key !== 'string') return false;
    const value = labels[e.key];
    const values = Array.isArray(e.values) ? e.values : [];
    switch (e.operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      case 'DoesNotExist':
        return value === undefined;
      default:
        return false;
    }
  });
}
