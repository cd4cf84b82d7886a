/**
 * The Kubeflow plugin on the real apiserver with Istio's real CRDs: KFAM-shaped
 * RoleBindings and AuthorizationPolicies per member and profile namespace, members
 * leaving, objects KFAM wrote itself left alone. Expected objects are written out here.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import type { Permission } from '../src/api/permission.ts';
import { KubeflowPlugin } from '../src/plugins/kubeflow.ts';
import type { PluginContext, Subject } from '../src/plugins/plugin.ts';

const RB = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
const AP = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' } as const;
type Obj = KubeObject & Record<string, unknown>;

function ctx(env: TestEnv, ownerNamespace: string, subject: Subject, namespaces: string[]): PluginContext {
  const permission: Permission = {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name: 'notebooks', namespace: ownerNamespace },
    spec: { level: 'namespace', plugins: { kubeflow: { role: 'edit' } } },
  };
  return {
    owner: { kind: 'GroupRole', namespace: ownerNamespace, name: 'ml', uid: 'uid-ml' },
    subject,
    permission,
    scope: { metadata: { name: 's', namespace: ownerNamespace }, spec: { level: 'namespace', namespaces } },
    target: { cluster: 'capi/client', client: env.admin, level: 'namespace', namespaces },
    fieldManager: 'permissions.shturval.tech',
    argoCdNamespace: 'argocd',
  };
}

const rb = (o: Obj | undefined) =>
  o && {
    name: o.metadata.name,
    labels: o.metadata.labels,
    annotations: o.metadata.annotations,
    roleRef: o.roleRef,
    subjects: o.subjects,
  };
const ap = (o: Obj | undefined) =>
  o && {
    name: o.metadata.name,
    labels: o.metadata.labels,
    annotations: o.metadata.annotations,
    spec: o.spec,
  };

describe('Kubeflow plugin (real apiserver, real Istio CRDs)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installThirdParty('istio');
  });

  it('writes a KFAM RoleBinding and an AuthorizationPolicy per member and namespace; members leaving lose theirs', async (t) => {
    const own = await env.namespace(t, 'kf-own');
    const profile = await env.namespace(t, 'kf-profile');
    const plugin = new KubeflowPlugin();
    const group = (members: string[]): Subject => ({ kind: 'Group', name: 'oidc:ml', members });
    const c = ctx(env, own, group(['Bob.Smith@example.com', 'carol@example.com']), [profile]);
    assert.equal(plugin.applies(c), true);
    const r = await plugin.apply(c);
    assert.equal(r.status, 'Applied');
    assert.equal(r.objects?.length, 4);

    const labels = {
      'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
      'permissions.shturval.tech/owner-kind': 'GroupRole',
      'permissions.shturval.tech/owner-namespace': own,
      'permissions.shturval.tech/owner-name': 'ml',
      'permissions.shturval.tech/owner-uid': 'uid-ml',
      'permissions.shturval.tech/permission': 'notebooks',
      'permissions.shturval.tech/plugin': 'kubeflow',
    };
    const bob = 'user-bob-smith-example-com-clusterrole-edit';
    assert.deepEqual(rb(await env.admin.find<Obj>(RB, bob, profile)), {
      name: bob,
      labels,
      annotations: { user: 'Bob.Smith@example.com', role: 'edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubeflow-edit' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'Bob.Smith@example.com' }],
    });
    assert.deepEqual(ap(await env.admin.find<Obj>(AP, bob, profile)), {
      name: bob,
      labels,
      annotations: { user: 'Bob.Smith@example.com', role: 'edit' },
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

    // Carol leaves the group: her objects go, Bob's stay.
    assert.equal(
      (await plugin.apply(ctx(env, own, group(['Bob.Smith@example.com']), [profile]))).status,
      'Applied',
    );
    assert.equal(await env.admin.find(RB, 'user-carol-example-com-clusterrole-edit', profile), undefined);
    assert.equal(await env.admin.find(AP, 'user-carol-example-com-clusterrole-edit', profile), undefined);
    assert.ok(await env.admin.find(RB, bob, profile));

    assert.deepEqual(await plugin.delete(c), { status: 'Applied', objects: [] });
    assert.equal(await env.admin.find(RB, bob, profile), undefined);
    assert.equal(await env.admin.find(AP, bob, profile), undefined);
  });

  it('accepts the user header only from the configured gateway principal, and moves an existing policy onto it', async (t) => {
    const own = await env.namespace(t, 'kf-gw');
    const profile = await env.namespace(t, 'kf-gw-profile');
    const c = ctx(env, own, { kind: 'User', name: 'erin@example.com' }, [profile]);
    const name = 'user-erin-example-com-clusterrole-edit';
    assert.equal((await new KubeflowPlugin().apply(c)).status, 'Applied');
    const gateway = 'cluster.local/ns/kubeflow-gw/sa/gateway';
    assert.equal((await new KubeflowPlugin({ gatewayPrincipals: [gateway] }).apply(c)).status, 'Applied');
    assert.deepEqual((await env.admin.get<Obj>(AP, name, profile)).spec, {
      action: 'ALLOW',
      rules: [
        {
          from: [{ source: { principals: [gateway] } }],
          when: [{ key: 'request.headers[kubeflow-userid]', values: ['erin@example.com'] }],
        },
      ],
    });
  });

  it('leaves an object KFAM wrote under the same name alone, and never deletes it', async (t) => {
    const own = await env.namespace(t, 'kf-kfam');
    const profile = await env.namespace(t, 'kf-kfam-profile');
    const name = 'user-dan-example-com-clusterrole-edit';
    const kfam = {
      ...RB,
      metadata: { name, namespace: profile, annotations: { user: 'dan@example.com', role: 'edit' } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubeflow-edit' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'dan@example.com' }],
    };
    await env.admin.create<Obj>(kfam);
    const plugin = new KubeflowPlugin();
    const c = ctx(env, own, { kind: 'User', name: 'dan@example.com' }, [profile]);
    assert.deepEqual(await plugin.apply(c), {
      status: 'Applied',
      message: `RoleBinding ${profile}/${name} is held by someone else (not permissions.shturval.tech); left as is`,
      objects: [
        { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', namespace: profile, name },
      ],
    });
    assert.equal((await plugin.delete(c)).status, 'Applied');
    const live = await env.admin.get<Obj>(RB, name, profile);
    assert.equal(live.metadata.labels, undefined);
    assert.equal(await env.admin.find(AP, name, profile), undefined);
  });

  it('does not apply outside the namespace level of client clusters, nor without the kubeflow plugin', async (t) => {
    const own = await env.namespace(t, 'kf-applies');
    const plugin = new KubeflowPlugin();
    const c = ctx(env, own, { kind: 'User', name: 'a@example.com' }, ['x']);
    assert.equal(plugin.applies({ ...c, target: { ...c.target, cluster: 'platform' } }), false);
    assert.equal(plugin.applies({ ...c, target: { ...c.target, level: 'cluster' } }), false);
    assert.equal(
      plugin.applies({ ...c, permission: { ...c.permission, spec: { level: 'namespace' } } }),
      false,
    );
  });
});
