/**
 * The Permission lifecycle (§5) on real planes: a management plane running
 * kube-controller-manager's ClusterRole aggregation and garbage collector, and two client
 * planes (second and third real kube-apiservers) registered as Cluster API Clusters.
 *
 * Cluster objects outlive their test (the plane runs no namespace controller, so a test's
 * namespace only goes Terminating), and a Permission without a selector takes every ready
 * cluster; so every Permission here selects its own test's clusters by a label carrying
 * the test's namespace. Expected rules are written out; grants are proved by the client
 * apiserver's own SubjectAccessReview.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '@operators/kit';
import { CLUSTER_ROLE, Harness, type Obj, until } from './support/harness.ts';

const h = Harness.forFile({ clients: 2 });

/** The label that ties a test's clusters to its Permissions' selectors. */
const GROUP = 'e2e.permissions.shturval.tech/group';
/** A per-cluster label, for selectors that narrow to one of them. */
const MEMBER = 'e2e.permissions.shturval.tech/member';

type Rule = { apiGroups?: string[]; resources?: string[]; verbs: string[] };
type Role = KubeObject & { rules?: Rule[]; aggregationRule?: unknown };

/** A rule as JSON with its keys in one order (the apiserver answers `verbs` first). */
const canonical = (r: Rule): string =>
  JSON.stringify(Object.fromEntries(Object.entries(r).sort(([x], [y]) => (x < y ? -1 : 1))));
/** Rules as a set: a ClusterRole's aggregated rules come in no order we can rely on. */
const sortedRules = (rules: readonly Rule[] | undefined): string[] => (rules ?? []).map(canonical).sort();

function applied(o: Obj): string[] {
  return (o.status?.applied_to_clusters as string[] | undefined) ?? [];
}

/** Ready, for the generation we last wrote, with exactly these clusters applied. */
function settledOn(ids: readonly string[]) {
  return (o: Obj) =>
    o.status?.ready === true &&
    o.status?.observedGeneration === o.metadata.generation &&
    JSON.stringify(applied(o)) === JSON.stringify(ids);
}

/** Whether `user` may `verb` `resource` (core group) cluster-wide, as the apiserver behind `client` answers. */
async function allowed(client: KubeClient, user: string, verb: string, resource: string): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, resourceAttributes: { group: '', resource, verb } },
  })) as unknown as { status: { allowed: boolean } };
  return review.status.allowed;
}

/** The ClusterRole `name` on plane `i` (or the management plane). */
function role(name: string, i: number | 'mgmt'): Promise<Role | undefined> {
  return h.find(CLUSTER_ROLE, name, undefined, i) as Promise<Role | undefined>;
}

/** Waits until the aggregating ClusterRole `name` on the management plane has exactly `rules` (in any order). */
function aggregatedTo(name: string, rules: readonly Rule[], timeoutMs = 30_000): Promise<Role> {
  const want = JSON.stringify(sortedRules(rules));
  let seen = 'nothing';
  return until(
    `kube-controller-manager to aggregate ${want} into ${name}`,
    async () => {
      const r = await role(name, 'mgmt');
      seen = JSON.stringify(r?.rules ?? null);
      return r && JSON.stringify(sortedRules(r.rules)) === want ? r : undefined;
    },
    timeoutMs,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last seen ${seen}`);
  });
}

function client(i: number): KubeClient {
  const c = h.clients[i]?.admin;
  if (!c) throw new Error(`no client plane ${i}`);
  return c;
}

test('on a spec change applied_to_clusters is recomputed and the shturval: ClusterRole is written in each selected client cluster', async (t) => {
  const ns = await h.namespace(t, 'recompute');
  const a = await h.cluster({ namespace: ns, name: 'a', labels: { [GROUP]: ns, [MEMBER]: 'a' } }, 0);
  const b = await h.cluster({ namespace: ns, name: 'b', labels: { [GROUP]: ns, [MEMBER]: 'b' } }, 1);
  await h.create('Permission', ns, 'reader', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns } },
  });
  await h.waitFor('Permission', ns, 'reader', 'applied to both clusters', settledOn([a.id, b.id]));
  for (const i of [0, 1]) {
    const r = await role(`shturval:${ns}.reader`, i);
    assert.deepEqual(
      r?.rules,
      [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      `client plane ${i}`,
    );
  }
  assert.equal(
    await role(`platform:${ns}.reader`, 'mgmt'),
    undefined,
    'no platform role without platform_rules',
  );

  // Narrow to cluster a, change the rules and add platform rules, all in one edit.
  await h.patchSpec('Permission', ns, 'reader', {
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list'] }],
    platform_rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns, [MEMBER]: 'a' } },
  });
  await h.waitFor('Permission', ns, 'reader', 'platform and cluster a only', settledOn(['platform', a.id]));
  assert.deepEqual((await role(`shturval:${ns}.reader`, 0))?.rules, [
    { apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list'] },
  ]);
  assert.equal(
    await role(`shturval:${ns}.reader`, 1),
    undefined,
    'the deselected cluster lost our ClusterRole',
  );
  await aggregatedTo(`platform:${ns}.reader`, [
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
  ]);

  // Widen again: cluster b is back in the list and holds the new rules.
  await h.patchSpec('Permission', ns, 'reader', {
    clusterSelector: { matchLabels: { [GROUP]: ns, [MEMBER]: null } },
  });
  await h.waitFor(
    'Permission',
    ns,
    'reader',
    'platform and both clusters',
    settledOn(['platform', a.id, b.id]),
  );
  assert.deepEqual((await role(`shturval:${ns}.reader`, 1))?.rules, [
    { apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list'] },
  ]);
});

test('a Permission rule edit reaches existing bindings: the client apiserver grants the bound user the new verb', async (t) => {
  const ns = await h.namespace(t, 'rule-edit');
  const c = await h.cluster({ namespace: ns, name: 'c', labels: { [GROUP]: ns } }, 0);
  const user = `bob.${ns}@example.com`;
  await h.create('Permission', ns, 'ops', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns } },
  });
  await h.create('Scope', ns, 'here', { level: 'cluster', clusters: { ids: [c.id] } });
  await h.create('UserRole', ns, 'bob', { user, scope: 'here', permissions: ['ops'] });
  await h.waitFor('UserRole', ns, 'bob', 'ready', (o) => o.status?.ready === true);
  assert.equal(await allowed(client(0), user, 'get', 'pods'), true);
  assert.equal(await allowed(client(0), user, 'list', 'secrets'), false, 'not granted before the edit');

  await h.patchSpec('Permission', ns, 'ops', {
    granted_cluster_rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['list'] },
    ],
  });
  await until('the client apiserver to allow bob to list secrets', async () =>
    (await allowed(client(0), user, 'list', 'secrets')) ? true : undefined,
  );
  assert.equal(await allowed(client(0), user, 'get', 'pods'), true);
  assert.equal(await allowed(h.admin, user, 'list', 'secrets'), false, 'nothing on the management plane');
});

test('platform_rules fill the aggregating platform: ClusterRole, and aggregateTo adds them to another Permission until removed', async (t) => {
  const ns = await h.namespace(t, 'aggregate');
  await h.create('Permission', ns, 'base', {
    level: 'platform',
    platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
  });
  await h.create('Permission', ns, 'extra', {
    level: 'platform',
    platform_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
    aggregateTo: ['base'],
  });
  await h.waitFor('Permission', ns, 'base', 'ready on the platform', settledOn(['platform']));
  await h.waitFor('Permission', ns, 'extra', 'ready on the platform', settledOn(['platform']));

  const base = await aggregatedTo(`platform:${ns}.base`, [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
  ]);
  assert.ok(base.aggregationRule, 'platform:<ns>.base is an aggregating ClusterRole');
  await aggregatedTo(`platform:${ns}.extra`, [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
  ]);

  await h.patchSpec('Permission', ns, 'extra', { aggregateTo: null });
  await aggregatedTo(`platform:${ns}.base`, [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
  await aggregatedTo(`platform:${ns}.extra`, [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
  ]);
});

test('two Permissions of the same name in two namespaces write two sets of ClusterRoles, and deleting one leaves the other', async (t) => {
  const ns1 = await h.namespace(t, 'twin');
  const ns2 = await h.namespace(t, 'twin');
  const c = await h.cluster({ namespace: ns1, name: 'c', labels: { [GROUP]: ns1 } }, 0);
  const spec = (resource: string) => ({
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: [resource], verbs: ['get'] }],
    platform_rules: [{ apiGroups: [''], resources: [resource], verbs: ['list'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns1 } },
  });
  await h.create('Permission', ns1, 'viewer', spec('pods'));
  await h.create('Permission', ns2, 'viewer', spec('services'));
  await h.waitFor('Permission', ns1, 'viewer', 'ready', settledOn(['platform', c.id]));
  await h.waitFor('Permission', ns2, 'viewer', 'ready', settledOn(['platform', c.id]));

  assert.deepEqual((await role(`shturval:${ns1}.viewer`, 0))?.rules, [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  ]);
  assert.deepEqual((await role(`shturval:${ns2}.viewer`, 0))?.rules, [
    { apiGroups: [''], resources: ['services'], verbs: ['get'] },
  ]);
  await aggregatedTo(`platform:${ns1}.viewer`, [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
  await aggregatedTo(`platform:${ns2}.viewer`, [
    { apiGroups: [''], resources: ['services'], verbs: ['list'] },
  ]);

  await h.remove('Permission', ns1, 'viewer');
  await h.gone('Permission', ns1, 'viewer');
  assert.equal(await role(`shturval:${ns1}.viewer`, 0), undefined);
  assert.equal(await role(`platform:${ns1}.viewer`, 'mgmt'), undefined);
  assert.equal(await role(`platform:${ns1}.viewer:rules`, 'mgmt'), undefined);

  assert.deepEqual((await role(`shturval:${ns2}.viewer`, 0))?.rules, [
    { apiGroups: [''], resources: ['services'], verbs: ['get'] },
  ]);
  assert.deepEqual((await role(`platform:${ns2}.viewer`, 'mgmt'))?.rules, [
    { apiGroups: [''], resources: ['services'], verbs: ['list'] },
  ]);
  assert.ok(await h.get('Permission', ns2, 'viewer'));
});

test('deleting a Permission a UserRole names waits, in use, and then removes its ClusterRoles from every cluster and the management cluster', async (t) => {
  const ns = await h.namespace(t, 'in-use');
  const a = await h.cluster({ namespace: ns, name: 'a', labels: { [GROUP]: ns } }, 0);
  const b = await h.cluster({ namespace: ns, name: 'b', labels: { [GROUP]: ns } }, 1);
  await h.create('Permission', ns, 'deploy', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] }],
    platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns } },
  });
  await h.create('Scope', ns, 'both', { level: 'cluster', clusters: { ids: [a.id, b.id] } });
  await h.create('UserRole', ns, 'carol', {
    user: `carol.${ns}@example.com`,
    scope: 'both',
    permissions: ['deploy'],
  });
  await h.waitFor('Permission', ns, 'deploy', 'ready', settledOn(['platform', a.id, b.id]));
  await h.waitFor('UserRole', ns, 'carol', 'ready', (o) => o.status?.ready === true);
  const names = [`platform:${ns}.deploy`, `platform:${ns}.deploy:rules`] as const;

  await h.remove('Permission', ns, 'deploy');
  const waiting = await h.waitFor('Permission', ns, 'deploy', 'in use', (o) =>
    String(o.status?.message ?? '').startsWith('PermissionInUse'),
  );
  assert.ok(waiting.metadata.deletionTimestamp, 'it is being deleted');
  assert.match(String(waiting.status?.message), new RegExp(`UserRole/${ns}/carol`));
  // Several retries later (the test interval is 1 s) it is still there, and so is everything it wrote.
  await sleep(2_500);
  assert.ok(await h.get('Permission', ns, 'deploy'), 'still there while a UserRole names it');
  for (const n of names) assert.ok(await role(n, 'mgmt'), `${n} is still on the management cluster`);
  for (const i of [0, 1])
    assert.ok(await role(`shturval:${ns}.deploy`, i), `client plane ${i} still holds it`);

  await h.remove('UserRole', ns, 'carol');
  await h.gone('UserRole', ns, 'carol');
  await h.gone('Permission', ns, 'deploy');
  for (const n of names)
    assert.equal(await role(n, 'mgmt'), undefined, `${n} is gone from the management cluster`);
  for (const i of [0, 1])
    assert.equal(await role(`shturval:${ns}.deploy`, i), undefined, `client plane ${i}`);
});

test('a resync makes zero writes: forced reconciles leave the Permission and every ClusterRole at their resourceVersion', async (t) => {
  const ns = await h.namespace(t, 'resync');
  const a = await h.cluster({ namespace: ns, name: 'a', labels: { [GROUP]: ns } }, 0);
  const b = await h.cluster({ namespace: ns, name: 'b', labels: { [GROUP]: ns } }, 1);
  await h.create('Permission', ns, 'steady', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    platform_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    clusterSelector: { matchLabels: { [GROUP]: ns } },
  });
  await h.waitFor('Permission', ns, 'steady', 'ready', settledOn(['platform', a.id, b.id]));
  await aggregatedTo(`platform:${ns}.steady`, [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  ]);

  const versions = async () => ({
    permission: (await h.get('Permission', ns, 'steady'))?.metadata.resourceVersion,
    platform: (await role(`platform:${ns}.steady`, 'mgmt'))?.metadata.resourceVersion,
    platformRules: (await role(`platform:${ns}.steady:rules`, 'mgmt'))?.metadata.resourceVersion,
    client0: (await role(`shturval:${ns}.steady`, 0))?.metadata.resourceVersion,
    client1: (await role(`shturval:${ns}.steady`, 1))?.metadata.resourceVersion,
  });
  const before = await versions();
  for (const [k, v] of Object.entries(before)) assert.ok(v, `${k} exists`);
  // Also counted by each apiserver itself: a no-op server-side apply leaves resourceVersions alone.
  const writeCounts = async () => ({
    mgmtClusterRoles: await writesTo(h.admin, 'clusterroles'),
    mgmtPermissions: await writesTo(h.admin, 'permissions'),
    client0: await writesTo(client(0), 'clusterroles'),
    client1: await writesTo(client(1), 'clusterroles'),
  });
  const writesBefore = await writeCounts();
  assert.ok(writesBefore.client0 > 0 && writesBefore.mgmtPermissions > 0, 'the counters see our own writes');

  for (let round = 1; round <= 3; round++) {
    const done = await reconciles('permission');
    h.operator.permissions.enqueue(`${ns}/steady`);
    // More reconciles finished, none waiting and none running: ours has run.
    await until(`forced reconcile ${round} to finish`, async () =>
      (await reconciles('permission')) > done && (await idle('permission')) ? true : undefined,
    );
  }
  assert.deepEqual(await versions(), before);
  assert.deepEqual(await writeCounts(), writesBefore);
});

/** The write verbs of `apiserver_request_total`. */
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/**
 * Write requests the apiserver behind `c` has served for `resource` (any subresource),
 * from its own `apiserver_request_total`.
 */
async function writesTo(c: KubeClient, resource: string): Promise<number> {
  const res = await c.transport.raw({ method: 'GET', path: '/metrics' });
  const text = await res.body.text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]] as const),
    );
    if (labels.resource !== resource || !WRITE_VERBS.has(labels.verb ?? '')) continue;
    n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}

/** How many reconciles the controller `name` has finished, from the operator's own metric. */
async function reconciles(name: string): Promise<number> {
  const metric = h.operator.manager.registry.getSingleMetric('controller_runtime_reconcile_total');
  if (!metric) throw new Error('the operator registers no controller_runtime_reconcile_total');
  const { values } = await metric.get();
  return values.filter((v) => v.labels.controller === name).reduce((n, v) => n + v.value, 0);
}

/** Whether the controller `name` has nothing queued and no reconcile running. */
async function idle(name: string): Promise<boolean> {
  const sum = async (metricName: string, label: string) => {
    const metric = h.operator.manager.registry.getSingleMetric(metricName);
    if (!metric) throw new Error(`the operator registers no ${metricName}`);
    const { values } = await metric.get();
    return values.filter((v) => v.labels[label] === name).reduce((n, v) => n + v.value, 0);
  };
  return (
    (await sum('workqueue_depth', 'name')) === 0 &&
    (await sum('controller_runtime_active_workers', 'controller')) === 0
  );
}
