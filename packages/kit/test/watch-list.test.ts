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

  it('after a server-side watch end, resumes with a plain watch from the last bookmark, past writes elsewhere: no second stream', async (t) => {
    const watched = await env.namespace(t, 'watch-list-resume');
    const busy = await env.namespace(t, 'watch-list-churn');
    await seed(watched, ['a']);
    const { client, requests } = recordingClient();
    // The server ends each watch after 15 to 30 s (the reflector draws between the option
    // and twice it), and sends a bookmark 2 s before that deadline (and about every
    // minute): the only news a namespace with no writes of its own gets.
    const reflector = new Reflector({
      client,
      gvk: CONFIGMAP,
      namespace: watched,
      log: silent,
      watchTimeoutSeconds: 15,
    });
    let snapshots = 0;
    reflector.onSnapshot(() => {
      snapshots++;
    });
    const openedAt = Date.now();
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();

    // Writes of the same kind in another namespace: the watched scope sees none of them,
    // only bookmarks carrying their resourceVersions.
    let churnRv = 0n;
    for (let batch = 0; batch < 30; batch++) {
      const made = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          env.admin.create({ ...CONFIGMAP, metadata: { name: `churn-${batch}-${i}`, namespace: busy } }),
        ),
      );
      for (const o of made) {
        const rv = BigInt(o.metadata.resourceVersion ?? '0');
        if (rv > churnRv) churnRv = rv;
      }
    }
    const churnMs = Date.now() - openedAt;
    assert.ok(
      churnMs < 12_000,
      `the writes took ${churnMs} ms: past the stream's last bookmark (13 s at the earliest)`,
    );

    const watches = (): RequestOptions[] =>
      requests.filter(
        (o) => o.path === `/api/v1/namespaces/${watched}/configmaps` && o.query?.watch === 'true',
      );
    // The first resume, right after the stream the server ended: it must start from the
    // bookmark that stream sent after the writes. From the version the initial events
    // ended at, it would be 300 writes behind: once the server's window passes that, a
    // 410 and a whole new stream (each relist running every onSnapshot handler again).
    const [stream, resumed] = await eventually(
      'the server ended the stream and the reflector resumed',
      async () => (watches().length >= 2 ? watches() : undefined),
      40_000,
    );
    assert.ok(stream && isWatchList(stream), 'the first watch is the stream');
    assert.ok(resumed && !isWatchList(resumed), 'the resume is a plain watch, not a second stream');
    assert.equal(resumed.query?.resourceVersionMatch, undefined);
    const resumedAt = BigInt(String(resumed.query?.resourceVersion ?? '0'));
    assert.ok(
      resumedAt >= churnRv,
      `resumed from resourceVersion ${resumedAt}, before the last write elsewhere (${churnRv}): the stream's bookmarks did not move it`,
    );
    assert.equal(reflector.health().relists, 1, 'no relist');
    assert.equal(snapshots, 1, 'onSnapshot ran for the initial state only');

    await seed(watched, ['after-resume']);
    await eventually('the resumed watch delivers', async () =>
      reflector.store.get(`${watched}/after-resume`),
    );
    assert.equal(reflector.health().relists, 1);
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
