/**
 * Controllers built after the manager started (kinds known only at run time, such as
 * weebo-link's rules) join it: their informers sync, then their workers run; a removed
 * controller reconciles nothing more.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import { CONFIGMAP, WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

describe('a controller built after the manager started', () => {
  it('reconciles the objects that existed before, and later changes; removed, it stops', async (t) => {
    const ns = await env.namespace(t, 'late');
    await env.admin.create({ ...WIDGET, metadata: { name: 'early', namespace: ns }, spec: { message: 'a' } });
    const manager = new Manager({ name: 'late', client: env.admin, logger: pino({ level: 'silent' }) });
    await manager.start();
    t.after(() => manager.stop());

    const seen: string[] = [];
    const c = manager
      .controller('late-widgets')
      .for(WIDGET, { namespace: ns })
      .reconcile(async (req) => {
        seen.push(req.name);
        if (!req.object) return {};
        await manager.client.apply(
          { ...CONFIGMAP, metadata: { name: `late-${req.name}`, namespace: ns }, data: { seen: 'yes' } },
          { fieldManager: 'late', force: true },
        );
        return {};
      });
    await manager.running(c);
    assert.equal(c.primary.store.size, 1, 'the informer has synced before the workers start');
    await eventually('the early widget reconciled', async () =>
      env.admin.find<KubeObject>(CONFIGMAP, 'late-early', ns),
    );

    await env.admin.create({ ...WIDGET, metadata: { name: 'later', namespace: ns }, spec: { message: 'b' } });
    await eventually('the later widget reconciled', async () =>
      env.admin.find<KubeObject>(CONFIGMAP, 'late-later', ns),
    );

    // A witness on the same kind and namespace: once it has reconciled a new Widget, the
    // removed controller would have received the same change (one shared informer,
    // handlers called in turn), so its silence is an observation, not a guess.
    const witnessed: string[] = [];
    const witness = manager
      .controller('witness')
      .for(WIDGET, { namespace: ns })
      .reconcile(async (req) => {
        witnessed.push(req.name);
        return {};
      });
    await manager.running(witness);
    await manager.removeController(c, 1000);
    const before = seen.length;
    await env.admin.create({ ...WIDGET, metadata: { name: 'after', namespace: ns }, spec: { message: 'c' } });
    await eventually('the witness reconciled the new widget', async () =>
      witnessed.includes('after') ? true : undefined,
    );
    assert.equal(seen.length, before, 'a removed controller reconciles nothing');
    assert.equal(c.queue.len + c.queue.inFlight + c.queue.delayedLen, 0, 'nor queues anything');
    assert.equal(await env.admin.find(CONFIGMAP, 'late-after', ns), undefined);
  });
});
