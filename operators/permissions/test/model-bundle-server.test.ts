/**
 * `/bundle` over real HTTP on an ephemeral port: 503 with Retry-After until the model
 * is ready; then 200 with the tar.gz and `ETag: "<revision>"`; 304 with no body for
 * `If-None-Match`; a new ETag after a change; the same ETag from a second engine
 * holding the same content (what a restarted replica serves); HEAD, /healthz, 404, 405.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { BundleServer } from '../src/model/bundle-server.ts';
import { StorageEngine } from '../src/model/storage-engine.ts';
import { permission, scope, userRole } from './support/model-objects.ts';

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** One request on a fresh connection, so that server.stop() never waits on our keep-alive. */
function call(
  server: BundleServer,
  path: string,
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const address = server.address();
  assert.ok(address, 'the server listens');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: address.port,
        path,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** data.json read out of the gzipped tar by hand: the first entry's size field and content. */
function firstEntry(gz: Buffer): { name: string; content: string } {
  const raw = gunzipSync(gz);
  const name = raw.subarray(0, 100).toString('utf8').replace(/\0+$/, '');
  const size = Number.parseInt(raw.subarray(124, 135).toString('latin1'), 8);
  return { name, content: raw.subarray(512, 512 + size).toString('utf8') };
}

function fill(e: StorageEngine): void {
  e.upsertPermission(
    permission('team', 'view', { granted_cluster_rules: [{ verbs: ['get'], resources: ['pods'] }] }),
  );
  e.upsertScope(scope('team', 'dev'), { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
  e.upsertRole('UserRole', userRole('team', 'a', 'alice', 'dev', ['view']));
}

const started: BundleServer[] = [];
async function serve(engine: StorageEngine): Promise<BundleServer> {
  const server = new BundleServer({ engine, host: '127.0.0.1', port: 0 });
  await server.start(new AbortController().signal);
  started.push(server);
  return server;
}
afterEach(async () => {
  for (const s of started.splice(0)) await s.stop();
});

describe('BundleServer', () => {
  it('answers 503 with Retry-After until the model is ready, then 200 with the bundle and its ETag', async () => {
    const engine = new StorageEngine();
    fill(engine);
    const server = await serve(engine);
    const early = await call(server, '/bundle');
    assert.equal(early.status, 503);
    assert.equal(early.headers['retry-after'], '1');
    assert.equal(early.headers.etag, undefined);
    assert.match(early.body.toString(), /rebuilt/);

    engine.markReady();
    const res = await call(server, '/bundle');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/gzip');
    assert.equal(res.headers['content-length'], String(res.body.length));
    const data = firstEntry(res.body);
    assert.equal(data.name, 'data.json');
    const revision = createHash('sha256').update(data.content).digest('hex');
    assert.equal(res.headers.etag, `"${revision}"`);
    assert.equal(revision, engine.revision());
    assert.deepEqual(Object.keys(JSON.parse(data.content).shturval.users), ['alice']);
  });

  it('serves /bundle.tar.gz the same, HEAD without a body, /healthz, and refuses the rest', async () => {
    const engine = new StorageEngine();
    fill(engine);
    engine.markReady();
    const server = await serve(engine);
    const get = await call(server, '/bundle');
    const alias = await call(server, '/bundle.tar.gz?x=1');
    assert.equal(alias.status, 200);
    assert.deepEqual(alias.body, get.body);
    assert.equal(alias.headers.etag, get.headers.etag);

    const head = await call(server, '/bundle', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers.etag, get.headers.etag);
    assert.equal(head.headers['content-length'], String(get.body.length));

    assert.equal((await call(server, '/healthz')).status, 200);
    assert.equal((await call(server, '/other')).status, 404);
    assert.equal((await call(server, '/bundle/x')).status, 404);
    const post = await call(server, '/bundle', { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  it('answers 304 with no body when If-None-Match names the current ETag, and 200 otherwise', async () => {
    const engine = new StorageEngine();
    fill(engine);
    engine.markReady();
    const server = await serve(engine);
    const etag = (await call(server, '/bundle')).headers.etag as string;
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await call(server, '/bundle', { headers: { 'if-none-match': inm } });
      assert.equal(res.status, 304, inm);
      assert.equal(res.body.length, 0);
      assert.equal(res.headers.etag, etag);
    }
    const stale = await call(server, '/bundle', { headers: { 'if-none-match': '"0000"' } });
    assert.equal(stale.status, 200);
    assert.ok(stale.body.length > 0);
  });

  it('changes the ETag after a mutation and serves the new content; the old ETag gets a 200', async () => {
    const engine = new StorageEngine();
    fill(engine);
    engine.markReady();
    const server = await serve(engine);
    const first = await call(server, '/bundle');
    engine.upsertRole('UserRole', userRole('team', 'b', 'bob', 'dev', ['view']));
    const second = await call(server, '/bundle', {
      headers: { 'if-none-match': first.headers.etag as string },
    });
    assert.equal(second.status, 200);
    assert.notEqual(second.headers.etag, first.headers.etag);
    assert.deepEqual(Object.keys(JSON.parse(firstEntry(second.body).content).shturval.users), [
      'alice',
      'bob',
    ]);
    // Undone: back to the first ETag and bytes.
    engine.removeRole('UserRole', 'team', 'b');
    const third = await call(server, '/bundle');
    assert.equal(third.headers.etag, first.headers.etag);
    assert.deepEqual(third.body, first.body);
  });

  it('serves the same ETag and bytes from a second engine with the same content (a restart)', async () => {
    const a = new StorageEngine();
    fill(a);
    a.markReady();
    const before = await call(await serve(a), '/bundle');
    const b = new StorageEngine();
    // Another order of arrival, as the informers of a restarted process may deliver.
    b.upsertRole('UserRole', userRole('team', 'a', 'alice', 'dev', ['view']));
    b.upsertScope(scope('team', 'dev'), { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
    b.upsertPermission(
      permission('team', 'view', { granted_cluster_rules: [{ verbs: ['get'], resources: ['pods'] }] }),
    );
    b.markReady();
    const restarted = await serve(b);
    const after = await call(restarted, '/bundle');
    assert.equal(after.headers.etag, before.headers.etag);
    assert.deepEqual(after.body, before.body);
    const notModified = await call(restarted, '/bundle', {
      headers: { 'if-none-match': before.headers.etag as string },
    });
    assert.equal(notModified.status, 304);
  });

  it('stops on abort, closes kept-alive connections, and reports its address only while listening', async () => {
    const engine = new StorageEngine();
    engine.markReady();
    const server = new BundleServer({ engine, host: '127.0.0.1', port: 0 });
    const ac = new AbortController();
    await server.start(ac.signal);
    const port = server.address()?.port;
    assert.ok(port && port > 0);
    // A client that keeps its connection open, as OPA does between polls.
    const res = await fetch(`http://127.0.0.1:${port}/bundle`, { headers: { connection: 'keep-alive' } });
    await res.arrayBuffer();
    ac.abort();
    await server.stop();
    assert.equal(server.address(), undefined);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/bundle`));
  });

  it('fails on a taken port, unless told to take a free one (npm run up), which it then reports', async (t) => {
    const engine = new StorageEngine();
    engine.markReady();
    const holder = new BundleServer({ engine, host: '127.0.0.1', port: 0 });
    await holder.start();
    t.after(() => holder.stop());
    const taken = holder.address()?.port ?? 0;
    const strict = new BundleServer({ engine, host: '127.0.0.1', port: taken });
    await assert.rejects(strict.start(), { code: 'EADDRINUSE' });
    assert.equal(strict.address(), undefined);
    const lenient = new BundleServer({ engine, host: '127.0.0.1', port: taken, freePortIfTaken: true });
    await lenient.start();
    t.after(() => lenient.stop());
    const port = lenient.address()?.port ?? 0;
    assert.ok(port > 0 && port !== taken, `listens on ${port}, not ${taken}`);
    assert.equal((await fetch(`http://127.0.0.1:${port}/bundle`)).status, 200);
  });
});
