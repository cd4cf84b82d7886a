/**
 * Reading a list over HTTP and HTTPS against local servers (contract-faithful stand-ins
 * for list providers): what counts as a list, what is refused, and the limits.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { fetchList } from '../src/source/fetch-list.ts';

const LIMITS = { maxBytes: 1 << 20, timeoutMs: 5000 };
const servers: Server[] = [];

async function serve(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('reading a list', () => {
  it('parses a 200 as it arrives and keeps its ETag and Last-Modified', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { etag: '"abc"', 'last-modified': 'Mon, 01 Jun 2026 10:00:00 GMT' });
      res.write('1.2.3.0/24\n1.2.');
      res.end('4.0/24 ; split across chunks\n# comment\n');
    });
    const r = await fetchList(`${base}/list.txt`, LIMITS);
    assert.equal(r.kind, 'Read');
    if (r.kind !== 'Read') return;
    assert.equal(r.parse.counts.ipv4, 2);
    assert.deepEqual(r.validators, { etag: '"abc"', lastModified: 'Mon, 01 Jun 2026 10:00:00 GMT' });
  });

  it('asks conditionally with the validators it holds, and takes a 304 as "unchanged"', async () => {
    const seen: Record<string, string | undefined>[] = [];
    const base = await serve((req, res) => {
      seen.push({ inm: req.headers['if-none-match'], ims: req.headers['if-modified-since'] });
      res.writeHead(req.headers['if-none-match'] === '"abc"' ? 304 : 200).end();
    });
    const r = await fetchList(`${base}/`, {
      ...LIMITS,
      validators: { etag: '"abc"', lastModified: 'Mon, 01 Jun 2026 10:00:00 GMT' },
    });
    assert.deepEqual(r, { kind: 'NotModified' });
    assert.deepEqual(seen, [{ inm: '"abc"', ims: 'Mon, 01 Jun 2026 10:00:00 GMT' }]);
  });

  it('refuses any status but 200, and a 304 it did not ask for', async () => {
    let status = 500;
    const base = await serve((_req, res) => res.writeHead(status).end('1.2.3.4\n'));
    for (status of [500, 404, 204, 206, 304]) {
      const r = await fetchList(`${base}/`, LIMITS);
      assert.equal(r.kind === 'Failed' && r.reason, 'HttpStatus', String(status));
      assert.match(r.kind === 'Failed' ? r.message : '', new RegExp(`answered ${status}`));
    }
  });

  it('decodes gzip, and counts the size limit on the decoded body', async () => {
    const list = '10.0.0.1\n'.repeat(20_000);
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(list));
    });
    const ok = await fetchList(`${base}/`, LIMITS);
    assert.equal(ok.kind === 'Read' && ok.parse.counts.ipv4, 20_000);
    const bomb = await fetchList(`${base}/`, { ...LIMITS, maxBytes: 100_000 });
    assert.equal(bomb.kind === 'Failed' && bomb.reason, 'TooLarge');
  });

  it('refuses a Content-Encoding it did not ask for as UnsupportedEncoding, not as an HTTP status', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'zstd' }).end('not zstd either');
    });
    const r = await fetchList(`${base}/`, LIMITS);
    assert.equal(r.kind === 'Failed' && r.reason, 'UnsupportedEncoding');
    assert.match(r.kind === 'Failed' ? r.message : '', /Content-Encoding zstd/);
  });

  it('reports a truncated or corrupt gzip, deflate or br body as CorruptBody, not as Unreachable', async () => {
    const list = Buffer.from('10.0.0.1\n'.repeat(5000));
    const half = (b: Buffer): Buffer => b.subarray(0, b.length >> 1);
    const bodies: Record<string, [string, Buffer]> = {
      '/gzip-truncated': ['gzip', half(gzipSync(list))],
      '/deflate-truncated': ['deflate', half(deflateSync(list))],
      '/br-truncated': ['br', half(brotliCompressSync(list))],
      '/gzip-garbage': ['gzip', Buffer.from('<html>this is not gzip</html>')],
      '/br-garbage': ['br', Buffer.from('<html>this is not brotli</html>')],
    };
    const base = await serve((req, res) => {
      const [encoding, body] = bodies[req.url ?? ''] ?? ['identity', Buffer.alloc(0)];
      res.writeHead(200, { 'content-encoding': encoding, 'content-length': String(body.length) }).end(body);
    });
    for (const path of Object.keys(bodies)) {
      const r = await fetchList(`${base}${path}`, LIMITS);
      assert.equal(r.kind === 'Failed' && r.reason, 'CorruptBody', path);
      assert.match(r.kind === 'Failed' ? r.message : '', /does not decode/, path);
    }
  });

  it('still reports a connection cut in the middle of a compressed body as Unreachable', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.write(gzipSync(Buffer.from('10.0.0.1\n'.repeat(50_000))).subarray(0, 300), () => res.destroy());
    });
    const r = await fetchList(`${base}/`, LIMITS);
    assert.equal(r.kind === 'Failed' && r.reason, 'Unreachable');
  });

  it('refuses an announced oversize list before reading it, and an unannounced one as it grows', async () => {
    const base = await serve((req, res) => {
      const body = '10.0.0.1\n'.repeat(1000);
      if (req.url === '/chunked') {
        res.writeHead(200);
        res.write(body);
        res.end(body);
      } else {
        res.writeHead(200, { 'content-length': String(body.length) }).end(body);
      }
    });
    const announced = await fetchList(`${base}/`, { ...LIMITS, maxBytes: 5000 });
    assert.equal(announced.kind === 'Failed' && announced.reason, 'TooLarge');
    const chunked = await fetchList(`${base}/chunked`, { ...LIMITS, maxBytes: 12_000 });
    assert.equal(chunked.kind === 'Failed' && chunked.reason, 'TooLarge');
  });

  it('gives up after the time limit, body included', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200);
      res.write('1.2.3.4\n'); // and never ends
    });
    const started = Date.now();
    const r = await fetchList(`${base}/`, { ...LIMITS, timeoutMs: 300 });
    assert.equal(r.kind === 'Failed' && r.reason, 'Timeout');
    assert.ok(Date.now() - started < 2000);
  });

  it('reports a connection refused as Unreachable', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    await new Promise((r) => s.close(r));
    const r = await fetchList(`http://127.0.0.1:${port}/`, LIMITS);
    assert.equal(r.kind === 'Failed' && r.reason, 'Unreachable');
    assert.match(r.kind === 'Failed' ? r.message : '', /ECONNREFUSED/);
  });

  it('follows redirects to http or https only, and not forever', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/moved') res.writeHead(301, { location: '/list' }).end();
      else if (req.url === '/ftp') res.writeHead(302, { location: 'ftp://example.com/list' }).end();
      else if (req.url === '/loop') res.writeHead(307, { location: '/loop' }).end();
      else res.writeHead(200).end('192.0.2.0/24\n');
    });
    const moved = await fetchList(`${base}/moved`, LIMITS);
    assert.equal(moved.kind === 'Read' && moved.parse.counts.ipv4, 1);
    const ftp = await fetchList(`${base}/ftp`, LIMITS);
    assert.equal(ftp.kind === 'Failed' && ftp.reason, 'BadRedirect');
    const loop = await fetchList(`${base}/loop`, LIMITS);
    assert.equal(loop.kind === 'Failed' && loop.reason, 'BadRedirect');
  });

  it('stops when the caller aborts (shutdown), by rejecting', async () => {
    const base = await serve((_req, res) => res.writeHead(200).write('1.2.3.4\n'));
    const abort = new AbortController();
    const pending = fetchList(`${base}/`, { ...LIMITS, signal: abort.signal });
    setTimeout(() => abort.abort(new Error('shutting down')), 50);
    await assert.rejects(pending, /shutting down/);
  });
});

describe('reading a list over https', () => {
  let dir: string;
  let cert: string;
  let base: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exoledge-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    const server = createHttpsServer({ cert, key: readFileSync(join(dir, 'key.pem')) });
    server.on('request', (_req, res) => res.writeHead(200).end('2001:db8::/32\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads from a server whose CA it was given', async () => {
    const r = await fetchList(`${base}/`, { ...LIMITS, ca: cert });
    assert.equal(r.kind === 'Read' && r.parse.counts.ipv6, 1);
  });

  it('refuses a certificate it cannot verify, as Unreachable', async () => {
    const r = await fetchList(`${base}/`, LIMITS);
    assert.equal(r.kind === 'Failed' && r.reason, 'Unreachable');
    assert.match(r.kind === 'Failed' ? r.message : '', /certificate/);
  });
});
