/**
 * The kit against a bare loop, on a private control plane:
 *
 * 1. Convergence: 2,000 Widgets; time until the sample controller has written each one's
 *    ConfigMap and status, against a bare loop making the same 4,000 API calls with the
 *    same concurrency. Target ratio: at most 1.3.
 * 2. Resync: one full resync of the 2,000 converged objects; target: zero writes.
 *
 * The cache's memory at scale is measured by bench/kit-memory.bench.ts, one process per case.
 *
 *   npm run bench:kit
 */
import { privateTestEnv } from '@operators/controlplane/testing';
import { Manager } from '@operators/kit';
import { pino } from 'pino';
import {
  addSampleController,
  newWriteLog,
  WIDGET,
  WIDGET_CRD,
  type Widget,
} from '../packages/kit/test/support/sample-operator.ts';
import { bareWidgetWrites, pool } from './support/widget-baseline.ts';

const N = Number(process.env.N ?? 2000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);

const env = await privateTestEnv({ log: () => {} });
await env.installCrds([WIDGET_CRD]);

async function seed(ns: string): Promise<string[]> {
  await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const names = Array.from({ length: N }, (_, i) => `w${i}`);
  await pool(names, 32, (name) =>
    env.admin.create({ ...WIDGET, metadata: { name, namespace: ns }, spec: { message: `hello ${name}` } }),
  );
  return names;
}

// 1a. The bare loop: the same two calls per object, same concurrency, no cache, no queue.
const bareNs = 'bench-bare';
const bareNames = await seed(bareNs);
const widgets = (await env.admin.listAll<Widget>(WIDGET, { namespace: bareNs })).items;
let t = performance.now();
await pool(widgets, CONCURRENCY, (w) => bareWidgetWrites(env.admin, bareNs, w));
const bareMs = performance.now() - t;
console.log(
  `bare loop: ${bareNames.length} objects, ${CONCURRENCY} concurrent, ${(bareMs / 1000).toFixed(2)} s`,
);

// 1b. The sample controller on the kit.
const ns = 'bench-kit';
await seed(ns);
const writes = newWriteLog();
const manager = new Manager({ name: 'bench', client: env.admin, logger: pino({ level: 'silent' }) });
const c = addSampleController(manager, {
  namespace: ns,
  writes,
  concurrency: CONCURRENCY,
  resyncMs: 3_600_000,
});
t = performance.now();
await manager.start();
const converged = async (): Promise<boolean> => {
  const store = manager.cache.informer(WIDGET, { namespace: ns }).store;
  if (store.size < N) return false;
  for (const w of store.list() as Widget[]) {
    if (w.status?.message !== w.spec?.message || w.status?.observedGeneration !== w.metadata.generation)
      return false;
  }
  return true;
};
while (!(await converged())) await new Promise((r) => setTimeout(r, 20));
const kitMs = performance.now() - t;
console.log(
  `kit controller: ${N} objects, ${CONCURRENCY} workers, ${(kitMs / 1000).toFixed(2)} s (${writes.configMaps} ConfigMap and ${writes.statuses} status writes, ${writes.reconciles} reconciles)`,
);
console.log(`convergence ratio kit/bare: ${(kitMs / bareMs).toFixed(2)} (target ≤ 1.3)`);

// 2. A full resync of converged objects: every key reconciled, nothing written.
await new Promise((r) => setTimeout(r, 1_000));
const before = { ...writes };
for (const key of c.primary.store.keys()) c.queue.add(key);
while (writes.reconciles < before.reconciles + N) await new Promise((r) => setTimeout(r, 20));
console.log(
  `full resync of ${N} converged objects: ${writes.reconciles - before.reconciles} reconciles, ${writes.configMaps - before.configMaps + writes.statuses - before.statuses} writes (target 0)`,
);
await manager.stop();

await env.close();
