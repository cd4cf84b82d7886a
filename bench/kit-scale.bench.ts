/**
 * How the kit's convergence cost grows with the number of objects: 2,000, 10,000 and
 * 20,000 Widgets (the sample operator, packages/kit/test/support/sample-operator.ts),
 * each size on a fresh private control plane of its own (no size inherits another's
 * etcd or watch cache), against a bare loop making the same two calls per object with
 * the same concurrency on the same plane.
 *
 * Both sides are timed from "the objects exist" to "every object has its ConfigMap and
 * its status": the bare loop lists the Widgets (paged) then applies and patches; the
 * kit starts a manager, whose informers list and watch, and reconciles. Reported per
 * size: seconds, milliseconds per object, the kit/bare ratio, and the growth of the
 * kit's time per object from the smallest size to each larger one (1.0 is linear).
 *
 *   npm run bench:kit-scale                 # 2,000, 10,000 and 20,000 (several minutes)
 *   SIZES=2000,10000 npm run bench:kit-scale
 *   CONCURRENCY=16 (default) sets the workers of both sides.
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

const SIZES = (process.env.SIZES ?? '2000,10000,20000').split(',').map((s) => Number(s.trim()));
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);

interface Row {
  readonly n: number;
  readonly bareMs: number;
  readonly kitMs: number;
  readonly reconciles: number;
  readonly writes: number;
}

async function measure(n: number): Promise<Row> {
  const env = await privateTestEnv({ log: () => {} });
  try {
    await env.installCrds([WIDGET_CRD]);
    const seed = async (ns: string): Promise<void> => {
      await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      await pool(
        Array.from({ length: n }, (_, i) => `w${i}`),
        32,
        (name) =>
          env.admin.create({
            ...WIDGET,
            metadata: { name, namespace: ns },
            spec: { message: `hello ${name}` },
          }),
      );
    };

    // The bare loop: list, then the same two calls per object, no cache, no queue.
    const bareNs = 'scale-bare';
    await seed(bareNs);
    let t = performance.now();
    const widgets = (await env.admin.listAll<Widget>(WIDGET, { namespace: bareNs })).items;
    await pool(widgets, CONCURRENCY, (w) => bareWidgetWrites(env.admin, bareNs, w));
    const bareMs = performance.now() - t;

    // The sample controller on the kit.
    const ns = 'scale-kit';
    await seed(ns);
    const writes = newWriteLog();
    const manager = new Manager({ name: 'scale', client: env.admin, logger: pino({ level: 'silent' }) });
    const c = addSampleController(manager, { namespace: ns, writes, concurrency: CONCURRENCY });
    t = performance.now();
    await manager.start();
    // Cheap polls of the write counters first (a scan of n objects every few ms would
    // steal the controller's CPU), then the cache's word that every Widget converged.
    const converged = (): boolean => {
      if (writes.statuses < n || writes.configMaps < n) return false;
      const all = c.primary.store.list();
      return (
        all.length === n &&
        all.every(
          (w) =>
            w.status?.message === w.spec?.message && w.status?.observedGeneration === w.metadata.generation,
        )
      );
    };
    while (!converged()) await new Promise((r) => setTimeout(r, 20));
    const kitMs = performance.now() - t;
    await manager.stop();
    return { n, bareMs, kitMs, reconciles: writes.reconciles, writes: writes.statuses + writes.configMaps };
  } finally {
    await env.close();
  }
}

const rows: Row[] = [];
for (const n of SIZES) {
  const r = await measure(n);
  rows.push(r);
  console.log(
    `${String(n).padStart(6)} objects: bare ${(r.bareMs / 1000).toFixed(2)} s (${(r.bareMs / n).toFixed(2)} ms/object), ` +
      `kit ${(r.kitMs / 1000).toFixed(2)} s (${(r.kitMs / n).toFixed(2)} ms/object, ${r.reconciles} reconciles, ${r.writes} writes), ` +
      `kit/bare ${(r.kitMs / r.bareMs).toFixed(2)}`,
  );
}
const first = rows[0];
if (first && rows.length > 1) {
  for (const r of rows.slice(1)) {
    const growth = r.kitMs / r.n / (first.kitMs / first.n);
    const bareGrowth = r.bareMs / r.n / (first.bareMs / first.n);
    console.log(
      `time per object at ${r.n} vs ${first.n}: kit ×${growth.toFixed(2)}, bare ×${bareGrowth.toFixed(2)} (1.00 is linear growth of the total)`,
    );
  }
}
