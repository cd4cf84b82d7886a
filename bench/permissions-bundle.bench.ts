/**
 * `npm run bench:permissions-bundle`: what the permissions operator's `/bundle` costs
 * at the size (1,000 UserRoles over 100 Permissions and 2 client clusters),
 * against a bare node:http server answering a precomputed buffer of the same size
 * (and its 304 on a matching ETag): the least any server of those bytes must do.
 *
 * Three requests of ours, each against its baseline, over one keep-alive connection:
 * - 200 after a change: a UserRole is upserted (alternately added and removed, so the
 *   content really changes), then `/bundle` is fetched: data.json serialised, hashed,
 *   tarred and gzipped on that request. Target < 50 ms. Baseline: the static 200.
 * - 200 unchanged: the cached bundle of the current revision. Baseline: the static 200.
 * - 304: `If-None-Match` with the current ETag, what OPA's every idle poll costs.
 *   Target < 2 ms. Baseline: the static server's 304.
 * Each is sampled N times (BUNDLE_N, default 200) in alternating rounds after a warm-up;
 * medians and p95 are printed with the ratio of medians (ours / baseline). A missed
 * target is reported and exits 1.
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { BundleServer } from '../operators/permissions/src/model/bundle-server.ts';
import { StorageEngine } from '../operators/permissions/src/model/storage-engine.ts';
import { fillModel, SCALE, userRole } from '../operators/permissions/test/support/model-objects.ts';

const N = Number(process.env.BUNDLE_N ?? 200);
const ROUNDS = 4;
const TARGET_CHANGED_MS = 50;
const TARGET_304_MS = 2;

const engine = new StorageEngine();
const t0 = performance.now();
fillModel(engine, SCALE);
engine.markReady();
const fillMs = performance.now() - t0;
const ours = new BundleServer({ engine, host: '127.0.0.1', port: 0 });
await ours.start(new AbortController().signal);
const oursPort = ours.address()?.port ?? 0;

// The baseline serves the bytes ours serves now, precomputed, with the same headers.
const staticBody = Buffer.from(ours.current().body);
const staticEtag = '"static"';
const bare = createServer((req, res) => {
  if (req.headers['if-none-match'] === staticEtag) {
    res.writeHead(304, { etag: staticEtag }).end();
    return;
  }
  res.writeHead(200, {
    etag: staticEtag,
    'content-type': 'application/gzip',
    'content-length': String(staticBody.length),
  });
  res.end(staticBody);
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const barePort = (bare.address() as AddressInfo).port;

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One GET /bundle; resolves with its status, ETag and milliseconds to the last byte. */
function get(
  port: number,
  etag?: string,
): Promise<{ status: number; etag: string; ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/bundle', agent, headers: etag ? { 'if-none-match': etag } : {} },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            etag: String(res.headers.etag ?? ''),
            ms: performance.now() - started,
            bytes,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function expect(status: number, want: number, what: string): void {
  if (status !== want) throw new Error(`${what}: HTTP ${status}, expected ${want}`);
}

let flip = 0;
/** Changes the model for real: one UserRole added, then removed, and so on. */
function change(): void {
  const role = userRole('perms', 'bench-extra', 'bench@example.com', 'fleet', ['perm-1']);
  if (flip++ % 2 === 0) engine.upsertRole('UserRole', role);
  else engine.removeRole('UserRole', 'perms', 'bench-extra');
}

const samples = {
  changed: [] as number[],
  unchanged: [] as number[],
  notModified: [] as number[],
  bare200: [] as number[],
  bare304: [] as number[],
};

async function round(count: number, keep: boolean): Promise<void> {
  for (let i = 0; i < count; i++) {
    const b = await get(barePort);
    expect(b.status, 200, 'bare 200');
    const b304 = await get(barePort, staticEtag);
    expect(b304.status, 304, 'bare 304');

    change();
    const c = await get(oursPort);
    expect(c.status, 200, '/bundle after a change');
    const u = await get(oursPort);
    expect(u.status, 200, '/bundle unchanged');
    const nm = await get(oursPort, u.etag);
    expect(nm.status, 304, '/bundle If-None-Match');
    if (keep) {
      samples.bare200.push(b.ms);
      samples.bare304.push(b304.ms);
      samples.changed.push(c.ms);
      samples.unchanged.push(u.ms);
      samples.notModified.push(nm.ms);
    }
  }
}

await round(Math.min(50, N), false);
for (let r = 0; r < ROUNDS; r++) await round(Math.ceil(N / ROUNDS), true);

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}
const med = (xs: readonly number[]): number => quantile(xs, 0.5);
const line = (label: string, xs: readonly number[]): string =>
  `  ${label.padEnd(34)} median ${med(xs).toFixed(3).padStart(7)} ms  p95 ${quantile(xs, 0.95).toFixed(3).padStart(7)} ms\n`;

const data = engine.snapshot().shturval;
process.stdout.write(
  `model: ${Object.keys(data.permissions).length} Permissions, ${SCALE.roles} UserRoles, ${SCALE.clusters} clusters ` +
    `(filled in ${fillMs.toFixed(0)} ms); data.json ${(Buffer.byteLength(engine.dataJson()) / 1024).toFixed(0)} KiB, ` +
    `bundle ${(staticBody.length / 1024).toFixed(0)} KiB gzipped\n` +
    `${samples.changed.length} samples each, ${ROUNDS} rounds, one keep-alive connection\n`,
);
process.stdout.write(line('bare node:http 200 (static buffer)', samples.bare200));
process.stdout.write(line('/bundle 200 after a change', samples.changed));
process.stdout.write(line('/bundle 200 unchanged (cached)', samples.unchanged));
process.stdout.write(line('bare node:http 304', samples.bare304));
process.stdout.write(line('/bundle 304 (If-None-Match)', samples.notModified));
const ratio = (a: readonly number[], b: readonly number[]): string => (med(a) / med(b)).toFixed(2);
process.stdout.write(
  `  ratio of medians (ours / bare): 200 after a change ${ratio(samples.changed, samples.bare200)}, ` +
    `200 unchanged ${ratio(samples.unchanged, samples.bare200)}, 304 ${ratio(samples.notModified, samples.bare304)}\n`,
);

const verdict = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
const changedOk = med(samples.changed) < TARGET_CHANGED_MS;
const notModifiedOk = med(samples.notModified) < TARGET_304_MS;
process.stdout.write(
  `targets:\n  /bundle 200 < ${TARGET_CHANGED_MS} ms (after a change, the worst case): ${med(samples.changed).toFixed(3)} ms ${verdict(changedOk)}\n` +
    `  /bundle 304 < ${TARGET_304_MS} ms: ${med(samples.notModified).toFixed(3)} ms ${verdict(notModifiedOk)}\n`,
);

agent.destroy();
await ours.stop();
await new Promise<void>((resolve) => bare.close(() => resolve()));
process.exitCode = changedOk && notModifiedOk ? 0 : 1;
