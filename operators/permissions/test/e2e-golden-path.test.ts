/**
 * The golden path on real planes: a Permission, a Scope and a UserRole become a
 * ClusterRole and a binding in the CLIENT cluster (a second real kube-apiserver
 * registered as a Cluster API Cluster), never on the management cluster; a platform
 * Permission becomes an aggregating `platform:` ClusterRole whose rules
 * kube-controller-manager fills from the labelled part.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING, Harness, TEST_INTERVALS, until } from './support/harness.ts';

const h = Harness.forFile();

test('a cluster-level UserRole lands as a ClusterRole and a ClusterRoleBinding in the client cluster only', async (t) => {
  const ns = await h.namespace(t, 'golden');
  const prod = await h.cluster({ namespace: ns, name: 'prod-1' });
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'everywhere', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'alice', {
    user: 'alice@example.com',
    scope: 'everywhere',
    permissions: ['viewer'],
  });

  const perm = await h.waitFor('Permission', ns, 'viewer', 'ready', (o) => o.status?.ready === true);
  assert.deepEqual(perm.status?.applied_to_clusters, [prod.id]);
  const role = await until('the shturval ClusterRole in the client cluster', () =>
    h.find(CLUSTER_ROLE, `shturval:${ns}.viewer`),
  );
  assert.deepEqual((role as unknown as { rules: unknown }).rules, [
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] },
  ]);
  assert.equal(await h.find(CLUSTER_ROLE, `shturval:${ns}.viewer`, undefined, 'mgmt'), undefined);

  const ur = await h.waitFor('UserRole', ns, 'alice', 'ready', (o) => o.status?.ready === true);
  const bindings = await h.clients[0]?.admin.list(CLUSTER_ROLE_BINDING, {});
  const ours = (bindings?.items ?? []).filter(
    (b) => (b as unknown as { roleRef: { name: string } }).roleRef.name === `shturval:${ns}.viewer`,
  );
  assert.equal(ours.length, 1);
  assert.deepEqual((ours[0] as unknown as { subjects: unknown }).subjects, [
    { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' },
  ]);
  assert.equal(ur.metadata.ownerReferences?.[0]?.kind, 'Scope');
  // The client apiserver itself says alice may now list deployments there, and not on the management cluster.
  const review = async (client: typeof h.admin) =>
    (
      (await client.create({
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        metadata: {},
        spec: {
          user: 'alice@example.com',
          resourceAttributes: { group: 'apps', resource: 'deployments', verb: 'list' },
        },
      })) as unknown as { status: { allowed: boolean } }
    ).status.allowed;
  assert.equal(await review(h.clients[0]?.admin ?? h.admin), true);
  assert.equal(await review(h.admin), false);
});

test('a platform Permission is an aggregating platform: ClusterRole filled by kube-controller-manager', async (t) => {
  const ns = await h.namespace(t, 'platform');
  await h.create('Permission', ns, 'auditor', {
    level: 'platform',
    platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
  });
  await h.waitFor('Permission', ns, 'auditor', 'ready', (o) => o.status?.ready === true);
  const filled = await until('kube-controller-manager to fill the aggregated rules', async () => {
    const r = (await h.find(CLUSTER_ROLE, `platform:${ns}.auditor`, undefined, 'mgmt')) as
      | (KubeObjectWithRules & { aggregationRule?: unknown })
      | undefined;
    return r?.rules?.length ? r : undefined;
  });
  assert.deepEqual(filled.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
});

type KubeObjectWithRules = { rules?: unknown[] };

test('a binding deleted by hand in the client cluster comes back at the next resync, with no event to tell us', async (t) => {
  await h.stopOperator();
  await h.startOperator({ intervals: { ...TEST_INTERVALS, resyncMs: 1_500 } });
  t.after(async () => {
    await h.stopOperator();
    await h.startOperator();
  });
  const ns = await h.namespace(t, 'drift');
  const prod = await h.cluster({ namespace: ns, name: 'drift-1', labels: { drift: ns } });
  await h.create('Permission', ns, 'reader', {
    level: 'cluster',
    clusterSelector: { matchLabels: { drift: ns } },
    granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  });
  await h.create('Scope', ns, 'here', { level: 'cluster', clusters: { ids: [prod.id] } });
  await h.create('UserRole', ns, 'dora', {
    user: 'dora@example.com',
    scope: 'here',
    permissions: ['reader'],
  });
  await h.waitFor('UserRole', ns, 'dora', 'ready', (o) => o.status?.ready === true);
  const client = h.clients[0]?.admin ?? h.admin;
  const ours = async () =>
    (
      (await client.list(CLUSTER_ROLE_BINDING, {})).items as unknown as {
        metadata: { name: string };
        roleRef: { name: string };
      }[]
    ).find((b) => b.roleRef.name === `shturval:${ns}.reader`);
  const before = await until('the binding', ours);
  await client.delete(CLUSTER_ROLE_BINDING, before.metadata.name);
  await until('the binding to be back after a resync', ours, 15_000);
});
