/**
 * The Event recorder on a real apiserver: one Event per distinct happening, repeats
 * folded into its series, writes bounded, failures swallowed but counted.
 */
import assert from 'node:assert/strict';
import { before, describe, it, type TestContext } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeClock } from '../src/base/clock.ts';
import type { KubeObject } from '../src/client/types.ts';
import {
  type EventObject,
  EventRecorder,
  type EventRecorderOptions,
  microTime,
} from '../src/objects/events.ts';

const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;
const CONTROLLER = 'kit.example.com/widget-controller';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

async function subject(t: TestContext, name = 'widget-config'): Promise<{ ns: string; obj: KubeObject }> {
  const ns = await env.namespace(t, 'events');
  const obj = await env.admin.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: ns },
  });
  return { ns, obj };
}

async function eventsAbout(ns: string, obj: KubeObject): Promise<EventObject[]> {
  const list = await env.admin.list<EventObject>(EVENT, { namespace: ns });
  return list.items.filter((e) => e.regarding.uid === obj.metadata.uid);
}

function recorder(extra: Partial<EventRecorderOptions> = {}): {
  rec: EventRecorder;
  registry: Registry;
  count: (m: string, op?: string) => Promise<number>;
} {
  const registry = new Registry();
  const rec = new EventRecorder({
    client: env.admin,
    controller: CONTROLLER,
    instance: 'pod-0',
    registry,
    ...extra,
  });
  const count = async (metric: string, operation?: string): Promise<number> => {
    const m = registry.getSingleMetric(metric);
    assert.ok(m, `${metric} is registered`);
    const v = (await m.get()).values.filter(
      (x) => operation === undefined || x.labels.operation === operation,
    );
    return v.reduce((sum, x) => sum + x.value, 0);
  };
  return { rec, registry, count };
}

describe('events: recording', () => {
  it('records one Event regarding the object, with the reporting controller and instance', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec } = recorder();
    rec.event(obj, { type: 'Normal', reason: 'Applied', action: 'Apply', note: 'created the Deployment' });
    await rec.flush();
    const events = await eventsAbout(ns, obj);
    assert.equal(events.length, 1);
    const e = events[0];
    assert.ok(e);
    assert.equal(e.reportingController, CONTROLLER);
    assert.equal(e.reportingInstance, 'pod-0');
    assert.equal(e.type, 'Normal');
    assert.equal(e.reason, 'Applied');
    assert.equal(e.action, 'Apply');
    assert.equal(e.note, 'created the Deployment');
    assert.deepEqual(
      { kind: e.regarding.kind, name: e.regarding.name, namespace: e.regarding.namespace },
      { kind: 'ConfigMap', name: 'widget-config', namespace: ns },
    );
    assert.equal(e.series, undefined);
    assert.match(e.eventTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.match(e.metadata.name ?? '', /^widget-config\.[0-9a-f]+$/);
  });

  it('folds ten repeats into the one Event: series.count 11, in two writes', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec, count } = recorder();
    const warning = {
      type: 'Warning',
      reason: 'ApplyFailed',
      action: 'Apply',
      note: 'quota exceeded',
    } as const;
    rec.event(obj, warning);
    await rec.flush();
    for (let i = 0; i < 10; i++) rec.event(obj, warning);
    await rec.flush();
    const events = await eventsAbout(ns, obj);
    assert.equal(events.length, 1, 'one Event object, not eleven');
    assert.equal(events[0]?.series?.count, 11);
    assert.match(events[0]?.series?.lastObservedTime ?? '', /\.\d{6}Z$/);
    assert.equal(await count('event_recorder_events_total'), 11);
    assert.equal(await count('event_recorder_writes_total', 'create'), 1);
    assert.equal(await count('event_recorder_writes_total', 'patch'), 1);
  });

  it('keeps apart events that differ in type, reason, action, note or related object', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec } = recorder();
    const base = { type: 'Normal', reason: 'Applied', action: 'Apply', note: 'ok' } as const;
    rec.event(obj, base);
    rec.event(obj, { ...base, type: 'Warning' });
    rec.event(obj, { ...base, reason: 'Skipped' });
    rec.event(obj, { ...base, action: 'Delete' });
    rec.event(obj, { ...base, note: 'other' });
    rec.event(obj, {
      ...base,
      related: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', uid: 'u1' } },
    });
    rec.event(obj, base);
    await rec.flush();
    const events = await eventsAbout(ns, obj);
    assert.equal(events.length, 6);
    assert.equal(
      events.filter((e) => e.series?.count === 2).length,
      1,
      'only the exact repeat joined a series',
    );
  });
});

describe('events: bounded writes and memory', () => {
  it('updates a series at most once per interval', async (t) => {
    const { ns, obj } = await subject(t);
    const clock = new FakeClock(Date.now());
    const { rec, count } = recorder({ clock, seriesUpdateIntervalMs: 30_000 });
    const e = { type: 'Warning', reason: 'Unreachable', action: 'Probe' } as const;
    rec.event(obj, e);
    await rec.flush();
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      rec.event(obj, e);
    }
    assert.equal(await count('event_recorder_writes_total', 'patch'), 0, 'not before 30 s after the create');
    clock.advance(25_000);
    await rec.flush(); // waits for the write the timer started; writes nothing itself
    assert.equal(await count('event_recorder_writes_total', 'patch'), 1);
    assert.equal((await eventsAbout(ns, obj))[0]?.series?.count, 6);
    assert.equal(
      (await eventsAbout(ns, obj))[0]?.series?.lastObservedTime,
      microTime(clock.now() - 25_000),
      'the time of the last repeat, not of the write',
    );
  });

  it('starts a new Event for a repeat after the series window', async (t) => {
    const { ns, obj } = await subject(t);
    const clock = new FakeClock(Date.now());
    const { rec } = recorder({ clock, seriesWindowMs: 60_000 });
    const e = { type: 'Normal', reason: 'Resynced', action: 'Sync' } as const;
    rec.event(obj, e);
    clock.advance(60_000);
    rec.event(obj, e);
    await rec.flush();
    assert.equal((await eventsAbout(ns, obj)).length, 1, 'a repeat within the window joins the series');
    clock.advance(60_001);
    rec.event(obj, e);
    await rec.flush();
    const events = await eventsAbout(ns, obj);
    assert.equal(events.length, 2);
    assert.deepEqual(events.map((x) => x.series?.count ?? 1).sort(), [1, 2]);
  });

  it('remembers at most maxSeries series, forgetting the least recently repeated', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec } = recorder({ maxSeries: 2 });
    for (const reason of ['A', 'B', 'A', 'C']) rec.event(obj, { type: 'Normal', reason, action: 'Test' });
    assert.equal(rec.openSeries, 2);
    rec.event(obj, { type: 'Normal', reason: 'B', action: 'Test' }); // B was forgotten: a new Event
    await rec.flush();
    const events = await eventsAbout(ns, obj);
    assert.deepEqual(events.map((e) => `${e.reason}×${e.series?.count ?? 1}`).sort(), [
      'A×2',
      'B×1',
      'B×1',
      'C×1',
    ]);
  });

  it('writes the final count of a pending series on close, then ignores new events', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec, count } = recorder();
    const e = { type: 'Normal', reason: 'Tick', action: 'Sync' } as const;
    rec.event(obj, e);
    await rec.flush();
    rec.event(obj, e);
    rec.event(obj, e);
    await rec.close();
    assert.equal((await eventsAbout(ns, obj))[0]?.series?.count, 3);
    rec.event(obj, e);
    await rec.flush();
    assert.equal(await count('event_recorder_writes_total'), 2);
  });
});

describe('events: failures never reach the reconcile', () => {
  it('logs and counts a failed write instead of throwing', async (t) => {
    const { obj } = await subject(t);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const { rec, count } = recorder({ logger });
    const elsewhere = {
      ...obj,
      metadata: { ...obj.metadata, namespace: 'no-such-namespace-here', uid: 'x' },
    };
    assert.doesNotThrow(() => rec.event(elsewhere, { type: 'Warning', reason: 'Lost', action: 'Apply' }));
    assert.doesNotThrow(() => rec.event(obj, { type: 'Normal', reason: '', action: 'Apply' }));
    await rec.flush();
    assert.equal(await count('event_recorder_failures_total'), 2);
    assert.equal(lines.length, 2);
    const line = JSON.parse(lines[0] ?? '{}') as { msg?: string; controller?: string; regarding?: string };
    assert.equal(line.msg, 'could not record event');
    assert.equal(line.controller, CONTROLLER);
    assert.match(lines.join('\n'), /no-such-namespace-here\/widget-config/);
  });

  it('cuts a note to the 1 kB the apiserver accepts rather than losing the event', async (t) => {
    const { ns, obj } = await subject(t);
    const { rec } = recorder();
    rec.event(obj, { type: 'Warning', reason: 'Verbose', action: 'Apply', note: 'é'.repeat(2000) });
    await rec.flush();
    const [e] = await eventsAbout(ns, obj);
    assert.equal(Buffer.byteLength(e?.note ?? '', 'utf8'), 1024);
  });

  it('refuses at construction a reporting controller or instance the apiserver would refuse', () => {
    assert.throws(
      () => new EventRecorder({ client: env.admin, controller: '', instance: 'p' }),
      /controller/,
    );
    assert.throws(
      () => new EventRecorder({ client: env.admin, controller: 'c', instance: 'p'.repeat(129) }),
      /instance/,
    );
  });
});
