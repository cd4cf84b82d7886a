/**
 * A resync makes zero writes: applying the same grant a second time through every plugin
 * sends no write request at all (counted at the client: a no-op server-side apply would
 * leave resourceVersions alone and hide itself) and leaves every object's
 * resourceVersion as it was (real apiserver, real Istio and Argo CD CRDs); a third apply
 * after someone edits one of our objects writes only that object.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  type ApplyOptions,
  type DeleteOptions,
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  type Patch,
  type WriteOptions,
} from '@operators/kit';
import type { Permission } from '../src/api/permission.ts';
import type { PluginObject } from '../src/api/role-status.ts';
import { allPlugins } from '../src/plugins/index.ts';
import type { PluginContext } from '../src/plugins/plugin.ts';

const RB = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
const AP = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' } as const;
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const PROJECT = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject' } as const;

/** The admin client, counting every write request it sends (reads pass uncounted). */
class Counting extends KubeClient {
  readonly writes: string[] = [];

  constructor(base: KubeClient) {
    super(base.transport, base.discovery);
  }

  override apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    this.writes.push(`apply ${obj.kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
    return super.apply(obj, opts);
  }

  override create<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.writes.push(`create ${obj.kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
    return super.create(obj, opts);
  }

  override replace<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.writes.push(`replace ${obj.kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
    return super.replace(obj, opts);
  }

  override delete(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts?: DeleteOptions,
  ): Promise<boolean> {
    this.writes.push(`delete ${gvk.kind} ${namespace ?? ''}/${name}`);
    return super.delete(gvk, name, namespace, opts);
  }

  override patch<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts?: WriteOptions & { subresource?: string },
  ): Promise<T> {
    this.writes.push(`patch ${gvk.kind} ${namespace ?? ''}/${name}`);
    return super.patch<T>(gvk, name, namespace, patch, opts);
  }
}

describe('a resync makes zero writes (real apiserver)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installThirdParty('argoCd', 'istio');
  });

  it('a resync makes zero writes', async (t) => {
    const own = await env.namespace(t, 'resync');
    const web = await env.namespace(t, 'resync-web');
    await env.admin.create({
      ...PROJECT,
      metadata: { name: 'shop', namespace: own },
      spec: { sourceRepos: ['*'], roles: [{ name: 'ci', groups: ['ci'] }] },
    });
    const permission: Permission = {
      apiVersion: 'permissions.shturval.tech/v1beta1',
      kind: 'Permission',
      metadata: { name: 'all', namespace: own },
      spec: {
        level: 'namespace',
        plugins: {
          rbac: {},
          kubeflow: { role: 'edit' },
          argocd: {
            policies: [{ resource: 'applications', action: 'get', object: '*/*' }],
            projects: [
              { project: 'shop', policies: [{ resource: 'applications', action: 'sync', object: '*' }] },
            ],
          },
        },
      },
    };
    const base: Omit<PluginContext, 'target'> = {
      owner: { kind: 'GroupRole', namespace: own, name: 'ml', uid: 'uid-ml' },
      subject: { kind: 'Group', name: 'oidc:ml', members: ['bob@example.com'] },
      permission,
      scope: {
        metadata: { name: 's', namespace: own },
        spec: { level: 'namespace', namespaces: [own, web] },
      },
      tenant: 'shop',
      fieldManager: 'permissions.shturval.tech',
      argoCdNamespace: own,
    };
    const client = new Counting(env.admin);
    const targets: PluginContext[] = [
      { ...base, target: { cluster: 'capi/client', client, level: 'namespace', namespaces: [own, web] } },
      { ...base, target: { cluster: 'platform', client, level: 'namespace', namespaces: [own, web] } },
    ];
    const plugins = allPlugins({ management: client });
    assert.deepEqual(
      plugins.map((p) => p.name),
      ['rbac', 'tenant', 'argocd', 'kubeflow'],
    );
    // What the role's status records after each pass, handed to the next one as the
    // controller does (a resync always has the previous pass on record).
    const recorded = new Map<string, PluginObject>();
    const applyAll = async () => {
      const statuses: string[] = [];
      for (const c of targets) {
        for (const p of plugins) {
          if (!p.applies(c)) continue;
          const key = `${c.target.cluster}/${p.name}`;
          const previous = recorded.get(key);
          const r = await p.apply(previous ? { ...c, previous } : c);
          recorded.set(key, r);
          statuses.push(`${key}=${r.status}${r.message ? `: ${r.message}` : ''}`);
        }
      }
      return statuses;
    };
    assert.deepEqual(await applyAll(), [
      'capi/client/rbac=Applied',
      'capi/client/tenant=Applied',
      'capi/client/kubeflow=Applied',
      'platform/tenant=Applied',
      'platform/argocd=Applied',
    ]);

    const objects: [GroupVersionKind, string, string][] = [
      [RB, 'shturval:' + own + '.g.ml.all', own],
      [RB, 'shturval:' + own + '.g.ml.all', web],
      [RB, 'tenant-get.shop.g.ml.all', own],
      [RB, 'user-bob-example-com-clusterrole-edit', own],
      [RB, 'user-bob-example-com-clusterrole-edit', web],
      [AP, 'user-bob-example-com-clusterrole-edit', own],
      [AP, 'user-bob-example-com-clusterrole-edit', web],
      [CM, 'argocd-rbac-cm', own],
      [PROJECT, 'shop', own],
    ];
    const versions = async () =>
      Promise.all(
        objects.map(
          async ([gvk, name, ns]) =>
            (await env.admin.get<KubeObject>(gvk, name, ns)).metadata.resourceVersion,
        ),
      );
    const first = await versions();
    client.writes.length = 0;
    await applyAll();
    assert.deepEqual(client.writes, [], 'the second apply sent no write');
    assert.deepEqual(await versions(), first, 'every resourceVersion is unchanged');

    // Someone edits one of our bindings: the next apply restores it, and only it.
    const live = await env.admin.get<KubeObject & { subjects: unknown[] }>(
      RB,
      'shturval:' + own + '.g.ml.all',
      web,
    );
    await env.admin.replace({
      ...live,
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'eve' }],
    });
    const edited = await versions();
    await applyAll();
    assert.deepEqual(
      client.writes,
      [`apply RoleBinding ${web}/shturval:${own}.g.ml.all`],
      'only the edited binding',
    );
    const restored = await versions();
    assert.deepEqual(
      restored.map((v, i) => (v === edited[i] ? 'same' : 'written')),
      ['same', 'written', 'same', 'same', 'same', 'same', 'same', 'same', 'same'],
    );
    const back = await env.admin.get<KubeObject & { subjects: unknown[] }>(
      RB,
      'shturval:' + own + '.g.ml.all',
      web,
    );
    assert.deepEqual(back.subjects, [
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'oidc:ml' },
    ]);
  });
});
