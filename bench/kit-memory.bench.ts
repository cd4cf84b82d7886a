/**
 * Memory and initial sync of the kit's cache at scale, on a private control plane:
 * MEMORY_N ConfigMaps of about 2 KB (50,000 by default), created once; then each case
 * syncs a reflector over them in a process of its own (so no case inherits another's
 * heap), and reports:
 * - heap retained per cached object against the objects' JSON size (target < 2×),
 * - resident memory (RSS) after the sync, and its peak during the sync,
 * - the initial sync time,
 * for the streaming watch-list (the default), paged LIST, and paged LIST keeping
 * managedFields. The baseline is the JSON the apiserver sends; the watch-list is also
 * compared with paged LIST side by side.
 *
 *   npm run bench:kit-memory            (MEMORY_N=10000 npm run bench:kit-memory for a quicker run)
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { privateTestEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';

const N = Number(process.env.MEMORY_N ?? 50_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 48);
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const NS = 'bench-memory';

interface CaseResult {
  readonly mode: string;
  readonly listModeUsed: string;
  readonly keepManagedFields: boolean;
  readonly objects: number;
  readonly heapBytes: number;
  readonly rssBytes: number;
  readonly rssGrowthBytes: number;
  readonly peakRssBytes: number;
  readonly syncMs: number;
}

async function pool(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

const env = await privateTestEnv({ log: () => {} });
try {
  await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const payload = 'x'.repeat(1700);
  let t = performance.now();
  await pool(N, CONCURRENCY, (i) =>
    env.admin.create({
      ...CONFIGMAP,
      metadata: { name: `cm-${i}`, namespace: NS, labels: { app: 'bench', index: String(i) } },
      data: { payload: `${i}-${payload}` },
    } as KubeObject),
  );
  console.log(`created ${N} ConfigMaps in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // The baseline: the objects' JSON as the apiserver sends it, with and without managedFields.
  t = performance.now();
  const { items } = await env.admin.listAll(CONFIGMAP, { namespace: NS });
  const listMs = performance.now() - t;
  const jsonBytes = items.reduce((n, o) => n + Buffer.byteLength(JSON.stringify(o)), 0) / items.length;
  const strippedBytes =
    items.reduce(
      (n, o) =>
        n +
        Buffer.byteLength(JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: undefined } })),
      0,
    ) / items.length;
  items.length = 0;
  console.log(
    `JSON per object: ${jsonBytes.toFixed(0)} bytes (${strippedBytes.toFixed(0)} without managedFields); a bare listAll took ${listMs.toFixed(0)} ms`,
  );

  const cases: [string, ...string[]][] = [['watch-list'], ['list'], ['list', 'keep-managed-fields']];
  const results: CaseResult[] = [];
  for (const args of cases) {
    const r = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        join(import.meta.dirname, 'support', 'kit-memory-case.ts'),
        env.kubeconfigPath,
        NS,
        ...args,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 },
    );
    if (r.status !== 0) throw new Error(`case ${args.join(' ')} failed (exit ${r.status})`);
    results.push(JSON.parse(r.stdout.trim()) as CaseResult);
  }

  const mb = (b: number): string => (b / 2 ** 20).toFixed(0);
  console.log(
    '\ncase                               objects  heap/object  ×JSON  RSS MB (growth)  peak RSS MB  sync s',
  );
  for (const c of results) {
    const json = c.keepManagedFields ? jsonBytes : strippedBytes;
    const per = c.heapBytes / c.objects;
    const name = `${c.listModeUsed}${c.keepManagedFields ? ', managedFields kept' : ''}`;
    console.log(
      `${name.padEnd(34)} ${String(c.objects).padStart(7)}  ${per.toFixed(0).padStart(11)}  ${(per / json).toFixed(2).padStart(5)}  ${`${mb(c.rssBytes)} (+${mb(c.rssGrowthBytes)})`.padStart(15)}  ${mb(c.peakRssBytes).padStart(11)}  ${(c.syncMs / 1000).toFixed(1).padStart(6)}`,
    );
  }
  const [wl, list] = results;
  if (wl && list) {
    console.log(
      `\nwatch-list / paged LIST: heap ${(wl.heapBytes / list.heapBytes).toFixed(2)}, peak RSS ${(wl.peakRssBytes / list.peakRssBytes).toFixed(2)}, sync time ${(wl.syncMs / list.syncMs).toFixed(2)}`,
    );
    const worst = Math.max(wl.heapBytes / wl.objects, list.heapBytes / list.objects) / strippedBytes;
    console.log(`heap per object against JSON: ${worst.toFixed(2)}× at worst (target < 2)`);
  }
} finally {
  await env.close();
}
