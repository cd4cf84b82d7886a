/**
 * The manager's informer cache: informers live as long as the controllers that declared
 * them; a controller for a kind that is not served does not make the process unready;
 * a read of a cache that has not synced waits or fails, never answers "absent"; and a
 * cache scoped to namespaces runs on a namespaced Role alone.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { CacheNotSyncedError, type KubeObject, Manager, Reflector, Store } from '@operators/kit';
import { pino } from 'pino';
import { httpGet } from './support/http-get.ts';
import { CONFIGMAP, WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

const silent = pino({ level: 'silent' });

describe('the informer cache', () => {
  it('stops the informers of removed controllers: 50 added and removed leave the baseline', async (t) => {
    const ns = await env.namespace(t, 'dynamic');
    const manager = new Manager({ name: 'dynamic', client: env.admin, logger: silent });
    manager
      .controller('static')
      .for(CONFIGMAP, { namespace: ns })
      .reconcile(async () => ({}));
    await manager.start();
    t.after(() => manager.stop());
    const baseline = manager.cache.health().length;

    const added = [];
    for (let i = 0; i < 50; i++) {
      const c = manager
        .controller(`dynamic-${i}`)
        .for(CONFIGMAP, { namespace: ns, labelSelector: `n=${i}` })
        .owns(WIDGET, { namespace: ns })
        .reconcile(async () => ({}));
      added.push(c);
    }
    await Promise.all(added.map((c) => manager.running(c)));
    // One informer per selector, and one Widget informer shared by all fifty.
    assert.equal(manager.cache.health().length, baseline + 51);
    for (const c of added) await manager.removeController(c, 1_000);
    assert.equal(manager.cache.health().length, baseline);
  });

  it('a removed delta handler is called no more; the others still are', async (t) => {
    const ns = await env.namespace(t, 'unsubscribe');
    const reflector = new Reflector({ client: env.admin, gvk: CONFIGMAP, namespace: ns, log: silent });
    const kept: string[] = [];
    const removed: string[] = [];
    reflector.onDelta((d) => kept.push(d.object.metadata.name ?? ''));
    const unsubscribe = reflector.onDelta((d) => removed.push(d.object.metadata.name ?? ''));
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    unsubscribe();
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'after', namespace: ns } });
    // Handlers run one after the other for each change: once the kept one has it, the other would have too.
    await eventually('the kept handler sees it', async () => (kept.includes('after') ? true : undefined));
    assert.deepEqual(removed, []);
  });

  it('a controller for a kind that is not served leaves /readyz at 200 and says why in its health', async (t) => {
    const ns = await env.namespace(t, 'unserved');
    const manager = new Manager({
      name: 'unserved',
      client: env.admin,
      logger: silent,
      healthProbe: { port: 0, host: '127.0.0.1' },
    });
    manager
      .controller('present')
      .for(CONFIGMAP, { namespace: ns })
      .reconcile(async () => ({}));
    await manager.start();
    t.after(() => manager.stop());
    const port = manager.healthProbeEndpoint?.port ?? 0;
    assert.equal((await httpGet(port, '/readyz')).status, 200);

    const missing = { apiVersion: 'nothing.kit.test.io/v1', kind: 'Nothing' };
    const c = manager
      .controller('missing')
      .for(missing, { namespace: ns })
      .reconcile(async () => ({}));
    await assert.rejects(manager.running(c), /does not serve kind Nothing/);
    const health = await eventually('its informer has tried and says why', async () =>
      manager.cache
        .health()
        .find((h) => h.name.startsWith('nothing.kit.test.io/v1/Nothing') && h.lastError !== undefined),
    );
    assert.match(health.lastError ?? '', /kind nothing\.kit\.test\.io\/v1\/Nothing not served/);
    assert.equal(health.served, false);
    const r = await httpGet(port, '/readyz');
    assert.equal(r.status, 200, r.body);
  });

  it('a read of a scope no controller declared, from a reconcile, finds the existing object', async (t) => {
    const ns = await env.namespace(t, 'unsynced-read');
    await env.admin.create({
      ...CONFIGMAP,
      metadata: { name: 'existing', namespace: ns, labels: { role: 'settings' } },
    });
    await env.admin.create({ ...WIDGET, metadata: { name: 'w', namespace: ns }, spec: { message: 'm' } });
    const manager = new Manager({ name: 'unsynced-read', client: env.admin, logger: silent });
    const seen: string[] = [];
    manager
      .controller('reads')
      .for(WIDGET, { namespace: ns })
      .owns(CONFIGMAP, { namespace: ns })
      .reconcile(async () => {
        // Other options than the declared informer's: a new informer, created here.
        const cm = manager.cache
          .informer(CONFIGMAP, { namespace: ns, labelSelector: 'role=settings' })
          .store.get(`${ns}/existing`);
        seen.push(cm ? 'found' : 'absent');
        return {};
      });
    await manager.start();
    t.after(() => manager.stop());
    await eventually('the reconcile found it', async () => (seen.includes('found') ? true : undefined));
    assert.deepEqual(seen, ['found'], 'the reconcile took "not loaded yet" for "absent"');
  });

  it('ready() waits for a new informer to sync before reading it', async (t) => {
    const ns = await env.namespace(t, 'ready');
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'existing', namespace: ns } });
    const manager = new Manager({ name: 'ready', client: env.admin, logger: silent });
    await manager.start();
    t.after(() => manager.stop());
    const informer = await manager.cache.ready(CONFIGMAP, {
      namespace: ns,
      fieldSelector: 'metadata.name=existing',
    });
    assert.equal(informer.store.get(`${ns}/existing`)?.metadata.name, 'existing');
    await assert.rejects(
      manager.cache.ready(
        { apiVersion: 'nothing.kit.test.io/v1', kind: 'Nothing' },
        {},
        { timeoutMs: 1_500 },
      ),
      (err: unknown) => err instanceof CacheNotSyncedError && /not served/.test(err.message),
    );
    // An informer created after the manager was ready, never synced, does not make it unready.
    assert.equal(manager.readiness().ready, true, manager.readiness().detail.join('; '));
  });

  it('a store refuses reads until its first list, naming itself', () => {
    const store = new Store({ name: 'v1/ConfigMap in x/' });
    assert.throws(
      () => store.get('x/y'),
      (err: unknown) => err instanceof CacheNotSyncedError && err.informer === 'v1/ConfigMap in x/',
    );
    assert.throws(() => store.list(), CacheNotSyncedError);
    assert.throws(() => store.byIndex('namespace', 'x'), CacheNotSyncedError);
    store.replace([]);
    assert.equal(store.get('x/y'), undefined);
  });

  it('a store refuses its size until synced, as every read: 0 there would mean "not loaded", not "none"', () => {
    const store = new Store({ name: 'v1/ConfigMap in a,b/', partitions: ['a', 'b'] });
    const cm = (ns: string, name: string): KubeObject => ({
      ...CONFIGMAP,
      metadata: { name, namespace: ns, resourceVersion: '1' },
    });
    assert.throws(
      () => store.size,
      (err: unknown) => err instanceof CacheNotSyncedError && err.informer === 'v1/ConfigMap in a,b/',
    );
    assert.throws(() => store.keys(), CacheNotSyncedError);
    // One namespace of two listed: still not synced, whatever it holds.
    store.replace([cm('a', 'x')], { id: 'a', namespace: 'a' });
    assert.throws(() => store.size, CacheNotSyncedError);
    store.replace([], { id: 'b', namespace: 'b' });
    assert.equal(store.size, 1);
    const empty = new Store();
    empty.replace([]);
    assert.equal(empty.size, 0, 'a synced empty store answers 0');
  });

  it('scoped to namespaces, a manager runs on a namespaced Role: it syncs and reconciles', async (t) => {
    const a = await env.namespace(t, 'scoped-a');
    const b = await env.namespace(t, 'scoped-b');
    const outside = await env.namespace(t, 'scoped-outside');
    const operatorNs = a;
    for (const ns of [a, b]) {
      await env.admin.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'operator', namespace: ns },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      } as KubeObject);
      await env.admin.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'operator', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'operator' },
        subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: operatorNs }],
      } as KubeObject);
    }
    for (const ns of [a, b, outside])
      await env.admin.create({ ...CONFIGMAP, metadata: { name: 'before', namespace: ns } });

    const sa = env.asServiceAccount(operatorNs, 'operator');
    const manager = new Manager({
      name: 'scoped',
      client: sa,
      logger: silent,
      cache: { namespaces: [a, b] },
    });
    const reconciled = new Set<string>();
    const c = manager
      .controller('scoped')
      .for(CONFIGMAP)
      .reconcile(async (req) => {
        reconciled.add(req.key);
        return {};
      });
    await manager.start();
    t.after(() => manager.stop());
    assert.deepEqual([...c.primary.store.keys()].sort(), [`${a}/before`, `${b}/before`].sort());
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'after', namespace: b } });
    await eventually('both namespaces reconciled', async () =>
      [`${a}/before`, `${b}/before`, `${b}/after`].every((k) => reconciled.has(k)) ? true : undefined,
    );
    assert.ok(!reconciled.has(`${outside}/before`));
    assert.equal(c.primary.namespaces.length, 2);
  });

  it('scoped per kind: selectors are added, and a cluster-scoped kind is watched whole, once', async (t) => {
    const a = await env.namespace(t, 'per-kind-a');
    const b = await env.namespace(t, 'per-kind-b');
    for (const [name, app] of [
      ['mine', 'x'],
      ['other', 'y'],
    ] as const)
      await env.admin.create({ ...CONFIGMAP, metadata: { name, namespace: a, labels: { app } } });
    const manager = new Manager({
      name: 'per-kind',
      client: env.admin,
      logger: silent,
      cache: { namespaces: [a, b], byKind: { 'v1/ConfigMap': { namespaces: [a], labelSelector: 'app=x' } } },
    });
    await manager.start();
    t.after(() => manager.stop());
    const cms = await manager.cache.ready(CONFIGMAP);
    assert.deepEqual([...cms.store.keys()], [`${a}/mine`]);
    const namespaces = await manager.cache.ready({ apiVersion: 'v1', kind: 'Namespace' });
    const oracle = (await env.admin.listAll({ apiVersion: 'v1', kind: 'Namespace' })).items;
    for (const ns of oracle)
      assert.ok(namespaces.store.get(ns.metadata.name ?? ''), `namespace ${ns.metadata.name}`);
    assert.ok(namespaces.store.size >= oracle.length);
    assert.equal(namespaces.health().stale, false);
    assert.equal(manager.readiness().ready, true, manager.readiness().detail.join('; '));
  });
});
