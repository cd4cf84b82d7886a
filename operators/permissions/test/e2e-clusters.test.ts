/**
 * Client clusters on real planes: two client kube-apiservers registered as Cluster API
 * Clusters (and, for bad input, Clusters whose kubeconfig leads nowhere, does not parse,
 * or authenticates as an identity the client apiserver's RBAC restricts). Which clusters
 * a Permission reaches follows their readiness, labels and existence; a cluster that
 * cannot be used is reported in the Permission's status while the others get (and keep)
 * their ClusterRoles.
 *
 * Cluster objects outlive their test (the plane runs no namespace controller), so each
 * Permission selects its own test's clusters by a label carrying the test's namespace,
 * and the bad clusters are removed when their test ends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeClient, KubeObject } from '@operators/kit';
import { unreachableCluster } from './support/client-plane.ts';
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING, Harness, type Obj, until } from './support/harness.ts';

const h = Harness.forFile({ clients: 2 });

/** The label that ties a test's clusters to its Permissions' selectors. */
const GROUP = 'e2e.permissions.shturval.tech/group';

type Rule = { apiGroups?: string[]; resources?: string[]; verbs: string[] };
type Role = KubeObject & { rules?: Rule[] };

function applied(o: Obj): string[] {
  return (o.status?.applied_to_clusters as string[] | undefined) ?? [];
}

function message(o: Obj): string {
  return String(o.status?.message ?? '');
}

/** Ready, for the generation we last wrote, with exactly these clusters applied. */
function settledOn(ids: readonly string[]) {
  return (o: Obj) =>
    o.status?.ready === true &&
    o.status?.observedGeneration === o.metadata.generation &&
    JSON.stringify(applied(o)) === JSON.stringify(ids);
}

/** The ClusterRole `name` on client plane `i`. */
function role(name: string, i: number): Promise<Role | undefined> {
  return h.find(CLUSTER_ROLE, name, undefined, i) as Promise<Role | undefined>;
}

/** Waits until the ClusterRole `name` on client plane `i` holds exactly `rules`. */
function roleWith(name: string, i: number, rules: readonly Rule[]): Promise<Role> {
  return until(`${name} on client plane ${i} to hold ${JSON.stringify(rules)}`, async () => {
    const r = await role(name, i);
    try {
      assert.deepEqual(r?.rules, rules);
      return r;
    } catch {
      return undefined;
    }
  });
}

function client(i: number): KubeClient {
  const c = h.clients[i]?.admin;
  if (!c) throw new Error(`no client plane ${i}`);
  return c;
}

const PODS_GET: Rule[] = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];

function clusterPermission(
  ns: string,
  rules: readonly Rule[] = PODS_GET,
  extraLabels: Record<string, string> = {},
) {
  return {
    level: 'cluster',
    granted_cluster_rules: rules,
    clusterSelector: { matchLabels: { [GROUP]: ns, ...extraLabels } },
  };
}

test('a Cluster API cluster that becomes ready later receives its ClusterRoles', async (t) => {
  const ns = await h.namespace(t, 'late');
  const late = await h.cluster({ namespace: ns, name: 'late', ready: false, labels: { [GROUP]: ns } }, 1);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor('Permission', ns, 'reader', 'ready with no cluster yet', settledOn([]));
  assert.equal(
    await role(`shturval:${ns}.reader`, 1),
    undefined,
    'nothing is written into a cluster that is not ready',
  );

  await late.setReady(true);
  await h.waitFor(
    'Permission',
    ns,
    'reader',
    'applied to the cluster that became ready',
    settledOn([late.id]),
  );
  assert.deepEqual((await role(`shturval:${ns}.reader`, 1))?.rules, PODS_GET);
});

test('clusterSelector narrows the clusters by label, and a cluster that loses the label loses our ClusterRole', async (t) => {
  const ns = await h.namespace(t, 'select');
  const gold = await h.cluster({ namespace: ns, name: 'gold', labels: { [GROUP]: ns, tier: 'gold' } }, 0);
  await h.cluster({ namespace: ns, name: 'silver', labels: { [GROUP]: ns, tier: 'silver' } }, 1);
  await h.create('Permission', ns, 'golden', clusterPermission(ns, PODS_GET, { tier: 'gold' }));
  await h.waitFor('Permission', ns, 'golden', 'applied to the gold cluster only', settledOn([gold.id]));
  assert.deepEqual((await role(`shturval:${ns}.golden`, 0))?.rules, PODS_GET);
  assert.equal(await role(`shturval:${ns}.golden`, 1), undefined, 'the silver cluster is not selected');

  await gold.setMetadata({ labels: { tier: null } });
  await h.waitFor('Permission', ns, 'golden', 'no cluster left', settledOn([]));
  assert.equal(
    await role(`shturval:${ns}.golden`, 0),
    undefined,
    'the deselected cluster had our ClusterRole removed',
  );
});

test('a deleted Cluster is dropped from applied_to_clusters', async (t) => {
  const ns = await h.namespace(t, 'deleted');
  const a = await h.cluster({ namespace: ns, name: 'a', labels: { [GROUP]: ns } }, 0);
  const b = await h.cluster({ namespace: ns, name: 'b', labels: { [GROUP]: ns } }, 1);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor('Permission', ns, 'reader', 'applied to both', settledOn([a.id, b.id]));

  await b.remove();
  await h.waitFor('Permission', ns, 'reader', 'the deleted cluster dropped', settledOn([a.id]));
  assert.deepEqual((await role(`shturval:${ns}.reader`, 0))?.rules, PODS_GET);
});

test('an unreachable client cluster is reported in message with ready=false, while the good cluster keeps and still gets its ClusterRole', async (t) => {
  const ns = await h.namespace(t, 'unreachable');
  const good = await h.cluster({ namespace: ns, name: 'good', labels: { [GROUP]: ns } }, 0);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor('Permission', ns, 'reader', 'applied to the good cluster', settledOn([good.id]));
  const granted = await role(`shturval:${ns}.reader`, 0);

  const bad = await unreachableCluster(h.mgmt, {
    namespace: ns,
    name: 'bad',
    labels: { [GROUP]: ns },
    mode: 'silent',
  });
  t.after(async () => {
    await bad.remove().catch(() => undefined);
    await bad.close();
  });
  const reported = await h.waitFor(
    'Permission',
    ns,
    'reader',
    'the unreachable cluster reported',
    (o) => o.status?.ready === false && message(o).includes(bad.id),
  );
  assert.match(message(reported), new RegExp(`${bad.id}: ClusterUnreachable: `));
  assert.deepEqual(applied(reported), [good.id]);
  const kept = await role(`shturval:${ns}.reader`, 0);
  assert.equal(
    kept?.metadata.resourceVersion,
    granted?.metadata.resourceVersion,
    'the good cluster was left alone',
  );

  // One cluster that never answers holds up nobody: an edit still reaches the good one.
  const edited: Rule[] = [{ apiGroups: [''], resources: ['pods', 'services'], verbs: ['get'] }];
  await h.patchSpec('Permission', ns, 'reader', { granted_cluster_rules: edited });
  await roleWith(`shturval:${ns}.reader`, 0, edited);
  const still = await h.waitFor(
    'Permission',
    ns,
    'reader',
    'the edit seen',
    (o) => o.status?.observedGeneration === o.metadata.generation,
  );
  assert.equal(still.status?.ready, false);
  assert.ok(message(still).includes(bad.id));
  assert.deepEqual(applied(still), [good.id]);

  await bad.remove();
  await h.waitFor('Permission', ns, 'reader', 'ready once the bad cluster is gone', settledOn([good.id]));
});

test('a kubeconfig Secret that does not parse is reported in message with ready=false, while the good cluster keeps its ClusterRole', async (t) => {
  const ns = await h.namespace(t, 'bad-secret');
  const good = await h.cluster({ namespace: ns, name: 'good', labels: { [GROUP]: ns } }, 0);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor('Permission', ns, 'reader', 'applied to the good cluster', settledOn([good.id]));
  const granted = await role(`shturval:${ns}.reader`, 0);

  const broken = await h.cluster(
    { namespace: ns, name: 'broken', ready: false, secret: false, labels: { [GROUP]: ns } },
    1,
  );
  t.after(() => broken.remove().catch(() => undefined));
  await broken.writeKubeconfig('apiVersion: v1\nclusters: [{name: unclosed\n');
  await broken.setReady(true);
  const reported = await h.waitFor(
    'Permission',
    ns,
    'reader',
    'the broken kubeconfig reported',
    (o) => o.status?.ready === false && message(o).includes(broken.id),
  );
  assert.match(message(reported), new RegExp(`${broken.id}: KubeconfigInvalid: `));
  assert.deepEqual(applied(reported), [good.id]);
  assert.equal(await role(`shturval:${ns}.reader`, 1), undefined);
  const kept = await role(`shturval:${ns}.reader`, 0);
  assert.equal(
    kept?.metadata.resourceVersion,
    granted?.metadata.resourceVersion,
    'the good cluster was left alone',
  );
});

test('deleting a Permission is not held up by a selected cluster it never reached, and still clears the clusters it did', async (t) => {
  const ns = await h.namespace(t, 'delete-broken');
  const good = await h.cluster({ namespace: ns, name: 'good', labels: { [GROUP]: ns } }, 0);
  const broken = await h.cluster(
    { namespace: ns, name: 'broken', ready: false, secret: false, labels: { [GROUP]: ns } },
    1,
  );
  t.after(() => broken.remove().catch(() => undefined));
  await broken.writeKubeconfig('apiVersion: v1\nclusters: [{name: unclosed\n');
  await broken.setReady(true);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor(
    'Permission',
    ns,
    'reader',
    'the broken kubeconfig reported',
    (o) => o.status?.ready === false && message(o).includes(broken.id) && applied(o).includes(good.id),
  );
  assert.deepEqual((await role(`shturval:${ns}.reader`, 0))?.rules, PODS_GET);

  await h.remove('Permission', ns, 'reader');
  await h.gone('Permission', ns, 'reader', 15_000);
  assert.equal(await role(`shturval:${ns}.reader`, 0), undefined, 'removed from the cluster it reached');
  assert.ok(await broken.get(), 'the broken cluster is still there: it did not have to go first');
});

test('a rotated kubeconfig Secret refreshes the client: with the previous identity revoked, a rule edit still lands', async (t) => {
  const ns = await h.namespace(t, 'rotate');
  const c = await h.cluster(
    { namespace: ns, name: 'c', ready: false, secret: false, labels: { [GROUP]: ns } },
    0,
  );
  // The operator's first client authenticates as a ServiceAccount we can revoke (the admin certificate cannot be).
  const first = await c.rotateKubeconfig();
  await c.setReady(true);
  await h.create('Permission', ns, 'reader', clusterPermission(ns));
  await h.waitFor('Permission', ns, 'reader', 'applied with the first identity', settledOn([c.id]));
  assert.deepEqual((await role(`shturval:${ns}.reader`, 0))?.rules, PODS_GET);

  // Rotate, then revoke the first identity: only a client built from the new Secret can still write.
  await c.rotateKubeconfig();
  const sa = first.user.split(':').at(-1) ?? '';
  await client(0).delete(CLUSTER_ROLE_BINDING, `${sa}-admin`);
  await client(0).delete({ apiVersion: 'v1', kind: 'ServiceAccount' }, sa, 'default');
  const edited: Rule[] = [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }];
  await h.patchSpec('Permission', ns, 'reader', { granted_cluster_rules: edited });
  await roleWith(`shturval:${ns}.reader`, 0, edited);
  await h.waitFor('Permission', ns, 'reader', 'ready after the rotation', settledOn([c.id]));
});

test('a rule the client apiserver refuses (RBAC escalation, 403) is reported for that cluster with its message, while the admin cluster gets it', async (t) => {
  const ns = await h.namespace(t, 'refused');
  const admin = await h.cluster({ namespace: ns, name: 'admin', labels: { [GROUP]: ns } }, 0);
  const restricted = await h.cluster(
    { namespace: ns, name: 'restricted', ready: false, secret: false, labels: { [GROUP]: ns } },
    1,
  );
  t.after(() => restricted.remove().catch(() => undefined));
  // May write ClusterRoles, without `escalate`: only ones granting what it holds itself.
  await restricted.restrictKubeconfig();
  await restricted.setReady(true);

  // What the restricted identity holds itself it may grant: the cluster is usable.
  const own: Rule[] = [
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['get'] },
  ];
  await h.create('Permission', ns, 'role-reader', clusterPermission(ns, own));
  await h.waitFor('Permission', ns, 'role-reader', 'applied to both', settledOn([admin.id, restricted.id]));
  assert.deepEqual((await role(`shturval:${ns}.role-reader`, 1))?.rules, own);

  const secrets: Rule[] = [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }];
  await h.create('Permission', ns, 'secret-reader', clusterPermission(ns, secrets));
  const refused = await h.waitFor(
    'Permission',
    ns,
    'secret-reader',
    'refused by the restricted cluster',
    (o) => o.status?.ready === false && message(o).includes(restricted.id),
  );
  // The client apiserver's own words, for that cluster only.
  assert.match(
    message(refused),
    new RegExp(`${restricted.id}: RuleRefused: .*attempting to grant RBAC permissions not currently held`),
  );
  assert.ok(!message(refused).includes(admin.id), 'the admin cluster is not reported');
  assert.deepEqual(applied(refused), [admin.id]);
  assert.deepEqual((await role(`shturval:${ns}.secret-reader`, 0))?.rules, secrets);
  assert.equal(await role(`shturval:${ns}.secret-reader`, 1), undefined);
  // Nothing already granted there was revoked.
  assert.deepEqual((await role(`shturval:${ns}.role-reader`, 1))?.rules, own);
});
