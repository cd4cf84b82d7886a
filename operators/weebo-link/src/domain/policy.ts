/**
 * A ValidatingAdmissionPolicy evaluated offline, as the apiserver would for one request:
 * match on resourceRules, variables in order, validations in order, failurePolicy for
 * errors. check-rules uses it to try the chart's rendered policies against sample
 * objects without a cluster; the integration tests hold it equal to the apiserver on
 * the RFC's verification matrix.
 *
 * Covered: `matchConstraints.resourceRules` (apiGroups, resources, operations),
 * `variables`, `validations` (expression, message, messageExpression), `failurePolicy`.
 * Not covered (weebo-link's policies do not use them): matchConditions, paramKind,
 * namespace and object selectors, auditAnnotations, `authorizer`.
 */
import { CelEnvironment, type CelValue, fromJson, toJson } from '@operators/cel';
import type { KubeObject } from '@operators/kit';
import { isRecord } from './rules.ts';

export interface AdmissionRequest {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE';
  readonly group: string;
  readonly resource: string;
  readonly object: KubeObject | null;
  readonly oldObject: KubeObject | null;
  readonly userInfo: { readonly username: string; readonly groups?: readonly string[] };
}

export type PolicyVerdict =
  | { readonly matched: false }
  | { readonly matched: true; readonly allowed: true }
  | { readonly matched: true; readonly allowed: false; readonly message: string; readonly error?: string };

const env = new CelEnvironment({
  variables: { object: 'dyn', oldObject: 'dyn', request: 'dyn', variables: 'map<string, dyn>' },
});

interface Validation {
  readonly expression: string;
  readonly message?: string;
  readonly messageExpression?: string;
}

export function evaluatePolicy(policy: KubeObject, req: AdmissionRequest): PolicyVerdict {
  const spec = isRecord(policy.spec) ? policy.spec : {};
  if (!matches(spec, req)) return { matched: false };
  const failClosed = spec.failurePolicy !== 'Ignore';
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
      resource: { group: req.group, resource: req.resource },
    },
  });
  if (!input.ok) return fail(input.error.message);
  const base = input.value as Record<string, CelValue>;
  const variables: Record<string, CelValue> = {};
  const vars = (): Record<string, CelValue> => ({ ...base, variables });

  for (const v of (Array.isArray(spec.variables) ? spec.variables : []) as {
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
  for (const val of (Array.isArray(spec.validations) ? spec.validations : []) as Validation[]) {
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

function matches(spec: Record<string, unknown>, req: AdmissionRequest): boolean {
  const mc = isRecord(spec.matchConstraints) ? spec.matchConstraints : {};
  const rules = Array.isArray(mc.resourceRules) ? mc.resourceRules : [];
  return rules.some((r: unknown) => {
    if (!isRecord(r)) return false;
    const has = (list: unknown, v: string): boolean =>
      Array.isArray(list) && (list.includes('*') || list.includes(v));
    return has(r.apiGroups, req.group) && has(r.resources, req.resource) && has(r.operations, req.operation);
  });
}
