/**
 * The manager's remaining promises: a `watches()` source maps any object to primary keys;
 * a metadata-only informer caches names, labels and owners without the payload; a
 * graceful stop lets an in-flight reconcile finish, and aborts one that outlives the
 * shutdown deadline; the endpoint serves health, readiness and metrics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type Controller, type KubeObject, Manager, Reflector, STOP_STEP_TIMEOUT_MS } from '@operators/kit';
import { pino } from 'pino';
import { httpGet } from './support/http-get.ts';
import { WIDGET, WIDGET_CRD, type Widget } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});
after(async () => {
  await env?.close();
});

const quiet = pino({ level: 'silent' });
const SECRET = { apiVersion: 'v1', kind: 'Secret' };
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };

describe('the manager', () => {
  it('maps a watched Secret to the Widgets that reference it', async (t) => {
    const ns = await env.namespace(t, 'watches');
    const seen: string[] = [];
    const manager = new Manager({ name: 'watches', client: env.admin, logger: quiet });
    const c: Controller = manager
      .controller('widgets-by-secret')
      .for(WIDGET, { namespace: ns })
      .watches<KubeObject>(
        SECRET,
        (secret) =>
          c.primary.store
            .list()
            .filter((w) => (w as Widget).spec?.message === secret.metadata.name)
            .map((w) => `${w.metadata.namespace}/${w.metadata.name}`),
        { namespace: ns },
      )
      .reconcile(async (req) => {
        seen.push(req.name);
        return {};
      });
    for (const [name, message] of [
      ['uses-a', 'token-a'],
      ['uses-b', 'token-b'],
      ['sentinel', 'token-z'],
    ]) {
      await env.admin.create({ ...WIDGET, metadata: { name, namespace: ns }, spec: { message } });
    }
    await manager.start();
    t.after(() => manager.stop());
    await eventually('initial reconciles', async () => (seen.length >= 3 ? true : undefined));
    seen.length = 0;
    await env.admin.create({
      ...SECRET,
      metadata: { name: 'token-a', namespace: ns },
      stringData: { t: 'x' },
    });
    // A second Secret, referenced by the sentinel only: the queue is FIFO with one
    // worker, so once the sentinel is reconciled every key token-a mapped to has been too.
    await env.admin.create({
      ...SECRET,
      metadata: { name: 'token-z', namespace: ns },
      stringData: { t: 'x' },
    });
    await eventually('the sentinel is reconciled', async () =>
      seen.includes('sentinel') ? true : undefined,
    );
    assert.deepEqual(seen, ['uses-a', 'sentinel'], 'only the widgets that reference each Secret');
  });

  it('caches only metadata in metadata-only mode', async (t) => {
    const ns = await env.namespace(t, 'metaonly');
    await env.admin.create({
      ...CONFIGMAP,
      metadata: { name: 'big', namespace: ns, labels: { a: 'b' } },
      data: { payload: 'x'.repeat(5000) },
    });
    const r = new Reflector({
      client: env.admin,
      gvk: CONFIGMAP,
      namespace: ns,
      metadataOnly: true,
      log: quiet,
    });
    r.start();
    t.after(() => r.stop());
    await r.waitForSync();
    const cached = r.store.get(`${ns}/big`);
    assert.equal(cached?.metadata.labels?.a, 'b');
    assert.equal((cached as { data?: unknown } | undefined)?.data, undefined, 'the payload was cached');
    await env.admin.create({
      ...CONFIGMAP,
      metadata: { name: 'later', namespace: ns },
      data: { payload: 'y' },
    });
    await eventually('watched in metadata-only mode too', async () =>
      r.store.get(`${ns}/later`) ? true : undefined,
    );
    assert.equal((r.store.get(`${ns}/later`) as { data?: unknown } | undefined)?.data, undefined);
  });

  it('a graceful stop waits for an in-flight reconcile, and aborts one that outlives the deadline', async (t) => {
    const ns = await env.namespace(t, 'drain');
    await env.admin.create({ ...WIDGET, metadata: { name: 'slow', namespace: ns }, spec: {} });
    let finished = false;
    let aborted = false;
    const manager = new Manager({
      name: 'drain',
      client: env.admin,
      logger: quiet,
      shutdownTimeoutMs: 1_000,
    });
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    manager
      .controller('slow')
      .for(WIDGET, { namespace: ns })
      .reconcile(async (_req, { signal }) => {
        started();
        await new Promise((r) => setTimeout(r, 500));
        finished = true;
        await new Promise((r) => {
          const timer = setTimeout(r, 5_000);
          signal.addEventListener('abort', () => {
            aborted = true;
            clearTimeout(timer);
            r(undefined);
          });
        });
        return {};
      });
    await manager.start();
    await running;
    const t0 = Date.now();
    await manager.stop();
    const took = Date.now() - t0;
    assert.ok(finished, 'the in-flight reconcile was cut short before the deadline');
    assert.ok(aborted, 'the reconcile past the deadline was not told to abort');
    // At least the deadline; at most the deadline plus the bounded steps that follow it
    // (event flush, lease release, then runnables and watches).
    assert.ok(
      took >= 900 && took < 1_000 + 3 * STOP_STEP_TIMEOUT_MS,
      `stop took ${took} ms with a 1 s deadline`,
    );
    assert.equal(await manager.done, 'Stopped');
  });

  it('serves /healthz, /readyz and /metrics with the controller metrics', async (t) => {
    const ns = await env.namespace(t, 'endpoint');
    const manager = new Manager({
      name: 'endpoint',
      client: env.admin,
      logger: quiet,
      healthProbe: { port: 0, host: '127.0.0.1' },
      metrics: { port: 0 },
    });
    manager
      .controller('widgets')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => ({}));
    await manager.start();
    t.after(() => manager.stop());
    const port = manager.healthProbeEndpoint?.port ?? 0;
    // /healthz failing and recovering is proven with a user check in health-and-metrics.test.ts.
    assert.equal((await httpGet(port, '/readyz')).status, 200);
    const metrics = (await httpGet(manager.metricsEndpoint?.port ?? 0, '/metrics')).body;
    for (const name of [
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_time_seconds',
      'workqueue_depth',
      'workqueue_adds_total',
      'leader_election_master_status',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
  });
});
