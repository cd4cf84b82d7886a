/**
 * The reflector's default initial sync is a streaming watch-list (`sendInitialEvents`):
 * it delivers exactly what a LIST would, reports what was deleted while it was away,
 * and falls back to LIST and WATCH when the server refuses it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  KubeClient,
  type KubeObject,
  type RawResponse,
  Reflector,
  type RequestOptions,
  type Transport,
} from '@operators/kit';
import { pino } from 'pino';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const silent = pino({ level: 'silent' });

/** The admin client, recording every request (LISTs and WATCHes) it passes on to the real apiserver. */
function recordingClient(rewrite: (o: RequestOptions) => RequestOptions = (o) => o): {
  client: KubeClient;
  requests: RequestOptions[];
} {
  const requests: RequestOptions[] = [];
  const real = env.admin.transport;
  const transport = new Proxy(real, {
    get(target, prop) {
      if (prop === 'request')
        return (o: RequestOptions) => {
          requests.push(o);
          return target.request(o);
        };
      if (prop === 'dedicated')
        return (o: RequestOptions): Promise<RawResponse> => {
          requests.push(o);
          return target.dedicated(rewrite(o));
        };
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Transport;
  return { client: new KubeClient(transport, env.admin.discovery), requests };
}

const isList = (o: RequestOptions): boolean => o.method === 'GET' && o.query?.watch === undefined;
const isWatchList = (o: RequestOptions): boolean => o.query?.sendInitialEvents === 'true';

async function seed(ns: string, names: readonly string[]): Promise<void> {
  await Promise.all(
    names.map((name) =>
      env.admin.create({ ...CONFIGMAP, metadata: { name, namespace: ns }, data: { name } } as KubeObject),
    ),
  );
}

describe('the streaming watch-list', () => {
  it('syncs exactly the objects the apiserver lists, without any LIST request, then follows changes', async (t) => {
    const ns = await env.namespace(t, 'watch-list');
    await seed(
      ns,
      Array.from({ length: 40 }, (_, i) => `cm-${i}`),
    );
    const { client, requests } = recordingClient();
    const reflector = new Reflector({ client, gvk: CONFIGMAP, namespace: ns, log: silent });
    const added: string[] = [];
    reflector.onDelta((d) => {
      if (d.type === 'added') added.push(d.object.metadata.name ?? '');
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();

    const oracle = (await env.admin.listAll(CONFIGMAP, { namespace: ns })).items;
    const byName = (os: readonly KubeObject[]) =>
      Object.fromEntries(os.map((o) => [o.metadata.name, o.metadata.resourceVersion]));
    assert.deepEqual(byName(reflector.store.list()), byName(oracle));
    assert.deepEqual(added.sort(), oracle.map((o) => o.metadata.name).sort());
    const paths = requests.filter((o) => o.path.endsWith(`/namespaces/${ns}/configmaps`));
    assert.equal(paths.filter(isList).length, 0, 'no LIST was made');
    assert.equal(paths.filter(isWatchList).length, 1);
    assert.equal(reflector.health().listMode, 'watch-list');

    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'later', namespace: ns } });
    await eventually('the same stream delivers later changes', async () =>
      added.includes('later') ? true : undefined,
    );
    assert.equal(paths.filter(isWatchList).length, 1, 'the initial stream carried on as the watch');
  });

  it('reports what was deleted while no reflector watched, as a relist does', async (t) => {
    const ns = await env.namespace(t, 'watch-list-relist');
    await seed(ns, ['keep', 'drop']);
    const first = new Reflector({ client: env.admin, gvk: CONFIGMAP, namespace: ns, log: silent });
    first.start();
    await first.waitForSync();
    await first.stop();
    await env.admin.delete(CONFIGMAP, 'drop', ns);
    await seed(ns, ['new']);

    // A second reflector over the same store: its initial stream must be compared, whole, with it.
    const again = new Reflector(
      { client: env.admin, gvk: CONFIGMAP, namespace: ns, log: silent },
      first.store,
    );
    const deltas: string[] = [];
    again.onDelta((d) => deltas.push(`${d.type}:${d.object.metadata.name}`));
    again.start();
    t.after(() => again.stop());
    await eventually('synced again', async () => (again.health().relists >= 1 ? true : undefined));
    assert.equal(again.health().listMode, 'watch-list');
    assert.deepEqual(deltas.sort(), ['added:new', 'deleted:drop']);
    assert.deepEqual([...again.store.keys()].sort(), [`${ns}/keep`, `${ns}/new`]);
  });

  it('falls back to LIST and WATCH when the server refuses a watch-list', async (t) => {
    const ns = await env.namespace(t, 'watch-list-refused');
    await seed(ns, ['a', 'b']);
    // The real apiserver refuses the request (an invalid resourceVersionMatch is a 4xx,
    // as the watch-list parameters are to a server without the feature).
    const { client, requests } = recordingClient((o) =>
      o.query?.sendInitialEvents === 'true'
        ? { ...o, query: { ...o.query, resourceVersionMatch: 'Bogus' } }
        : o,
    );
    const reflector = new Reflector({
      client,
      gvk: CONFIGMAP,
      namespace: ns,
      log: silent,
      watchTimeoutSeconds: 1,
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    assert.deepEqual(
      reflector.store
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ['a', 'b'],
    );
    assert.equal(reflector.health().listMode, 'list');

    // The server ends each watch after 1 to 2 s; resumed watches stay plain.
    await eventually(
      'the watch was resumed',
      async () => (requests.filter((o) => o.query?.watch === 'true').length >= 3 ? true : undefined),
      10_000,
    );
    assert.equal(requests.filter(isWatchList).length, 1, 'the watch-list was asked for once only');
    await seed(ns, ['c']);
    await eventually('changes still arrive', async () => reflector.store.get(`${ns}/c`));
  });

  it('falls back to LIST and WATCH on an apiserver with the WatchList feature off', async (t) => {
    const plane = await privateTestEnv({
      apiserverFlags: ['--feature-gates=WatchList=false'],
      log: () => {},
    });
    t.after(() => plane.close());
    const ns = await plane.namespace(t, 'watch-list-off');
    await plane.admin.create({ ...CONFIGMAP, metadata: { name: 'a', namespace: ns } });
    const reflector = new Reflector({ client: plane.admin, gvk: CONFIGMAP, namespace: ns, log: silent });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    assert.equal(reflector.health().listMode, 'list');
    assert.deepEqual(
      reflector.store.list().map((o) => o.metadata.name),
      ['a'],
    );
    await plane.admin.create({ ...CONFIGMAP, metadata: { name: 'b', namespace: ns } });
    await eventually('the watch after the LIST delivers', async () => reflector.store.get(`${ns}/b`));
  });
});
