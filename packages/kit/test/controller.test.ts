/**
 * The controller's contract on a real apiserver: it converges, it retries failures with
 * growing delays and counts them, it records terminal errors without retrying, and a
 * resync of converged objects writes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import {
  addSampleController,
  CONFIGMAP,
  newWriteLog,
  WIDGET,
  WIDGET_CRD,
  type Widget,
} from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

const quiet = pino({ level: 'silent' });

async function metric(manager: Manager, name: string, labels: Record<string, string>): Promise<number> {
  const m = await manager.registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

describe('a controller built with the kit', () => {
  it('reconciles a key enqueued from outside its informers (a data plane asking for a status refresh)', async (t) => {
    const ns = await env.namespace(t, 'enqueue');
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'x', namespace: ns } });
    const manager = new Manager({ name: 'enqueue', client: env.admin, logger: quiet });
    const seen: string[] = [];
    const controller = manager
      .controller('enqueue')
      .for<KubeObject>(CONFIGMAP, { namespace: ns })
      .reconcile(async (req) => {
        seen.push(req.key);
        return {};
      });
    await manager.start();
    t.after(() => manager.stop());
    const key = `${ns}/x`;
    await eventually('the start-up reconcile', async () => (seen.includes(key) ? true : undefined));
    const before = seen.length;
    controller.enqueue(key);
    controller.enqueue(key);
    await eventually('the enqueued reconcile', async () => (seen.length > before ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(seen.length - before <= 2, 'deduplicated like any event');
    assert.deepEqual(new Set(seen), new Set([key]));
  });

  it('converges every object: one ConfigMap each and status observed', async (t) => {
    const ns = await env.namespace(t, 'converge');
    const writes = newWriteLog();
    const manager = new Manager({ name: 'converge', client: env.admin, logger: quiet });
    addSampleController(manager, { namespace: ns, writes });
    await manager.start();
    t.after(() => manager.stop());
    const n = 100;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        env.admin.create({
          ...WIDGET,
          metadata: { name: `w${i}`, namespace: ns },
          spec: { message: `m${i}` },
        }),
      ),
    );
    await eventually(
      'every widget observed',
      async () => {
        const { items } = await env.admin.listAll<Widget>(WIDGET, { namespace: ns });
        const done = items.filter(
          (w) =>
            w.status?.message === w.spec?.message && w.status?.observedGeneration === w.metadata.generation,
        );
        return done.length === n ? true : undefined;
      },
      // A bound for "never converges", not a performance target: about 5 s on a loaded
      // two-core machine, so a slower machine never fails a correct controller.
      120_000,
    );
    const cms = await env.admin.listAll<KubeObject & { data?: Record<string, string> }>(
      { apiVersion: 'v1', kind: 'ConfigMap' },
      { namespace: ns, labelSelector: 'app.kubernetes.io/managed-by=kit-sample' },
    );
    assert.equal(cms.items.length, n);
    assert.equal(cms.items.find((c) => c.metadata.name === 'widget-w7')?.data?.message, 'm7');
    assert.equal(
      (await metric(manager, 'controller_runtime_reconcile_total', {
        controller: 'widgets',
        result: 'success',
      })) >= n,
      true,
    );

    // A spec change is reconciled; the ConfigMap follows.
    await env.admin.patch(WIDGET, 'w7', ns, { type: 'merge', body: { spec: { message: 'changed' } } });
    await eventually('the ConfigMap follows the spec', async () => {
      const cm = await env.admin.get<KubeObject & { data?: Record<string, string> }>(
        { apiVersion: 'v1', kind: 'ConfigMap' },
        'widget-w7',
        ns,
      );
      return cm.data?.message === 'changed' ? true : undefined;
    });
  });

  it('a full resync of converged objects makes zero write calls', async (t) => {
    const ns = await env.namespace(t, 'resync');
    const writes = newWriteLog();
    const manager = new Manager({ name: 'resync', client: env.admin, logger: quiet });
    const c = addSampleController(manager, { namespace: ns, writes, resyncMs: 500 });
    for (let i = 0; i < 20; i++) {
      await env.admin.create({
        ...WIDGET,
        metadata: { name: `w${i}`, namespace: ns },
        spec: { message: 'x' },
      });
    }
    await manager.start();
    t.after(() => manager.stop());
    await eventually('converged', async () => {
      const { items } = await env.admin.listAll<Widget>(WIDGET, { namespace: ns });
      return items.length === 20 && items.every((w) => w.status?.message === 'x') ? true : undefined;
    });
    // A status write can race the cache once (the owned ConfigMap's event arrives before
    // the Widget's new status does). Settled means: the cache holds every converged
    // Widget and ConfigMap, and no reconcile runs or waits. From then on an event can
    // only come from a new write, and the counts below are the resyncs' alone.
    const cms = manager.cache.informer(CONFIGMAP, { namespace: ns }).store;
    await eventually('the cache holds the converged state and the queue is idle', async () => {
      const widgets = c.primary.store.list();
      const converged =
        widgets.length === 20 &&
        widgets.every(
          (w) =>
            w.status?.message === 'x' &&
            w.status.observedGeneration === w.metadata.generation &&
            cms.get(`${ns}/widget-${w.metadata.name}`) !== undefined,
        );
      const idle = c.queue.len === 0 && c.queue.inFlight === 0 && c.queue.delayedLen === 0;
      return converged && idle ? true : undefined;
    });
    const before = { ...writes };
    // Two resync periods: every key is reconciled again, nothing is written.
    await eventually('two resyncs ran', async () =>
      writes.reconciles >= before.reconciles + 40 ? true : undefined,
    );
    assert.equal(writes.configMaps, before.configMaps);
    assert.equal(writes.statuses, before.statuses);
  });

  it('retries a failing reconcile with growing delays, counting each error', async (t) => {
    const ns = await env.namespace(t, 'retry');
    const times: number[] = [];
    const manager = new Manager({ name: 'retry', client: env.admin, logger: quiet });
    const c = manager
      .controller('failing')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => {
        times.push(performance.now());
        if (times.length < 8) throw new Error('not yet');
        return {};
      });
    await env.admin.create({ ...WIDGET, metadata: { name: 'flaky', namespace: ns }, spec: {} });
    await manager.start();
    t.after(() => manager.stop());
    await eventually('eight attempts', async () => (times.length >= 8 ? true : undefined));
    const gaps = times.slice(1).map((x, i) => x - (times[i] ?? 0));
    // 5, 10, 20, 40, 80, 160, 320 ms: each gap at least its backoff (a timer never fires
    // early; 1 ms of slack for timer rounding). Only lower bounds: a loaded machine may
    // stretch any gap, and the exact delays are proven on a fake clock
    // (controller-results.test.ts, workqueue.test.ts).
    const expected = [5, 10, 20, 40, 80, 160, 320];
    for (const [i, g] of gaps.entries())
      assert.ok(g >= (expected[i] ?? 0) - 1, `gap ${i} was ${g.toFixed(1)} ms, below its backoff`);
    assert.equal(
      await metric(manager, 'controller_runtime_reconcile_errors_total', { controller: 'failing' }),
      7,
    );
    assert.equal(await metric(manager, 'workqueue_retries_total', { name: 'failing' }), 7);
    assert.equal(c.queue.numRequeues(`${ns}/flaky`), 0, 'success resets the backoff');
  });

  it('records a terminal error once and does not retry it', async (t) => {
    const ns = await env.namespace(t, 'terminal');
    const writes = newWriteLog();
    const manager = new Manager({ name: 'terminal', client: env.admin, logger: quiet });
    const c = addSampleController(manager, { namespace: ns, writes });
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'doomed', namespace: ns },
      spec: { fail: 'terminal' },
    });
    await manager.start();
    t.after(() => manager.stop());
    // The terminal counter moves when the reconcile's outcome is settled: from then on a
    // retry would be visible in the queue (delayed or queued), not a matter of time.
    await eventually('the terminal error recorded', async () =>
      (await metric(manager, 'controller_runtime_terminal_reconcile_errors_total', {
        controller: 'widgets',
      })) === 1
        ? true
        : undefined,
    );
    assert.equal(writes.reconciles, 1);
    assert.equal(c.queue.delayedLen + c.queue.len, 0, 'no retry is scheduled');
    assert.equal(
      await metric(manager, 'controller_runtime_reconcile_total', { controller: 'widgets', result: 'error' }),
      1,
      'a terminal error is an error, as controller-runtime counts it',
    );
  });
});

after(async () => {
  await env?.close();
});
