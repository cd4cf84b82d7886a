/**
 * Whether the user behind an admission request may grant what they ask for, asked of the
 * apiserver itself with a SubjectAccessReview (never decided from our own reading of
 * RBAC): verb `bind` or `escalate` on the granted object, as Kubernetes asks of whoever
 * writes a RoleBinding to a role they do not hold.
 */
import type { AdmissionUserInfo, KubeClient } from '@operators/kit';
import { GROUP } from '../api/common.ts';
import { SUBJECT_ACCESS_REVIEW } from '../controllers/gvks.ts';

interface SarStatus {
  readonly status?: { readonly allowed?: boolean };
}

/** The verbs that let a user grant an object to others; either is enough. */
export const GRANT_VERBS = ['bind', 'escalate'] as const;

export async function mayGrant(
  client: KubeClient,
  user: AdmissionUserInfo,
  resource: 'permissions' | 'tenants',
  name: string,
  namespace: string,
  signal?: AbortSignal,
): Promise<boolean> {
  for (const verb of GRANT_VERBS) {
    const review = await client.create(
      {
        ...SUBJECT_ACCESS_REVIEW,
        metadata: {},
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          resourceAttributes: { group: GROUP, resource, verb, name, namespace },
        },
      },
      signal ? { signal } : {},
    );
    if ((review as SarStatus).status?.allowed === true) return true;
  }
  return false;
}
