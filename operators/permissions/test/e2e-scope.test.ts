/**
 * The Scope lifecycle (§5) on real planes: which Cluster API Clusters a Scope selects
 * (by id, by annotations) and the annotation it writes on each of them; a
 * namespace-level Scope's `objectsStatus` following a client cluster's namespaces (the
 * recheck is 2 s in the harness) with the UserRole's RoleBinding following it there; an
 * unknown cluster reported while the known one keeps working; deletion waiting while a
 * UserRole still grants in the Scope, also right after a restart; `status.permissions`
 * and `paths`. Grants are proven by SubjectAccessReviews on the client plane; expected
 * names, annotations and paths are written out here.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '@operators/kit';
import type { RegisteredCluster, RegisterOptions } from './support/client-plane.ts';
import { CLUSTER_ROLE_BINDING, Harness, type Obj, ROLE_BINDING, until } from './support/harness.ts';

const h = Harness.forFile();

const ANNOTATION_PREFIX = 'scope.permissions.shturval.tech/';

/** Registers client plane 0 as a Cluster in `ns`, removed again when the test ends. */
async function cluster(
  t: TestContext,
  ns: string,
  name: string,
  opts: Partial<RegisterOptions> = {},
): Promise<RegisteredCluster> {
  const c = await h.cluster({ namespace: ns, name, ...opts });
  t.after(() => c.remove().catch(() => undefined));
  return c;
}

/** The annotations our Scopes wrote on a Cluster (the others filtered out). */
async function scopeAnnotations(c: RegisteredCluster): Promise<Record<string, string>> {
  const live = await c.get();
  return Object.fromEntries(
    Object.entries(live.metadata.annotations ?? {}).filter(([k]) => k.startsWith(ANNOTATION_PREFIX)),
  );
}

/** Waits until the Cluster carries exactly `want` of our annotations. */
function annotationsBecome(c: RegisteredCluster, want: Record<string, string>): Promise<true> {
  return until(`Cluster ${c.id} to carry exactly ${JSON.stringify(want)}`, async () => {
    const have = await scopeAnnotations(c);
    try {
      assert.deepEqual(have, want);
      return true;
    } catch {
      return undefined;
    }
  });
}

/** What the client apiserver answers to "may `user` do `verb` on `resource`" (optionally in a namespace). */
async function allowed(
  client: KubeClient,
  user: string,
  attrs: { group?: string; resource: string; verb: string; namespace?: string },
): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, resourceAttributes: { group: attrs.group ?? '', ...attrs } },
  })) as unknown as { status: { allowed: boolean } };
  return review.status.allowed;
}

const client0 = (): KubeClient => {
  const c = h.clients[0]?.admin;
  if (!c) throw new Error('no client plane');
  return c;
};

const status = (o: Obj): Record<string, unknown> => o.status ?? {};
const sameSet = (a: unknown, b: readonly string[]): boolean =>
  Array.isArray(a) && a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

test('a Scope selects Clusters by id and by annotations and annotates exactly the Clusters it selects', async (t) => {
  // The foreground deletion test below needs the garbage collector to watch our kinds: start
  // finding out now, while the tests that do not depend on it run.
  h.garbageCollectorWatching().catch(() => undefined);
  const ns = await h.namespace(t, 'select');
  // Annotation values unique to this test: Scopes of other tests never select these Clusters.
  const prod = `prod-${ns}`;
  const dev = `dev-${ns}`;
  const a = await cluster(t, ns, 'a', { annotations: { 'example.com/env': prod } });
  const b = await cluster(t, ns, 'b', { annotations: { 'example.com/env': dev } });
  const c = await cluster(t, ns, 'c');
  await h.create('Scope', ns, 'by-ids', { level: 'cluster', clusters: { ids: [a.id, c.id] } });
  await h.create('Scope', ns, 'by-annotations', {
    level: 'namespace',
    clusters: { annotations: { 'example.com/env': prod } },
    namespaces: ['default'],
  });
  const byIds = `${ANNOTATION_PREFIX}${ns}.by-ids`;
  const byAnnotations = `${ANNOTATION_PREFIX}${ns}.by-annotations`;

  const ids = await h.waitFor('Scope', ns, 'by-ids', 'selects a and c', (o) =>
    sameSet(status(o).clusters, [a.id, c.id]),
  );
  assert.deepEqual(status(ids).clusters, [a.id, c.id]);
  assert.equal(status(ids).ready, true);
  await h.waitFor('Scope', ns, 'by-annotations', 'selects a', (o) => sameSet(status(o).clusters, [a.id]));
  await annotationsBecome(a, { [byIds]: 'cluster', [byAnnotations]: 'namespace' });
  await annotationsBecome(b, {});
  await annotationsBecome(c, { [byIds]: 'cluster' });

  // b gains the annotation the Scope asks for: selected and annotated.
  await b.setMetadata({ annotations: { 'example.com/env': prod } });
  await h.waitFor('Scope', ns, 'by-annotations', 'selects a and b', (o) =>
    sameSet(status(o).clusters, [a.id, b.id]),
  );
  await annotationsBecome(b, { [byAnnotations]: 'namespace' });

  // a loses it: deselected, and our annotation goes from a (the by-ids one stays).
  await a.setMetadata({ annotations: { 'example.com/env': dev } });
  await h.waitFor('Scope', ns, 'by-annotations', 'selects b only', (o) =>
    sameSet(status(o).clusters, [b.id]),
  );
  await annotationsBecome(a, { [byIds]: 'cluster' });

  // An id dropped from the Scope: that Cluster is deselected and unannotated.
  await h.patchSpec('Scope', ns, 'by-ids', { clusters: { ids: [c.id] } });
  await h.waitFor('Scope', ns, 'by-ids', 'selects c only', (o) => sameSet(status(o).clusters, [c.id]));
  await annotationsBecome(a, {});
  await annotationsBecome(c, { [byIds]: 'cluster' });

  // A deleted Scope takes its annotations with it.
  await h.remove('Scope', ns, 'by-annotations');
  await h.gone('Scope', ns, 'by-annotations');
  await annotationsBecome(b, {});
  await h.remove('Scope', ns, 'by-ids');
  await h.gone('Scope', ns, 'by-ids');
  await annotationsBecome(c, {});
});

test('a namespace-level Scope reports a namespace missing in the client cluster, and once it is created the row flips and the RoleBinding lands there', async (t) => {
  const ns = await h.namespace(t, 'nslevel');
  const prod = await cluster(t, ns, 'prod');
  const present = `${ns}-present`;
  const later = `${ns}-later`;
  await h.clientNamespace(present);
  await h.create('Permission', ns, 'reader', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [present, later],
  });
  // No role grants in this one: nothing but the periodic recheck can flip it.
  await h.create('Scope', ns, 'quiet', {
    level: 'namespace',
    clusters: { ids: [prod.id] },
    namespaces: [later],
  });

  const rows = (o: Obj) =>
    (status(o).objectsStatus ?? []) as {
      cluster: string;
      namespace: string;
      exists: boolean;
      message?: string;
    }[];
  const row = (o: Obj, n: string) => rows(o).find((r) => r.namespace === n);
  const before = await h.waitFor(
    'Scope',
    ns,
    'team',
    'a row for each namespace',
    (o) => rows(o).length === 2,
  );
  assert.deepEqual(row(before, present), { cluster: prod.id, namespace: present, exists: true });
  const missing = row(before, later);
  assert.equal(missing?.cluster, prod.id);
  assert.equal(missing?.exists, false);
  assert.match(missing?.message ?? '', /NamespaceMissing/);
  assert.equal(status(before).ready, false);
  await h.waitFor('Scope', ns, 'quiet', `${later} missing`, (o) => row(o, later)?.exists === false);

  await h.create('UserRole', ns, 'carol', {
    user: 'carol@example.com',
    scope: 'team',
    permissions: ['reader'],
  });
  const binding = `shturval:${ns}.carol.reader`;
  await until('the RoleBinding in the namespace that exists', () => h.find(ROLE_BINDING, binding, present));
  assert.equal(
    await allowed(client0(), 'carol@example.com', {
      resource: 'configmaps',
      verb: 'list',
      namespace: present,
    }),
    true,
  );
  assert.equal(
    await allowed(client0(), 'carol@example.com', { resource: 'configmaps', verb: 'list', namespace: later }),
    false,
  );

  // The namespace appears in the client cluster; no event reaches the operator, the recheck (2 s) finds it.
  const created = Date.now();
  await h.clientNamespace(later);
  const quiet = await h.waitFor(
    'Scope',
    ns,
    'quiet',
    `${later} exists`,
    (o) => row(o, later)?.exists === true,
    10_000,
  );
  t.diagnostic(`the role-less Scope flipped ${Date.now() - created} ms after the namespace was created`);
  assert.equal(status(quiet).ready, true);
  const after = await h.waitFor(
    'Scope',
    ns,
    'team',
    `${later} exists`,
    (o) => row(o, later)?.exists === true,
    10_000,
  );
  assert.deepEqual(row(after, later), { cluster: prod.id, namespace: later, exists: true });
  assert.equal(status(after).ready, true);
  await until(
    'the RoleBinding in the namespace created later',
    () => h.find(ROLE_BINDING, binding, later),
    15_000,
  );
  assert.equal(
    await allowed(client0(), 'carol@example.com', { resource: 'configmaps', verb: 'list', namespace: later }),
    true,
  );
  await h.waitFor('UserRole', ns, 'carol', 'ready', (o) => status(o).ready === true);
});

test('a Scope naming an unknown cluster says so and still grants in the cluster it knows', async (t) => {
  const ns = await h.namespace(t, 'unknown');
  const known = await cluster(t, ns, 'known');
  const ghost = `${ns}/ghost`;
  await h.create('Permission', ns, 'lister', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['list'] }],
  });
  await h.create('Scope', ns, 'mixed', { level: 'cluster', clusters: { ids: [known.id, ghost] } });
  const scope = await h.waitFor('Scope', ns, 'mixed', 'a message about the unknown cluster', (o) =>
    String(status(o).message ?? '').includes(ghost),
  );
  assert.equal(status(scope).ready, false);
  assert.match(String(status(scope).message), /ClusterNotFound/);
  assert.deepEqual(status(scope).clusters, [known.id]);

  await h.create('UserRole', ns, 'dan', { user: 'dan@example.com', scope: 'mixed', permissions: ['lister'] });
  await until('the ClusterRoleBinding in the known cluster', () =>
    h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.dan.lister`),
  );
  await until(
    'dan may list deployments in the known cluster',
    async () =>
      (await allowed(client0(), 'dan@example.com', {
        group: 'apps',
        resource: 'deployments',
        verb: 'list',
      })) || undefined,
  );
  const role = await h.waitFor('UserRole', ns, 'dan', 'ready', (o) => status(o).ready === true);
  const perCluster = (status(role).permissions as Record<string, Record<string, unknown>>).lister ?? {};
  assert.deepEqual(Object.keys(perCluster), [known.id]);
});

test('a Cluster named by a Scope whose control plane becomes ready later joins it and receives the UserRole binding', async (t) => {
  const ns = await h.namespace(t, 'notready');
  const late = await cluster(t, ns, 'late', { ready: false });
  await h.create('Permission', ns, 'getter', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'waiting', { level: 'cluster', clusters: { ids: [late.id] } });
  await h.create('UserRole', ns, 'jo', { user: 'jo@example.com', scope: 'waiting', permissions: ['getter'] });
  const before = await h.waitFor('Scope', ns, 'waiting', 'a message about the cluster', (o) =>
    String(status(o).message ?? '').includes(late.id),
  );
  assert.match(String(status(before).message), /not ready/);
  assert.deepEqual(status(before).clusters, []);
  assert.deepEqual(await scopeAnnotations(late), {});
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.jo.getter`), undefined);

  await late.setReady(true);
  await h.waitFor('Scope', ns, 'waiting', 'the cluster selected', (o) =>
    sameSet(status(o).clusters, [late.id]),
  );
  await annotationsBecome(late, { [`${ANNOTATION_PREFIX}${ns}.waiting`]: 'cluster' });
  await until('the binding in the cluster now ready', () =>
    h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.jo.getter`),
  );
  await until(
    'jo may get serviceaccounts',
    async () =>
      (await allowed(client0(), 'jo@example.com', { resource: 'serviceaccounts', verb: 'get' })) || undefined,
  );
});

test('deleting a Scope waits while a UserRole grants in it, and completes once the UserRole is deleted', async (t) => {
  const ns = await h.namespace(t, 'scopewait');
  const prod = await cluster(t, ns, 'prod');
  await h.create('Permission', ns, 'lister', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
  });
  await h.create('Scope', ns, 'held', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'erin', {
    user: 'erin@example.com',
    scope: 'held',
    permissions: ['lister'],
  });
  await h.waitFor('UserRole', ns, 'erin', 'ready', (o) => status(o).ready === true);
  const annotation = `${ANNOTATION_PREFIX}${ns}.held`;
  await annotationsBecome(prod, { [annotation]: 'cluster' });

  await h.remove('Scope', ns, 'held');
  const waiting = await h.waitFor('Scope', ns, 'held', 'a message saying it is in use', (o) =>
    String(status(o).message ?? '').includes('ScopeInUse'),
  );
  assert.ok(waiting.metadata.deletionTimestamp, 'the Scope is being deleted');
  // Several retries (0.5 s each in the harness) later it is still there, and so is the grant.
  await sleep(3_000);
  const still = await h.get('Scope', ns, 'held');
  assert.ok(still, 'the Scope is still there while erin grants in it');
  assert.equal(status(still).ready, false);
  assert.ok(await h.get('UserRole', ns, 'erin'), 'the UserRole is not taken with it');
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.erin.lister`));
  assert.equal(await allowed(client0(), 'erin@example.com', { resource: 'secrets', verb: 'list' }), true);

  await h.remove('UserRole', ns, 'erin');
  await h.gone('UserRole', ns, 'erin');
  await h.gone('Scope', ns, 'held');
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, `shturval:${ns}.erin.lister`), undefined);
  assert.equal(await allowed(client0(), 'erin@example.com', { resource: 'secrets', verb: 'list' }), false);
  await annotationsBecome(prod, {});
});

test('a Scope deleted while the operator is down still waits for its UserRole after the restart', async (t) => {
  const ns = await h.namespace(t, 'restart');
  const prod = await cluster(t, ns, 'prod');
  await h.create('Permission', ns, 'watcher', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['watch'] }],
  });
  await h.create('Scope', ns, 'held', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'finn', {
    user: 'finn@example.com',
    scope: 'held',
    permissions: ['watcher'],
  });
  await h.waitFor('UserRole', ns, 'finn', 'ready', (o) => status(o).ready === true);
  const binding = `shturval:${ns}.finn.watcher`;
  assert.ok(await h.find(CLUSTER_ROLE_BINDING, binding));

  await h.stopOperator();
  await h.remove('Scope', ns, 'held');
  await h.startOperator();
  // At once after the restart, and for a few seconds, nothing was decided from a half-built model.
  const until3s = Date.now() + 3_000;
  while (Date.now() < until3s) {
    const scope = await h.get('Scope', ns, 'held');
    assert.ok(scope, 'the Scope is still there');
    assert.ok(scope.metadata.deletionTimestamp);
    assert.ok(await h.find(CLUSTER_ROLE_BINDING, binding), "finn's binding is intact");
    await sleep(200);
  }
  assert.equal(await allowed(client0(), 'finn@example.com', { resource: 'pods', verb: 'watch' }), true);
  const waiting = await h.waitFor('Scope', ns, 'held', 'a message saying it is in use', (o) =>
    String(status(o).message ?? '').includes('ScopeInUse'),
  );
  assert.equal(status(waiting).ready, false);

  await h.remove('UserRole', ns, 'finn');
  await h.gone('UserRole', ns, 'finn');
  await h.gone('Scope', ns, 'held');
  assert.equal(await h.find(CLUSTER_ROLE_BINDING, binding), undefined);
});

test('status.permissions lists the Permissions the UserRoles and GroupRoles of the Scope bind', async (t) => {
  const ns = await h.namespace(t, 'perms');
  const prod = await cluster(t, ns, 'prod');
  const rules = [{ apiGroups: [''], resources: ['services'], verbs: ['get'] }];
  for (const p of ['alpha', 'beta', 'gamma', 'unbound'])
    await h.create('Permission', ns, p, { level: 'cluster', granted_cluster_rules: rules });
  await h.create('Scope', ns, 'shared', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('Scope', ns, 'other', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'gus', {
    user: 'gus@example.com',
    scope: 'shared',
    permissions: ['beta', 'alpha'],
  });
  await h.create('GroupRole', ns, 'ops', { group: 'ops', scope: 'shared', permissions: ['gamma', 'alpha'] });
  await h.create('UserRole', ns, 'hal', {
    user: 'hal@example.com',
    scope: 'other',
    permissions: ['unbound'],
  });

  const listed = await h.waitFor('Scope', ns, 'shared', 'three permissions', (o) =>
    sameSet(status(o).permissions, ['alpha', 'beta', 'gamma']),
  );
  assert.deepEqual(status(listed).permissions, ['alpha', 'beta', 'gamma']);
  await h.waitFor('Scope', ns, 'other', 'one permission', (o) => sameSet(status(o).permissions, ['unbound']));

  await h.remove('GroupRole', ns, 'ops');
  await h.gone('GroupRole', ns, 'ops');
  await h.waitFor('Scope', ns, 'shared', 'gamma gone', (o) =>
    sameSet(status(o).permissions, ['alpha', 'beta']),
  );
  await h.patchSpec('UserRole', ns, 'gus', { permissions: ['beta'] });
  await h.waitFor('Scope', ns, 'shared', 'beta only', (o) => sameSet(status(o).permissions, ['beta']));
  await h.remove('UserRole', ns, 'gus');
  await h.remove('UserRole', ns, 'hal');
  await h.gone('UserRole', ns, 'gus');
  await h.waitFor('Scope', ns, 'shared', 'no permissions', (o) => sameSet(status(o).permissions ?? [], []));
});

test('paths run from the enclosing Scope down to each cluster and namespace', async (t) => {
  const ns = await h.namespace(t, 'paths');
  const east = await cluster(t, ns, 'east');
  const west = await cluster(t, ns, 'west');
  await h.create('Scope', ns, 'org', { level: 'cluster', clusters: { ids: [east.id, west.id] } });
  await h.create('Scope', ns, 'team-a', {
    level: 'namespace',
    parentScope: { name: 'org' },
    clusters: { ids: [east.id, west.id] },
    namespaces: ['web', 'api'],
  });
  await h.create('Scope', ns, 'admins', { level: 'platform' });

  const org = await h.waitFor(
    'Scope',
    ns,
    'org',
    'two paths',
    (o) => (status(o).paths as unknown[] | undefined)?.length === 2,
  );
  assert.deepEqual(status(org).paths, [`/org/${ns}/east`, `/org/${ns}/west`]);
  const team = await h.waitFor(
    'Scope',
    ns,
    'team-a',
    'four paths',
    (o) => (status(o).paths as unknown[] | undefined)?.length === 4,
  );
  assert.deepEqual(status(team).paths, [
    `/org/team-a/${ns}/east/api`,
    `/org/team-a/${ns}/east/web`,
    `/org/team-a/${ns}/west/api`,
    `/org/team-a/${ns}/west/web`,
  ]);
  const admins = await h.waitFor(
    'Scope',
    ns,
    'admins',
    'a path',
    (o) => (status(o).paths as unknown[] | undefined)?.length === 1,
  );
  assert.deepEqual(status(admins).paths, ['/admins/platform']);

  // A cluster leaving the Scope leaves its paths.
  await h.patchSpec('Scope', ns, 'team-a', { clusters: { ids: [west.id] } });
  await h.waitFor(
    'Scope',
    ns,
    'team-a',
    'west only',
    (o) =>
      JSON.stringify(status(o).paths) ===
      JSON.stringify([`/org/team-a/${ns}/west/api`, `/org/team-a/${ns}/west/web`]),
  );
});

test('a Scope deleted with foreground propagation takes its UserRoles and GroupRoles with it, each cleaning up first, and then goes', async (t) => {
  const ns = await h.namespace(t, 'foreground');
  const prod = await cluster(t, ns, 'prod');
  await h.create('Permission', ns, 'getter', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'team', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'ida', { user: 'ida@example.com', scope: 'team', permissions: ['getter'] });
  await h.create('GroupRole', ns, 'crew', { group: `crew-${ns}`, scope: 'team', permissions: ['getter'] });
  await h.waitFor('UserRole', ns, 'ida', 'ready', (o) => status(o).ready === true);
  await h.waitFor('GroupRole', ns, 'crew', 'ready', (o) => status(o).ready === true);
  const bindings = [`shturval:${ns}.ida.getter`, `shturval:${ns}.g.crew.getter`];
  for (const b of bindings) assert.ok(await h.find(CLUSTER_ROLE_BINDING, b), b);
  await annotationsBecome(prod, { [`${ANNOTATION_PREFIX}${ns}.team`]: 'cluster' });

  // The garbage collector deletes the roles first (blockOwnerDeletion), they clean up, then the Scope goes.
  // kube-controller-manager's garbage collector learns of new CRDs by periodic discovery (every
  // 30 s): the delete waits for the probe that sees it handle our kinds (started with the file's
  // first test), not for a clock that a loaded machine overruns.
  await h.garbageCollectorWatching();
  await h.remove('Scope', ns, 'team', 'Foreground');
  await h.gone('UserRole', ns, 'ida');
  await h.gone('GroupRole', ns, 'crew');
  await h.gone('Scope', ns, 'team');
  for (const b of bindings) assert.equal(await h.find(CLUSTER_ROLE_BINDING, b), undefined, b);
  assert.equal(
    await allowed(client0(), 'ida@example.com', { resource: 'persistentvolumes', verb: 'get' }),
    false,
  );
  await annotationsBecome(prod, {});
});
