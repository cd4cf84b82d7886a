/**
 * `npm run bench:webhook`: what the kit's webhook server costs per admission request
 * against a bare node:https server on the same certificate that parses the review and
 * answers a fixed "allowed" (the least any webhook must do). Both are called over
 * keep-alive TLS connections, `CONCURRENCY` requests at a time, with a ~2 KB ConfigMap
 * in each AdmissionReview; the kit's handler allows it. Prints requests/s, p50 and p99
 * latency for each (best of 3 alternating rounds) and the ratio. WEBHOOK_N (default 5000)
 * requests per round.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { allow, selfSignedCertificates, WebhookServer, writeCertificates } from '@operators/kit';
import { pino } from 'pino';

const N = Number(process.env.WEBHOOK_N ?? 5000);
const CONCURRENCY = 8;

const certs = await selfSignedCertificates();
const dir = await mkdtemp(join(tmpdir(), 'webhook-bench-'));
await writeCertificates(dir, certs);

const body = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: '7f0b2b6e-0000-4000-8000-000000000000',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    namespace: 'bench',
    name: 'c',
    operation: 'CREATE',
    userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'bench', labels: { app: 'bench' } },
      data: { payload: 'x'.repeat(2000) },
    },
  },
});

async function load(port: number, path: string): Promise<{ rps: number; p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: certs.ca.cert });
  const latencies: number[] = [];
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
            latencies.push(performance.now() - t0);
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const worker = async (): Promise<void> => {
    while (next++ < N) await one();
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = performance.now() - t0;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { rps: (N / elapsed) * 1000, p50: at(0.5), p99: at(0.99) };
}

const bare = createServer({ ...certs.serving, keepAliveTimeout: 120_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request: { uid: string } };
    const out = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: review.request.uid, allowed: true },
    });
    res
      .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) })
      .end(out);
  });
});
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
const kit = new WebhookServer({
  host: '127.0.0.1',
  port: 0,
  certDir: dir,
  logger: pino({ level: 'silent' }),
}).validating('/validate', () => allow());
await kit.start(new AbortController().signal);

// Warm both (JIT, TLS sessions), then alternate ROUNDS measurements and keep each
// server's best: on a shared machine, noise only ever makes a round slower.
const ROUNDS = 3;
const barePort = (bare.address() as AddressInfo).port;
await load(barePort, '/validate');
await load(kit.port, '/validate');
type Result = Awaited<ReturnType<typeof load>>;
const best = (a: Result | undefined, b: Result): Result => (a && a.rps >= b.rps ? a : b);
let baselineBest: Result | undefined;
let oursBest: Result | undefined;
for (let i = 0; i < ROUNDS; i++) {
  baselineBest = best(baselineBest, await load(barePort, '/validate'));
  oursBest = best(oursBest, await load(kit.port, '/validate'));
}
const baseline = baselineBest as Result;
const ours = oursBest as Result;

const fmt = (r: { rps: number; p50: number; p99: number }): string =>
  `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;
process.stdout.write(
  `admission requests, ${N} per round, best of ${ROUNDS} rounds, ${CONCURRENCY} concurrent, keep-alive TLS\n`,
);
process.stdout.write(`  bare node:https  ${fmt(baseline)}\n`);
process.stdout.write(`  WebhookServer    ${fmt(ours)}\n`);
process.stdout.write(`  throughput ratio (kit / bare): ${(ours.rps / baseline.rps).toFixed(2)}\n`);

await kit.stop();
await new Promise<void>((resolve) => bare.close(() => resolve()));
await rm(dir, { recursive: true, force: true });
