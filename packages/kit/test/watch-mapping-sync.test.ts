/**
 * A watch's mapper may read the controller's other caches (controller-runtime's
 * EnqueueRequestsFromMapFunc listing from its cache): the controller maps a watched
 * kind's events only once every cache it declares has synced, so a mapper never meets
 * `CacheNotSyncedError`, and no event that arrived before the sync is lost.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type Controller, type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import { CONFIGMAP, WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const CONFIG_ANNOTATION = 'kit.test.io/config';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

describe('a watch whose mapper reads another cache', () => {
  it('maps events that arrive before that cache syncs once it has: no error, no request lost', async (t) => {
    const ns = await env.namespace(t, 'map-sync');
    // A Secret names a ConfigMap, the ConfigMap names the Widget it concerns. `ghost`'s
    // Widget is gone: only the mapping of its Secret's event asks for the reconcile that
    // would clean up after it (the start-up pass reconciles only the Widgets cached).
    await env.admin.create({ ...WIDGET, metadata: { name: 'w1', namespace: ns }, spec: { message: 'a' } });
    for (const name of ['w1', 'ghost']) {
      await env.admin.create({
        ...CONFIGMAP,
        metadata: { name: `cfg-${name}`, namespace: ns },
        data: { widget: name },
      });
      await env.admin.create({
        ...SECRET,
        metadata: { name: `s-${name}`, namespace: ns, annotations: { [CONFIG_ANNOTATION]: `cfg-${name}` } },
      });
    }

    const lines: string[] = [];
    const manager = new Manager({
      name: 'map-sync',
      client: env.admin,
      logger: pino({ level: 'warn' }, { write: (l: string) => lines.push(l) }),
    });
    const configMaps = manager.cache.informer<KubeObject & { data?: Record<string, string> }>(CONFIGMAP, {
      namespace: ns,
    });
    const seen = new Set<string>();
    manager
      .controller('map-sync')
      .for(WIDGET, { namespace: ns })
      // Declared so that the controller waits for the ConfigMap cache its mapper reads;
      // these ConfigMaps have no owner, so their own events map to no Widget.
      .owns(CONFIGMAP, { namespace: ns })
      .watches(
        SECRET,
        (s: KubeObject) => {
          const cm = configMaps.store.get(`${ns}/${s.metadata.annotations?.[CONFIG_ANNOTATION]}`);
          return cm?.data?.widget ? [`${ns}/${cm.data.widget}`] : [];
        },
        { namespace: ns },
      )
      .reconcile(async (req) => {
        seen.add(req.name);
        return {};
      });

    // The Secrets' list arrives first and the ConfigMaps' later, as one informer outruns
    // another at start-up: the Secret informer is started (and synced) ahead of the others.
    const secrets = manager.cache.informer(SECRET, { namespace: ns });
    secrets.start();
    await secrets.ready();
    await manager.start();
    t.after(() => manager.stop());

    await eventually(
      'both Widgets reconciled, the one gone included',
      async () => (seen.has('w1') && seen.has('ghost') ? true : undefined),
      5_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; reconciled: ${[...seen].join(', ')}; logged: ${lines.join('')}`);
    });
    assert.deepEqual(errorsIn(lines), [], 'no mapper read an unsynced cache');
  });

  it('lets a mapper list the primary cache (the objects in a namespace) from the first event on, and after', async (t) => {
    const ns = await env.namespace(t, 'map-primary');
    await env.admin.create({ ...WIDGET, metadata: { name: 'w1', namespace: ns }, spec: { message: 'a' } });
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'settings', namespace: ns }, data: { x: '1' } });

    const lines: string[] = [];
    const manager = new Manager({
      name: 'map-primary',
      client: env.admin,
      logger: pino({ level: 'warn' }, { write: (l: string) => lines.push(l) }),
    });
    const reconciles = new Map<string, number>();
    const controller: Controller = manager
      .controller('map-primary')
      .for(WIDGET, { namespace: ns })
      // Every Widget of the ConfigMap's namespace, as EdgeSite's Service mapper does.
      .watches(
        CONFIGMAP,
        (cm: KubeObject): string[] =>
          controller.primary.store
            .list()
            .filter((w) => w.metadata.namespace === cm.metadata.namespace)
            .map((w) => `${ns}/${w.metadata.name}`),
        { namespace: ns },
      )
      .reconcile(async (req) => {
        reconciles.set(req.name, (reconciles.get(req.name) ?? 0) + 1);
        return {};
      });

    // The ConfigMaps' list arrives before the Widgets' one.
    const configMaps = manager.cache.informer(CONFIGMAP, { namespace: ns });
    configMaps.start();
    await configMaps.ready();
    await manager.start();
    t.after(() => manager.stop());
    await eventually('w1 reconciled at start', async () => (reconciles.get('w1') ? true : undefined));

    // Once synced, a change maps at once.
    await new Promise((r) => setTimeout(r, 200));
    const before = reconciles.get('w1') ?? 0;
    await env.admin.patch(CONFIGMAP, 'settings', ns, { type: 'merge', body: { data: { x: '2' } } });
    await eventually('the ConfigMap change mapped to w1', async () =>
      (reconciles.get('w1') ?? 0) > before ? true : undefined,
    );
    assert.deepEqual(errorsIn(lines), [], 'no mapper read an unsynced cache');
  });
});

/** The log lines at level error or above. */
function errorsIn(lines: readonly string[]): string[] {
  return lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50);
}
