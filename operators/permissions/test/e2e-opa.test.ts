/**
 * The operator's `/bundle` as a real OPA sees it, end to end on real planes: the operator
 * (harness: management plane with kube-controller-manager, one client plane registered
 * as a Cluster API Cluster) builds its model from the API and serves it; a real OPA
 * (built from its Go module) polls that BundleServer every 1–2 s and evaluates the
 * sample policy `support/policy/authz.rego` ("may user X do verb Y on resource Z in
 * cluster C"). Expected answers are written out here; where a grant is real, the client
 * cluster's own apiserver (a SubjectAccessReview) agrees.
 *
 * Also: `/bundle` answers 503 while an operator's caches cannot sync (a second instance
 * whose identity may not list yet), then the same ETag as the running operator once they
 * do; and the ETag survives a restart of the operator when the content is the same.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeClient } from '@operators/kit';
import pino from 'pino';
import { createOperator } from '../src/operator.ts';
import { Harness, type Obj, until } from './support/harness.ts';
import { type Opa, startOpa } from './support/opa.ts';

const h = Harness.forFile();

/** OPA's polling delays in this file (seconds), and what a download and activation may add. */
const MIN_DELAY_S = 1;
const MAX_DELAY_S = 2;
const SLACK_MS = 3_000;
const ONE_PERIOD_MS = MAX_DELAY_S * 1000 + SLACK_MS;

const CLUSTER_ROLE_BINDING = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
} as const;
const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;

interface Question {
  readonly user: string;
  readonly groups: readonly string[];
  readonly verb: string;
  readonly resource: string;
  readonly apiGroup: string;
  readonly cluster: string;
  readonly namespace?: string;
}

async function allowed(opa: Opa, q: Question): Promise<boolean> {
  const result = await opa.query('authz/allow', q);
  assert.equal(typeof result, 'boolean', `authz.allow is defined for ${JSON.stringify(q)}`);
  return result as boolean;
}

/** Polls OPA (100 ms) until it answers `want`; resolves with how long that took. */
async function answersWithin(opa: Opa, q: Question, want: boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if ((await allowed(opa, q)) === want) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(
        `OPA still answers ${!want} after ${timeoutMs} ms for ${JSON.stringify(q)}\n${opa.log()}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the client cluster's apiserver says of the same question. */
async function clientSays(client: KubeClient, q: Question): Promise<boolean> {
  const review = (await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: {
      user: q.user,
      groups: [...q.groups],
      resourceAttributes: { group: q.apiGroup, resource: q.resource, verb: q.verb },
    },
  })) as unknown as { status: { allowed: boolean } };
  return review.status.allowed;
}

/** GET /bundle of a BundleServer at `port`, optionally conditional. */
async function getBundle(
  port: number,
  etag?: string,
): Promise<{ status: number; etag: string | null; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/bundle`, {
    headers: etag ? { 'if-none-match': etag } : {},
  });
  const body = Buffer.from(await res.arrayBuffer()).toString('latin1');
  return { status: res.status, etag: res.headers.get('etag'), body };
}

const bundlePort = (): number => {
  const a = h.operator.bundle.address();
  if (!a) throw new Error('the bundle server is not listening');
  return a.port;
};

/** The running operator's ETag once it has stayed the same for `quietMs` (nothing in flight). */
async function settledEtag(quietMs = 2_000): Promise<string> {
  let last = (await getBundle(bundlePort())).etag ?? '';
  let since = Date.now();
  return until('the bundle to stop changing', async () => {
    const now = (await getBundle(bundlePort())).etag ?? '';
    if (now !== last) {
      last = now;
      since = Date.now();
      return undefined;
    }
    return Date.now() - since >= quietMs ? now : undefined;
  });
}

test('real OPA: alice may not list deployments in the cluster, may within one polling period after her UserRole lands in a Scope listing it, and may not again within one period after it is deleted', async (t) => {
  const ns = await h.namespace(t, 'opa');
  const cluster = await h.cluster({ namespace: ns, name: 'prod-1' });
  await h.create('Permission', ns, 'deploy-viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'prod', { level: 'cluster', clusters: { ids: [cluster.id] } });
  await h.waitFor('Scope', ns, 'prod', 'its status lists the cluster', (o) =>
    ((o.status?.clusters as string[] | undefined) ?? []).includes(cluster.id),
  );

  const opa = await startOpa({
    serviceUrl: `http://127.0.0.1:${bundlePort()}`,
    minDelaySeconds: MIN_DELAY_S,
    maxDelaySeconds: MAX_DELAY_S,
  });
  t.after(() => opa.stop());
  const alice: Question = {
    user: 'alice@example.com',
    groups: [],
    verb: 'list',
    resource: 'deployments',
    apiGroup: 'apps',
    cluster: cluster.id,
  };
  const clientAdmin = h.clients[0]?.admin;
  assert.ok(clientAdmin);

  // OPA holds what the operator serves now: the Permission and the Scope, no alice.
  const before = await settledEtag();
  await until('OPA to activate the current bundle', async () =>
    `"${await opa.activeRevision()}"` === before ? true : undefined,
  );
  assert.equal(await allowed(opa, alice), false);
  assert.equal(await clientSays(clientAdmin, alice), false);

  await h.create('UserRole', ns, 'alice', {
    user: 'alice@example.com',
    scope: 'prod',
    permissions: ['deploy-viewer'],
  });
  const scope = (await h.get('Scope', ns, 'prod')) as Obj;
  assert.deepEqual(
    scope.status?.clusters,
    [cluster.id],
    'the Scope lists the cluster when the UserRole is created',
  );
  const granted = await answersWithin(opa, alice, true, 30_000);
  t.diagnostic(`OPA said yes after ${granted} ms`);
  assert.ok(
    granted <= ONE_PERIOD_MS,
    `OPA said yes ${granted} ms after the UserRole was created (at most ${ONE_PERIOD_MS})`,
  );
  // Only what was asked: another verb, another resource, another cluster, another user stay false.
  assert.equal(await allowed(opa, { ...alice, verb: 'delete' }), false);
  assert.equal(await allowed(opa, { ...alice, resource: 'pods', apiGroup: '' }), false);
  assert.equal(await allowed(opa, { ...alice, cluster: `${ns}/prod-2` }), false);
  assert.equal(await allowed(opa, { ...alice, user: 'bob@example.com' }), false);
  // The client cluster's apiserver agrees once the operator's binding is there.
  await h.waitFor('UserRole', ns, 'alice', 'ready', (o) => o.status?.ready === true);
  assert.equal(await clientSays(clientAdmin, alice), true);

  await h.remove('UserRole', ns, 'alice');
  await h.gone('UserRole', ns, 'alice');
  const revoked = await answersWithin(opa, alice, false, 30_000);
  t.diagnostic(`OPA said no after ${revoked} ms`);
  assert.ok(
    revoked <= ONE_PERIOD_MS,
    `OPA said no ${revoked} ms after the UserRole was gone (at most ${ONE_PERIOD_MS})`,
  );
  assert.equal(await clientSays(clientAdmin, alice), false);
});

test('/bundle answers 503 while an operator cannot sync its caches, then the same ETag as the running operator once it can', async (t) => {
  // A second instance as an identity that may not list anything yet (its RBAC not granted).
  const user = `bundle-reader-${Math.random().toString(36).slice(2, 7)}`;
  const logs: string[] = [];
  const second = createOperator({
    client: h.mgmt.as(user),
    bundle: { host: '127.0.0.1', port: 0 },
    logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
  });
  const started = second.manager.start();
  started.catch(() => undefined);
  t.after(async () => {
    await second.manager.stop();
    await second.clusters.close();
    await h.admin.delete(CLUSTER_ROLE_BINDING, user).catch(() => undefined);
    await h.admin.delete(CLUSTER_ROLE, user).catch(() => undefined);
  });
  const port = await until('the second bundle server to listen', async () => second.bundle.address()?.port);

  for (let i = 0; i < 5; i++) {
    const res = await getBundle(port);
    assert.equal(res.status, 503, 'no bundle while the model is being rebuilt');
    assert.equal(res.etag, null);
    assert.match(res.body, /rebuilt/);
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.equal(second.model.isReady(), false);

  // Read-only access to what the model is built from: it syncs, and cannot write (the first operator does).
  await h.admin.create({
    ...CLUSTER_ROLE,
    metadata: { name: user },
    rules: [
      { apiGroups: ['permissions.shturval.tech'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters'], verbs: ['get', 'list', 'watch'] },
    ],
  });
  await h.admin.create({
    ...CLUSTER_ROLE_BINDING,
    metadata: { name: user },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
  });
  const ok = await until(
    'the second instance to serve a bundle',
    async () => {
      const res = await getBundle(port);
      return res.status === 200 ? res : undefined;
    },
    60_000,
  );
  const running = await settledEtag();
  await until('both instances to serve the same ETag', async () =>
    (await getBundle(port)).etag === running ? true : undefined,
  );
  assert.match(ok.etag ?? '', /^"[0-9a-f]{64}"$/);
  assert.equal((await getBundle(port, running)).status, 304);
});

test('the ETag is the same across an operator restart for the same content, and the old ETag gets a 304', async (t) => {
  const ns = await h.namespace(t, 'etag');
  const cluster = await h.cluster({ namespace: ns, name: 'stage-1' });
  await h.create('Permission', ns, 'pod-reader', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
  });
  await h.create('Scope', ns, 'stage', { level: 'cluster', clusters: { ids: [cluster.id] } });
  await h.create('UserRole', ns, 'carol', {
    user: 'carol@example.com',
    scope: 'stage',
    permissions: ['pod-reader'],
  });
  await h.waitFor('UserRole', ns, 'carol', 'ready', (o) => o.status?.ready === true);

  const before = await settledEtag();
  const full = await getBundle(bundlePort());
  assert.equal(full.status, 200);
  assert.equal(full.etag, before);

  await h.stopOperator();
  await h.startOperator();
  const after = await getBundle(bundlePort());
  assert.equal(after.status, 200);
  assert.equal(after.etag, before, 'the rebuilt model has the revision of the same content');
  assert.equal(after.body, full.body, 'and the same bytes');
  const conditional = await getBundle(bundlePort(), before);
  assert.equal(conditional.status, 304);
  assert.equal(conditional.body, '');
});
