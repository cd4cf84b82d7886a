/**
 * The ValidatingWebhookConfiguration that sends UserRole, GroupRole and Tenant writes to
 * our handlers. The chart renders the same rules from its template (a chart test holds
 * the two equal); tests and `npm run up` register this one with a URL and a CA bundle.
 *
 * failurePolicy is Fail: a role that bypassed the checks (a missing Permission, a
 * grantor without `bind`) would be a privilege escalation, so while the operator is down
 * these writes are refused rather than admitted unchecked. Deletes are not sent: they
 * need no check, and a cluster must be able to remove roles while the operator is away.
 */
import type { KubeObject } from '@operators/kit';
import { GROUP, VERSION } from '../api/common.ts';
import { WEBHOOK_PATHS } from './handlers.ts';

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

export function webhookConfiguration(base: ClientConfig, name = WEBHOOK_CONFIGURATION_NAME): KubeObject {
  const one = (webhook: string, resource: string, path: string) => ({
    name: `${webhook}.${GROUP}`,
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
        operations: ['CREATE', 'UPDATE'],
        resources: [resource],
        scope: 'Namespaced',
      },
    ],
  });
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      one('userroles', 'userroles', WEBHOOK_PATHS.userRole),
      one('grouproles', 'grouproles', WEBHOOK_PATHS.groupRole),
      one('tenants', 'tenants', WEBHOOK_PATHS.tenant),
    ],
  } as KubeObject;
}
