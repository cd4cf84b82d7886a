/**
 * The reflector never goes silent: a watch whose connection freezes (no data, no FIN, as
 * behind a dead NAT entry or a stuck load balancer) is detected, torn down and resumed,
 * and readiness reports it stale meanwhile. Relisting after a gone resourceVersion
 * reports deletions that happened while disconnected.
 */
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { KubeClient, Reflector, type StoreDelta } from '@operators/kit';
import { pino } from 'pino';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

/** A TCP proxy to the apiserver whose open connections can be frozen: bytes stop, sockets stay open. */
async function freezableProxy(
  target: URL,
): Promise<{ port: number; freeze(): void; close(): Promise<void> }> {
  const open = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream);
    upstream.pipe(client);
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
      for (const [c, u] of open) {
        c.unpipe(u);
        u.unpipe(c);
        c.pause();
        u.pause();
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
    let sawStale = false;
    let sawNotWatching = false;
    await eventually(
      'the frozen watch is replaced and the missed event delivered',
      async () => {
        if (reflector.health().stale) sawStale = true;
        if (!reflector.watching) sawNotWatching = true;
        return seen.includes('added:during') ? true : undefined;
      },
      40_000,
    );
    assert.ok(sawStale, 'readiness never reported the silent watch');
    assert.ok(sawNotWatching, 'watching stayed true over the silent watch');
    assert.ok(reflector.health().restarts >= 1);
    await eventually('fresh again', async () => (reflector.health().stale ? undefined : true));
    assert.equal(reflector.watching, true);
    await reflector.stop();
    assert.equal(reflector.watching, false, 'a stopped reflector does not follow the server');
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
});
