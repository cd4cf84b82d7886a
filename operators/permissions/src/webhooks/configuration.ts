/**
 * The ValidatingWebhookConfiguration that sends Permission, UserRole, GroupRole, Scope and
 * Tenant writes to our handlers. The chart renders the same webhooks from its template (a
 * chart test holds the two equal); tests and `npm run up` register this one with a URL
 * and a CA bundle.
 *
 * failurePolicy is Fail for every operation, DELETE included: a write admitted unchecked
 * (a Permission aggregating `*` into another, a role in another tenant's Scope) would be
 * a privilege escalation, and a delete admitted unchecked would let one tenant remove
 * another's grants. So while no replica answers, these writes and deletes are refused
 * (docs/permissions.md, "Admission webhooks", says what that costs and how to break
 * glass). The control plane's own deleters (garbage collector, namespace controller) are
 * matched out by a matchCondition, so cascades and namespace deletion never wait for us.
 * Permission deletes are not sent: removing one removes grants, and RBAC's `delete` is
 * check enough.
 */
import type { KubeObject } from '@operators/kit';
import { GROUP, VERSION } from '../api/common.ts';
import { CONTROL_PLANE_DELETERS, WEBHOOK_PATHS } from './handlers.ts';

export const WEBHOOK_CONFIGURATION_NAME = 'permissions.shturval.tech';

export type ClientConfig =
  | { readonly url: string; readonly caBundle: string }
  | {
      readonly service: { readonly namespace: string; readonly name: string; readonly port: number };
      readonly caBundle?: string;
    };

function clientConfig(base: ClientConfig, path: string): Record<string, unknown> {
  if ('url' in base) return { url: `${base.url}${path}`, caBundle: base.caBundle };
  return { service: { ...base.service, path }, ...(base.caBundle ? { caBundle: base.caBundle } : {}) };
}

/** The CEL of the matchCondition that skips the control plane's own deletes (see CONTROL_PLANE_DELETERS). */
export const NOT_CONTROL_PLANE_DELETE = `!(request.operation == 'DELETE' && request.userInfo.username in [${CONTROL_PLANE_DELETERS.map(
  (u) => `'${u}'`,
).join(', ')}])`;

export function webhookConfiguration(base: ClientConfig, name = WEBHOOK_CONFIGURATION_NAME): KubeObject {
  const one = (resource: string, path: string, deletes: boolean) => ({
    name: `${resource}.${GROUP}`,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    timeoutSeconds: 10,
    matchPolicy: 'Equivalent',
    clientConfig: clientConfig(base, path),
    rules: [
      {
        apiGroups: [GROUP],
        apiVersions: [VERSION],
        operations: deletes ? ['CREATE', 'UPDATE', 'DELETE'] : ['CREATE', 'UPDATE'],
        resources: [resource],
        scope: 'Namespaced',
      },
    ],
    ...(deletes
      ? { matchConditions: [{ name: 'not-a-control-plane-delete', expression: NOT_CONTROL_PLANE_DELETE }] }
      : {}),
  });
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      one('permissions', WEBHOOK_PATHS.permission, false),
      one('userroles', WEBHOOK_PATHS.userRole, true),
      one('grouproles', WEBHOOK_PATHS.groupRole, true),
      one('scopes', WEBHOOK_PATHS.scope, true),
      one('tenants', WEBHOOK_PATHS.tenant, true),
    ],
  } as KubeObject;
}
