/**
 * The Kubeflow plugin's objects, in the shape Kubeflow's access management (KFAM) gives
 * a profile contributor, so the Kubeflow UI lists ours like its own: for each user (a
 * GroupRole's members, one by one: KFAM and Istio know users, not groups) and each
 * namespace of the Scope (a profile's namespace),
 *
 * - a RoleBinding `user-<safe email>-clusterrole-<role>` to ClusterRole `kubeflow-<role>`,
 *   subject the User, annotated `user: <email>` and `role: <role>` (what KFAM reads);
 * - an Istio `security.istio.io/v1` AuthorizationPolicy of the same name and annotations,
 *   allowing requests whose `kubeflow-userid` header (set by Kubeflow's auth proxy) is
 *   the email.
 *
 * Safe email (the convention followed, KFAM's): lowercase, then every character that is
 * not `a-z`, `0-9` or `-` becomes `-`; `alice.smith@example.com` gives
 * `user-alice-smith-example-com-clusterrole-edit`, as KFAM names it. A name beyond 253
 * characters is cut and ends in 10 hex of the sha256 of the full name.
 *
 * Names are not unique to one owner: KFAM itself, or another of our roles, may hold the
 * same name in the same namespace. The plugin leaves such objects alone (see kubeflow.ts).
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '@operators/kit';
import { MAX_NAME } from '../names.ts';
import { type Grant, grantLabels, RBAC_GROUP, rbacSubject } from './grant.ts';
import { type Binding, ROLE_BINDING } from './rbac-bindings.ts';

export type KubeflowRole = 'admin' | 'edit' | 'view';

export const AUTHORIZATION_POLICY = {
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
} as const;
/** The header Kubeflow's auth proxy sets to the signed-in user's email. */
export const USERID_HEADER = 'kubeflow-userid';

export type AuthorizationPolicy = KubeObject & {
  readonly spec: {
    readonly action: 'ALLOW';
    readonly rules: readonly {
      readonly when: readonly { readonly key: string; readonly values: readonly string[] }[];
    }[];
  };
};

/** An email as KFAM puts it in a name: lowercase, anything but `a-z0-9-` as `-`. */
export function safeEmail(email: string): string {
  return email.toLowerCase().replace(/[^a-z0-9-]/g, '-');
}

/** The name of both objects for one user and one Kubeflow role. */
export function kubeflowObjectName(email: string, role: KubeflowRole): string {
  const name = `user-${safeEmail(email)}-clusterrole-${role}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${name.slice(0, MAX_NAME - 11).replace(/[^a-z0-9]+$/, '')}-${hash}`;
}

/** The users a grant reaches: the user, or the group's members (each once, sorted). */
export function kubeflowUsers(grant: Grant): string[] {
  const users = grant.subject.kind === 'User' ? [grant.subject.name] : (grant.subject.members ?? []);
  return [...new Set(users)].sort();
}

/** The RoleBinding and the AuthorizationPolicy of one user in one namespace. */
export function kubeflowObjects(
  grant: Grant,
  role: KubeflowRole,
  email: string,
  namespace: string,
): [Binding, AuthorizationPolicy] {
  const metadata = {
    name: kubeflowObjectName(email, role),
    namespace,
    labels: grantLabels(grant, 'kubeflow'),
    annotations: { user: email, role },
  };
  return [
    {
      ...ROLE_BINDING,
      metadata,
      roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: `kubeflow-${role}` },
      subjects: [rbacSubject('User', email)],
    },
    {
      ...AUTHORIZATION_POLICY,
      metadata,
      spec: {
        action: 'ALLOW',
        rules: [{ when: [{ key: `request.headers[${USERID_HEADER}]`, values: [email] }] }],
      },
    },
  ];
}

/** Every object of one grant: per user, per namespace (duplicates once, in sorted order). */
export function desiredKubeflowObjects(
  grant: Grant,
  role: KubeflowRole,
  namespaces: readonly string[],
): { bindings: Binding[]; policies: AuthorizationPolicy[] } {
  const bindings: Binding[] = [];
  const policies: AuthorizationPolicy[] = [];
  for (const namespace of [...new Set(namespaces)].sort()) {
    for (const email of kubeflowUsers(grant)) {
      const [b, p] = kubeflowObjects(grant, role, email, namespace);
      bindings.push(b);
      policies.push(p);
    }
  }
  return { bindings, policies };
}
