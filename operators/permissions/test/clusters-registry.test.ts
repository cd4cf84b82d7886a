/**
 * The client-cluster registry against real planes: the shared plane is the management
 * cluster (Cluster API's Cluster CRD, kubeconfig Secrets), a private plane is the client
 * cluster. What a client writes must land in the client plane and not the management
 * one; bad Secrets are answers, not throws; a rotated Secret brings a new client; a
 * cluster that never answers costs one deadline and holds up nobody else.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeClient, KubeObject } from '@operators/kit';
import { checkKubeconfig } from '../src/clusters/kubeconfig.ts';
import {
  type ClientCluster,
  type ClusterAccess,
  ClusterRegistry,
  ClusterUnreachableError,
} from '../src/clusters/registry.ts';
import { clusterPaused, clusterReady } from '../src/domain/cluster-selection.ts';
import {
  type ClientPlane,
  namespaceExists,
  registerCluster,
  startClientPlane,
  unreachableCluster,
} from './support/client-plane.ts';

const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

let mgmt: TestEnv;
let client: ClientPlane;

before(async () => {
  mgmt = await testEnv();
  client = await startClientPlane();
});
after(async () => {
  await client?.close();
});

function registry(
  t: { after: (fn: () => Promise<void>) => void },
  deadlineMs = 5_000,
  retireAfterMs?: number,
) {
  const r = new ClusterRegistry({
    client: mgmt.admin,
    deadlineMs,
    ...(retireAfterMs === undefined ? {} : { retireAfterMs }),
  });
  t.after(() => r.close());
  return r;
}

function ok(a: ClusterAccess): ClientCluster {
  assert.equal(a.kind, 'ok', a.kind === 'unavailable' ? `${a.reason}: ${a.message}` : '');
  return (a as { cluster: ClientCluster }).cluster;
}

function unavailable(a: ClusterAccess): { reason: string; message: string } {
  assert.equal(a.kind, 'unavailable', 'expected the cluster to be unavailable');
  return a as { reason: string; message: string };
}

/** Who `c` authenticates as, from the apiserver's own SelfSubjectReview. */
async function whoAmI(c: KubeClient): Promise<string> {
  const review = await c.create<KubeObject & { status?: { userInfo?: { username?: string } } }>({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
    metadata: {},
  });
  return review.status?.userInfo?.username ?? '';
}

const unique = (prefix: string) => `${prefix}-${randomBytes(3).toString('hex')}`;

describe('ClusterRegistry with a real client plane', () => {
  it('gives a client that reaches the client cluster: what it creates is there and not on the management cluster', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-access');
    const c1 = await registerCluster(mgmt, client, { namespace: ns, name: 'c1' });
    const r = registry(t);

    const cluster = ok(await r.access(c1.id));
    assert.equal(cluster.id, `${ns}/c1`);
    const names = await cluster.call(async (c) =>
      (await c.list(NAMESPACE)).items.map((n) => n.metadata.name),
    );
    assert.ok(names.includes('default') && names.includes('kube-system'), names.join(','));

    const created = unique('from-registry');
    await cluster.call((c) => c.create({ ...NAMESPACE, metadata: { name: created } }));
    await cluster.client.create({
      ...CONFIGMAP,
      metadata: { namespace: created, name: 'here' },
      data: { a: '1' },
    });
    assert.equal(await namespaceExists(client.admin, created), true, 'the namespace is on the client plane');
    assert.equal(await namespaceExists(mgmt.admin, created), false, 'and not on the management plane');
    assert.ok(await client.admin.find(CONFIGMAP, 'here', created));
    // The management namespace of the Cluster object exists only there.
    assert.equal(await cluster.call((c) => namespaceExists(c, ns)), false);

    // The same Secret: the same client, not a new one per access.
    assert.equal(ok(await r.access(c1.id)), cluster);
    const probe = await r.reachable(c1.id);
    assert.equal(probe.kind, 'reachable');
    assert.match(probe.kind === 'reachable' ? probe.version : '', /^v1\.\d+\.\d+/);
  });

  it("the test helper's readiness and pause writes are read back by clusterReady and clusterPaused", async (t) => {
    const ns = await mgmt.namespace(t, 'reg-status');
    const c = await registerCluster(mgmt, client, { namespace: ns, name: 'later', ready: false });
    assert.equal(clusterReady(await c.get()), false);
    await c.setReady(true);
    const live = await c.get();
    assert.equal(clusterReady(live), true);
    assert.equal(live.status?.initialization?.controlPlaneInitialized, true);
    assert.equal(live.status?.conditions?.find((x) => x.type === 'ControlPlaneAvailable')?.status, 'True');
    await c.setReady(false);
    assert.equal(clusterReady(await c.get()), false);
    assert.equal(clusterPaused(await c.get()), false);
    await c.setPaused(true);
    assert.equal(clusterPaused(await c.get()), true);
    await c.setPaused(false);
    assert.equal(clusterPaused(await c.get()), false);
  });

  it('answers KubeconfigSecretMissing for a missing Secret, one without "value", and a removed cluster; never throws', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-missing');
    const r = registry(t);

    const none = unavailable(await r.access(`${ns}/ghost`));
    assert.equal(none.reason, 'KubeconfigSecretMissing');
    assert.match(none.message, new RegExp(`Secret ${ns}/ghost-kubeconfig does not exist`));

    const c = await registerCluster(mgmt, client, { namespace: ns, name: 'nokey', secret: false });
    assert.equal(unavailable(await r.access(c.id)).reason, 'KubeconfigSecretMissing');
    await c.writeSecretData({ 'value.yaml': Buffer.from('x').toString('base64') });
    const noKey = unavailable(await r.access(c.id));
    assert.equal(noKey.reason, 'KubeconfigSecretMissing');
    assert.match(noKey.message, /no key "value"/);

    const gone = await registerCluster(mgmt, client, { namespace: ns, name: 'gone' });
    ok(await r.access(gone.id));
    await gone.remove();
    assert.equal(unavailable(await r.access(gone.id)).reason, 'KubeconfigSecretMissing');

    assert.equal(unavailable(await r.access('not-an-id')).reason, 'ClusterNotFound');
  });

  it('answers KubeconfigInvalid for garbage, a kubeconfig without current-context, and one that would run a program', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-invalid');
    const c = await registerCluster(mgmt, client, { namespace: ns, name: 'bad' });
    const r = registry(t);
    const good = ok(await r.access(c.id));

    await c.writeKubeconfig('clusters: [ {name: unclosed');
    const garbage = unavailable(await r.access(c.id));
    assert.equal(garbage.reason, 'KubeconfigInvalid');
    assert.match(garbage.message, /not YAML/);

    await c.writeSecretData({ value: randomBytes(64).toString('base64') });
    assert.equal(unavailable(await r.access(c.id)).reason, 'KubeconfigInvalid');

    await c.writeKubeconfig('apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');
    const noContext = unavailable(await r.access(c.id));
    assert.equal(noContext.reason, 'KubeconfigInvalid');
    assert.match(noContext.message, /no current-context/);

    const marker = `/tmp/permissions-exec-ran-${process.pid}`;
    await c.writeKubeconfig(
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
        `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: touch, args: ["${marker}"]}}}]`,
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    const exec = unavailable(await r.access(c.id));
    assert.equal(exec.reason, 'KubeconfigInvalid');
    assert.match(exec.message, /user\.exec would run a program/);
    assert.equal(
      await import('node:fs').then((fs) => fs.existsSync(marker)),
      false,
      'the exec plugin never ran',
    );

    // Fixed again: a working client, not the one from before the breakage.
    await c.writeKubeconfig(
      await import('node:fs/promises').then((fs) => fs.readFile(client.kubeconfigPath, 'utf8')),
    );
    const fixed = ok(await r.access(c.id));
    assert.notEqual(fixed, good);
    assert.ok((await fixed.call((k) => k.list(NAMESPACE))).items.length > 0);
  });

  it('uses a new client after the Secret is rotated, closes the old one, and keeps the client when only metadata changed', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-rotate');
    const c = await registerCluster(mgmt, client, { namespace: ns, name: 'rot' });
    const r = registry(t, 5_000, 300);
    const before = ok(await r.access(c.id));
    assert.equal(await before.call(whoAmI), 'admin');

    const { user } = await c.rotateKubeconfig();
    const afterRotation = ok(await r.access(c.id));
    assert.notEqual(afterRotation, before);
    assert.equal(await afterRotation.call(whoAmI), user);
    assert.match(user, /^system:serviceaccount:default:rotated-rot-/);

    // The old client's connections close once its grace (300 ms here) has passed.
    await new Promise((res) => setTimeout(res, 600));
    await assert.rejects(
      before.call((k) => k.list(NAMESPACE)),
      (err) => err instanceof ClusterUnreachableError && err.id === c.id,
    );

    // A Secret rewritten with the same kubeconfig (new resourceVersion) keeps the client.
    await mgmt.admin.patch({ apiVersion: 'v1', kind: 'Secret' }, c.secretName, ns, {
      type: 'merge',
      body: { metadata: { annotations: { touched: 'yes' } } },
    });
    assert.equal(ok(await r.access(c.id)), afterRotation);

    // Pointed at another plane (the management one), the client follows: the Cluster's
    // namespace exists only there.
    await c.writeKubeconfig(
      await import('node:fs/promises').then((fs) => fs.readFile(mgmt.kubeconfigPath, 'utf8')),
    );
    const elsewhere = ok(await r.access(c.id));
    assert.equal(await elsewhere.call((k) => namespaceExists(k, ns)), true);
    assert.notEqual(elsewhere, afterRotation);
  });

  it('gives up on a never-answering cluster at its deadline while another cluster answers meanwhile', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-deadline');
    const good = await registerCluster(mgmt, client, { namespace: ns, name: 'good' });
    const silent = await unreachableCluster(mgmt, { namespace: ns, name: 'silent', mode: 'silent' });
    t.after(() => silent.close());
    const deadlineMs = 1_500;
    const r = registry(t, deadlineMs);

    const started = Date.now();
    let goodAt = 0;
    let silentAt = 0;
    const silentCall = (async () => {
      const s = ok(await r.access(silent.id));
      try {
        return await s.call((k) => k.list(NAMESPACE));
      } finally {
        silentAt = Date.now() - started;
      }
    })();
    const goodCall = (async () => {
      const g = ok(await r.access(good.id));
      const list = await g.call((k) => k.list(NAMESPACE));
      goodAt = Date.now() - started;
      return list;
    })();
    const [s, g] = await Promise.allSettled([silentCall, goodCall]);

    assert.equal(g.status, 'fulfilled');
    assert.ok(
      goodAt < deadlineMs,
      `the good cluster answered after ${goodAt} ms, within the other's deadline`,
    );
    assert.equal(s.status, 'rejected');
    const err = (s as PromiseRejectedResult).reason;
    assert.ok(err instanceof ClusterUnreachableError, String(err));
    assert.equal(err.id, silent.id);
    assert.equal(err.reason, 'ClusterUnreachable');
    assert.match(err.message, new RegExp(`cluster ${silent.id}: no answer within ${deadlineMs} ms`));
    assert.ok(silentAt >= deadlineMs - 50, `gave up after ${silentAt} ms, not before the deadline`);
    assert.ok(silentAt < deadlineMs + 1_000, `gave up after ${silentAt} ms, within deadline + 1 s`);
    assert.ok(goodAt < silentAt);

    // The probe says the same, as an answer.
    const probeStart = Date.now();
    const probe = await r.reachable(silent.id);
    assert.equal(probe.kind, 'unavailable');
    assert.equal(probe.kind === 'unavailable' ? probe.reason : '', 'ClusterUnreachable');
    assert.ok(Date.now() - probeStart < deadlineMs + 1_000);
  });

  it('reports a refused connection as unreachable at once, and ends calls in flight when the registry closes', async (t) => {
    const ns = await mgmt.namespace(t, 'reg-closed');
    const refused = await unreachableCluster(mgmt, { namespace: ns, name: 'refused', mode: 'closed-port' });
    const silent = await unreachableCluster(mgmt, { namespace: ns, name: 'silent', mode: 'silent' });
    t.after(() => silent.close());
    const r = new ClusterRegistry({ client: mgmt.admin, deadlineMs: 20_000 });
    t.after(() => r.close());

    const started = Date.now();
    await assert.rejects(
      ok(await r.access(refused.id)).call((k) => k.list(NAMESPACE)),
      (err) => err instanceof ClusterUnreachableError && /cannot connect/.test(err.message),
    );
    assert.ok(Date.now() - started < 5_000, 'a refused connection does not wait for the deadline');

    const inFlight = ok(await r.access(silent.id)).call((k) => k.list(NAMESPACE));
    const closeStarted = Date.now();
    setTimeout(() => void r.close(), 200);
    await assert.rejects(
      inFlight,
      (err) => err instanceof ClusterUnreachableError && /closed/.test(err.message),
    );
    assert.ok(Date.now() - closeStarted < 3_000, 'closing the registry ends the call, not its 20 s deadline');
    assert.equal(unavailable(await r.access(silent.id)).reason, 'ClusterUnreachable');
  });
});

describe('checkKubeconfig', () => {
  const base = (user: string, cluster = 'server: https://127.0.0.1:6443') =>
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {${cluster}}}]`,
      `users: [{name: u, user: {${user}}}]`,
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n');

  it('takes inline credentials: certificate data, a token, none', () => {
    assert.deepEqual(checkKubeconfig(base('client-certificate-data: AAAA, client-key-data: BBBB')), {
      ok: true,
    });
    assert.deepEqual(checkKubeconfig(base('token: abc')), { ok: true });
    assert.deepEqual(checkKubeconfig(base('')), { ok: true });
  });

  const refusals: readonly [string, string, RegExp][] = [
    ['not YAML', ':: [', /not YAML/],
    ['a list', '- a\n- b', /not a YAML mapping/],
    ['no current-context', 'apiVersion: v1\nclusters: []', /no current-context/],
    [
      'an unknown current-context',
      base('token: a').replace('current-context: x', 'current-context: y'),
      /"y" is not among its contexts/,
    ],
    [
      'a context naming no cluster',
      base('token: a').replace('cluster: c, user', 'cluster: zz, user'),
      /cluster "zz"/,
    ],
    [
      'a cluster without server',
      base('token: a', 'insecure-skip-tls-verify: true'),
      /no https:\/\/ or http:\/\/ server/,
    ],
    [
      'a CA file',
      base('token: a', 'server: https://h, certificate-authority: /etc/ca'),
      /cluster\.certificate-authority would read a file/,
    ],
    ['exec', base('exec: {command: sh}'), /user\.exec would run a program/],
    ['auth-provider', base('auth-provider: {name: oidc}'), /user\.auth-provider would run a program/],
    [
      'a token file',
      base('tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token'),
      /user\.tokenFile would read a file/,
    ],
    [
      'a certificate file',
      base('client-certificate: /c, client-key: /k'),
      /user\.client-certificate would read a file/,
    ],
    ['an unknown user', base('token: a').replace('user: u}', 'user: nobody}'), /user "nobody"/],
  ];
  for (const [what, text, why] of refusals) {
    it(`refuses ${what}`, () => {
      const v = checkKubeconfig(text);
      assert.equal(v.ok, false);
      assert.match(v.ok ? '' : v.problem, why);
    });
  }
});
