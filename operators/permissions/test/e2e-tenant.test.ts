/**
 * Tenants on real planes (§5, Tenant): the generated Scope `tenant-<name>` owned by the
 * Tenant, the `tenant-get.<t>` / `tenant-edit.<t>` Roles and their bindings (proved by
 * the management apiserver's own SubjectAccessReviews), child Tenants and their child
 * Scopes, the refusal to delete a parent while a child exists, and a Tenant deleted
 * while UserRoles and GroupRoles sit in its Scope: the Scope goes with foreground
 * propagation, kube-controller-manager's garbage collector takes the roles first (their
 * bindings leave the client cluster), then the Scope and the Tenant go.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type KubeClient, type KubeObject, Reflector } from '@operators/kit';
import pino from 'pino';
import { API_VERSION } from '../src/api/common.ts';
import { Harness, KIND, type Kind, type Obj, ROLE, ROLE_BINDING, until } from './support/harness.ts';

const h = Harness.forFile();

const GROUP = 'permissions.shturval.tech';
const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;

type Condition = { type: string; status: string; reason?: string; message?: string };
type RoleBindingObj = KubeObject & {
  roleRef: { kind: string; name: string };
  subjects?: { kind: string; name: string }[];
};
type RoleObj = KubeObject & { rules: unknown[] };

function condition(o: Obj, type: string): Condition | undefined {
  return ((o.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
}

/** What the apiserver of `client` answers to "may `user` (in `groups`) do this?". */
async function allowed(
  client: KubeClient,
  user: string,
  resourceAttributes: Record<string, string>,
  groups: string[] = [],
): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, groups, resourceAttributes },
  })) as unknown as { status?: { allowed?: boolean } };
  return review.status?.allowed === true;
}

/** Waits until the apiserver's answer is `want` (its RBAC cache follows writes by a moment). */
function answers(
  client: KubeClient,
  user: string,
  attrs: Record<string, string>,
  want: boolean,
  groups: string[] = [],
): Promise<true> {
  return until(`a SubjectAccessReview for ${user} ${JSON.stringify(attrs)} to answer ${want}`, async () =>
    (await allowed(client, user, attrs, groups)) === want ? true : undefined,
  );
}

/** A fresh namespace on the client plane, for a namespace-level Tenant. */
async function clientNamespace(prefix: string): Promise<string> {
  const name = h.unique(prefix);
  await h.clientNamespace(name);
  return name;
}

interface Seen {
  readonly kind: Kind;
  readonly type: 'added' | 'updated' | 'deleted';
  readonly name: string;
  readonly deleting: boolean;
  readonly finalizers: readonly string[];
}

/**
 * Every change to our kinds in `ns`, in the order the watches delivered them, so that a
 * test can see states that last only a moment (a Scope under foreground deletion) and
 * the order in which objects went.
 */
async function watchKinds(t: TestContext, ns: string, kinds: readonly Kind[]): Promise<Seen[]> {
  const seen: Seen[] = [];
  const log = pino({ level: 'silent' });
  const reflectors = kinds.map((kind) => {
    const r = new Reflector<KubeObject>({ client: h.admin, gvk: KIND[kind], namespace: ns, log });
    r.onDelta((d) => {
      seen.push({
        kind,
        type: d.type,
        name: d.object.metadata.name ?? '',
        deleting: d.object.metadata.deletionTimestamp !== undefined,
        finalizers: d.object.metadata.finalizers ?? [],
      });
    });
    r.start();
    return r;
  });
  t.after(async () => {
    await Promise.all(reflectors.map((r) => r.stop()));
  });
  await Promise.all(reflectors.map((r) => r.ready()));
  return seen;
}

test('a Tenant with namespaces generates its namespace-level Scope tenant-<name> owned by it, the tenant-get and tenant-edit Roles bound to members and admins, and TenantCreated=True', async (t) => {
  // The deletion tests below need the garbage collector to watch our kinds: start finding
  // out now, while the tests that do not depend on it run.
  h.garbageCollectorWatching().catch(() => undefined);
  const ns = await h.namespace(t, 'tenant');
  const prod = await h.cluster({ namespace: ns, name: 'prod' });
  const team = await clientNamespace('team');
  const created = await h.create('Tenant', ns, 'acme', {
    clusters: { ids: [prod.id] },
    namespaces: [team],
    admins: ['ann@example.com'],
    members: ['max@example.com'],
  });

  const tenant = await h.waitFor(
    'Tenant',
    ns,
    'acme',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  assert.deepEqual(tenant.status?.scopeRef, { name: 'tenant-acme' });
  assert.deepEqual(tenant.status?.roles, { get: 'tenant-get.acme', edit: 'tenant-edit.acme' });

  const scope = await h.waitFor(
    'Scope',
    ns,
    'tenant-acme',
    'its paths',
    (o) => Array.isArray(o.status?.paths) && (o.status.paths as unknown[]).length > 0,
  );
  assert.deepEqual(scope.metadata.ownerReferences, [
    {
      apiVersion: API_VERSION,
      kind: 'Tenant',
      name: 'acme',
      uid: created.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.deepEqual(scope.spec, {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [team],
    tenantRef: { name: 'acme' },
  });
  assert.deepEqual(scope.status?.paths, [`/acme/${ns}/prod/${team}`]);

  for (const role of ['tenant-get.acme', 'tenant-edit.acme']) {
    const r = (await h.find(ROLE, role, ns, 'mgmt')) as RoleObj | undefined;
    assert.ok(r, `Role ${role} exists in the Tenant's namespace`);
    assert.equal(
      r.metadata.ownerReferences?.[0]?.uid,
      created.metadata.uid,
      `${role} is owned by the Tenant`,
    );
  }
  const getBinding = (await h.find(ROLE_BINDING, 'tenant-get.acme', ns, 'mgmt')) as
    | RoleBindingObj
    | undefined;
  const editBinding = (await h.find(ROLE_BINDING, 'tenant-edit.acme', ns, 'mgmt')) as
    | RoleBindingObj
    | undefined;
  assert.deepEqual(getBinding?.roleRef, {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'Role',
    name: 'tenant-get.acme',
  });
  assert.deepEqual(getBinding?.subjects?.map((s) => `${s.kind}:${s.name}`).sort(), [
    'User:ann@example.com',
    'User:max@example.com',
  ]);
  assert.deepEqual(editBinding?.roleRef, {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'Role',
    name: 'tenant-edit.acme',
  });
  assert.deepEqual(
    editBinding?.subjects?.map((s) => `${s.kind}:${s.name}`),
    ['User:ann@example.com'],
  );

  // The management apiserver's own answers: members read, admins also write UserRoles.
  const on = (resource: string, verb: string, name?: string) => ({
    namespace: ns,
    group: GROUP,
    resource,
    verb,
    ...(name ? { name } : {}),
  });
  await answers(h.admin, 'max@example.com', on('tenants', 'get', 'acme'), true);
  await answers(h.admin, 'max@example.com', on('userroles', 'list'), true);
  await answers(h.admin, 'max@example.com', on('scopes', 'get', 'tenant-acme'), true);
  await answers(h.admin, 'ann@example.com', on('userroles', 'create'), true);
  await answers(h.admin, 'ann@example.com', on('tenants', 'get', 'acme'), true);
  // With the grants above visible, the refusals are the apiserver's settled answer.
  assert.equal(await allowed(h.admin, 'max@example.com', on('userroles', 'create')), false);
  assert.equal(await allowed(h.admin, 'max@example.com', on('tenants', 'get', 'another-tenant')), false);
  assert.equal(await allowed(h.admin, 'ann@example.com', on('tenants', 'delete', 'acme')), false);
  assert.equal(await allowed(h.admin, 'eve@example.com', on('userroles', 'list')), false);
});

test('a child Tenant gets a child Scope whose parentScope is the parent tenant Scope and whose paths start with the parent name', async (t) => {
  const ns = await h.namespace(t, 'child');
  const prod = await h.cluster({ namespace: ns, name: 'prod' });
  const a = await clientNamespace('a');
  const b = await clientNamespace('b');
  await h.create('Tenant', ns, 'acme', {
    clusters: { ids: [prod.id] },
    namespaces: [a, b],
    admins: ['ann@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'acme',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await h.create('Tenant', ns, 'acme-dev', {
    parent: 'acme',
    clusters: { ids: [prod.id] },
    namespaces: [a],
    members: ['max@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'acme-dev',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );

  const child = await h.waitFor(
    'Scope',
    ns,
    'tenant-acme-dev',
    'paths under the parent',
    (o) => JSON.stringify(o.status?.paths) === JSON.stringify([`/acme/acme-dev/${ns}/prod/${a}`]),
  );
  assert.deepEqual(child.spec?.parentScope, { name: 'tenant-acme' });
  assert.deepEqual(child.spec?.tenantRef, { name: 'acme-dev' });
  assert.equal(child.metadata.ownerReferences?.[0]?.name, 'acme-dev');
  const parent = await h.waitFor('Scope', ns, 'tenant-acme', 'its paths', (o) =>
    Array.isArray(o.status?.paths),
  );
  assert.deepEqual(parent.status?.paths, [`/acme/${ns}/prod/${a}`, `/acme/${ns}/prod/${b}`]);
  assert.equal(parent.spec?.parentScope, undefined);
});

test('deleting a parent Tenant while a child exists is refused (ChildTenantsExist, Warning Event) and completes once the child is deleted', async (t) => {
  await h.garbageCollectorWatching();
  const ns = await h.namespace(t, 'parent');
  await h.create('Tenant', ns, 'acme', { admins: ['ann@example.com'] });
  await h.waitFor(
    'Tenant',
    ns,
    'acme',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await h.create('Tenant', ns, 'acme-dev', { parent: 'acme', members: ['max@example.com'] });
  await h.waitFor(
    'Tenant',
    ns,
    'acme-dev',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );

  await h.remove('Tenant', ns, 'acme');
  const event = await until('a Warning Event ChildTenantsExist about the parent', async () => {
    const events = await h.admin.list<
      KubeObject & { type: string; reason: string; note?: string; regarding: { kind: string; name: string } }
    >(EVENT, { namespace: ns });
    return events.items.find(
      (e) =>
        e.type === 'Warning' &&
        e.reason === 'ChildTenantsExist' &&
        e.regarding.kind === 'Tenant' &&
        e.regarding.name === 'acme',
    );
  });
  assert.match(event.note ?? '', /acme-dev/);
  const refused = await h.waitFor('Tenant', ns, 'acme', 'a condition saying ChildTenantsExist', (o) =>
    ((o.status?.conditions ?? []) as Condition[]).some((c) => c.reason === 'ChildTenantsExist'),
  );
  assert.ok(refused.metadata.deletionTimestamp, 'the parent is marked for deletion');
  assert.deepEqual(refused.metadata.finalizers, ['permissions.shturval.tech/finalizer']);
  // Several retry periods later the parent, its Scope and its Roles are all still there.
  await new Promise((r) => setTimeout(r, 1_500));
  assert.ok(await h.get('Tenant', ns, 'acme'), 'the parent stays while its child exists');
  const parentScope = await h.get('Scope', ns, 'tenant-acme');
  assert.ok(parentScope, 'the parent Scope stays');
  assert.equal(parentScope.spec?.level, 'cluster', 'a Tenant without namespaces gets a cluster-level Scope');
  assert.equal(parentScope.metadata.deletionTimestamp, undefined, 'the parent Scope is not being deleted');
  assert.ok(await h.find(ROLE, 'tenant-edit.acme', ns, 'mgmt'), 'the parent tenant-edit Role stays');

  await h.remove('Tenant', ns, 'acme-dev');
  await h.gone('Tenant', ns, 'acme-dev', 15_000);
  await h.gone('Tenant', ns, 'acme', 15_000);
  await h.gone('Scope', ns, 'tenant-acme-dev');
  await h.gone('Scope', ns, 'tenant-acme');
});

test('a Tenant deleted while UserRoles and GroupRoles sit in its Scope: foreground Scope deletion, the garbage collector takes the roles and their client bindings, then the Scope, the Tenant and its Roles go', async (t) => {
  await h.garbageCollectorWatching();
  const ns = await h.namespace(t, 'teardown');
  const prod = await h.cluster({ namespace: ns, name: 'prod' });
  const team = await clientNamespace('team');
  await h.create('Tenant', ns, 'acme', {
    clusters: { ids: [prod.id] },
    namespaces: [team],
    admins: ['ann@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'acme',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await h.create('Permission', ns, 'pod-reader', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
  });
  await h.create('UserRole', ns, 'max-reads', {
    user: 'max@example.com',
    scope: 'tenant-acme',
    permissions: ['pod-reader'],
  });
  await h.create('GroupRole', ns, 'devs-read', {
    group: 'devs',
    scope: 'tenant-acme',
    permissions: ['pod-reader'],
  });
  const ur = await h.waitFor('UserRole', ns, 'max-reads', 'ready', (o) => o.status?.ready === true, 45_000);
  await h.waitFor('GroupRole', ns, 'devs-read', 'ready', (o) => o.status?.ready === true, 45_000);
  assert.equal(
    ur.metadata.ownerReferences?.[0]?.name,
    'tenant-acme',
    'the UserRole hangs off the tenant Scope',
  );

  const client = h.clients[0]?.admin;
  assert.ok(client);
  const pods = { namespace: team, resource: 'pods', verb: 'list' };
  await answers(client, 'max@example.com', pods, true);
  await answers(client, 'someone@example.com', pods, true, ['devs']);
  assert.ok(
    await h.find(ROLE_BINDING, `shturval:${ns}.max-reads.pod-reader`, team),
    'the user binding is in the client cluster',
  );
  assert.ok(
    await h.find(ROLE_BINDING, `shturval:${ns}.g.devs-read.pod-reader`, team),
    'the group binding is in the client cluster',
  );
  assert.ok(
    await h.find(ROLE_BINDING, `tenant-get.acme.max-reads.pod-reader`, ns, 'mgmt'),
    'the tenant plugin bound the user to tenant-get',
  );

  const seen = await watchKinds(t, ns, ['Tenant', 'Scope', 'UserRole', 'GroupRole']);
  const started = Date.now();
  await h.remove('Tenant', ns, 'acme');
  await h.gone('Tenant', ns, 'acme', 60_000);
  const tookMs = Date.now() - started;
  await h.gone('Scope', ns, 'tenant-acme', 5_000);
  await h.gone('UserRole', ns, 'max-reads', 5_000);
  await h.gone('GroupRole', ns, 'devs-read', 5_000);

  // The Scope was deleted in the foreground: the apiserver put the GC's finalizer on it.
  assert.ok(
    seen.some(
      (s) =>
        s.kind === 'Scope' &&
        s.name === 'tenant-acme' &&
        s.deleting &&
        s.finalizers.includes('foregroundDeletion'),
    ),
    `the tenant Scope carried foregroundDeletion while it went; seen: ${JSON.stringify(seen)}`,
  );
  const goneAt = (kind: Kind, name: string) =>
    seen.findIndex((s) => s.kind === kind && s.name === name && s.type === 'deleted');
  const order = {
    userRole: goneAt('UserRole', 'max-reads'),
    groupRole: goneAt('GroupRole', 'devs-read'),
    scope: goneAt('Scope', 'tenant-acme'),
    tenant: goneAt('Tenant', 'acme'),
  };
  assert.ok(
    order.userRole >= 0 && order.groupRole >= 0 && order.scope >= 0 && order.tenant >= 0,
    JSON.stringify(order),
  );
  assert.ok(
    order.userRole < order.scope && order.groupRole < order.scope,
    `roles went before their Scope: ${JSON.stringify(order)}`,
  );
  assert.ok(order.scope < order.tenant, `the Scope went before the Tenant: ${JSON.stringify(order)}`);

  // The client cluster no longer grants anything, and the tenant's Roles are gone.
  assert.equal(await h.find(ROLE_BINDING, `shturval:${ns}.max-reads.pod-reader`, team), undefined);
  assert.equal(await h.find(ROLE_BINDING, `shturval:${ns}.g.devs-read.pod-reader`, team), undefined);
  await answers(client, 'max@example.com', pods, false);
  await answers(client, 'someone@example.com', pods, false, ['devs']);
  assert.equal(await h.find(ROLE_BINDING, 'tenant-get.acme.max-reads.pod-reader', ns, 'mgmt'), undefined);
  for (const name of ['tenant-get.acme', 'tenant-edit.acme']) {
    assert.equal(await h.find(ROLE, name, ns, 'mgmt'), undefined, `Role ${name} is deleted`);
    assert.equal(await h.find(ROLE_BINDING, name, ns, 'mgmt'), undefined, `RoleBinding ${name} is deleted`);
  }
  t.diagnostic(`the Tenant was gone ${tookMs} ms after its delete`);
});
