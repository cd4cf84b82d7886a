/**
 * Warm control-plane start: ControlPlane.start() (certificates, kubeconfig, etcd,
 * kube-apiserver, /readyz and the default namespace) against a bare baseline that
 * starts the same two binaries with the same flags and only polls /readyz: the
 * ratio is what our harness adds. Then the wall time of the whole test suite.
 *
 *   npm run bench:controlplane            both
 *   SKIP_SUITE=1 npm run bench:controlplane   start times only
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane, resolveBinaries } from '@operators/controlplane';

const RUNS = 5;
const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function ours(): Promise<number> {
  const t = performance.now();
  const plane = await ControlPlane.start({ log: () => {} });
  const ms = performance.now() - t;
  await plane.stop();
  return ms;
}

/** The same binaries and flags, certificates prepared beforehand, only /readyz polled. */
async function bare(): Promise<number> {
  const plane = await ControlPlane.start({ log: () => {} });
  const { pki } = plane;
  await plane.stop();
  const b = await resolveBinaries(() => {});
  const dir = mkdtempSync(join(tmpdir(), 'bare-plane-'));
  for (const [f, c] of Object.entries({
    'ca.crt': pki.ca.cert,
    'srv.crt': pki.serving.cert,
    'srv.key': pki.serving.key,
    'sa.key': pki.serviceAccount.privateKey,
    'sa.pub': pki.serviceAccount.publicKey,
  }))
    writeFileSync(join(dir, f), c);
  const port = 20000 + Math.floor(Math.random() * 20000);
  const t = performance.now();
  const etcd = spawn(
    b.etcd,
    [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${port}`,
      `--advertise-client-urls=http://127.0.0.1:${port}`,
      `--listen-peer-urls=http://127.0.0.1:${port + 1}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${port + 1}`,
      `--initial-cluster=default=http://127.0.0.1:${port + 1}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    { stdio: 'ignore' },
  );
  const api = spawn(
    b.kubeApiserver,
    [
      `--etcd-servers=http://127.0.0.1:${port}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port + 2}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${join(dir, 'srv.crt')}`,
      `--tls-private-key-file=${join(dir, 'srv.key')}`,
      `--client-ca-file=${join(dir, 'ca.crt')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--authorization-mode=RBAC',
      '--disable-admission-plugins=ServiceAccount',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      '--profiling=false',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let apiLog = '';
  api.stderr?.setEncoding('utf8').on('data', (d: string) => {
    apiLog = (apiLog + d).slice(-4000);
  });
  api.once('exit', (code) => {
    if (code) console.error(`bare kube-apiserver exited ${code}:\n${apiLog}`);
  });
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(
        `https://127.0.0.1:${port + 2}/readyz`,
        { ca: pki.ca.cert, cert: pki.admin.cert, key: pki.admin.key, timeout: 1000 },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
    if (ok) break;
    await sleep(100);
  }
  const ms = performance.now() - t;
  // The apiserver first: stopped after etcd, it retries etcd through its whole shutdown.
  for (const p of [api, etcd]) {
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

await ours(); // warm the page cache
const oursMs: number[] = [];
const bareMs: number[] = [];
for (let i = 0; i < RUNS; i++) {
  oursMs.push(await ours());
  bareMs.push(await bare());
}
const o = median(oursMs);
const b = median(bareMs);
console.log(
  `warm start, median of ${RUNS}: ControlPlane.start() ${(o / 1000).toFixed(2)} s; bare binaries to /readyz ${(b / 1000).toFixed(2)} s; ratio ${(o / b).toFixed(2)}`,
);

if (!process.env.SKIP_SUITE) {
  const t = performance.now();
  const r = spawnSync('npm', ['run', 'test:only'], {
    stdio: ['ignore', 'ignore', 'ignore'],
    cwd: join(import.meta.dirname, '..'),
  });
  console.log(
    `full test suite (npm run test:only): ${((performance.now() - t) / 1000).toFixed(1)} s wall, exit ${r.status}`,
  );
}
