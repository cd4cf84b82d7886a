/**
 * Nobody gains through the operator what RBAC would refuse them, and tenants stay inside
 * their walls (issue 35), on real planes (a management plane and a client plane):
 *
 * - a UserRole whose finalizer is removed by hand, then deleted: the sweep removes its
 *   client binding within a period, and the client apiserver refuses the subject again,
 *   while a live role's binding is untouched;
 * - a restart with a full model: the sweep at start-up deletes nothing that is wanted;
 * - a parent Tenant narrowed under its child: the child's Scope is narrowed to what lies
 *   within, the child says `OutsideParentTenant`, its grants outside go;
 * - a hand-written Scope naming someone else's tenant: no tenant-get binding, not listed
 *   under that tenant in the bundle, and the Scope says why.
 *
 * The admission webhooks are OFF for this file: these are the controllers' guarantees,
 * which must hold whatever admission lets through (a parent changed with the webhooks
 * off, a Scope written before a check existed). The sweep runs every second here.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { KubeClient, KubeObject } from '@operators/kit';
import type { RegisteredCluster } from './support/client-plane.ts';
import {
  CLUSTER_ROLE,
  CLUSTER_ROLE_BINDING,
  Harness,
  type Obj,
  ROLE,
  ROLE_BINDING,
  until,
} from './support/harness.ts';

const SWEEP_PERIOD_MS = 1_000;
const h = Harness.forFile({ webhooks: false, operator: { sweepPeriodMs: SWEEP_PERIOD_MS } });

const MANAGED_BY = 'app.kubernetes.io/managed-by=permissions.shturval.tech';
const OWNER_NAMESPACE = 'permissions.shturval.tech/owner-namespace';
const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;

type Condition = { type: string; status: string; reason?: string; message?: string };

function condition(o: Obj, type: string): Condition | undefined {
  return ((o.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
}

function client0(): KubeClient {
  const c = h.clients[0]?.admin;
  if (!c) throw new Error('no client plane');
  return c;
}

/** What `client`'s apiserver answers to "may `user` do `verb` on `resource` (in `namespace`)". */
async function allowed(
  client: KubeClient,
  user: string,
  attrs: { group?: string; resource: string; verb: string; namespace?: string; name?: string },
): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, resourceAttributes: { group: '', ...attrs } },
  })) as unknown as { status?: { allowed?: boolean } };
  return review.status?.allowed === true;
}

/** Waits until the apiserver's answer is `want` (its RBAC cache follows writes by a moment). */
function answers(
  client: KubeClient,
  user: string,
  attrs: { group?: string; resource: string; verb: string; namespace?: string; name?: string },
  want: boolean,
  timeoutMs = 30_000,
): Promise<true> {
  return until(
    `${user} ${JSON.stringify(attrs)} to be ${want ? 'allowed' : 'refused'}`,
    async () => ((await allowed(client, user, attrs)) === want ? true : undefined),
    timeoutMs,
  );
}

async function cluster(t: TestContext, ns: string, name: string): Promise<RegisteredCluster> {
  const c = await h.cluster({ namespace: ns, name });
  t.after(() => c.remove().catch(() => undefined));
  return c;
}

async function clientNamespace(prefix: string): Promise<string> {
  const name = h.unique(prefix);
  await h.clientNamespace(name);
  return name;
}

const ready = (kind: 'UserRole' | 'GroupRole', ns: string, name: string) =>
  h.waitFor(kind, ns, name, 'ready', (o) => o.status?.ready === true, 45_000);

const podReader = (ns: string, name = 'pod-reader') =>
  h.create('Permission', ns, name, {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
  });

test('a UserRole whose finalizer is removed by hand, then deleted: within a sweep period its client RoleBinding is gone and the client apiserver refuses get pods again; a live UserRole beside it keeps its binding', async (t) => {
  const ns = await h.namespace(t, 'sweep');
  const prod = await cluster(t, ns, 'prod');
  const team = await clientNamespace('team');
  await podReader(ns);
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [team],
  });
  await h.create('UserRole', ns, 'eve-reads', {
    user: 'eve@example.com',
    scope: 'team',
    permissions: ['pod-reader'],
  });
  await h.create('UserRole', ns, 'kim-reads', {
    user: 'kim@example.com',
    scope: 'team',
    permissions: ['pod-reader'],
  });
  await ready('UserRole', ns, 'eve-reads');
  await ready('UserRole', ns, 'kim-reads');
  const pods = { resource: 'pods', verb: 'get', namespace: team };
  await answers(client0(), 'eve@example.com', pods, true);
  await answers(client0(), 'kim@example.com', pods, true);
  const eveBinding = `shturval:${ns}.eve-reads.pod-reader`;
  const kimBinding = `shturval:${ns}.kim-reads.pod-reader`;
  assert.ok(await h.find(ROLE_BINDING, eveBinding, team));
  const kimBefore = await h.find(ROLE_BINDING, kimBinding, team);
  assert.ok(kimBefore);

  // The data path of the attack: the finalizer goes by hand (the spec does not change, so
  // admission lets it through), then the object, with nothing undone by the operator.
  await h.admin.patch(
    { apiVersion: 'permissions.shturval.tech/v1beta1', kind: 'UserRole' },
    'eve-reads',
    ns,
    { type: 'merge', body: { metadata: { finalizers: null } } },
  );
  await h.remove('UserRole', ns, 'eve-reads');
  await h.gone('UserRole', ns, 'eve-reads', 5_000);
  const deletedAt = Date.now();

  // Within a period (and the time one sweep takes here), not at the next resync (10 min).
  await until(
    `the RoleBinding ${team}/${eveBinding} of the deleted UserRole to be swept`,
    async () => ((await h.find(ROLE_BINDING, eveBinding, team)) ? undefined : true),
    3 * SWEEP_PERIOD_MS + 5_000,
  );
  const tookMs = Date.now() - deletedAt;
  await answers(client0(), 'eve@example.com', pods, false, 10_000);
  assert.ok(
    h.logs.some((l) => l.includes('swept objects whose owner no longer exists') && l.includes(eveBinding)),
    'the sweep says what it deleted',
  );

  // The live role's binding is the same object, and still grants.
  const kimAfter = await h.find(ROLE_BINDING, kimBinding, team);
  assert.equal(kimAfter?.metadata.uid, kimBefore.metadata.uid);
  assert.equal(await allowed(client0(), 'kim@example.com', pods), true);
  assert.ok(
    await h.find(CLUSTER_ROLE, `shturval:${ns}.pod-reader`),
    'the live Permission keeps its ClusterRole',
  );
  t.diagnostic(`the binding was swept ${tookMs} ms after its UserRole went (period ${SWEEP_PERIOD_MS} ms)`);
});

/** Kind, name and uid of everything carrying our labels for owners in `ns`, on one plane. */
async function ours(client: KubeClient, ns: string): Promise<string[]> {
  const out: string[] = [];
  for (const gvk of [CLUSTER_ROLE, CLUSTER_ROLE_BINDING, ROLE, ROLE_BINDING]) {
    const { items } = await client.listAll<KubeObject>(gvk, { labelSelector: MANAGED_BY });
    for (const o of items) {
      if (o.metadata.labels?.[OWNER_NAMESPACE] !== ns) continue;
      // uid, not resourceVersion: kube-controller-manager fills aggregated rules on its own time.
      out.push(`${gvk.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} ${o.metadata.uid}`);
    }
  }
  return out.sort();
}

test('a restart with a full model: the sweep at start-up (and the next ones) deletes nothing that is wanted, on the management and the client plane', async (t) => {
  const ns = await h.namespace(t, 'restart');
  const prod = await cluster(t, ns, 'prod');
  const team = await clientNamespace('team');
  await h.create('Tenant', ns, 'acme', {
    clusters: { ids: [prod.id] },
    namespaces: [team],
    admins: ['ann@example.com'],
    members: ['max@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'acme',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await podReader(ns);
  await h.create('Permission', ns, 'platform-viewer', {
    level: 'platform',
    platform_rules: [{ apiGroups: ['permissions.shturval.tech'], resources: ['tenants'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'management', { level: 'platform' });
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
  await h.create('UserRole', ns, 'ann-platform', {
    user: 'ann@example.com',
    scope: 'management',
    permissions: ['platform-viewer'],
  });
  for (const [kind, name] of [
    ['UserRole', 'max-reads'],
    ['GroupRole', 'devs-read'],
    ['UserRole', 'ann-platform'],
  ] as const) {
    await ready(kind, ns, name);
  }
  // Every kind the sweep lists, on both planes: platform: ClusterRoles, a platform
  // ClusterRoleBinding, tenant Roles and RoleBindings, tenant plugin bindings; the client
  // ClusterRole and RoleBindings.
  const mgmtBefore = await ours(h.admin, ns);
  const clientBefore = await ours(client0(), ns);
  for (const want of [
    `ClusterRole /platform:${ns}.platform-viewer `,
    `ClusterRoleBinding /shturval:${ns}.ann-platform.platform-viewer `,
    `Role ${ns}/tenant-get.acme `,
    `RoleBinding ${ns}/tenant-edit.acme `,
    `RoleBinding ${ns}/tenant-get.acme.max-reads.pod-reader `,
    `RoleBinding ${ns}/tenant-get.acme.g.devs-read.pod-reader `,
  ]) {
    assert.ok(
      mgmtBefore.some((l) => l.startsWith(want)),
      `${want} in ${JSON.stringify(mgmtBefore)}`,
    );
  }
  for (const want of [
    `ClusterRole /shturval:${ns}.pod-reader `,
    `RoleBinding ${team}/shturval:${ns}.max-reads.pod-reader `,
    `RoleBinding ${team}/shturval:${ns}.g.devs-read.pod-reader `,
  ]) {
    assert.ok(
      clientBefore.some((l) => l.startsWith(want)),
      `${want} in ${JSON.stringify(clientBefore)}`,
    );
  }

  await h.stopOperator();
  const op = await h.startOperator();
  // The start-up sweep and two periodic ones, each over both planes.
  for (let i = 0; i < 3; i++) {
    const report = await op.sweeper.nextSweep();
    const mine = Object.values(report.deleted)
      .flat()
      .filter((o) => o.includes(ns));
    assert.deepEqual(mine, [], `sweep ${i} deleted nothing of this test's`);
  }
  assert.ok(op.sweeper.sweeps >= 3);
  // Same objects, same uids: nothing deleted (nor deleted and recreated).
  assert.deepEqual(await ours(h.admin, ns), mgmtBefore);
  assert.deepEqual(await ours(client0(), ns), clientBefore);
  await answers(client0(), 'max@example.com', { resource: 'pods', verb: 'get', namespace: team }, true);
});

test('a parent Tenant narrowed under its child: the child Scope keeps only what lies within, the child says OutsideParentTenant naming what lies outside, and its grants outside go', async (t) => {
  const ns = await h.namespace(t, 'narrow');
  const prod = await cluster(t, ns, 'prod');
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
    namespaces: [a, b],
    members: ['dan@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'acme-dev',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await podReader(ns);
  await h.create('UserRole', ns, 'dan-reads', {
    user: 'dan@example.com',
    scope: 'tenant-acme-dev',
    permissions: ['pod-reader'],
  });
  await ready('UserRole', ns, 'dan-reads');
  const binding = `shturval:${ns}.dan-reads.pod-reader`;
  const inA = { resource: 'pods', verb: 'get', namespace: a };
  const inB = { resource: 'pods', verb: 'get', namespace: b };
  await answers(client0(), 'dan@example.com', inA, true);
  await answers(client0(), 'dan@example.com', inB, true);

  // The parent gives up namespace b; nothing touches the child.
  await h.patchSpec('Tenant', ns, 'acme', { namespaces: [a] });

  const child = await h.waitFor('Tenant', ns, 'acme-dev', 'TenantCreated=False', (o) => {
    const c = condition(o, 'TenantCreated');
    return c?.status === 'False' && c.reason === 'OutsideParentTenant';
  });
  assert.match(
    condition(child, 'TenantCreated')?.message ?? '',
    new RegExp(`namespaces ${b} are not among the parent's \\(${a}\\)`),
  );
  const scope = await h.waitFor(
    'Scope',
    ns,
    'tenant-acme-dev',
    'narrowed to the parent',
    (o) => JSON.stringify(o.spec?.namespaces) === JSON.stringify([a]),
  );
  assert.deepEqual(scope.spec, {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [a],
    tenantRef: { name: 'acme-dev' },
    parentScope: { name: 'tenant-acme' },
  });
  await until(`the RoleBinding ${b}/${binding} outside the parent to go`, async () =>
    (await h.find(ROLE_BINDING, binding, b)) ? undefined : true,
  );
  await answers(client0(), 'dan@example.com', inB, false);
  assert.ok(await h.find(ROLE_BINDING, binding, a), 'the binding within the parent stays');
  assert.equal(await allowed(client0(), 'dan@example.com', inA), true);
  await until('a Warning Event OutsideParentTenant about the child', async () => {
    const events = await h.admin.list<
      KubeObject & { reason: string; type: string; regarding: { name: string } }
    >(EVENT, { namespace: ns });
    return events.items.find(
      (e) => e.type === 'Warning' && e.reason === 'OutsideParentTenant' && e.regarding.name === 'acme-dev',
    );
  });

  // The parent takes b back: the child is whole again, and so is its grant.
  await h.patchSpec('Tenant', ns, 'acme', { namespaces: [a, b] });
  await h.waitFor(
    'Tenant',
    ns,
    'acme-dev',
    'TenantCreated=True again',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await until(`the RoleBinding ${b}/${binding} back`, async () => await h.find(ROLE_BINDING, binding, b));
  await answers(client0(), 'dan@example.com', inB, true);
});

test('a hand-written Scope naming someone else’s tenant: its subjects get no tenant-get binding, the bundle lists it under no tenant, and its status says why', async (t) => {
  const ns = await h.namespace(t, 'borrow');
  const prod = await cluster(t, ns, 'prod');
  const team = await clientNamespace('team');
  await h.create('Tenant', ns, 'victim', {
    clusters: { ids: [prod.id] },
    namespaces: [team],
    admins: ['vic@example.com'],
  });
  await h.waitFor(
    'Tenant',
    ns,
    'victim',
    'TenantCreated=True',
    (o) => condition(o, 'TenantCreated')?.status === 'True',
  );
  await podReader(ns);
  // The victim's own Scope: its roles' subjects are bound to tenant-get.victim.
  await h.create('UserRole', ns, 'vic-reads', {
    user: 'val@example.com',
    scope: 'tenant-victim',
    permissions: ['pod-reader'],
  });
  // The borrowed name: a Scope written by hand, naming the victim's tenant.
  await h.create('Scope', ns, 'mine', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [team],
    tenantRef: { name: 'victim' },
  });
  await h.create('UserRole', ns, 'mallory-reads', {
    user: 'mallory@example.com',
    scope: 'mine',
    permissions: ['pod-reader'],
  });
  await ready('UserRole', ns, 'vic-reads');
  const mallory = await ready('UserRole', ns, 'mallory-reads');

  assert.ok(
    await h.find(ROLE_BINDING, 'tenant-get.victim.vic-reads.pod-reader', ns, 'mgmt'),
    'the real tenant role is bound',
  );
  assert.equal(
    await h.find(ROLE_BINDING, 'tenant-get.victim.mallory-reads.pod-reader', ns, 'mgmt'),
    undefined,
    'no tenant-get binding through a borrowed tenant name',
  );
  const statusText = JSON.stringify(mallory.status?.permissions ?? {});
  assert.ok(!statusText.includes('tenant-get.victim'), statusText);
  const tenantGet = {
    group: 'permissions.shturval.tech',
    resource: 'tenants',
    verb: 'get',
    namespace: ns,
    name: 'victim',
  };
  await answers(h.admin, 'val@example.com', tenantGet, true);
  assert.equal(await allowed(h.admin, 'mallory@example.com', tenantGet), false);

  const scope = await h.waitFor('Scope', ns, 'mine', 'a message about the borrowed tenant', (o) =>
    String(o.status?.message ?? '').includes('TenantNotController'),
  );
  assert.match(
    String(scope.status?.message),
    /tenantRef names Tenant "victim", which does not control this Scope/,
  );
  assert.deepEqual(
    scope.status?.paths,
    [`/mine/${ns}/prod/${team}`],
    'its paths are not under the victim either',
  );

  const bundle = await until('the bundle to hold both Scopes', async () => {
    const scopes = h.operator.model.snapshot().shturval.scopes;
    return scopes[`${ns}/mine`] && scopes[`${ns}/tenant-victim`] ? scopes : undefined;
  });
  assert.equal(bundle[`${ns}/mine`]?.tenant, null);
  assert.equal(bundle[`${ns}/tenant-victim`]?.tenant, `${ns}/victim`);
});
