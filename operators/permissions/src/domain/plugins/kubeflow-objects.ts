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
 *   the email AND that come from the ingress gateway's identity (`from.source.principals`),
 *   in ONE rule. Istio ORs rules and ANDs a rule's `from`, `to` and `when`: the header
 *   alone would let any workload that reaches the service claim to be any user, which is
 *   why Kubeflow's own profile controller pins the header to the gateway in the same rule.
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
/**
 * Kubeflow's own default for the identity the user header is accepted from (its profile
 * controller's `ISTIO_INGRESS_GATEWAY_PRINCIPAL`): the Istio ingress gateway's service
 * account in `istio-system`.
 */
export const DEFAULT_GATEWAY_PRINCIPAL =
  'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';

export interface AuthorizationPolicyRule {
  readonly from: readonly { readonly source: { readonly principals: readonly string[] } }[];
  readonly when: readonly { readonly key: string; readonly values: readonly string[] }[];
}

export type AuthorizationPolicy = KubeObject & {
  readonly spec: {
    readonly action: 'ALLOW';
    readonly rules: readonly AuthorizationPolicyRule[];
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

/**
 * The RoleBinding and the AuthorizationPolicy of one user in one namespace; the policy
 * accepts the user header only from `principals` (the ingress gateway's identity).
 */
export function kubeflowObjects(
  grant: Grant,
  role: KubeflowRole,
  email: string,
  namespace: string,
  principals: readonly string[] = [DEFAULT_GATEWAY_PRINCIPAL],
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
        // One rule: the principal and the header are ANDed (two rules would be ORed).
        rules: [
          {
            from: [{ source: { principals: [...principals] } }],
            when: [{ key: `request.headers[${USERID_HEADER}]`, values: [email] }],
          },
        ],
      },
    },
  ];
}

/** Every object of one grant: per user, per namespace (duplicates once, in sorted order). */
export function desiredKubeflowObjects(
  grant: Grant,
  role: KubeflowRole,
  namespaces: readonly string[],
  principals: readonly string[] = [DEFAULT_GATEWAY_PRINCIPAL],
): { bindings: Binding[]; policies: AuthorizationPolicy[] } {
  const bindings: Binding[] = [];
  const policies: AuthorizationPolicy[] = [];
  for (const namespace of [...new Set(namespaces)].sort()) {
    for (const email of kubeflowUsers(grant)) {
      const [b, p] = kubeflowObjects(grant, role, email, namespace, principals);
      bindings.push(b);
      policies.push(p);
    }
  }
  return { bindings, policies };
}
