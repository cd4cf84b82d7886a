/**
 * Whether the user behind an admission request may grant what they ask for, asked of the
 * apiserver itself with a SubjectAccessReview (never decided from our own reading of
 * RBAC): verb `bind` or `escalate` on the granted object, as Kubernetes asks of whoever
 * writes a RoleBinding to a role they do not hold; and verb `manage` on a Tenant, which
 * lets a user act inside it.
 */
import type { AdmissionUserInfo } from '@operators/kit';
import { GROUP } from '../api/common.ts';
import { ESCALATE_VERB } from '../domain/permission-admission.ts';
import { MANAGE_VERB } from '../domain/tenant.ts';
import type { AccessReviewer } from './access.ts';

/** The verbs that let a user grant an object to others; either is enough. */
export const GRANT_VERBS = ['bind', 'escalate'] as const;

export async function mayGrant(
  access: AccessReviewer,
  user: AdmissionUserInfo,
  resource: 'permissions' | 'tenants',
  name: string,
  namespace: string,
  signal?: AbortSignal,
): Promise<boolean> {
  for (const verb of GRANT_VERBS) {
    if (
      await access.allowedForObject(
        user,
        { resourceAttributes: { group: GROUP, resource, verb, name, namespace } },
        signal,
      )
    ) {
      return true;
    }
  }
  return false;
}

/** One verb on one object of ours, asked of the apiserver for the request's user. */
function mayDo(
  access: AccessReviewer,
  user: AdmissionUserInfo,
  resource: 'permissions' | 'tenants',
  verb: string,
  name: string,
  namespace: string,
  signal?: AbortSignal,
): Promise<boolean> {
  return access.allowedForObject(
    user,
    { resourceAttributes: { group: GROUP, resource, verb, name, namespace } },
    signal,
  );
}

/** `escalate` on the Permission `name` of `namespace`. */
export function mayEscalate(
  access: AccessReviewer,
  user: AdmissionUserInfo,
  name: string,
  namespace: string,
  signal?: AbortSignal,
): Promise<boolean> {
  return mayDo(access, user, 'permissions', ESCALATE_VERB, name, namespace, signal);
}

/** `manage` on the Tenant `name` of `namespace`. */
export function mayManage(
  access: AccessReviewer,
  user: AdmissionUserInfo,
  name: string,
  namespace: string,
  signal?: AbortSignal,
): Promise<boolean> {
  return mayDo(access, user, 'tenants', MANAGE_VERB, name, namespace, signal);
}
