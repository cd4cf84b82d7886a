/**
 * What survives an apiserver outage: a controller converging 1,000 objects while its
 * apiserver restarts, with changes written through a second apiserver meanwhile (as in
 * a rolling upgrade), loses nothing. Readiness reports the stale watch during the
 * outage, and the reflector relists when its resourceVersion is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ControlPlane } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { defaultControllerRateLimiter, KubeClient, Manager, objectKey } from '@operators/kit';
import { pino } from 'pino';
import { httpGet } from './support/http-get.ts';
import {
  addSampleController,
  newWriteLog,
  WIDGET,
  WIDGET_CRD,
  type Widget,
} from './support/sample-operator.ts';

let env: TestEnv & { plane: ControlPlane };
before(async () => {
  env = await privateTestEnv({ log: () => {} });
  await env.installCrds([WIDGET_CRD]);
});
after(async () => {
  await env?.close();
});

/** /readyz's status, or 0 when the endpoint does not answer within 2 s. */
async function readyzStatus(port: number): Promise<number> {
  return (await httpGet(port, '/readyz', { timeoutMs: 2_000 }).catch(() => ({ status: 0 }))).status;
}

async function inBatches<T>(
  items: readonly T[],
  size: number,
  fn: (x: T) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

describe('an apiserver restart in the middle of a run', () => {
  it('loses no update: the store equals a fresh list and every change made during the outage is reconciled', async (t) => {
    const ns = await env.namespace(t, 'outage');
    const N = 1000;
    const names = Array.from({ length: N }, (_, i) => `w${i}`);
    await inBatches(names, 50, (name) =>
      env.admin.create({ ...WIDGET, metadata: { name, namespace: ns }, spec: { message: 'before' } }),
    );

    const writes = newWriteLog();
    const manager = new Manager({
      name: 'outage',
      client: env.admin,
      logger: pino({ level: 'silent' }),
      healthProbe: { port: 0, host: '127.0.0.1' },
      reflector: { staleAfterMs: 1_500 },
    });
    // Retries not held to client-go's 10 a second overall: the keys that failed during the
    // outage (about 700) would otherwise take 70 s to be retried after it, which proves
    // nothing more about losing updates than their retry within seconds does.
    addSampleController(manager, {
      namespace: ns,
      writes,
      concurrency: 8,
      rateLimiter: defaultControllerRateLimiter({ qps: 1_000, burst: 1_000 }),
    });
    await manager.start();
    t.after(() => manager.stop());
    const port = manager.healthProbeEndpoint?.port ?? 0;
    assert.equal(await readyzStatus(port), 200);

    // Mid-run: some widgets converged, others not yet.
    await eventually('a third converged', async () => (writes.statuses >= N / 3 ? true : undefined), 60_000);
    await env.plane.stopApiserver();
    const extra = await env.plane.startExtraApiserver();
    const other = await KubeClient.fromKubeconfigString(extra.kubeconfig);
    const changed = names.slice(0, 100);
    const deleted = names.slice(900, 910);
    const added = Array.from({ length: 10 }, (_, i) => `new${i}`);
    await inBatches(changed, 25, (name) =>
      other.patch(WIDGET, name, ns, { type: 'merge', body: { spec: { message: 'during-outage' } } }),
    );
    await inBatches(deleted, 10, (name) => other.delete(WIDGET, name, ns));
    await inBatches(added, 10, (name) =>
      other.create({
        ...WIDGET,
        metadata: { name, namespace: ns },
        spec: { message: 'added-during-outage' },
      }),
    );
    await eventually(
      'readiness reports the stale watch',
      async () => ((await readyzStatus(port)) === 503 ? true : undefined),
      15_000,
    );

    // Compacting makes every resourceVersion the reflector holds too old: it must relist.
    await env.plane.compactEtcd();
    const relistsBefore = manager.cache.health().reduce((n, h) => n + h.relists, 0);
    await env.plane.startApiserver();
    await extra.stop();
    await other.transport.close();

    await eventually(
      'everything converged',
      async () => {
        const { items } = await env.admin.listAll<Widget>(WIDGET, { namespace: ns });
        if (items.length !== N) return undefined;
        const pending = items.filter(
          (w) =>
            w.status?.message !== w.spec?.message || w.status?.observedGeneration !== w.metadata.generation,
        );
        return pending.length === 0 ? true : undefined;
      },
      90_000,
    );
    await eventually(
      'ready again',
      async () => ((await readyzStatus(port)) === 200 ? true : undefined),
      15_000,
    );

    const fresh = await env.admin.listAll<Widget>(WIDGET, { namespace: ns });
    const store = manager.cache.informer(WIDGET, { namespace: ns }).store;
    await eventually('the store caught up', async () =>
      store.size === fresh.items.length ? true : undefined,
    );
    for (const w of fresh.items) {
      assert.equal(
        store.get(objectKey(w))?.metadata.resourceVersion,
        w.metadata.resourceVersion,
        objectKey(w),
      );
    }
    for (const name of deleted) assert.equal(store.get(`${ns}/${name}`), undefined, `${name} still cached`);
    for (const name of [...changed, ...added]) {
      const cm = await env.admin.get<Widget & { data?: { message?: string } }>(
        { apiVersion: 'v1', kind: 'ConfigMap' },
        `widget-${name}`,
        ns,
      );
      assert.match(cm.data?.message ?? '', /during-outage/, name);
    }
    const relistsAfter = manager.cache.health().reduce((n, h) => n + h.relists, 0);
    assert.ok(
      relistsAfter > relistsBefore,
      'the reflector did not relist after its resourceVersion was compacted away',
    );
  });
});
