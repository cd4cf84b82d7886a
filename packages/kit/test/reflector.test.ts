/**
 * The reflector never goes silent: a watch whose connection freezes (no data, no FIN, as
 * behind a dead NAT entry or a stuck load balancer) is detected, torn down and resumed,
 * and readiness reports it stale meanwhile. Relisting after a gone resourceVersion
 * reports deletions that happened while disconnected.
 */
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  ApiError,
  ApiErrorReason,
  Backoff,
  FakeClock,
  KubeClient,
  Reflector,
  type RequestOptions,
  type StoreDelta,
  type Transport,
} from '@operators/kit';
import { pino } from 'pino';
import { WIDGET, WIDGET_CRD, type Widget } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

/**
 * A TCP proxy to the apiserver whose connections can be frozen: bytes stop, sockets stay
 * open, and connections opened while frozen stay mute too, until `thaw()` drops them all
 * (as a dead NAT entry would be replaced).
 */
async function freezableProxy(
  target: URL,
): Promise<{ port: number; freeze(): void; thaw(): void; cut(): void; close(): Promise<void> }> {
  const open = new Set<[Socket, Socket]>();
  let frozen = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    if (frozen) {
      client.pause();
      upstream.pause();
    } else {
      client.pipe(upstream);
      upstream.pipe(client);
    }
    const pair: [Socket, Socket] = [client, upstream];
    open.add(pair);
    const drop = (): void => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    freeze() {
      frozen = true;
      for (const [c, u] of open) {
        c.unpipe(u);
        u.unpipe(c);
        c.pause();
        u.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const [c, u] of open) {
        c.destroy();
        u.destroy();
      }
    },
    /** Resets every open connection, as a restarted load balancer would. */
    cut() {
      for (const [c, u] of open) {
        c.resetAndDestroy();
        u.resetAndDestroy();
      }
    },
    async close() {
      server.close();
      for (const [c, u] of open) {
        c.destroy();
        u.destroy();
      }
    },
  };
}

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const silent = pino({ level: 'silent' });

/** A client reaching the apiserver through a local proxy port. */
async function clientVia(port: number): Promise<KubeClient> {
  const server = new URL(env.admin.transport.server);
  const kubeconfig = (await import('node:fs'))
    .readFileSync(env.kubeconfigPath, 'utf8')
    .replace(server.origin, `https://127.0.0.1:${port}`);
  return KubeClient.fromKubeconfigString(kubeconfig);
}

/**
 * The admin client with `request` wrapped (to record or fail requests): the real
 * apiserver still answers everything that is passed on.
 */
function wrappedClient(
  wrap: (opts: RequestOptions, pass: (o: RequestOptions) => Promise<unknown>) => Promise<unknown>,
  admin: KubeClient = env.admin,
): KubeClient {
  const real = admin.transport;
  const transport = new Proxy(real, {
    get(target, prop) {
      if (prop === 'request') return (o: RequestOptions) => wrap(o, (x) => target.request(x));
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Transport;
  return new KubeClient(transport, admin.discovery);
}

describe('the reflector', () => {
  it('detects a frozen watch connection, reports it stale, and resumes without losing an event', async (t) => {
    const ns = await env.namespace(t, 'frozen');
    const server = new URL(env.admin.transport.server);
    const proxy = await freezableProxy(server);
    const kubeconfig = (await import('node:fs'))
      .readFileSync(env.kubeconfigPath, 'utf8')
      .replace(server.origin, `https://127.0.0.1:${proxy.port}`);
    const viaProxy = await KubeClient.fromKubeconfigString(kubeconfig);

    const reflector = new Reflector({
      client: viaProxy,
      gvk: CONFIGMAP,
      namespace: ns,
      log: pino({ level: 'silent' }),
      idleTimeoutMs: 1_500,
      staleAfterMs: 500,
    });
    const seen: string[] = [];
    reflector.onDelta(
      (d: StoreDelta<{ metadata: { name?: string } } & import('@operators/kit').KubeObject>) =>
        seen.push(`${d.type}:${d.object.metadata.name}`),
    );
    reflector.start();
    t.after(async () => {
      await reflector.stop();
      await proxy.close();
      await viaProxy.transport.close();
    });
    await reflector.waitForSync();
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'before', namespace: ns } });
    await eventually('the live watch delivers', async () =>
      seen.includes('added:before') ? true : undefined,
    );
    assert.equal(reflector.health().stale, false);
    assert.equal(reflector.watching, true);

    proxy.freeze();
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'during', namespace: ns } });
    // While the path stays frozen, the silent watch is torn down and no new one can open.
    await eventually('the silent watch is torn down', async () =>
      reflector.health().restarts >= 1 ? true : undefined,
    );
    await eventually('the reflector is reported stale', async () =>
      reflector.health().stale ? true : undefined,
    );
    assert.equal(reflector.watching, false, 'watching stayed true over the silent watch');
    assert.ok(!seen.includes('added:during'));
    proxy.thaw();
    await eventually(
      'the watch is resumed and the missed event delivered',
      async () => (seen.includes('added:during') ? true : undefined),
      40_000,
    );
    await eventually('fresh again', async () => (reflector.health().stale ? undefined : true));
    assert.equal(reflector.watching, true);
    await reflector.stop();
    assert.equal(reflector.watching, false, 'a stopped reflector does not follow the server');
  });

  it('a watch torn down for silence stays stale until a new one opens: no grace counted again from the teardown', async (t) => {
    // A grace shorter than the silence, as with the defaults (60 s and 150 s), and one
    // longer: in neither may the reflector look fresh between the teardown and a new watch.
    for (const staleAfterMs of [1_000, 5_000]) {
      const ns = await env.namespace(t, `frozen-stale-${staleAfterMs}`);
      const proxy = await freezableProxy(new URL(env.admin.transport.server));
      const viaProxy = await clientVia(proxy.port);
      const idleTimeoutMs = 2_000;
      const reflector = new Reflector({
        client: viaProxy,
        gvk: CONFIGMAP,
        namespace: ns,
        log: silent,
        idleTimeoutMs,
        staleAfterMs,
      });
      reflector.start();
      try {
        await reflector.waitForSync();
        await eventually('watching', async () => (reflector.watching ? true : undefined));

        // Frozen: the watch falls silent, and no new one can open (connections stay mute).
        proxy.freeze();
        const frozenAt = Date.now();
        let staleAt: number | undefined;
        while (Date.now() - frozenAt < 7_000) {
          const h = reflector.health();
          if (h.stale) staleAt ??= Date.now() - frozenAt;
          else
            assert.equal(
              staleAt,
              undefined,
              `staleAfterMs ${staleAfterMs}: fresh again ${Date.now() - frozenAt} ms after the freeze, stale since ${staleAt} ms (restarts: ${h.restarts})`,
            );
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.ok(
          staleAt !== undefined && staleAt <= idleTimeoutMs + 1_000,
          `staleAfterMs ${staleAfterMs}: stale ${staleAt} ms after the freeze, not once silent beyond idleTimeoutMs`,
        );
        assert.ok(reflector.health().restarts >= 1);
        proxy.thaw();
        await eventually(
          'fresh once a new watch opens',
          async () => (reflector.health().stale ? undefined : true),
          40_000,
        );
      } finally {
        await reflector.stop();
        await proxy.close();
        await viaProxy.transport.close();
      }
    }
  });

  it('a 429 on the watch (the watch cache initialising) is logged at debug with its Retry-After, not warned', async (t) => {
    const ns = await env.namespace(t, 'throttled');
    const lines: {
      level: number;
      msg: string;
      err?: string;
      retryAfterSeconds?: number;
      retryInMs?: number;
    }[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const opened: number[] = [];
    const real = env.admin.transport;
    const transport = new Proxy(real, {
      get(target, prop) {
        if (prop === 'dedicated')
          return (o: RequestOptions) => {
            opened.push(Date.now());
            if (opened.length === 1)
              return Promise.reject(
                new ApiError(
                  ApiErrorReason.TooManyRequests,
                  429,
                  'storage is (re)initializing',
                  `WATCH ${o.path}`,
                  [],
                  1,
                ),
              );
            return target.dedicated(o);
          };
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Transport;
    const reflector = new Reflector({
      client: new KubeClient(transport, env.admin.discovery),
      gvk: CONFIGMAP,
      namespace: ns,
      log,
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    const retry = lines.find((l) => /\(429\)/.test(l.err ?? ''));
    assert.ok(retry, `no line about the 429: ${JSON.stringify(lines)}`);
    assert.equal(retry.level, 20, 'logged at debug');
    assert.equal(retry.retryAfterSeconds, 1);
    assert.ok((retry.retryInMs ?? 0) >= 1_000, 'the retry waits the Retry-After');
    assert.ok((opened[1] ?? 0) - (opened[0] ?? 0) >= 950, 'retried after the Retry-After');
    assert.deepEqual(
      lines.filter((l) => l.level >= 40),
      [],
      'nothing at warn or above',
    );
  });

  it('a metadata-only reflector over an empty namespace syncs (the server lists items: null)', async (t) => {
    const ns = await env.namespace(t, 'empty-meta');
    const reflector = new Reflector({
      client: env.admin,
      gvk: CONFIGMAP,
      namespace: ns,
      fieldSelector: 'metadata.name=none',
      metadataOnly: true,
      log: pino({ level: 'silent' }),
    });
    reflector.start();
    t.after(() => reflector.stop());
    await eventually('synced', async () => (reflector.health().synced ? true : undefined), 5_000);
    assert.equal(reflector.health().lastError, undefined);
    assert.equal(reflector.watching, true);
    assert.equal(reflector.store.list().length, 0);
  });

  it('after a relist, reports the deletions that happened while it was not watching', async (t) => {
    const ns = await env.namespace(t, 'relist');
    for (const name of ['keep', 'drop'])
      await env.admin.create({ ...CONFIGMAP, metadata: { name, namespace: ns } });
    const reflector = new Reflector({
      client: env.admin,
      gvk: CONFIGMAP,
      namespace: ns,
      log: pino({ level: 'silent' }),
    });
    const deltas: string[] = [];
    reflector.onDelta((d) => deltas.push(`${d.type}:${d.object.metadata.name}`));
    reflector.start();
    await reflector.waitForSync();
    await reflector.stop();
    await env.admin.delete(CONFIGMAP, 'drop', ns);
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'new', namespace: ns } });
    // A second reflector over the same store relists: the store's view must follow.
    const again = new Reflector(
      { client: env.admin, gvk: CONFIGMAP, namespace: ns, log: pino({ level: 'silent' }) },
      reflector.store,
    );
    again.onDelta((d) => deltas.push(`${d.type}:${d.object.metadata.name}`));
    again.start();
    t.after(() => again.stop());
    await eventually('relisted', async () => (again.health().relists >= 1 ? true : undefined));
    assert.deepEqual(deltas.sort(), ['added:drop', 'added:keep', 'added:new', 'deleted:drop'].sort());
    assert.deepEqual([...again.store.keys()].sort(), [`${ns}/keep`, `${ns}/new`]);
  });
  it('tells snapshot deltas from watch events, and hands each complete state to onSnapshot (for a mark-and-sweep)', async (t) => {
    const ns = await env.namespace(t, 'snapshot');
    for (const name of ['a', 'b'])
      await env.admin.create({ ...CONFIGMAP, metadata: { name, namespace: ns } });
    const reflector = new Reflector({ client: env.admin, gvk: CONFIGMAP, namespace: ns, log: silent });
    const seen: string[] = [];
    const snapshots: string[][] = [];
    reflector.onDelta((d, origin) => seen.push(`${origin}:${d.type}:${d.object.metadata.name}`));
    reflector.onSnapshot((items, namespace) => {
      assert.equal(namespace, ns);
      snapshots.push(items.map((o) => o.metadata.name ?? '').sort());
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    assert.deepEqual(snapshots, [['a', 'b']]);
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'c', namespace: ns } });
    await eventually('the watch event', async () => (seen.includes('watch:added:c') ? true : undefined));
    assert.deepEqual(seen.sort(), ['snapshot:added:a', 'snapshot:added:b', 'watch:added:c']);
    assert.equal(snapshots.length, 1, 'a watch event is not a snapshot');
  });

  it('a quiet watch is healthy as soon as it reconnects: connected at the 200, not at a first event', async (t) => {
    const ns = await env.namespace(t, 'quiet');
    const proxy = await freezableProxy(new URL(env.admin.transport.server));
    const viaProxy = await clientVia(proxy.port);
    const reflector = new Reflector({
      client: viaProxy,
      gvk: CONFIGMAP,
      namespace: ns,
      log: silent,
      staleAfterMs: 500,
    });
    reflector.start();
    t.after(async () => {
      await reflector.stop();
      await proxy.close();
      await viaProxy.transport.close();
    });
    await reflector.waitForSync();
    await eventually('watching', async () => (reflector.watching ? true : undefined));

    proxy.cut();
    await eventually('the cut is noticed', async () => (reflector.watching ? undefined : true));
    // Nothing is written to the namespace from here on: no event will come.
    await eventually('the watch reconnected', async () => (reflector.watching ? true : undefined));
    const until = Date.now() + 1_500;
    while (Date.now() < until) {
      assert.equal(reflector.health().stale, false, 'a healthy quiet watch was reported stale');
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('metadata-only objects carry their real kind and apiVersion, from the list and from the watch', async (t) => {
    const ns = await env.namespace(t, 'meta-kind');
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'listed', namespace: ns } });
    const reflector = new Reflector({
      client: env.admin,
      gvk: CONFIGMAP,
      namespace: ns,
      metadataOnly: true,
      log: silent,
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    const listed = reflector.store.get(`${ns}/listed`);
    assert.equal(listed?.kind, 'ConfigMap');
    assert.equal(listed?.apiVersion, 'v1');

    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'watched', namespace: ns } });
    const watched = await eventually('the watch delivers', async () => reflector.store.get(`${ns}/watched`));
    assert.equal(watched.kind, 'ConfigMap');
    assert.equal(watched.apiVersion, 'v1');
  });

  it('cached objects are frozen: mutating one throws, and the next reader sees the original', async (t) => {
    await env.installCrds([WIDGET_CRD]);
    const ns = await env.namespace(t, 'frozen-objects');
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'w', namespace: ns },
      spec: { message: 'original' },
    });
    const reflector = new Reflector({ client: env.admin, gvk: WIDGET, namespace: ns, log: silent });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    const w = reflector.store.get(`${ns}/w`) as Widget;
    assert.throws(() => {
      (w.spec as { message?: string }).message = 'changed';
    }, TypeError);
    assert.throws(() => {
      (w.metadata as { labels?: Record<string, string> }).labels = { x: 'y' };
    }, TypeError);
    assert.equal((reflector.store.get(`${ns}/w`) as Widget).spec?.message, 'original');
  });

  it('a continue token expiring while paging (410) leads to one full LIST, not a relist loop', async (t) => {
    // Without the watch cache, pages are read from etcd, where a compaction expires the
    // continue token (the watch cache serves pages from a snapshot that outlives it).
    const env = await privateTestEnv({ apiserverFlags: ['--watch-cache=false'], log: () => {} });
    t.after(() => env.close());
    const ns = await env.namespace(t, 'paged-410');
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        env.admin.create({ ...CONFIGMAP, metadata: { name: `cm-${i}`, namespace: ns } }),
      ),
    );
    const lists: string[] = [];
    let compacted = false;
    const client = wrappedClient(async (o, pass) => {
      const isList = o.method === 'GET' && o.path === `/api/v1/namespaces/${ns}/configmaps`;
      if (isList) lists.push(`limit=${o.query?.limit ?? '-'} continue=${o.query?.continue ? 'yes' : 'no'}`);
      const res = await pass(o);
      if (isList && !compacted) {
        // After the first page: a write, then a compaction past the list's revision,
        // so the continue token of the next page is too old.
        compacted = true;
        await env.admin.create({ ...CONFIGMAP, metadata: { name: 'while-paging', namespace: ns } });
        await env.compactEtcd();
      }
      return res;
    }, env.admin);
    const reflector = new Reflector({
      client,
      gvk: CONFIGMAP,
      namespace: ns,
      log: silent,
      listMode: 'list',
      pageSize: 2,
    });
    reflector.start();
    t.after(() => reflector.stop());
    await reflector.waitForSync();
    assert.deepEqual(lists, ['limit=2 continue=no', 'limit=2 continue=yes', 'limit=- continue=no']);
    const oracle = (await env.admin.listAll(CONFIGMAP, { namespace: ns })).items.map((o) => o.metadata.name);
    assert.deepEqual(
      reflector.store
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      oracle.sort(),
    );
    assert.equal(reflector.health().relists, 1);
  });

  it('a LIST that keeps failing with 410 is retried with growing backoff, not at once', async (t) => {
    const ns = await env.namespace(t, 'gone-backoff');
    const clock = new FakeClock();
    let attempts = 0;
    const client = wrappedClient(async (o, pass) => {
      if (o.method === 'GET' && o.path === `/api/v1/namespaces/${ns}/configmaps`) {
        attempts++;
        throw new ApiError(ApiErrorReason.Gone, 410, 'too old resource version', `GET ${o.path}`);
      }
      return pass(o);
    });
    const reflector = new Reflector({
      client,
      gvk: CONFIGMAP,
      namespace: ns,
      log: silent,
      clock,
      listMode: 'list',
      backoff: new Backoff({ initialMs: 1_000, jitter: 0 }),
    });
    reflector.start();
    t.after(() => reflector.stop());
    await eventually('the first LIST', async () => (attempts === 1 && clock.pending > 0 ? true : undefined));
    for (const gap of [1_000, 2_000, 4_000]) {
      const before = attempts;
      await clock.advanceAsync(gap - 1);
      assert.equal(attempts, before, `retried before its ${gap} ms backoff`);
      await clock.advanceAsync(1);
      await eventually(`retried after ${gap} ms`, async () => (attempts === before + 1 ? true : undefined));
      await eventually('waiting again', async () => (clock.pending > 0 ? true : undefined));
    }
    assert.match(reflector.health().lastError ?? '', /too old/);
  });
});
