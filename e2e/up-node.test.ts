/**
 * `npm run up -- --node`, tried as a newcomer does it: every operator runs as pods on a
 * real node, installed from its chart; Ctrl-C in the terminal (SIGINT to the whole process
 * group) removes the plane, the node and everything the node made. Runs after the node
 * suite in the same runner (one node per machine).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolveBinaries } from '@operators/controlplane';
import { NODE_CHARTS } from './support/charts.ts';
import { machineTrace } from './support/node-gone.ts';

const root = join(import.meta.dirname, '..');

it('npm run up -- --node runs every operator as two Ready pods on a real node, and Ctrl-C leaves the machine as it found it', async (t) => {
  const before = await machineTrace();
  const dir = await mkdtemp(join(tmpdir(), 'up-node-test-'));
  const child = spawn(process.execPath, ['scripts/up.ts', '--node'], {
    cwd: root,
    detached: true,
    env: { ...process.env, KUBE_OPERATORS_UP_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGKILL');
  });
  let out = '';
  for (const s of [child.stdout, child.stderr]) {
    s?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 600_000;
  while (!out.includes('Every operator runs as pods on a real node')) {
    if (child.exitCode !== null) assert.fail(`npm run up -- --node exited early:\n${out}`);
    if (Date.now() > deadline) assert.fail(`npm run up -- --node was not ready within 600 s:\n${out}`);
    await sleep(200);
  }

  // What the printed kubeconfig shows: the apiserver's own answer.
  const { kubectl } = await resolveBinaries(() => undefined);
  const kubeconfig = join(dir, 'kubeconfig');
  assert.ok((await readFile(kubeconfig, 'utf8')).includes('server: https://10.244.0.1:'));
  const listed = await new Promise<string>((resolve, reject) => {
    const k = spawn(kubectl, ['--kubeconfig', kubeconfig, 'get', 'pods', '-A', '-o', 'json']);
    let text = '';
    k.stdout.setEncoding('utf8').on('data', (d: string) => {
      text += d;
    });
    k.on('error', reject);
    k.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`kubectl get pods: exit ${code}`)),
    );
  });
  const pods = (
    JSON.parse(listed) as {
      items: {
        metadata: { namespace: string; labels?: Record<string, string> };
        status: { conditions?: { type: string; status: string }[] };
      }[];
    }
  ).items;
  for (const chart of NODE_CHARTS) {
    const ready = pods.filter(
      (p) =>
        p.metadata.namespace === chart.namespace &&
        p.metadata.labels?.['app.kubernetes.io/instance'] === chart.release &&
        p.metadata.labels?.['pod-template-hash'] !== undefined &&
        p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    assert.ok(ready.length >= 2, `${chart.operator}: ${ready.length} Ready pods\n${out}`);
  }

  const started = Date.now();
  process.kill(-(child.pid as number), 'SIGINT');
  assert.equal(await exited, 0, out);
  t.diagnostic(`Ctrl-C: everything removed in ${Date.now() - started} ms`);
  assert.deepEqual(await machineTrace(), before);
});
