/**
 * The Kubeflow plugin's objects, in KFAM's shape. Expected objects and names are written
 * out by hand; the property checks the names are valid object names for any email.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Grant } from '../src/domain/plugins/grant.ts';
import {
  desiredKubeflowObjects,
  kubeflowObjectName,
  kubeflowUsers,
  safeEmail,
} from '../src/domain/plugins/kubeflow-objects.ts';

/** A request as an AuthorizationPolicy sees it: the peer's mTLS identity (absent without mTLS) and the headers. */
interface Request {
  readonly principal?: string;
  readonly headers: Readonly<Record<string, string>>;
}

type Spec = {
  readonly action: string;
  readonly rules?: readonly {
    readonly from?: readonly { readonly source?: { readonly principals?: readonly string[] } }[];
    readonly to?: readonly unknown[];
    readonly when?: readonly { readonly key: string; readonly values?: readonly string[] }[];
  }[];
};

/**
 * Istio's ALLOW semantics (istio.io, "Authorization Policy": a request matches a policy
 * when it matches ANY rule; a rule matches when its `from`, `to` and `when` ALL match; a
 * `from` list matches when ANY source does; a field's values are ORed), for the fields
 * our policies use. A policy with a field this evaluator does not know fails the test.
 */
function istioAllows(spec: Spec, req: Request): boolean {
  assert.equal(spec.action, 'ALLOW');
  return (spec.rules ?? []).some((rule) => {
    assert.equal(rule.to, undefined, 'this evaluator knows from and when only');
    const fromOk =
      rule.from === undefined ||
      rule.from.some((f) => {
        const principals = f.source?.principals;
        return (
          principals === undefined || (req.principal !== undefined && principals.includes(req.principal))
        );
      });
    const whenOk = (rule.when ?? []).every((c) => {
      const m = /^request\.headers\[(.+)\]$/.exec(c.key);
      assert.ok(m, `a condition on ${c.key}`);
      const v = req.headers[m[1] ?? ''];
      return v !== undefined && (c.values ?? []).includes(v);
    });
    return fromOk && whenOk;
  });
}

const DEVS: Grant = {
  owner: { kind: 'GroupRole', namespace: 'team-a', name: 'devs', uid: 'uid-2' },
  permission: 'notebooks',
  subject: {
    kind: 'Group',
    name: 'oidc:devs',
    members: ['Bob.Smith@example.com', 'carol@example.com', 'carol@example.com'],
  },
};
const LABELS = {
  'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
  'permissions.shturval.tech/owner-kind': 'GroupRole',
  'permissions.shturval.tech/owner-namespace': 'team-a',
  'permissions.shturval.tech/owner-name': 'devs',
  'permissions.shturval.tech/owner-uid': 'uid-2',
  'permissions.shturval.tech/permission': 'notebooks',
  'permissions.shturval.tech/plugin': 'kubeflow',
};

describe('kubeflow objects', () => {
  it('names objects as KFAM does', () => {
    assert.equal(safeEmail('Alice.Smith+ml@Example.com'), 'alice-smith-ml-example-com');
    assert.equal(
      kubeflowObjectName('kimonas@canonical.com', 'edit'),
      'user-kimonas-canonical-com-clusterrole-edit',
    );
  });

  it('expands a group to its members, each once', () => {
    assert.deepEqual(kubeflowUsers(DEVS), ['Bob.Smith@example.com', 'carol@example.com']);
    assert.deepEqual(kubeflowUsers({ ...DEVS, subject: { kind: 'Group', name: 'g' } }), []);
    assert.deepEqual(kubeflowUsers({ ...DEVS, subject: { kind: 'User', name: 'dan@example.com' } }), [
      'dan@example.com',
    ]);
  });

  it('writes a RoleBinding and an AuthorizationPolicy per member and profile namespace', () => {
    const { bindings, policies } = desiredKubeflowObjects(DEVS, 'view', ['ml-prod']);
    assert.deepEqual(bindings, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: {
          name: 'user-bob-smith-example-com-clusterrole-view',
          namespace: 'ml-prod',
          labels: LABELS,
          annotations: { user: 'Bob.Smith@example.com', role: 'view' },
        },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubeflow-view' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'Bob.Smith@example.com' }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: {
          name: 'user-carol-example-com-clusterrole-view',
          namespace: 'ml-prod',
          labels: LABELS,
          annotations: { user: 'carol@example.com', role: 'view' },
        },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubeflow-view' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'carol@example.com' }],
      },
    ]);
    assert.deepEqual(policies[0], {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: {
        name: 'user-bob-smith-example-com-clusterrole-view',
        namespace: 'ml-prod',
        labels: LABELS,
        annotations: { user: 'Bob.Smith@example.com', role: 'view' },
      },
      spec: {
        action: 'ALLOW',
        rules: [
          {
            from: [
              {
                source: {
                  principals: ['cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account'],
                },
              },
            ],
            when: [{ key: 'request.headers[kubeflow-userid]', values: ['Bob.Smith@example.com'] }],
          },
        ],
      },
    });
    assert.equal(policies.length, 2);
  });

  it('accepts the user header only from the configured gateway identity, in the same rule', () => {
    const { policies } = desiredKubeflowObjects(DEVS, 'edit', ['ml'], ['cluster.local/ns/gw/sa/kf-gateway']);
    assert.deepEqual(policies[0]?.spec.rules, [
      {
        from: [{ source: { principals: ['cluster.local/ns/gw/sa/kf-gateway'] } }],
        when: [{ key: 'request.headers[kubeflow-userid]', values: ['Bob.Smith@example.com'] }],
      },
    ]);
  });

  it('as Istio evaluates it: the gateway passing the user is allowed; any other workload claiming the same user is not', () => {
    const { policies } = desiredKubeflowObjects(DEVS, 'edit', ['ml']);
    const policy = policies[0];
    assert.ok(policy);
    const gateway = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';
    const bob = 'Bob.Smith@example.com';
    assert.equal(istioAllows(policy.spec, { principal: gateway, headers: { 'kubeflow-userid': bob } }), true);
    assert.equal(
      istioAllows(policy.spec, {
        principal: 'cluster.local/ns/team-a/sa/attacker',
        headers: { 'kubeflow-userid': bob },
      }),
      false,
    );
    assert.equal(
      istioAllows(policy.spec, { headers: { 'kubeflow-userid': bob } }),
      false,
      'plain text, no mTLS identity',
    );
    assert.equal(
      istioAllows(policy.spec, { principal: gateway, headers: { 'kubeflow-userid': 'eve@example.com' } }),
      false,
    );
  });

  it('gives a valid object name (DNS subdomain, at most 253) for any email', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 400 }),
        fc.constantFrom('admin', 'edit', 'view'),
        (email, role) => {
          const name = kubeflowObjectName(email, role as 'admin' | 'edit' | 'view');
          assert.ok(name.length <= 253, name);
          assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        },
      ),
    );
  });
});
