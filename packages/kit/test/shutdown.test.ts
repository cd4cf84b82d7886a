/**
 * A stopped operator exits in seconds whatever its apiserver does: with the apiserver
 * hung (connections accepted, nothing answered, as one that is shutting down too), the
 * final event flush, the lease release and the closing watches are each abandoned after
 * their bound, with a log line, instead of waiting out a 30 s request timeout. The same
 * bound holds when the apiserver is being stopped at the same moment, as a Ctrl-C to the
 * process group of `npm run up` does.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  EVENT_FLUSH_TIMEOUT_MS,
  EventType,
  Manager,
  RELEASE_TIMEOUT_MS,
  STOP_STEP_TIMEOUT_MS,
} from '@operators/kit';
import { pino } from 'pino';
import { sickProxy } from './support/proxy.ts';
import { WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

describe('shutdown', () => {
  it('finishes within its step bounds when the apiserver hangs, dropping the pending events with a log line', async (t) => {
    const ns = await env.namespace(t, 'hungstop');
    await env.admin.create({ ...WIDGET, metadata: { name: 'w', namespace: ns }, spec: {} });
    const proxy = await sickProxy(env.kubeconfigPath, env.admin.transport.server);
    t.after(() => proxy.close());
    const lines: { msg?: string; dropped?: number }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const manager = new Manager({
      name: 'hungstop',
      client: await proxy.client(),
      logger: pino({ level: 'info' }, sink),
      healthProbe: { port: 0, host: '127.0.0.1' },
      leaderElection: {
        namespace: ns,
        identity: 'only',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
    const controller = manager
      .controller('widgets')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => ({}));
    await manager.start();
    t.after(() => manager.stop());
    await eventually('leading', async () => (manager.isLeader ? true : undefined));
    const widget = await eventually('widget cached', async () => controller.primary.store.get(`${ns}/w`));

    proxy.freeze();
    for (let i = 0; i < 5; i++) {
      manager.recorder.event(widget, {
        type: EventType.Normal,
        reason: `Step${i}`,
        action: 'Test',
        note: 'pending',
      });
    }
    const t0 = Date.now();
    await manager.stop();
    const took = Date.now() - t0;
    // The steps after the drain (none in flight here), one after the other: the event
    // flush, the lease release, then runnables and watches; one more second of slack.
    const bound = EVENT_FLUSH_TIMEOUT_MS + RELEASE_TIMEOUT_MS + STOP_STEP_TIMEOUT_MS + 1_000;
    t.diagnostic(`stop took ${took} ms against a hung apiserver (bound ${bound} ms)`);
    assert.ok(took < bound, `stop took ${took} ms`);
    assert.equal(await manager.done, 'Stopped');
    const dropped = lines.find((l) => l.msg?.includes('final events') && l.msg.includes('dropped'));
    assert.equal(dropped?.dropped, 5, 'the dropped events were not reported');
  });
  it('finishes within its step bounds while the apiserver shuts down beside it (a Ctrl-C to the whole process group)', async (t) => {
    const own = await privateTestEnv({ log: () => {} });
    t.after(() => own.close());
    await own.installCrds([WIDGET_CRD]);
    const ns = await own.namespace({ after: () => {} }, 'dying');
    await own.admin.create({ ...WIDGET, metadata: { name: 'w', namespace: ns }, spec: {} });
    const manager = new Manager({
      name: 'dying',
      client: own.admin,
      logger: pino({ level: 'silent' }),
      leaderElection: {
        namespace: ns,
        identity: 'only',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
    const controller = manager
      .controller('widgets')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => ({}));
    await manager.start();
    t.after(() => manager.stop());
    await eventually('leading', async () => (manager.isLeader ? true : undefined));
    const widget = await eventually('widget cached', async () => controller.primary.store.get(`${ns}/w`));

    const apiserverDown = own.plane.stopApiserver();
    for (let i = 0; i < 5; i++) {
      manager.recorder.event(widget, { type: EventType.Warning, reason: `Step${i}`, action: 'Test' });
    }
    const t0 = Date.now();
    await manager.stop();
    const took = Date.now() - t0;
    await apiserverDown;
    const bound = EVENT_FLUSH_TIMEOUT_MS + RELEASE_TIMEOUT_MS + STOP_STEP_TIMEOUT_MS + 1_000;
    t.diagnostic(`stop took ${took} ms beside a stopping apiserver (bound ${bound} ms)`);
    assert.ok(took < bound, `stop took ${took} ms`);
    assert.equal(await manager.done, 'Stopped');
  });
});
