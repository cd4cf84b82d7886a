/**
 * A plugin whose CRD the cluster lacks reports Failed with a message naming the cluster,
 * writes what it still can, never throws, and completes once the CRD is installed. A
 * private plane, because the shared one has the Istio and Argo CD CRDs installed by
 * other tests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import type { Permission, PermissionPlugins } from '../src/api/permission.ts';
import { ArgoCdPlugin } from '../src/plugins/argocd.ts';
import { KubeflowPlugin } from '../src/plugins/kubeflow.ts';
import type { PluginContext } from '../src/plugins/plugin.ts';

const RB = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
const AP = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' } as const;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

function ctx(env: TestEnv, ns: string, cluster: string, plugins: PermissionPlugins): PluginContext {
  const level = cluster === 'platform' ? 'platform' : 'namespace';
  const permission: Permission = {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name: 'tools', namespace: ns },
    spec: { level, plugins },
  };
  return {
    owner: { kind: 'UserRole', namespace: ns, name: 'alice', uid: 'uid-alice' },
    subject: { kind: 'User', name: 'alice@example.com' },
    permission,
    scope: { metadata: { name: 's', namespace: ns }, spec: { level, namespaces: [ns] } },
    target: { cluster, client: env.admin, level, namespaces: [ns] },
    fieldManager: 'permissions.shturval.tech',
    argoCdNamespace: ns,
  };
}

describe('plugins on a cluster without their CRDs (private plane)', () => {
  let env: TestEnv;
  before(async () => {
    env = await privateTestEnv();
  });
  after(async () => {
    await env?.close();
  });

  it('kubeflow without the Istio CRD reports Failed and still writes the RoleBindings', async (t) => {
    const ns = await env.namespace(t, 'kf-no-istio');
    const plugin = new KubeflowPlugin();
    const c = ctx(env, ns, 'capi/no-istio', { kubeflow: { role: 'view' } });
    const name = 'user-alice-example-com-clusterrole-view';
    assert.deepEqual(await plugin.apply(c), {
      status: 'Failed',
      message: 'Istio AuthorizationPolicy CRD (security.istio.io/v1) not installed in capi/no-istio',
      objects: [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', namespace: ns, name }],
    });
    const binding = await env.admin.get<KubeObject & { roleRef: unknown }>(RB, name, ns);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'kubeflow-view',
    });
    assert.equal((await plugin.delete(c)).status, 'Applied', 'delete needs no CRD to remove the bindings');
    assert.equal(await env.admin.find(RB, name, ns), undefined);

    // Istio arrives: the next apply completes.
    await env.installThirdParty('istio');
    await eventually('the apply to complete once Istio is installed', async () => {
      const r = await plugin.apply(c);
      return r.status === 'Applied' ? r : undefined;
    });
    assert.ok(await env.admin.find(AP, name, ns));
  });

  it('Argo CD without the AppProject CRD reports Failed, and still writes policy.csv', async (t) => {
    const ns = await env.namespace(t, 'argocd-no-crd');
    const plugin = new ArgoCdPlugin();
    const c = ctx(env, ns, 'platform', {
      argocd: {
        policies: [{ resource: 'logs', action: 'get', object: '*/*' }],
        projects: [{ project: 'shop', policies: [{ resource: 'applications', action: 'get', object: '*' }] }],
      },
    });
    assert.deepEqual(await plugin.apply(c), {
      status: 'Failed',
      message: 'Argo CD AppProject CRD not installed in platform',
      objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'argocd-rbac-cm' }],
    });
    const cm = await env.admin.get<KubeObject & { data?: Record<string, string> }>(CM, 'argocd-rbac-cm', ns);
    assert.match(cm.data?.['policy.csv'] ?? '', /^p, alice@example\.com, logs, get, \*\/\*, allow$/m);
    // Nothing to remove from projects when the CRD is absent: delete succeeds.
    assert.deepEqual(await plugin.delete(c), { status: 'Applied', objects: [] });
  });
});
