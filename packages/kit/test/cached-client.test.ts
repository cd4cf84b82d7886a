/**
 * The cache-backed client on a real apiserver: reads come from the informers (and wait
 * for their first sync rather than answer "absent"), lists by a field index and by
 * labels select what the API would, and writes go to the API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
type ConfigMap = KubeObject & { data?: Record<string, string> };
const quiet = pino({ level: 'silent' });

function names(objs: readonly { metadata: { name?: string } }[]): string[] {
  return objs.map((o) => o.metadata.name ?? '').sort();
}

async function startedManager(t: { after(fn: () => Promise<void>): void }, ns: string): Promise<Manager> {
  const manager = new Manager({
    name: 'cached',
    client: env.admin,
    logger: quiet,
    cache: { namespaces: [ns] },
  });
  await manager.start();
  t.after(() => manager.stop());
  return manager;
}

describe('the cache-backed client', () => {
  it('gets and lists from the cache what exists, and says NotFound for what does not', async (t) => {
    const ns = await env.namespace(t, 'cc-read');
    for (const [name, tier] of [
      ['a', 'web'],
      ['b', 'db'],
      ['c', 'web'],
    ] as const) {
      await env.admin.create({
        ...CONFIGMAP,
        metadata: { name, namespace: ns, labels: { tier } },
        data: { n: name },
      });
    }
    const manager = await startedManager(t, ns);
    const cached = manager.cachedClient;
    // The first read of a kind starts its informer and waits for its sync: never "absent" before.
    const a = await cached.get<ConfigMap>(CONFIGMAP, 'a', ns);
    assert.equal(a.data?.n, 'a');
    assert.equal(await cached.find(CONFIGMAP, 'missing', ns), undefined);
    await assert.rejects(cached.get(CONFIGMAP, 'missing', ns), (e) => isApiError(e, ApiErrorReason.NotFound));
    const all = await cached.list(CONFIGMAP, { namespace: ns });
    // Ours only: a plane running kube-controller-manager adds kube-root-ca.crt to every namespace.
    assert.deepEqual(names(all.filter((o) => o.metadata.labels?.tier)), ['a', 'b', 'c']);
    assert.deepEqual(names(await cached.list(CONFIGMAP, { namespace: ns, labelSelector: 'tier=web' })), [
      'a',
      'c',
    ]);
    assert.deepEqual(
      names(await cached.list(CONFIGMAP, { namespace: ns, labelSelector: 'tier notin (web),tier' })),
      ['b'],
    );
  });

  it('waits for the first sync of a kind read for the first time, so an existing object is found', async (t) => {
    const ns = await env.namespace(t, 'cc-sync');
    await env.admin.create({ ...SECRET, metadata: { name: 'token', namespace: ns }, stringData: { k: 'v' } });
    const manager = await startedManager(t, ns);
    // No controller declared Secrets: this read creates the informer, and must wait for it.
    const s = await manager.cachedClient.find(SECRET, 'token', ns);
    assert.equal(s?.metadata.name, 'token');
  });

  it('sees an object created through the API once its informer has it', async (t) => {
    const ns = await env.namespace(t, 'cc-late');
    const manager = await startedManager(t, ns);
    const cached = manager.cachedClient;
    assert.equal(await cached.find(CONFIGMAP, 'late', ns), undefined, 'absent, from a synced cache');
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'late', namespace: ns }, data: { v: '1' } });
    const informer = manager.cache.informer(CONFIGMAP, {});
    await eventually('the informer has it', async () => informer.store.get(`${ns}/late`));
    const seen = await cached.find<ConfigMap>(CONFIGMAP, 'late', ns);
    assert.equal(seen?.data?.v, '1');
  });

  it('lists by a field index, answered from the index', async (t) => {
    const ns = await env.namespace(t, 'cc-index');
    const refs: Record<string, string> = { w1: 's1', w2: 's2', w3: 's1', w4: 's3' };
    for (const [name, ref] of Object.entries(refs)) {
      await env.admin.create({ ...CONFIGMAP, metadata: { name, namespace: ns }, data: { secretRef: ref } });
    }
    const manager = new Manager({
      name: 'cached',
      client: env.admin,
      logger: quiet,
      cache: { namespaces: [ns] },
    });
    manager.cachedClient.indexField<ConfigMap>(CONFIGMAP, 'data.secretRef', (cm) =>
      cm.data?.secretRef ? [cm.data.secretRef] : [],
    );
    await manager.start();
    t.after(() => manager.stop());
    const cached = manager.cachedClient;
    const by = async (value: string): Promise<string[]> =>
      names(await cached.list(CONFIGMAP, { namespace: ns, field: { name: 'data.secretRef', value } }));
    assert.deepEqual(await by('s1'), ['w1', 'w3']);
    assert.deepEqual(await by('s3'), ['w4']);
    assert.deepEqual(await by('nothing'), []);
    // The index follows changes.
    await env.admin.patch(CONFIGMAP, 'w4', ns, { type: 'merge', body: { data: { secretRef: 's1' } } });
    await eventually('w4 moved to s1', async () => ((await by('s1')).length === 3 ? true : undefined));
    assert.deepEqual(await by('s1'), ['w1', 'w3', 'w4']);
    assert.deepEqual(await by('s3'), []);
    await assert.rejects(
      cached.list(CONFIGMAP, { namespace: ns, field: { name: 'data.other', value: 'x' } }),
      /no field index data.other for ConfigMap: call indexField/,
    );
  });

  it('refuses a read outside the cache scope instead of answering absent, and writes through the API', async (t) => {
    const ns = await env.namespace(t, 'cc-scope');
    const manager = await startedManager(t, ns);
    const cached = manager.cachedClient;
    await assert.rejects(cached.find(CONFIGMAP, 'x', 'default'), /outside the cache's scope/);
    const created = await cached.create({
      ...CONFIGMAP,
      metadata: { name: 'written', namespace: ns },
      data: {},
    });
    assert.ok(created.metadata.uid, 'the API answered the write');
    assert.ok(await env.admin.find(CONFIGMAP, 'written', ns));
  });
});
