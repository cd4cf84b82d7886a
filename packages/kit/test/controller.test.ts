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
      30_000,
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
    addSampleController(manager, { namespace: ns, writes, resyncMs: 500 });
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
    // the Widget's new status does): wait until writes have settled before counting.
    let settled = -1;
    await eventually('writes settled', async () => {
      const now = writes.statuses + writes.configMaps;
      const done = now === settled;
      settled = now;
      await new Promise((r) => setTimeout(r, 300));
      return done ? true : undefined;
    });
    const before = { ...writes };
    // Two resync periods: every key is reconciled again, nothing is written.
    await eventually(
      'two resyncs ran',
      async () => (writes.reconciles >= before.reconciles + 40 ? true : undefined),
      10_000,
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
    await eventually('eight attempts', async () => (times.length >= 8 ? true : undefined), 15_000);
    const gaps = times.slice(1).map((x, i) => x - (times[i] ?? 0));
    // 5, 10, 20, 40, 80, 160, 320 ms: each at least the backoff, and growing.
    const expected = [5, 10, 20, 40, 80, 160, 320];
    for (const [i, g] of gaps.entries())
      assert.ok(g >= (expected[i] ?? 0) * 0.9, `gap ${i} was ${g.toFixed(1)} ms`);
    assert.ok(
      (gaps[6] ?? 0) > (gaps[1] ?? 0) * 8,
      `delays did not grow: ${gaps.map((g) => g.toFixed(0)).join(', ')}`,
    );
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
    addSampleController(manager, { namespace: ns, writes });
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'doomed', namespace: ns },
      spec: { fail: 'terminal' },
    });
    await manager.start();
    t.after(() => manager.stop());
    await eventually('one attempt', async () => (writes.reconciles >= 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(writes.reconciles, 1, 'a terminal error was retried');
    assert.equal(
      await metric(manager, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'widgets' }),
      1,
    );
  });
});

after(async () => {
  await env?.close();
});
