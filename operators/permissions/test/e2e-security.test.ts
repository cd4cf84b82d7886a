/**
 * Issue 35, written as the attacker, on real planes with the webhooks registered as the
 * chart registers them (failurePolicy Fail, DELETE included): nobody gains through the
 * operator what RBAC would refuse them, and tenants stay inside their walls. Each path
 * is tried by a user RBAC lets write the object; the attempt is refused at admission
 * with a message naming the missing right, a SubjectAccessReview for the attacker (or
 * the victim) answers as before, and the legitimate case next to it still works.
 *
 * 1. `aggregateTo` escalation: a user who may only create Permissions, holding a viewer
 *    grant, aggregates `*` into the viewer's platform: ClusterRole.
 * 2. Grants in another tenant: tenant A's admin creates a UserRole in tenant B's Scope.
 * 3. Deletes across tenants: tenant A's admin deletes tenant B's UserRole.
 * 6. Borrowed tenant names: a Scope whose tenantRef (or parentScope) names a tenant the
 *    writer does not manage.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { KubeClient, KubeObject } from '@operators/kit';
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING, Harness, ROLE, ROLE_BINDING, until } from './support/harness.ts';
import { deniedBy, refusal } from './support/refusal.ts';

const h = Harness.forFile();

const GROUP = 'permissions.shturval.tech';
const RBAC = 'rbac.authorization.k8s.io';

type Attrs =
  | { resourceAttributes: Record<string, string> }
  | { nonResourceAttributes: Record<string, string> };

/** What the apiserver of `client` answers to "may `user` do this?". */
async function allowed(client: KubeClient, user: string, attrs: Attrs): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, ...attrs },
  })) as unknown as { status?: { allowed?: boolean } };
  return review.status?.allowed === true;
}

/** Waits until the answer is `want` (RBAC's cache and the aggregation controller follow writes by a moment). */
function answers(client: KubeClient, user: string, attrs: Attrs, want: boolean): Promise<true> {
  return until(`a SubjectAccessReview for ${user} ${JSON.stringify(attrs)} to answer ${want}`, async () =>
    (await allowed(client, user, attrs)) === want ? true : undefined,
  );
}

/** Gives `user` a namespaced Role with `rules` (and waits until RBAC answers `probe` with yes). */
async function grantRole(
  ns: string,
  user: string,
  name: string,
  rules: unknown[],
  probe: Attrs,
): Promise<void> {
  await h.admin.create({ ...ROLE, metadata: { namespace: ns, name }, rules } as KubeObject);
  await h.admin.create({
    ...ROLE_BINDING,
    metadata: { namespace: ns, name },
    roleRef: { apiGroup: RBAC, kind: 'Role', name },
    subjects: [{ kind: 'User', apiGroup: RBAC, name: user }],
  } as KubeObject);
  await answers(h.admin, user, probe, true);
}

/** Gives `user` a ClusterRole with `rules`, removed after the test. */
async function grantClusterRole(t: TestContext, user: string, rules: unknown[], probe: Attrs): Promise<void> {
  const name = h.unique('sec-test');
  await h.admin.create({ ...CLUSTER_ROLE, metadata: { name }, rules } as KubeObject);
  await h.admin.create({
    ...CLUSTER_ROLE_BINDING,
    metadata: { name },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name },
    subjects: [{ kind: 'User', apiGroup: RBAC, name: user }],
  } as KubeObject);
  t.after(async () => {
    await h.admin.delete(CLUSTER_ROLE_BINDING, name).catch(() => undefined);
    await h.admin.delete(CLUSTER_ROLE, name).catch(() => undefined);
  });
  await answers(h.admin, user, probe, true);
}

const ours = (kind: string, ns: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: `${GROUP}/v1beta1`, kind, metadata: { namespace: ns, name }, spec }) as KubeObject;

const on = (ns: string, resource: string, verb: string, name?: string): Attrs => ({
  resourceAttributes: { namespace: ns, group: GROUP, resource, verb, ...(name ? { name } : {}) },
});

test('path 1: a user who may only create Permissions cannot aggregate `*` into the platform-viewer they hold (refused, naming escalate); "delete nodes" stays false; a platform admin with escalate aggregates, and a user holding the rules writes them', async (t) => {
  const ns = await h.namespace(t, 'sec-aggregate');
  const mallory = `mallory-${ns}@example.com`;
  await h.create('Permission', ns, 'platform-viewer', {
    level: 'platform',
    platform_rules: [{ apiGroups: [GROUP], resources: ['tenants'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'management', { level: 'platform' });
  await h.create('UserRole', ns, 'mallory-viewer', {
    user: mallory,
    scope: 'management',
    permissions: ['platform-viewer'],
  });
  await answers(
    h.admin,
    mallory,
    { resourceAttributes: { group: GROUP, resource: 'tenants', verb: 'list' } },
    true,
  );
  await grantRole(
    ns,
    mallory,
    'permission-writer',
    [{ apiGroups: [GROUP], resources: ['permissions'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
    on(ns, 'permissions', 'create'),
  );
  const deleteNodes: Attrs = { resourceAttributes: { group: '', resource: 'nodes', verb: 'delete' } };
  assert.equal(await allowed(h.admin, mallory, deleteNodes), false, 'before: mallory may not delete nodes');

  const as = h.mgmt.as(mallory);
  const everything = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];
  const r = await refusal(
    as.create(
      ours('Permission', ns, 'pwn', {
        level: 'platform',
        platform_rules: everything,
        aggregateTo: ['platform-viewer'],
      }),
    ),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('permissions'));
  assert.match(
    r.message,
    new RegExp(
      `user "${mallory}" may not aggregate the platform_rules of Permission "pwn" into Permission\\(s\\) "platform-viewer"`,
    ),
  );
  assert.match(
    r.message,
    /verb "escalate" on permissions\.permissions\.shturval\.tech with resourceName "platform-viewer"/,
  );
  // The same rules without aggregateTo: she does not hold them, so no platform: ClusterRole of them either.
  const own = await refusal(
    as.create(ours('Permission', ns, 'pwn', { level: 'platform', platform_rules: everything })),
  );
  assert.match(own.message, deniedBy('permissions'));
  assert.match(
    own.message,
    /its platform_rules grant what they do not hold on the management cluster \(verb "\*" on "\*" in group "\*"\)/,
  );
  assert.match(
    own.message,
    /verb "escalate" on permissions\.permissions\.shturval\.tech with resourceName "pwn"/,
  );
  // Nor by editing a Permission she may update: the viewer itself.
  const edit = await refusal(
    as.patch({ apiVersion: `${GROUP}/v1beta1`, kind: 'Permission' }, 'platform-viewer', ns, {
      type: 'merge',
      body: { spec: { platform_rules: everything } },
    }),
  );
  assert.match(edit.message, /may not write Permission "platform-viewer"/);
  assert.equal(await h.get('Permission', ns, 'pwn'), undefined);
  // Long enough for the aggregation controller to have acted, had anything been written.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(
    await allowed(h.admin, mallory, deleteNodes),
    false,
    'after: mallory still may not delete nodes',
  );

  // A user who holds exactly the rules writes them without escalate, as RBAC would let them write the ClusterRole.
  const holder = `holder-${ns}@example.com`;
  await grantClusterRole(t, holder, [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }], {
    resourceAttributes: { group: '', resource: 'nodes', verb: 'get' },
  });
  await grantRole(
    ns,
    holder,
    'holder-permission-writer',
    [{ apiGroups: [GROUP], resources: ['permissions'], verbs: ['create'] }],
    on(ns, 'permissions', 'create'),
  );
  const held = await h.mgmt.as(holder).create(
    ours('Permission', ns, 'node-reader', {
      level: 'platform',
      platform_rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
    }),
  );
  assert.equal(held.metadata.name, 'node-reader');

  // The legitimate case: a platform admin holding escalate on Permissions aggregates into the viewer.
  const pat = `pat-${ns}@example.com`;
  await grantRole(
    ns,
    pat,
    'platform-admin',
    [{ apiGroups: [GROUP], resources: ['permissions'], verbs: ['create', 'escalate'] }],
    on(ns, 'permissions', 'escalate', 'platform-viewer'),
  );
  const aggregated = await h.mgmt.as(pat).create(
    ours('Permission', ns, 'node-lister', {
      level: 'platform',
      platform_rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['list'] }],
      aggregateTo: ['platform-viewer'],
    }),
  );
  assert.equal(aggregated.metadata.name, 'node-lister');
  await answers(
    h.admin,
    mallory,
    { resourceAttributes: { group: '', resource: 'nodes', verb: 'list' } },
    true,
  );
  assert.equal(await allowed(h.admin, mallory, deleteNodes), false, 'what was aggregated, and no more');
});

/** Two tenants A and B over one client cluster, each with a namespace there; their admins ann and ben. */
async function twoTenants(t: TestContext, prefix: string) {
  const ns = await h.namespace(t, prefix);
  const prod = await h.cluster({ namespace: ns, name: 'prod' });
  const teamA = h.unique('team-a');
  const teamB = h.unique('team-b');
  await h.clientNamespace(teamA);
  await h.clientNamespace(teamB);
  const ann = `ann-${ns}@example.com`;
  const ben = `ben-${ns}@example.com`;
  await h.create('Tenant', ns, 'a', { clusters: { ids: [prod.id] }, namespaces: [teamA], admins: [ann] });
  await h.create('Tenant', ns, 'b', { clusters: { ids: [prod.id] }, namespaces: [teamB], admins: [ben] });
  await h.create('Permission', ns, 'ns-admin', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  for (const tenant of ['a', 'b']) {
    await h.waitFor('Scope', ns, `tenant-${tenant}`, 'generated by its Tenant', () => true);
  }
  // The tenant admins write roles through tenant-edit; granting ns-admin takes bind on it.
  await answers(h.admin, ann, on(ns, 'userroles', 'create'), true);
  await answers(h.admin, ben, on(ns, 'userroles', 'create'), true);
  for (const [user, name] of [
    [ann, 'ann-binds'],
    [ben, 'ben-binds'],
  ] as const) {
    await grantRole(
      ns,
      user,
      name,
      [{ apiGroups: [GROUP], resources: ['permissions'], resourceNames: ['ns-admin'], verbs: ['bind'] }],
      on(ns, 'permissions', 'bind', 'ns-admin'),
    );
  }
  const client = h.clients[0]?.admin;
  if (!client) throw new Error('no client plane');
  return { ns, teamA, teamB, ann, ben, client };
}

const createPods = (namespace: string): Attrs => ({
  resourceAttributes: { namespace, group: '', resource: 'pods', verb: 'create' },
});

test("path 2: tenant A's admin, holding bind on the Permission, cannot create a UserRole in tenant B's Scope (refused, naming manage on Tenant b); their access to B's namespace stays none; in their own Scope it works", async (t) => {
  const { ns, teamA, teamB, ann, client } = await twoTenants(t, 'sec-grant');
  assert.equal(await allowed(client, ann, createPods(teamB)), false, "before: no access to B's namespace");
  const as = h.mgmt.as(ann);
  const r = await refusal(
    as.create(ours('UserRole', ns, 'ann-in-b', { user: ann, scope: 'tenant-b', permissions: ['ns-admin'] })),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('userroles'));
  assert.match(
    r.message,
    new RegExp(`user "${ann}" may not create UserRole "ann-in-b": Scope "tenant-b" belongs to Tenant "b"`),
  );
  assert.match(r.message, /verb "manage" on tenants\.permissions\.shturval\.tech with resourceName "b"/);
  // Nor as a GroupRole.
  const g = await refusal(
    as.create(
      ours('GroupRole', ns, 'ann-in-b', { group: 'a-team', scope: 'tenant-b', permissions: ['ns-admin'] }),
    ),
  );
  assert.match(g.message, deniedBy('grouproles'));
  assert.match(g.message, /Scope "tenant-b" belongs to Tenant "b"/);
  assert.equal(await h.get('UserRole', ns, 'ann-in-b'), undefined);

  // Her own tenant: admitted, and the grant lands in A's namespace only.
  const mine = await as.create(
    ours('UserRole', ns, 'ann-in-a', { user: ann, scope: 'tenant-a', permissions: ['ns-admin'] }),
  );
  assert.equal(mine.metadata.name, 'ann-in-a');
  await answers(client, ann, createPods(teamA), true);
  assert.equal(
    await allowed(client, ann, createPods(teamB)),
    false,
    "after: still no access to B's namespace",
  );
});

test("path 3: tenant A's admin cannot delete tenant B's UserRole (refused, naming manage on Tenant b), and B's grant stays; A's admin deletes their own, B's admin theirs", async (t) => {
  const { ns, teamA, teamB, ann, ben, client } = await twoTenants(t, 'sec-delete');
  await h.mgmt
    .as(ben)
    .create(ours('UserRole', ns, 'ben-in-b', { user: ben, scope: 'tenant-b', permissions: ['ns-admin'] }));
  await h.mgmt
    .as(ann)
    .create(ours('UserRole', ns, 'ann-in-a', { user: ann, scope: 'tenant-a', permissions: ['ns-admin'] }));
  await answers(client, ben, createPods(teamB), true);
  await answers(client, ann, createPods(teamA), true);

  const userRole = { apiVersion: `${GROUP}/v1beta1`, kind: 'UserRole' };
  const r = await refusal(h.mgmt.as(ann).delete(userRole, 'ben-in-b', ns));
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('userroles'));
  assert.match(
    r.message,
    new RegExp(`user "${ann}" may not delete UserRole "ben-in-b": Scope "tenant-b" belongs to Tenant "b"`),
  );
  assert.match(r.message, /verb "manage" on tenants\.permissions\.shturval\.tech with resourceName "b"/);
  assert.ok(await h.get('UserRole', ns, 'ben-in-b'), "B's UserRole is still there");
  await new Promise((res) => setTimeout(res, 1000));
  assert.equal(await allowed(client, ben, createPods(teamB)), true, "B's grant stays");

  // Each admin removes their own.
  await h.mgmt.as(ann).delete(userRole, 'ann-in-a', ns);
  await h.mgmt.as(ben).delete(userRole, 'ben-in-b', ns);
  await h.gone('UserRole', ns, 'ann-in-a');
  await h.gone('UserRole', ns, 'ben-in-b');
  await answers(client, ben, createPods(teamB), false);
});

test("path 6: a Scope cannot borrow a tenant's name: tenantRef or parentScope naming tenant B is refused (naming manage on Tenant b), and the writer gains no read of B; a Scope squatting tenant-c's name is never adopted by Tenant c (TenantScopeNameTaken until it goes); B's admin hangs a Scope below B's", async (t) => {
  const ns = await h.namespace(t, 'sec-borrow');
  const prod = await h.cluster({ namespace: ns, name: 'prod' });
  const teamB = h.unique('team-b');
  await h.clientNamespace(teamB);
  const ben = `ben-${ns}@example.com`;
  const mallory = `mallory-${ns}@example.com`;
  await h.create('Tenant', ns, 'b', { clusters: { ids: [prod.id] }, namespaces: [teamB], admins: [ben] });
  await h.waitFor('Scope', ns, 'tenant-b', 'generated by its Tenant (the operator writes it)', () => true);
  for (const user of [mallory, ben]) {
    await grantRole(
      ns,
      user,
      `${user.split('-')[0]}-scope-writer`,
      [
        {
          apiGroups: [GROUP],
          resources: ['scopes'],
          verbs: ['create', 'get', 'list', 'update', 'patch', 'delete'],
        },
      ],
      on(ns, 'scopes', 'create'),
    );
  }
  const readB = on(ns, 'tenants', 'get', 'b');
  assert.equal(await allowed(h.admin, mallory, readB), false, 'before: mallory may not read Tenant b');

  const as = h.mgmt.as(mallory);
  const borrowed = { level: 'namespace', clusters: { ids: [prod.id] }, namespaces: [teamB] };
  const r = await refusal(
    as.create(ours('Scope', ns, 'borrowed', { ...borrowed, tenantRef: { name: 'b' } })),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('scopes'));
  assert.match(
    r.message,
    new RegExp(`user "${mallory}" may not create Scope "borrowed": its spec.tenantRef names Tenant "b"`),
  );
  assert.match(r.message, /verb "manage" on tenants\.permissions\.shturval\.tech with resourceName "b"/);
  const p = await refusal(
    as.create(ours('Scope', ns, 'below-b', { ...borrowed, parentScope: { name: 'tenant-b' } })),
  );
  assert.match(p.message, deniedBy('scopes'));
  assert.match(p.message, /its spec.parentScope "tenant-b" belongs to Tenant "b"/);
  // Nor by taking over B's own Scope, or deleting it.
  const scopeKind = { apiVersion: `${GROUP}/v1beta1`, kind: 'Scope' };
  const edit = await refusal(
    as.patch(scopeKind, 'tenant-b', ns, {
      type: 'merge',
      body: { spec: { clusters: { ids: [prod.id, 'x/y'] } } },
    }),
  );
  assert.match(edit.message, /may not update Scope "tenant-b": Scope "tenant-b" belongs to Tenant "b"/);
  const del = await refusal(as.delete(scopeKind, 'tenant-b', ns));
  assert.match(del.message, /may not delete Scope "tenant-b"/);
  assert.equal(await h.get('Scope', ns, 'borrowed'), undefined);
  assert.equal(await allowed(h.admin, mallory, readB), false, 'after: mallory still may not read Tenant b');
  // A Scope of no tenant keeps today's rules.
  const plain = await as.create(ours('Scope', ns, 'mallorys', borrowed));
  assert.equal(plain.metadata.name, 'mallorys');

  // Nor by taking a tenant's Scope name before the Tenant exists: the Tenant never adopts it.
  const teamC = h.unique('team-c');
  await h.clientNamespace(teamC);
  const squat = { level: 'namespace', clusters: { ids: [prod.id, 'x/y'] }, namespaces: [teamC, teamB] };
  await as.create(ours('Scope', ns, 'tenant-c', squat));
  await h.create('Tenant', ns, 'c', { clusters: { ids: [prod.id] }, namespaces: [teamC], admins: [ben] });
  const tenantCreated = (o: { status?: Record<string, unknown> }) =>
    (o.status?.conditions as { type: string; status: string; reason: string }[] | undefined)?.find(
      (c) => c.type === 'TenantCreated',
    );
  await h.waitFor('Tenant', ns, 'c', 'TenantCreated False, TenantScopeNameTaken', (o) => {
    const c = tenantCreated(o);
    return c?.status === 'False' && c.reason === 'TenantScopeNameTaken';
  });
  const squatted = await h.get('Scope', ns, 'tenant-c');
  assert.equal(squatted?.metadata.ownerReferences, undefined, 'not adopted');
  assert.deepEqual(squatted?.spec, squat, "mallory's Scope is left as she wrote it");
  // Once the squatter's Scope is gone, the Tenant creates its own.
  await h.remove('Scope', ns, 'tenant-c');
  const own = await h.waitFor('Scope', ns, 'tenant-c', 'controlled by Tenant c', (o) =>
    (o.metadata.ownerReferences ?? []).some(
      (r) => r.kind === 'Tenant' && r.name === 'c' && r.controller === true,
    ),
  );
  assert.deepEqual((own.spec as { namespaces?: string[] }).namespaces, [teamC]);
  await h.waitFor('Tenant', ns, 'c', 'TenantCreated True', (o) => tenantCreated(o)?.status === 'True');

  // B's admin (manage on b, through tenant-edit.b) may hang a Scope below B's.
  await answers(h.admin, ben, on(ns, 'tenants', 'manage', 'b'), true);
  const sub = await h.mgmt
    .as(ben)
    .create(ours('Scope', ns, 'b-sub', { ...borrowed, parentScope: { name: 'tenant-b' } }));
  assert.equal(sub.metadata.name, 'b-sub');
});
