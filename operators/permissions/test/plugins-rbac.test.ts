/**
 * The RBAC and tenant plugins on the real apiserver. The shared plane plays both the
 * management ("platform") and the client cluster: routing grants to the right cluster
 * is tested with the controllers. Expected bindings are written out here.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeClient, KubeObject } from '@operators/kit';
import type { Level } from '../src/api/common.ts';
import type { Permission } from '../src/api/permission.ts';
import type { PluginObject } from '../src/api/role-status.ts';
import type { PluginContext, Subject } from '../src/plugins/plugin.ts';
import { RbacPlugin } from '../src/plugins/rbac.ts';
import { TenantPlugin } from '../src/plugins/tenant.ts';

const RB = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;
const CRB = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' } as const;
type Binding = KubeObject & { roleRef: unknown; subjects: unknown[] };

interface CtxOptions {
  readonly client: KubeClient;
  readonly ownerNamespace: string;
  readonly owner: { kind: 'UserRole' | 'GroupRole'; name: string; uid?: string };
  readonly subject: Subject;
  readonly level: Level;
  readonly cluster?: string;
  readonly namespaces?: readonly string[];
  readonly tenant?: string;
  /** What the role's status recorded for this grant before (absent: never granted here). */
  readonly previous?: PluginObject;
}

function ctx(o: CtxOptions): PluginContext {
  const permission: Permission = {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name: 'viewer', namespace: o.ownerNamespace },
    spec: { level: o.level },
  };
  return {
    owner: {
      kind: o.owner.kind,
      name: o.owner.name,
      namespace: o.ownerNamespace,
      uid: o.owner.uid ?? `uid-${o.owner.name}`,
    },
    subject: o.subject,
    permission,
    scope: { metadata: { name: 's', namespace: o.ownerNamespace }, spec: { level: o.level } },
    target: {
      cluster: o.cluster ?? (o.level === 'platform' ? 'platform' : 'capi/client'),
      client: o.client,
      level: o.level,
      namespaces: o.namespaces ?? [],
    },
    ...(o.tenant ? { tenant: o.tenant } : {}),
    fieldManager: 'permissions.shturval.tech',
    argoCdNamespace: 'argocd',
    ...(o.previous ? { previous: o.previous } : {}),
  };
}

const labels = (ownerNs: string, kind: string, name: string, plugin: string) => ({
  'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
  'permissions.shturval.tech/owner-kind': kind,
  'permissions.shturval.tech/owner-namespace': ownerNs,
  'permissions.shturval.tech/owner-name': name,
  'permissions.shturval.tech/owner-uid': `uid-${name}`,
  'permissions.shturval.tech/permission': 'viewer',
  'permissions.shturval.tech/plugin': plugin,
});
const ALICE: Subject = { kind: 'User', name: 'alice@example.com' };
const shape = (b: Binding | undefined) =>
  b && {
    name: b.metadata.name,
    namespace: b.metadata.namespace,
    labels: b.metadata.labels,
    roleRef: b.roleRef,
    subjects: b.subjects,
  };

describe('RBAC plugin (real apiserver)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
  });

  it('rbac namespace-level writes RoleBindings in every scope namespace and delete removes only ours', async (t) => {
    const [own, web, api] = [
      await env.namespace(t, 'rbac-own'),
      await env.namespace(t, 'rbac-web'),
      await env.namespace(t, 'rbac-api'),
    ];
    const plugin = new RbacPlugin();
    const alice = (namespaces: string[]) =>
      ctx({
        client: env.admin,
        ownerNamespace: own,
        owner: { kind: 'UserRole', name: 'alice' },
        subject: ALICE,
        level: 'namespace',
        namespaces,
      });
    const bob = ctx({
      client: env.admin,
      ownerNamespace: own,
      owner: { kind: 'UserRole', name: 'bob' },
      subject: { kind: 'User', name: 'bob@example.com' },
      level: 'namespace',
      namespaces: [web],
    });
    await env.admin.create<Binding>({
      ...RB,
      metadata: { name: 'written-by-hand', namespace: web },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
    });

    const name = `shturval:${own}.alice.viewer`;
    assert.deepEqual(await plugin.apply(alice([own, web])), {
      status: 'Applied',
      objects: [
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', namespace: own, name },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', namespace: web, name },
      ].sort((a, b) => a.namespace.localeCompare(b.namespace)),
    });
    assert.equal((await plugin.apply(bob)).status, 'Applied');
    const expected = (namespace: string) => ({
      name,
      namespace,
      labels: labels(own, 'UserRole', 'alice', 'rbac'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `shturval:${own}.viewer` },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
    });
    assert.deepEqual(shape(await env.admin.find<Binding>(RB, name, own)), expected(own));
    assert.deepEqual(shape(await env.admin.find<Binding>(RB, name, web)), expected(web));

    // The Scope's namespaces change: the binding moves out of `own` and into `api`.
    assert.equal((await plugin.apply(alice([web, api]))).status, 'Applied');
    assert.equal(await env.admin.find(RB, name, own), undefined);
    assert.deepEqual(shape(await env.admin.find<Binding>(RB, name, api)), expected(api));

    assert.deepEqual(await plugin.delete(alice([web, api])), { status: 'Applied', objects: [] });
    assert.deepEqual(
      await plugin.delete(alice([web, api])),
      { status: 'Applied', objects: [] },
      'idempotent',
    );
    assert.equal(await env.admin.find(RB, name, web), undefined);
    assert.equal(await env.admin.find(RB, name, api), undefined);
    assert.ok(await env.admin.find(RB, 'written-by-hand', web), 'a binding written by hand stays');
    assert.ok(await env.admin.find(RB, `shturval:${own}.bob.viewer`, web), "another owner's binding stays");
  });

  it('cluster and platform levels write a ClusterRoleBinding to the right ClusterRole', async (t) => {
    const own = await env.namespace(t, 'rbac-crb');
    const plugin = new RbacPlugin();
    const at = (level: Level, kind: 'UserRole' | 'GroupRole', subject: Subject) =>
      ctx({ client: env.admin, ownerNamespace: own, owner: { kind, name: 'ops' }, subject, level });
    const user = at('cluster', 'UserRole', ALICE);
    const group = at('platform', 'GroupRole', { kind: 'Group', name: 'oidc:ops' });
    assert.equal((await plugin.apply(user)).status, 'Applied');
    assert.equal((await plugin.apply(group)).status, 'Applied');
    assert.deepEqual(shape(await env.admin.find<Binding>(CRB, `shturval:${own}.ops.viewer`)), {
      name: `shturval:${own}.ops.viewer`,
      namespace: undefined,
      labels: labels(own, 'UserRole', 'ops', 'rbac'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `shturval:${own}.viewer` },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
    });
    assert.deepEqual(shape(await env.admin.find<Binding>(CRB, `shturval:${own}.g.ops.viewer`)), {
      name: `shturval:${own}.g.ops.viewer`,
      namespace: undefined,
      labels: labels(own, 'GroupRole', 'ops', 'rbac'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `platform:${own}.viewer` },
      subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'oidc:ops' }],
    });
    assert.equal(plugin.applies(group), true);
    assert.equal(plugin.applies({ ...group, target: { ...group.target, cluster: 'capi/client' } }), false);
    assert.deepEqual(await plugin.delete(user), { status: 'Applied', objects: [] });
    assert.deepEqual(await plugin.delete(group), { status: 'Applied', objects: [] });
    assert.equal(await env.admin.find(CRB, `shturval:${own}.ops.viewer`), undefined);
    assert.equal(await env.admin.find(CRB, `shturval:${own}.g.ops.viewer`), undefined);
  });

  it('a grant the status never recorded is created outright; a pass finding its names taken reads and repairs, as after a crash', async (t) => {
    const [own, web] = [await env.namespace(t, 'rbac-fresh'), await env.namespace(t, 'rbac-fresh-web')];
    const plugin = new RbacPlugin();
    const name = `shturval:${own}.alice.viewer`;
    const alice = (namespaces: string[], previous?: PluginObject) =>
      ctx({
        client: env.admin,
        ownerNamespace: own,
        owner: { kind: 'UserRole', name: 'alice' },
        subject: ALICE,
        level: 'namespace',
        namespaces,
        ...(previous ? { previous } : {}),
      });
    // A first pass writes both, and its status is never recorded (the operator stopped).
    assert.equal((await plugin.apply(alice([own, web]))).status, 'Applied');
    // Meanwhile someone edits one, and the Scope drops the other namespace.
    const live = await env.admin.get<Binding>(RB, name, own);
    await env.admin.replace({
      ...live,
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'mallory' }],
    });
    // The next pass still has nothing on record: its create finds the name taken, so it
    // reads, puts the binding back and removes the one no longer wanted.
    assert.deepEqual(await plugin.apply(alice([own])), {
      status: 'Applied',
      objects: [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', namespace: own, name }],
    });
    assert.deepEqual((await env.admin.get<Binding>(RB, name, own)).subjects, [
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' },
    ]);
    assert.equal(await env.admin.find(RB, name, web), undefined);
  });

  it('with the grant on record, a binding deleted by hand is written again', async (t) => {
    const own = await env.namespace(t, 'rbac-recorded');
    const plugin = new RbacPlugin();
    const name = `shturval:${own}.alice.viewer`;
    const c = ctx({
      client: env.admin,
      ownerNamespace: own,
      owner: { kind: 'UserRole', name: 'alice' },
      subject: ALICE,
      level: 'cluster',
    });
    const first = await plugin.apply(c);
    assert.equal(first.status, 'Applied');
    await env.admin.delete(CRB, name);
    assert.deepEqual(await plugin.apply({ ...c, previous: first }), first);
    assert.ok(await env.admin.find(CRB, name), 'written again');
    await plugin.delete(c);
  });

  it('a same-named binding someone else wrote is not overwritten, nor deleted, and the grant is Failed', async (t) => {
    const own = await env.namespace(t, 'rbac-taken');
    const name = `shturval:${own}.alice.viewer`;
    const theirs = {
      ...RB,
      metadata: { name, namespace: own, labels: { team: 'a' } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'mallory' }],
    };
    await env.admin.create<Binding>(theirs);
    const plugin = new RbacPlugin();
    const c = ctx({
      client: env.admin,
      ownerNamespace: own,
      owner: { kind: 'UserRole', name: 'alice' },
      subject: ALICE,
      level: 'namespace',
      namespaces: [own],
    });
    assert.deepEqual(await plugin.apply(c), {
      status: 'Failed',
      message: `RoleBinding ${own}/${name} is held by someone else (not permissions.shturval.tech): not ours to overwrite`,
      objects: [],
    });
    assert.deepEqual(await plugin.delete(c), { status: 'Applied', objects: [] });
    assert.deepEqual(shape(await env.admin.get<Binding>(RB, name, own)), { ...shape(theirs as Binding) });
  });

  it("an apiserver refusal is Failed with the apiserver's message; the other namespaces are still written", async (t) => {
    const own = await env.namespace(t, 'rbac-refused');
    const plugin = new RbacPlugin();
    const missing = `${own}-missing`;
    const c = ctx({
      client: env.admin,
      ownerNamespace: own,
      owner: { kind: 'UserRole', name: 'alice' },
      subject: ALICE,
      level: 'namespace',
      namespaces: [own, missing],
    });
    const r = await plugin.apply(c);
    assert.equal(r.status, 'Failed');
    assert.match(
      r.message ?? '',
      new RegExp(
        `RoleBinding ${missing}/shturval:${own}\\.alice\\.viewer: .*NotFound \\(404\\): namespaces "${missing}" not found`,
      ),
    );
    assert.deepEqual(r.objects, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        namespace: own,
        name: `shturval:${own}.alice.viewer`,
      },
    ]);
    const invalid = await plugin.apply(
      ctx({
        client: env.admin,
        ownerNamespace: own,
        owner: { kind: 'UserRole', name: 'nobody' },
        subject: { kind: 'User', name: '' },
        level: 'namespace',
        namespaces: [own],
      }),
    );
    assert.equal(invalid.status, 'Failed');
    assert.match(invalid.message ?? '', /Invalid \(422\): .*subjects\[0\]\.name: Required value/);
  });
});

describe('tenant plugin (real apiserver)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
  });

  it("binds the subject to the tenant's tenant-get Role on the management cluster, whatever the target", async (t) => {
    const own = await env.namespace(t, 'tenant');
    const plugin = new TenantPlugin({ management: env.admin });
    const unreachable = {} as KubeClient; // the target's client: the plugin must not use it
    const c = ctx({
      client: unreachable,
      ownerNamespace: own,
      owner: { kind: 'GroupRole', name: 'devs' },
      subject: { kind: 'Group', name: 'oidc:devs' },
      level: 'namespace',
      namespaces: ['web'],
      tenant: 'shop',
    });
    assert.equal(plugin.applies(c), true);
    assert.equal(plugin.applies({ ...c, tenant: undefined }), false);
    assert.deepEqual(await plugin.apply(c), {
      status: 'Applied',
      objects: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          namespace: own,
          name: 'tenant-get.shop.g.devs.viewer',
        },
      ],
    });
    assert.deepEqual(shape(await env.admin.find<Binding>(RB, 'tenant-get.shop.g.devs.viewer', own)), {
      name: 'tenant-get.shop.g.devs.viewer',
      namespace: own,
      labels: labels(own, 'GroupRole', 'devs', 'tenant'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-get.shop' },
      subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'oidc:devs' }],
    });
    // The Scope moves to another tenant: the old binding goes in the same pass.
    assert.equal((await plugin.apply({ ...c, tenant: 'books' })).status, 'Applied');
    assert.equal(await env.admin.find(RB, 'tenant-get.shop.g.devs.viewer', own), undefined);
    assert.ok(await env.admin.find(RB, 'tenant-get.books.g.devs.viewer', own));
    assert.deepEqual(await plugin.delete(c), { status: 'Applied', objects: [] });
    assert.equal(await env.admin.find(RB, 'tenant-get.books.g.devs.viewer', own), undefined);
  });
});
