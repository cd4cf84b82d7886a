/**
 * The admission webhooks for UserRole, GroupRole and Tenant (§1, §6). They look up what
 * the decision needs (the Scope, the Permissions, the parent Tenant: live reads, so a
 * replica that is not the leader answers as well as the leader), ask the apiserver
 * whether the requesting user may grant it, and hand the pure decision in
 * domain/admission.ts the facts. An update that leaves `spec` as it was is admitted
 * without a look: the operator's own metadata writes (finalizers, owner references)
 * must never depend on the operator holding `bind`.
 */
import {
  type AdmissionRequest,
  allow,
  deny,
  type KubeClient,
  type ValidatingHandler,
  type ValidationDecision,
} from '@operators/kit';
import type { GroupRole } from '../api/group-role.ts';
import { PERMISSION, type Permission } from '../api/permission.ts';
import { SCOPE, type Scope } from '../api/scope.ts';
import { TENANT, type Tenant } from '../api/tenant.ts';
import type { UserRole } from '../api/user-role.ts';
import { validateRole, validateTenant } from '../domain/admission.ts';
import { mayGrant } from './grantor.ts';

/** The paths the webhook server answers on (the chart's ValidatingWebhookConfiguration names the same). */
export const WEBHOOK_PATHS = {
  userRole: '/validate-permissions-shturval-tech-v1beta1-userrole',
  groupRole: '/validate-permissions-shturval-tech-v1beta1-grouprole',
  tenant: '/validate-permissions-shturval-tech-v1beta1-tenant',
} as const;

const sameSpec = (req: AdmissionRequest): boolean =>
  req.operation === 'UPDATE' &&
  JSON.stringify((req.oldObject as { spec?: unknown } | null)?.spec) ===
    JSON.stringify((req.object as { spec?: unknown } | null)?.spec);

function decision(
  d: { allowed: true } | { allowed: false; reason: string; message: string },
): ValidationDecision {
  return d.allowed ? allow() : deny(d.reason, d.message);
}

export function roleHandler(
  client: KubeClient,
  kind: 'UserRole' | 'GroupRole',
): ValidatingHandler<UserRole | GroupRole> {
  return async (req, { signal }) => {
    const role = req.object;
    if (!role || sameSpec(req)) return allow();
    const namespace = role.metadata.namespace ?? req.namespace ?? '';
    const scope = (await client.find(SCOPE, role.spec.scope, namespace, { signal })) as Scope | undefined;
    const permissions = new Map<string, Permission | undefined>();
    const grantorMay = new Map<string, boolean>();
    for (const name of new Set(role.spec.permissions)) {
      permissions.set(
        name,
        (await client.find(PERMISSION, name, namespace, { signal })) as Permission | undefined,
      );
      grantorMay.set(name, await mayGrant(client, req.userInfo, 'permissions', name, namespace, signal));
    }
    return decision(
      validateRole({
        kind,
        namespace,
        name: role.metadata.name ?? '',
        spec: role.spec,
        scope,
        permissions,
        grantorMay,
        user: req.userInfo.username ?? '',
      }),
    );
  };
}

export function tenantHandler(client: KubeClient): ValidatingHandler<Tenant> {
  return async (req, { signal }) => {
    const tenant = req.object;
    if (!tenant || sameSpec(req)) return allow();
    const namespace = tenant.metadata.namespace ?? req.namespace ?? '';
    const parent = tenant.spec.parent
      ? ((await client.find(TENANT, tenant.spec.parent, namespace, { signal })) as Tenant | undefined)
      : undefined;
    const grantorMay = await mayGrant(
      client,
      req.userInfo,
      'tenants',
      tenant.metadata.name ?? '',
      namespace,
      signal,
    );
    return decision(validateTenant({ tenant, parent, grantorMay, user: req.userInfo.username ?? '' }));
  };
}
