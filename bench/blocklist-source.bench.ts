/**
 * The BlocklistSource operator end to end on a local control plane with Cilium's CRDs:
 * the benchmark's 3-million-line IPv4 list (bench/gen-blocklist.ts) served over HTTP by
 * a local server, read, parsed, merged, budgeted and published. Run:
 * `npm run bench -- blocklist-source`.
 *
 * The operator runs as it does in a cluster, as its own process (`src/main.ts`), so that
 * its peak RSS (VmHWM, read from /proc before it stops) is its own:
 * - Decider channel, no budget to speak of (maxEntries 5,000,000): every merged prefix is
 *   published, in ConfigMaps of 5,000. Baseline: server-side applying the same ConfigMaps
 *   directly from here, nothing read or computed: the ratio is what reading, parsing,
 *   merging and deciding add to the writes themselves.
 * - Cilium channel at the policy-map budget (maxEntries 65,536, shardSize 10,000).
 * Then an operator in this process, its clock moved two hours on, reads the unchanged
 * list again: a conditional GET answered 304, and nothing written.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlPlane, thirdPartyCrds } from '@operators/controlplane';
import { installCrds } from '@operators/controlplane/testing';
import { type Clock, KubeClient, type KubeObject, realClock } from '@operators/kit';
import {
  BLOCKLIST_SOURCE,
  type BlocklistSource,
  blocklistSourceCrd,
} from '../operators/exoledge/src/api/blocklist-source.ts';
import { CONFIG_MAP } from '../operators/exoledge/src/api/cilium.ts';
import type { ReconcileReport } from '../operators/exoledge/src/controllers/blocklist-source.ts';
import { createOperator } from '../operators/exoledge/src/operator.ts';
import { startListServer } from '../operators/exoledge/src/sample/list-server.ts';
import { DEFAULT_GENERATE, generate } from './gen-blocklist.ts';

const root = join(import.meta.dirname, '..');
const outDir = join(import.meta.dirname, 'out');
const list = join(outDir, 'ipv4.txt');

class MovableClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  setTimeout = realClock.setTimeout;
  clearTimeout = realClock.clearTimeout;
}

const say = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
const secs = (ms: number): string => (ms < 100 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  if (!existsSync(list)) {
    say(`generating ${list} (seed ${DEFAULT_GENERATE.seed})...`);
    generate({ ...DEFAULT_GENERATE, outDir });
  }
  const body = readFileSync(list);
  const plane = await ControlPlane.start({ log: () => {} });
  const client = await KubeClient.load(plane.kubeconfigPath);
  const server = await startListServer();
  try {
    await installCrds(client, [
      ...((await thirdPartyCrds('cilium')) as unknown as KubeObject[]),
      blocklistSourceCrd(),
    ]);
    const namespace = 'exoledge-bench';
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    server.serve('/list.txt', { body: body.toString('latin1') });

    const child = spawn(
      process.execPath,
      [
        join(root, 'operators/exoledge/src/main.ts'),
        '--kubeconfig',
        plane.kubeconfigPath,
        '--decider-namespace',
        namespace,
        '--metrics-port',
        '0',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const reads: number[] = [];
    let started = false;
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      for (const line of text.split('\n')) {
        if (line.includes('"list read"')) reads.push(Number(JSON.parse(line).ms));
        if (line.includes('exoledge operator started')) started = true;
      }
    });
    while (!started) await sleep(20);
    const idle = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];

    const publish = async (name: string, spec: BlocklistSource['spec']): Promise<BlocklistSource> => {
      const started = performance.now();
      const readsBefore = reads.length;
      await client.create<BlocklistSource>({ ...BLOCKLIST_SOURCE, metadata: { name }, spec });
      for (;;) {
        const s = await client.get<BlocklistSource>(BLOCKLIST_SOURCE, name);
        const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.reason === 'Published' && s.status?.observedGeneration === s.metadata.generation) {
          say(
            `  ${name}: created to published in ${secs(performance.now() - started)} ` +
              `(of which read+parse+merge ${secs(reads[readsBefore] ?? Number.NaN)}): ` +
              `${s.status?.entries?.read} entries read, ${s.status?.entries?.malformed} malformed, ` +
              `${s.status?.entries?.merged} merged, ${s.status?.entries?.published} published in ${s.status?.shards} shards`,
          );
          return s;
        }
        await sleep(20);
      }
    };

    say(`exoledge BlocklistSource benchmark: ${list} (${(body.length / 1048576).toFixed(0)} MiB) over HTTP`);
    say('operator process (src/main.ts):');
    await publish('bench-decider', { url: server.url('/list.txt'), kind: 'Presumed', maxEntries: 5_000_000 });

    // Baseline: the same ConfigMaps, applied directly under other names.
    const { items } = await client.listAll(CONFIG_MAP, {
      namespace,
      labelSelector: 'edge.exoledge.io/source=bench-decider',
    });
    const baselineStarted = performance.now();
    for (const cm of items) {
      await client.apply(
        {
          ...CONFIG_MAP,
          metadata: { name: `baseline-${cm.metadata.name}`, namespace },
          data: (cm as KubeObject & { data: Record<string, string> }).data,
        },
        { fieldManager: 'bench-baseline', force: true },
      );
    }
    say(
      `    baseline: applying the same ${items.length} ConfigMaps directly: ${secs(performance.now() - baselineStarted)}`,
    );

    await publish('bench-cilium', {
      url: server.url('/list.txt'),
      kind: 'Certain',
      enforce: true,
      maxEntries: 65_536,
      podSelector: {},
    });
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
    say(
      `  peak RSS of the operator process: ${(Number(hwm) / 1024).toFixed(0)} MB ` +
        `(${(Number(idle) / 1024).toFixed(0)} MB started and idle)`,
    );
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));

    // The same list two hours later, unchanged, in this process (its clock can move).
    const clock = new MovableClock();
    const reports: ReconcileReport[] = [];
    const { manager } = createOperator({
      client,
      deciderNamespace: namespace,
      clock,
      onReconciled: (r) => reports.push(r),
    });
    manager.log.level = 'warn';
    await manager.start();
    const readAgain = async (): Promise<ReconcileReport> => {
      clock.offset += 2 * 3_600_000;
      const since = reports.length;
      await client.patch(BLOCKLIST_SOURCE, 'bench-decider', undefined, {
        type: 'merge',
        body: { metadata: { annotations: { 'bench.exoledge.io/touched': String(Date.now()) } } },
      });
      for (;;) {
        const r = reports.slice(since).find((x) => x.source === 'bench-decider' && x.read);
        if (r) return r;
        await sleep(5);
      }
    };
    // A fresh process holds no validators: its first read is a full one.
    await readAgain();
    const unchanged = await readAgain();
    say(
      `  two hours later, unchanged: ${unchanged.read?.result} in ${secs(unchanged.read?.durationMs ?? 0)}, ` +
        `whole reconcile ${secs(unchanged.durationMs)}, ${unchanged.applied} objects written, ` +
        `status ${unchanged.statusWritten ? 'written' : 'not written'}`,
    );
    await manager.stop();
  } finally {
    await server.close();
    await client.transport.close();
    await plane.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
