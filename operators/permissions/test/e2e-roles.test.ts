/**
 * UserRole and GroupRole (§5) and their plugins through the running operator, on real
 * planes: a management plane with Argo CD's CRDs, client plane 0 with Istio's CRDs and
 * client plane 1 without them. Grants are proven by SubjectAccessReviews on the plane
 * that holds them; expected objects, texts and names are written out here.
 *
 * The admission webhooks are OFF for this whole file (the harness is per file): a role
 * naming a missing Scope or Permission must reach the controller, which the webhook
 * would refuse at the door. Nothing else here depends on them.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '@operators/kit';
import type { RegisteredCluster, RegisterOptions } from './support/client-plane.ts';
import {
  CLUSTER_ROLE_BINDING,
  Harness,
  NAMESPACE,
  type Obj,
  ROLE_BINDING,
  until,
} from './support/harness.ts';

const h = Harness.forFile({ clients: 2, webhooks: false, thirdParty: ['argoCd'] });
// Istio's CRDs on client plane 0 only (plane 1 is the cluster without them), installed once, when first needed.
let istio: Promise<void> | undefined;
const istioOnPlane0 = (): Promise<void> => {
  istio ??= plane(0).installThirdParty('istio');
  return istio;
};

const RBAC = 'rbac.authorization.k8s.io';
const AUTHORIZATION_POLICY = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' } as const;
const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const APP_PROJECT = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject' } as const;
const ARGOCD_NS = 'argocd';

type PluginObject = {
  status: string;
  message?: string;
  objects?: { kind: string; namespace?: string; name: string }[];
};
type RolePermissions = Record<string, Record<string, Record<string, PluginObject>>>;
type Binding = KubeObject & { roleRef: unknown; subjects: unknown };

function plane(i: number) {
  const p = h.clients[i];
  if (!p) throw new Error(`no client plane ${i}`);
  return p;
}

/** Registers client plane `i` as a Cluster in `ns`, removed again when the test ends. */
async function cluster(
  t: TestContext,
  ns: string,
  name: string,
  opts: Partial<RegisterOptions> = {},
  i = 0,
): Promise<RegisteredCluster> {
  const c = await h.cluster({ namespace: ns, name, ...opts }, i);
  t.after(() => c.remove().catch(() => undefined));
  return c;
}

/** What `client`'s apiserver answers to "may `user` (in `groups`) do `verb` on `resource`". */
async function allowed(
  client: KubeClient,
  who: { user: string; groups?: string[] },
  attrs: { group?: string; resource: string; verb: string; namespace?: string },
): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: {
      user: who.user,
      ...(who.groups ? { groups: who.groups } : {}),
      resourceAttributes: { group: '', ...attrs },
    },
  })) as unknown as { status: { allowed: boolean } };
  return review.status.allowed;
}

/** Waits until the SubjectAccessReview answers `want`. */
function becomes(want: boolean, what: string, probe: () => Promise<boolean>): Promise<true> {
  return until(`${what} to be ${want ? 'allowed' : 'denied'}`, async () =>
    (await probe()) === want ? true : undefined,
  );
}

/** Reconciles the operator's controller `name` has run (`controller_runtime_reconcile_total`, every result). */
async function reconciles(name: string): Promise<number> {
  const metric = h.operator.manager.registry.getSingleMetric(
    'controller_runtime_reconcile_total',
  ) as unknown as {
    get(): Promise<{ values: { value: number; labels: Record<string, string | number> }[] }>;
  };
  const { values } = await metric.get();
  return values.filter((v) => v.labels.controller === name).reduce((sum, v) => sum + v.value, 0);
}

const status = (o: Obj): Record<string, unknown> => o.status ?? {};
const perms = (o: Obj): RolePermissions => (status(o).permissions ?? {}) as RolePermissions;
const entry = (o: Obj, perm: string, cluster: string, plugin: string): PluginObject | undefined =>
  perms(o)[perm]?.[cluster]?.[plugin];
const ready = (o: Obj): boolean => status(o).ready === true;

/** The binding's roleRef and subjects, as the apiserver holds them. */
async function bindingOn(
  client: KubeClient,
  gvk: typeof ROLE_BINDING | typeof CLUSTER_ROLE_BINDING,
  name: string,
  namespace?: string,
) {
  const b = (await client.find(gvk, name, namespace)) as Binding | undefined;
  return b && { roleRef: b.roleRef, subjects: b.subjects, labels: b.metadata.labels };
}

const userSubject = (name: string) => [{ kind: 'User', apiGroup: RBAC, name }];
const clientRole = (ns: string, perm: string) => ({
  apiGroup: RBAC,
  kind: 'ClusterRole',
  name: `shturval:${ns}.${perm}`,
});

test('a namespace-level UserRole writes a RoleBinding in each namespace of its Scope in the client cluster, and the Scope is its controller owner', async (t) => {
  const ns = await h.namespace(t, 'nsrole');
  const prod = await cluster(t, ns, 'prod');
  const [web, api, other] = [`${ns}-web`, `${ns}-api`, `${ns}-other`];
  for (const n of [web, api, other]) await h.clientNamespace(n);
  await h.create('Permission', ns, 'reader', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [web, api],
  });
  await h.create('UserRole', ns, 'alice', {
    user: 'alice@example.com',
    scope: 'team',
    permissions: ['reader'],
  });

  const role = await h.waitFor('UserRole', ns, 'alice', 'ready', ready);
  const name = `shturval:${ns}.alice.reader`;
  for (const n of [web, api]) {
    const b = await bindingOn(plane(0).admin, ROLE_BINDING, name, n);
    assert.deepEqual(b && { roleRef: b.roleRef, subjects: b.subjects }, {
      roleRef: clientRole(ns, 'reader'),
      subjects: userSubject('alice@example.com'),
    });
    assert.equal(
      await allowed(
        plane(0).admin,
        { user: 'alice@example.com' },
        { resource: 'configmaps', verb: 'list', namespace: n },
      ),
      true,
    );
  }
  // Nowhere else: not in a namespace outside the Scope, not cluster-wide, not on the management plane.
  assert.equal(await h.find(ROLE_BINDING, name, other), undefined);
  assert.equal(
    await allowed(
      plane(0).admin,
      { user: 'alice@example.com' },
      { resource: 'configmaps', verb: 'list', namespace: other },
    ),
    false,
  );
  assert.equal(
    await allowed(plane(0).admin, { user: 'alice@example.com' }, { resource: 'configmaps', verb: 'list' }),
    false,
  );
  assert.equal(
    await allowed(
      h.admin,
      { user: 'alice@example.com' },
      { resource: 'configmaps', verb: 'list', namespace: 'default' },
    ),
    false,
  );

  assert.equal(entry(role, 'reader', prod.id, 'rbac')?.status, 'Applied');
  const scope = await h.get('Scope', ns, 'team');
  assert.deepEqual(role.metadata.ownerReferences, [
    {
      apiVersion: 'permissions.shturval.tech/v1beta1',
      kind: 'Scope',
      name: 'team',
      uid: scope?.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);

  // A namespace dropped from the Scope loses its RoleBinding; the other keeps it.
  await h.patchSpec('Scope', ns, 'team', { namespaces: [web] });
  await until(`the RoleBinding in ${api} to go`, async () =>
    (await h.find(ROLE_BINDING, name, api)) ? undefined : true,
  );
  assert.ok(await h.find(ROLE_BINDING, name, web));
});

test('a UserRole follows the clusters of its Scope: a cluster joining by id or annotation receives the binding, one leaving loses it', async (t) => {
  const ns = await h.namespace(t, 'follow');
  const zone = `zone-${ns}`;
  const one = await cluster(t, ns, 'one');
  const two = await cluster(t, ns, 'two', {}, 1);
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['resourcequotas'], verbs: ['list'] }],
  });
  await h.create('Scope', ns, 'by-id', { level: 'cluster', clusters: { ids: [one.id] } });
  await h.create('Scope', ns, 'by-zone', {
    level: 'cluster',
    clusters: { annotations: { 'example.com/zone': zone } },
  });
  await h.create('UserRole', ns, 'lou', { user: 'lou@example.com', scope: 'by-id', permissions: ['viewer'] });
  await h.create('UserRole', ns, 'max', {
    user: 'max@example.com',
    scope: 'by-zone',
    permissions: ['viewer'],
  });
  await h.waitFor('UserRole', ns, 'lou', 'ready', ready);
  const lou = `shturval:${ns}.lou.viewer`;
  const max = `shturval:${ns}.max.viewer`;
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, lou, undefined, 0));
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, lou, undefined, 1), undefined);
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, max, undefined, 1), undefined);

  // By id: the second cluster joins, then the first leaves.
  await h.patchSpec('Scope', ns, 'by-id', { clusters: { ids: [one.id, two.id] } });
  await until('lou on plane 1', () => h.find(CLUSTER_ROLE_BINDING, lou, undefined, 1));
  await h.patchSpec('Scope', ns, 'by-id', { clusters: { ids: [two.id] } });
  await until('lou gone from plane 0', async () =>
    (await h.find(CLUSTER_ROLE_BINDING, lou, undefined, 0)) ? undefined : true,
  );
  const role = await h.waitFor(
    'UserRole',
    ns,
    'lou',
    'only the second cluster',
    (o) => ready(o) && Object.keys(perms(o).viewer ?? {}).join() === two.id,
  );
  assert.deepEqual(Object.keys(perms(role).viewer ?? {}), [two.id]);
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, lou, undefined, 1));

  // By annotation: the Cluster gains it and receives max's binding, loses it and loses the binding.
  await two.setMetadata({ annotations: { 'example.com/zone': zone } });
  await until('max on plane 1', () => h.find(CLUSTER_ROLE_BINDING, max, undefined, 1));
  await becomes(true, 'max listing resourcequotas on plane 1', () =>
    allowed(plane(1).admin, { user: 'max@example.com' }, { resource: 'resourcequotas', verb: 'list' }),
  );
  await two.setMetadata({ annotations: { 'example.com/zone': null } });
  await until('max gone from plane 1', async () =>
    (await h.find(CLUSTER_ROLE_BINDING, max, undefined, 1)) ? undefined : true,
  );
  await h.waitFor('UserRole', ns, 'max', 'no cluster left', (o) => ready(o) && perms(o).viewer === undefined);
});

test('removing a Permission from a UserRole removes its bindings and keeps the others', async (t) => {
  const ns = await h.namespace(t, 'dropperm');
  const prod = await cluster(t, ns, 'prod');
  const app = `${ns}-app`;
  await h.clientNamespace(app);
  await h.create('Permission', ns, 'reader', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
  });
  await h.create('Permission', ns, 'writer', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }],
  });
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [app],
  });
  await h.create('UserRole', ns, 'bob', {
    user: 'bob@example.com',
    scope: 'team',
    permissions: ['reader', 'writer'],
  });
  await h.waitFor('UserRole', ns, 'bob', 'ready', ready);
  const bob = { user: 'bob@example.com' };
  await becomes(true, 'bob deleting pods', () =>
    allowed(plane(0).admin, bob, { resource: 'pods', verb: 'delete', namespace: app }),
  );
  assert.ok(await h.find(ROLE_BINDING, `shturval:${ns}.bob.writer`, app));

  await h.patchSpec('UserRole', ns, 'bob', { permissions: ['reader'] });
  await until('the writer binding to go', async () =>
    (await h.find(ROLE_BINDING, `shturval:${ns}.bob.writer`, app)) ? undefined : true,
  );
  const role = await h.waitFor(
    'UserRole',
    ns,
    'bob',
    'writer gone from the status',
    (o) => ready(o) && perms(o).writer === undefined,
  );
  assert.deepEqual(Object.keys(perms(role)), ['reader']);
  assert.ok(await h.find(ROLE_BINDING, `shturval:${ns}.bob.reader`, app), 'the reader binding stays');
  assert.equal(
    await allowed(plane(0).admin, bob, { resource: 'pods', verb: 'delete', namespace: app }),
    false,
  );
  assert.equal(await allowed(plane(0).admin, bob, { resource: 'pods', verb: 'list', namespace: app }), true);
});

test('a paused cluster is skipped with status Skipped and no binding, and unpausing applies what was skipped', async (t) => {
  const ns = await h.namespace(t, 'paused');
  const frozen = await cluster(t, ns, 'frozen', { paused: true });
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'all', { level: 'cluster', clusters: { ids: [frozen.id] } });
  await h.create('UserRole', ns, 'cora', { user: 'cora@example.com', scope: 'all', permissions: ['viewer'] });

  const skipped = await h.waitFor(
    'UserRole',
    ns,
    'cora',
    'Skipped',
    (o) => entry(o, 'viewer', frozen.id, 'rbac')?.status === 'Skipped',
  );
  assert.match(entry(skipped, 'viewer', frozen.id, 'rbac')?.message ?? '', /ClusterPaused/);
  const binding = `shturval:${ns}.cora.viewer`;
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, binding), undefined);
  const cora = { user: 'cora@example.com' };
  assert.equal(
    await allowed(plane(0).admin, cora, { group: 'apps', resource: 'daemonsets', verb: 'get' }),
    false,
  );

  await frozen.setPaused(false);
  await until('the binding after unpausing', () => bindingOn(plane(0).admin, CLUSTER_ROLE_BINDING, binding));
  const applied = await h.waitFor(
    'UserRole',
    ns,
    'cora',
    'Applied',
    (o) => entry(o, 'viewer', frozen.id, 'rbac')?.status === 'Applied',
  );
  assert.equal(ready(applied), true);
  await becomes(true, 'cora getting daemonsets', () =>
    allowed(plane(0).admin, cora, { group: 'apps', resource: 'daemonsets', verb: 'get' }),
  );
});

test('a paused cluster keeps what it holds: a Permission dropped while it is paused is revoked once it resumes', async (t) => {
  const ns = await h.namespace(t, 'pausedrop');
  const frozen = await cluster(t, ns, 'frozen');
  await h.create('Permission', ns, 'keep', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['limitranges'], verbs: ['get'] }],
  });
  await h.create('Permission', ns, 'drop', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['limitranges'], verbs: ['list'] }],
  });
  await h.create('Scope', ns, 'all', { level: 'cluster', clusters: { ids: [frozen.id] } });
  await h.create('UserRole', ns, 'kit', {
    user: 'kit@example.com',
    scope: 'all',
    permissions: ['keep', 'drop'],
  });
  await h.waitFor('UserRole', ns, 'kit', 'ready', ready);
  const dropped = `shturval:${ns}.kit.drop`;
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, dropped));

  await frozen.setPaused(true);
  await h.patchSpec('UserRole', ns, 'kit', { permissions: ['keep'] });
  const held = await h.waitFor(
    'UserRole',
    ns,
    'kit',
    'the dropped Permission reported as skipped',
    (o) =>
      (o.status?.observedGeneration as number | undefined) === 2 &&
      entry(o, 'drop', frozen.id, 'rbac')?.status === 'Skipped',
  );
  assert.match(entry(held, 'drop', frozen.id, 'rbac')?.message ?? '', /ClusterPaused/);
  await sleep(1_000);
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, dropped), 'the paused cluster is left alone');

  await frozen.setPaused(false);
  await until('the dropped binding to go after resuming', async () =>
    (await h.find(CLUSTER_ROLE_BINDING, dropped)) ? undefined : true,
  );
  const role = await h.waitFor(
    'UserRole',
    ns,
    'kit',
    'drop gone from the status',
    (o) => perms(o).drop === undefined,
  );
  assert.equal(ready(role), true);
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.kit.keep`));
});

test('a GroupRole binds the group claim', async (t) => {
  const ns = await h.namespace(t, 'group');
  const prod = await cluster(t, ns, 'prod');
  await h.create('Permission', ns, 'operator', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['create'] }],
  });
  await h.create('Scope', ns, 'all', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('GroupRole', ns, 'sre', {
    group: `oidc:sre-${ns}`,
    scope: 'all',
    permissions: ['operator'],
  });
  await h.waitFor('GroupRole', ns, 'sre', 'ready', ready);

  const b = await bindingOn(plane(0).admin, CLUSTER_ROLE_BINDING, `shturval:${ns}.g.sre.operator`);
  assert.deepEqual(b && { roleRef: b.roleRef, subjects: b.subjects }, {
    roleRef: clientRole(ns, 'operator'),
    subjects: [{ kind: 'Group', apiGroup: RBAC, name: `oidc:sre-${ns}` }],
  });
  const jobs = { group: 'batch', resource: 'jobs', verb: 'create', namespace: 'default' };
  await becomes(true, 'a member creating jobs', () =>
    allowed(plane(0).admin, { user: 'ivy@example.com', groups: [`oidc:sre-${ns}`] }, jobs),
  );
  assert.equal(
    await allowed(plane(0).admin, { user: 'ivy@example.com', groups: ['oidc:other'] }, jobs),
    false,
  );
  assert.equal(
    await allowed(plane(0).admin, { user: `oidc:sre-${ns}` }, jobs),
    false,
    'the group is bound as a Group, not as a User',
  );
});

test('deleting a UserRole removes every binding before its finalizer goes, and waits while a cluster cannot be reached', async (t) => {
  const ns = await h.namespace(t, 'delrole');
  const prod = await cluster(t, ns, 'prod');
  const [a, b] = [`${ns}-a`, `${ns}-b`];
  for (const n of [a, b]) await h.clientNamespace(n);
  await h.create('Permission', ns, 'reader', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['services'], verbs: ['list'] }],
  });
  await h.create('Permission', ns, 'editor', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['services'], verbs: ['patch'] }],
  });
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [a, b],
  });
  await h.create('UserRole', ns, 'dora', {
    user: 'dora@example.com',
    scope: 'team',
    permissions: ['reader', 'editor'],
  });
  await h.waitFor('UserRole', ns, 'dora', 'ready', ready);
  const names = (['reader', 'editor'] as const).flatMap((p) =>
    [a, b].map((n) => [`shturval:${ns}.dora.${p}`, n] as const),
  );
  for (const [name, n] of names) assert.ok(await h.find(ROLE_BINDING, name, n), `${n}/${name}`);

  // The cluster cannot be reached (its kubeconfig Secret is gone): the UserRole stays, and so do the bindings.
  await prod.deleteSecret();
  // The operator trusts a kubeconfig Secret it read for 2 s (one GET per cluster per couple of seconds).
  await sleep(2_500);
  await h.remove('UserRole', ns, 'dora');
  const stuck = await h.waitFor(
    'UserRole',
    ns,
    'dora',
    'a Deleting status',
    (o) => entry(o, 'reader', prod.id, 'rbac')?.status === 'Deleting',
  );
  assert.ok(stuck.metadata.deletionTimestamp);
  assert.match(entry(stuck, 'reader', prod.id, 'rbac')?.message ?? '', /KubeconfigSecretMissing/);
  await sleep(1_500);
  assert.ok(await h.get('UserRole', ns, 'dora'), 'the finalizer holds while the bindings cannot be removed');
  for (const [name, n] of names)
    assert.ok(await h.find(ROLE_BINDING, name, n), `${n}/${name} is still there`);

  await prod.writeKubeconfig(await readFile(plane(0).kubeconfigPath, 'utf8'));
  await h.gone('UserRole', ns, 'dora');
  // Gone from the API means the finalizer went: every binding was removed before it.
  for (const [name, n] of names) assert.equal(await h.find(ROLE_BINDING, name, n), undefined, `${n}/${name}`);
  assert.equal(
    await allowed(
      plane(0).admin,
      { user: 'dora@example.com' },
      { resource: 'services', verb: 'list', namespace: a },
    ),
    false,
  );
});

test('a UserRole granted in a Cluster that has since been deleted from the management cluster can still be deleted', async (t) => {
  const ns = await h.namespace(t, 'gonecluster');
  const doomed = await cluster(t, ns, 'doomed');
  const kept = await cluster(t, ns, 'kept', {}, 1);
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'all', { level: 'cluster', clusters: { ids: [doomed.id, kept.id] } });
  await h.create('UserRole', ns, 'eve', { user: 'eve@example.com', scope: 'all', permissions: ['viewer'] });
  await h.waitFor(
    'UserRole',
    ns,
    'eve',
    'ready in both clusters',
    (o) => ready(o) && Object.keys(perms(o).viewer ?? {}).length === 2,
  );

  await doomed.remove();
  const after = await h.waitFor(
    'UserRole',
    ns,
    'eve',
    'the deleted cluster dropped',
    (o) => Object.keys(perms(o).viewer ?? {}).join() === kept.id,
  );
  assert.equal(ready(after), true);
  await h.remove('UserRole', ns, 'eve');
  await h.gone('UserRole', ns, 'eve');
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.eve.viewer`, undefined, 1), undefined);
});

test('Argo CD: policy.csv lines and AppProject roles written by others survive creating, editing and deleting a UserRole', async (t) => {
  const ns = await h.namespace(t, 'argocd');
  if (!(await h.admin.find(NAMESPACE, ARGOCD_NS)))
    await h.admin.create({ ...NAMESPACE, metadata: { name: ARGOCD_NS } });
  const project = `shop-${ns}`.slice(0, 63);
  const foreignBefore =
    'p, role:org-admin, applications, *, */*, allow\ng, ops@example.com, role:org-admin\n';
  const foreignAfter = 'g, late@example.com, role:readonly\n';
  await h.admin.create({
    ...CONFIG_MAP,
    metadata: { name: 'argocd-rbac-cm', namespace: ARGOCD_NS },
    data: { 'policy.csv': foreignBefore, 'policy.default': 'role:readonly' },
  });
  t.after(() => h.admin.delete(CONFIG_MAP, 'argocd-rbac-cm', ARGOCD_NS).catch(() => undefined));
  const ciRole = {
    name: 'ci',
    description: 'CI pipeline',
    policies: [`p, proj:${project}:ci, applications, sync, ${project}/*, allow`],
    groups: ['ci-bots'],
  };
  await h.admin.create({
    ...APP_PROJECT,
    metadata: { name: project, namespace: ARGOCD_NS },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: 'https://kubernetes.default.svc', namespace: '*' }],
      roles: [ciRole],
    },
  });

  await h.create('Permission', ns, 'deployer', {
    level: 'platform',
    platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    plugins: {
      rbac: {},
      argocd: {
        policies: [{ resource: 'applications', action: 'get', object: `${project}/*` }],
        projects: [{ project, policies: [{ resource: 'applications', action: 'sync', object: '*' }] }],
      },
    },
  });
  await h.create('Scope', ns, 'platform', { level: 'platform' });
  await h.create('UserRole', ns, 'dave', {
    user: 'dave@example.com',
    scope: 'platform',
    permissions: ['deployer'],
  });

  const owner = `${ns}/UserRole/dave/deployer`;
  const block = (user: string) =>
    `# BEGIN permissions.shturval.tech ${owner}\np, ${user}, applications, get, ${project}/*, allow\n# END permissions.shturval.tech ${owner}\n`;
  const configMap = async () =>
    (
      await h.admin.get<KubeObject & { data: Record<string, string> }>(
        CONFIG_MAP,
        'argocd-rbac-cm',
        ARGOCD_NS,
      )
    ).data;
  const roles = async () =>
    ((
      await h.admin.get<KubeObject & { spec: { roles?: Record<string, unknown>[] } }>(
        APP_PROJECT,
        project,
        ARGOCD_NS,
      )
    ).spec.roles ?? []) as {
      name: string;
      description?: string;
      policies?: string[];
      groups?: string[];
    }[];
  const ours = (rs: Awaited<ReturnType<typeof roles>>) =>
    rs.find((r) => r.description === `permissions.shturval.tech ${owner}`);
  const csvBecomes = (want: string) =>
    until(`policy.csv to be ${JSON.stringify(want)}`, async () =>
      (await configMap())['policy.csv'] === want ? true : undefined,
    );

  // Created: our block after the lines that were there; our role next to theirs.
  const role = await h.waitFor('UserRole', ns, 'dave', 'ready', ready);
  assert.equal(entry(role, 'deployer', 'platform', 'argocd')?.status, 'Applied');
  assert.equal(entry(role, 'deployer', 'platform', 'rbac')?.status, 'Applied');
  await csvBecomes(foreignBefore + block('dave@example.com'));
  assert.equal((await configMap())['policy.default'], 'role:readonly');
  let rs = await roles();
  assert.deepEqual(
    rs.find((r) => r.name === 'ci'),
    ciRole,
  );
  const mine = ours(rs);
  assert.ok(mine?.name.startsWith('shturval-'), JSON.stringify(rs));
  assert.deepEqual(mine?.groups, ['dave@example.com']);
  assert.deepEqual(mine?.policies, [
    `p, proj:${project}:${mine?.name}, applications, sync, ${project}/*, allow`,
  ]);
  await becomes(true, 'dave getting pods on the management plane', () =>
    allowed(h.admin, { user: 'dave@example.com' }, { resource: 'pods', verb: 'get', namespace: 'default' }),
  );

  // Someone else writes after us, in both objects.
  const cm = await h.admin.get<KubeObject & { data: Record<string, string> }>(
    CONFIG_MAP,
    'argocd-rbac-cm',
    ARGOCD_NS,
  );
  await h.admin.replace({
    ...cm,
    data: { ...cm.data, 'policy.csv': `${cm.data['policy.csv']}${foreignAfter}` },
  });
  const lateRole = {
    name: 'late',
    policies: [`p, proj:${project}:late, applications, get, ${project}/*, allow`],
    groups: ['late-team'],
  };
  const proj = await h.admin.get<KubeObject & { spec: { roles: unknown[] } }>(
    APP_PROJECT,
    project,
    ARGOCD_NS,
  );
  await h.admin.replace({ ...proj, spec: { ...proj.spec, roles: [...proj.spec.roles, lateRole] } });

  // Edited: our line changes in place; theirs, before and after, stay as they were.
  await h.patchSpec('UserRole', ns, 'dave', { user: 'dave.k@example.com' });
  await csvBecomes(foreignBefore + block('dave.k@example.com') + foreignAfter);
  await until('our project role to name the new user', async () =>
    ours(await roles())?.groups?.[0] === 'dave.k@example.com' ? true : undefined,
  );
  rs = await roles();
  assert.deepEqual(
    rs.find((r) => r.name === 'ci'),
    ciRole,
  );
  assert.deepEqual(
    rs.find((r) => r.name === 'late'),
    lateRole,
  );
  assert.equal(rs.length, 3);
  await becomes(true, 'dave.k getting pods', () =>
    allowed(h.admin, { user: 'dave.k@example.com' }, { resource: 'pods', verb: 'get', namespace: 'default' }),
  );
  await becomes(false, 'dave getting pods', () =>
    allowed(h.admin, { user: 'dave@example.com' }, { resource: 'pods', verb: 'get', namespace: 'default' }),
  );

  // Deleted: exactly what the others wrote is left.
  await h.remove('UserRole', ns, 'dave');
  await h.gone('UserRole', ns, 'dave');
  assert.equal((await configMap())['policy.csv'], foreignBefore + foreignAfter);
  assert.equal((await configMap())['policy.default'], 'role:readonly');
  assert.deepEqual(await roles(), [ciRole, lateRole]);
  assert.equal(
    await allowed(
      h.admin,
      { user: 'dave.k@example.com' },
      { resource: 'pods', verb: 'get', namespace: 'default' },
    ),
    false,
  );
});

test('Kubeflow: a namespace-level GroupRole writes a RoleBinding and an Istio AuthorizationPolicy per member in the profile namespace', async (t) => {
  await istioOnPlane0();
  const ns = await h.namespace(t, 'kubeflow');
  const kf = await cluster(t, ns, 'kf');
  const profile = `${ns}-profile`;
  await h.clientNamespace(profile);
  await h.create('Permission', ns, 'kf-edit', {
    level: 'namespace',
    granted_cluster_rules: [
      { apiGroups: ['kubeflow.org'], resources: ['notebooks'], verbs: ['get', 'list'] },
    ],
    plugins: { rbac: {}, kubeflow: { role: 'edit' } },
  });
  await h.create('Scope', ns, 'ml', {
    level: 'namespace',
    clusters: { ids: [kf.id] },
    namespaces: [profile],
  });
  await h.create('GroupRole', ns, 'ml-team', {
    group: 'ml-team',
    scope: 'ml',
    permissions: ['kf-edit'],
    members: ['ann@example.com', 'Bob.Smith@example.com'],
  });

  const role = await h.waitFor('GroupRole', ns, 'ml-team', 'ready', ready);
  assert.equal(entry(role, 'kf-edit', kf.id, 'kubeflow')?.status, 'Applied');
  assert.equal(entry(role, 'kf-edit', kf.id, 'rbac')?.status, 'Applied');
  const client = plane(0).admin;
  const members = [
    ['ann@example.com', 'user-ann-example-com-clusterrole-edit'],
    ['Bob.Smith@example.com', 'user-bob-smith-example-com-clusterrole-edit'],
  ] as const;
  for (const [email, name] of members) {
    const b = (await client.find(ROLE_BINDING, name, profile)) as Binding | undefined;
    assert.deepEqual(b && { roleRef: b.roleRef, subjects: b.subjects }, {
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'kubeflow-edit' },
      subjects: userSubject(email),
    });
    assert.deepEqual(b?.metadata.annotations, { user: email, role: 'edit' });
    const p = (await client.find(AUTHORIZATION_POLICY, name, profile)) as
      | (KubeObject & { spec: unknown })
      | undefined;
    assert.deepEqual(p?.spec, {
      action: 'ALLOW',
      // The header counts only from the ingress gateway's identity, in the same rule.
      rules: [
        {
          from: [
            {
              source: {
                principals: ['cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account'],
              },
            },
          ],
          when: [{ key: 'request.headers[kubeflow-userid]', values: [email] }],
        },
      ],
    });
    assert.deepEqual(p?.metadata.annotations, { user: email, role: 'edit' });
  }
  // The rbac plugin binds the group itself.
  const g = await bindingOn(client, ROLE_BINDING, `shturval:${ns}.g.ml-team.kf-edit`, profile);
  assert.deepEqual(g?.subjects, [{ kind: 'Group', apiGroup: RBAC, name: 'ml-team' }]);
  await becomes(true, 'an ml-team member listing notebooks', () =>
    allowed(
      client,
      { user: 'zed@example.com', groups: ['ml-team'] },
      { group: 'kubeflow.org', resource: 'notebooks', verb: 'list', namespace: profile },
    ),
  );

  // A member leaving the group loses both objects; the other keeps them.
  await h.patchSpec('GroupRole', ns, 'ml-team', { members: ['ann@example.com'] });
  const bob = members[1][1];
  await until("Bob's objects to go", async () =>
    (await client.find(ROLE_BINDING, bob, profile)) || (await client.find(AUTHORIZATION_POLICY, bob, profile))
      ? undefined
      : true,
  );
  assert.ok(await client.find(ROLE_BINDING, members[0][1], profile));
  assert.ok(await client.find(AUTHORIZATION_POLICY, members[0][1], profile));
});

test('Kubeflow: a client cluster without the Istio CRD reports Kubeflow Failed while rbac is Applied, and backs off instead of looping', async (t) => {
  const ns = await h.namespace(t, 'noistio');
  const bare = await cluster(t, ns, 'bare', {}, 1);
  const profile = `${ns}-profile`;
  await plane(1).admin.create({ ...NAMESPACE, metadata: { name: profile } });
  await h.create('Permission', ns, 'kf-view', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: ['kubeflow.org'], resources: ['notebooks'], verbs: ['get'] }],
    plugins: { rbac: {}, kubeflow: { role: 'view' } },
  });
  await h.create('Scope', ns, 'ml', {
    level: 'namespace',
    clusters: { ids: [bare.id] },
    namespaces: [profile],
  });
  await h.create('GroupRole', ns, 'viewers', {
    group: 'viewers',
    scope: 'ml',
    permissions: ['kf-view'],
    members: ['ann@example.com'],
  });

  const failed = await h.waitFor(
    'GroupRole',
    ns,
    'viewers',
    'kubeflow Failed',
    (o) => entry(o, 'kf-view', bare.id, 'kubeflow')?.status === 'Failed',
  );
  assert.match(entry(failed, 'kf-view', bare.id, 'kubeflow')?.message ?? '', /CRD.*not installed/);
  assert.equal(entry(failed, 'kf-view', bare.id, 'rbac')?.status, 'Applied');
  assert.equal(ready(failed), false);
  assert.ok(
    await plane(1).admin.find(ROLE_BINDING, `shturval:${ns}.g.viewers.kf-view`, profile),
    'the rbac binding is there',
  );
  assert.ok(
    await plane(1).admin.find(ROLE_BINDING, 'user-ann-example-com-clusterrole-view', profile),
    "Kubeflow's RoleBinding is written all the same",
  );

  // No hot loop: over three seconds the retries are few (exponential backoff from 5 ms), and the
  // status is not rewritten. A loop would be a reconcile every few tens of milliseconds (about a hundred
  // in 3 s); backoff alone gives about seven, the other GroupRoles of this file a few more.
  const key = `${ns}/viewers`;
  const rv = (await h.get('GroupRole', ns, 'viewers'))?.metadata.resourceVersion;
  assert.ok(
    h.operator.groupRoles.queue.numRequeues(key) > 0,
    'the failure goes back through the rate limiter',
  );
  const before = await reconciles('grouprole');
  await sleep(3_000);
  const count = (await reconciles('grouprole')) - before;
  t.diagnostic(`${count} GroupRole reconciles in 3 s`);
  assert.ok(count <= 20, `${count} GroupRole reconciles in 3 s`);
  assert.equal(
    (await h.get('GroupRole', ns, 'viewers'))?.metadata.resourceVersion,
    rv,
    'no status rewrite while nothing changes',
  );
});

test('a UserRole naming a missing Scope says ScopeNotFound, and grants once the Scope exists', async (t) => {
  const ns = await h.namespace(t, 'noscope');
  const prod = await cluster(t, ns, 'prod');
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['events'], verbs: ['list'] }],
  });
  await h.create('UserRole', ns, 'finn', {
    user: 'finn@example.com',
    scope: 'later',
    permissions: ['viewer'],
  });
  const missing = await h.waitFor(
    'UserRole',
    ns,
    'finn',
    'a message',
    (o) => String(status(o).message ?? '').length > 0,
  );
  assert.match(String(status(missing).message), /ScopeNotFound/);
  assert.match(String(status(missing).message), /later/);
  assert.equal(ready(missing), false);
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.finn.viewer`), undefined);

  await h.create('Scope', ns, 'later', { level: 'cluster', clusters: { ids: [prod.id] } });
  const role = await h.waitFor('UserRole', ns, 'finn', 'ready', ready, 15_000);
  assert.equal(status(role).message, undefined);
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.finn.viewer`));
});

test('a UserRole naming a missing Permission says PermissionNotFound for it, grants the others, and completes once it exists', async (t) => {
  const ns = await h.namespace(t, 'noperm');
  const prod = await cluster(t, ns, 'prod');
  const rules = [{ apiGroups: [''], resources: ['endpoints'], verbs: ['list'] }];
  await h.create('Permission', ns, 'present', { level: 'cluster', granted_cluster_rules: rules });
  await h.create('Scope', ns, 'all', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'gil', {
    user: 'gil@example.com',
    scope: 'all',
    permissions: ['present', 'absent'],
  });

  const partial = await h.waitFor(
    'UserRole',
    ns,
    'gil',
    'absent reported',
    (o) => entry(o, 'absent', 'platform', 'rbac') !== undefined,
  );
  assert.equal(entry(partial, 'absent', 'platform', 'rbac')?.status, 'Failed');
  assert.match(entry(partial, 'absent', 'platform', 'rbac')?.message ?? '', /PermissionNotFound/);
  assert.equal(ready(partial), false);
  await until('the binding of the Permission that exists', () =>
    h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.gil.present`),
  );
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.gil.absent`), undefined);

  await h.create('Permission', ns, 'absent', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['endpoints'], verbs: ['watch'] }],
  });
  const role = await h.waitFor('UserRole', ns, 'gil', 'ready', ready, 15_000);
  assert.deepEqual(Object.keys(perms(role)).sort(), ['absent', 'present']);
  assert.deepEqual(Object.keys(perms(role).absent ?? {}), [prod.id]);
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.gil.absent`));
  await becomes(true, 'gil watching endpoints', () =>
    allowed(plane(0).admin, { user: 'gil@example.com' }, { resource: 'endpoints', verb: 'watch' }),
  );
});
