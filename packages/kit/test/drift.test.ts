/**
 * Drift: an unchanged object is never rewritten, a changed stated field always is;
 * checked by properties over arbitrary objects, and against what a real apiserver
 * returns after a server-side apply (defaults, managedFields, allocated fields).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import fc from 'fast-check';
import type { KubeObject } from '../src/client/types.ts';
import { DriftReason, drift, hasDrifted } from '../src/objects/drift.ts';

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };
type Path = readonly (string | number)[];

const keyArb = fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,5}$/);
const scalarArb = fc.oneof(fc.string({ maxLength: 5 }), fc.integer({ min: -5, max: 100 }), fc.boolean());
const { node: nodeArb } = fc.letrec<{ node: Json; list: Json[]; map: Record<string, Json> }>((tie) => ({
  node: fc.oneof({ depthSize: 'small', maxDepth: 4 }, scalarArb, tie('list'), tie('map')),
  list: fc.array(tie('node'), { maxLength: 3 }),
  map: fc.dictionary(keyArb, tie('node'), { maxKeys: 4 }),
}));
const labelKeyArb = fc.stringMatching(/^[a-z]([a-z0-9./-]{0,10}[a-z0-9])?$/);
const desiredArb: fc.Arbitrary<KubeObject> = fc
  .record({
    labels: fc.dictionary(labelKeyArb, fc.string({ maxLength: 5 }), { maxKeys: 3 }),
    annotations: fc.dictionary(labelKeyArb, fc.string({ maxLength: 8 }), { maxKeys: 2 }),
    spec: fc.dictionary(keyArb, nodeArb, { minKeys: 1, maxKeys: 4 }),
  })
  .map(({ labels, annotations, spec }) => ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'ns', labels, annotations },
    spec,
  }));

const clone = <T>(x: T): T => structuredClone(x);

/** Paths of every node satisfying `pick` under the object's spec, labels and annotations. */
function paths(obj: KubeObject, pick: (v: unknown) => boolean): Path[] {
  const out: Path[] = [];
  const walk = (v: unknown, p: Path): void => {
    if (pick(v)) out.push(p);
    if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) walk(x, [...p, i]);
    } else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) walk(x, [...p, k]);
  };
  walk(obj.spec, ['spec']);
  walk(obj.metadata.labels, ['metadata', 'labels']);
  walk(obj.metadata.annotations, ['metadata', 'annotations']);
  return out;
}

function at(root: unknown, p: Path): unknown {
  return p.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], root);
}

function setAt(root: unknown, p: Path, value: unknown): void {
  const parent = at(root, p.slice(0, -1)) as Record<string | number, unknown>;
  parent[p[p.length - 1] as string | number] = value;
}

const isScalar = (v: unknown): boolean => typeof v !== 'object' || v === null;
const isMap = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

function changed(v: unknown): unknown {
  if (typeof v === 'string') return `${v}~`;
  if (typeof v === 'number') return v + 1;
  return !v;
}

describe('drift: properties', () => {
  it('an object is never drifted from itself', () => {
    fc.assert(fc.property(desiredArb, (d) => assert.deepEqual(drift(d, clone(d)), { drifted: false })));
  });

  it('nor from itself as the apiserver returns it: status, resourceVersion, uid, managedFields added', () => {
    fc.assert(
      fc.property(desiredArb, nodeArb, (d, status) => {
        const live = {
          ...clone(d),
          status,
          metadata: {
            ...clone(d.metadata),
            uid: 'u',
            resourceVersion: '42',
            generation: 3,
            creationTimestamp: '2026-01-01T00:00:00Z',
            managedFields: [{ manager: 'someone', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
          },
        };
        assert.equal(hasDrifted(d, live), false);
        // And a desired object that copies such fields is not drifted by them either.
        assert.equal(
          hasDrifted({ ...d, metadata: { ...d.metadata, resourceVersion: '1' }, status: 1 }, live),
          false,
        );
      }),
    );
  });

  it('a field we do not state never drifts, wherever it is added (server defaults, other managers)', () => {
    fc.assert(
      fc.property(desiredArb, fc.nat(), keyArb, nodeArb, (d, pick, key, value) => {
        const live = clone(d);
        const maps = [[], ...paths(live, isMap)];
        const target = at(live, maps[pick % maps.length] ?? []) as Record<string, unknown>;
        fc.pre(!(key in target));
        target[key] = value;
        assert.equal(hasDrifted(d, live), false);
      }),
    );
  });

  it('changing a stated field drifts, naming where', () => {
    fc.assert(
      fc.property(desiredArb, fc.nat(), (d, pick) => {
        const leaves = paths(d, isScalar);
        fc.pre(leaves.length > 0);
        const p = leaves[pick % leaves.length] ?? [];
        const live = clone(d);
        setAt(live, p, changed(at(d, p)));
        const r = drift(d, live);
        assert.equal(r.drifted, true);
        if (!r.drifted) return;
        assert.equal(r.reason, DriftReason.ValueDiffers);
        const last = String(p[p.length - 1]);
        assert.ok(
          r.path.endsWith(last) ||
            r.path.endsWith(`${JSON.stringify(last)}]`) ||
            r.path.endsWith(`[${last}]`),
        );
      }),
    );
  });

  it('a stated field missing live drifts, unless its value is one the apiserver omits when empty', () => {
    fc.assert(
      fc.property(desiredArb, fc.nat(), (d, pick) => {
        const keyed = paths(d, isScalar).filter((p) => typeof p[p.length - 1] === 'string');
        fc.pre(keyed.length > 0);
        const p = keyed[pick % keyed.length] ?? [];
        const live = clone(d);
        delete (at(live, p.slice(0, -1)) as Record<string, unknown>)[p[p.length - 1] as string];
        const v = at(d, p);
        assert.equal(hasDrifted(d, live), !(v === false || v === 0 || v === ''));
      }),
    );
  });

  it('a stated list that grows or shrinks live drifts: lists are compared as wholes', () => {
    fc.assert(
      fc.property(desiredArb, fc.nat(), scalarArb, (d, pick, extra) => {
        const lists = paths(d, Array.isArray).filter((p) => (at(d, p) as unknown[]).length > 0);
        fc.pre(lists.length > 0);
        const p = lists[pick % lists.length] ?? [];
        const grown = clone(d);
        (at(grown, p) as unknown[]).push(extra);
        const r = drift(d, grown);
        assert.equal(r.drifted ? r.reason : 'in sync', DriftReason.ListDiffers);
        const shrunk = clone(d);
        (at(shrunk, p) as unknown[]).pop();
        assert.equal(hasDrifted(d, shrunk), true);
      }),
    );
  });

  it('with our field manager: a field we applied before and no longer state drifts; one we state does not', () => {
    /** The fieldsV1 tree an apply of `v` would own: maps field by field, lists atomic. */
    const fieldsOf = (v: unknown): Record<string, unknown> =>
      isMap(v)
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>).map(([k, x]) => [`f:${k}`, fieldsOf(x)]),
          )
        : {};
    fc.assert(
      fc.property(desiredArb, fc.nat(), (d, pick) => {
        const owned = {
          'f:metadata': { 'f:labels': fieldsOf(d.metadata.labels) },
          'f:spec': fieldsOf(d.spec),
        };
        const live = {
          ...clone(d),
          metadata: {
            ...clone(d.metadata),
            managedFields: [{ manager: 'us', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: owned }],
          },
        };
        assert.equal(hasDrifted(d, live, { fieldManager: 'us' }), false);
        const keys = Object.keys(d.spec as object);
        const dropped = keys[pick % keys.length] ?? '';
        const next = clone(d) as KubeObject & { spec: Record<string, unknown> };
        delete next.spec[dropped];
        assert.equal(hasDrifted(next, live), false, 'without the field manager, not noticed');
        const r = drift(next, live, { fieldManager: 'us' });
        assert.deepEqual(r, { drifted: true, reason: DriftReason.FieldDropped, path: `spec.${dropped}` });
        assert.equal(hasDrifted(next, live, { fieldManager: 'someone-else' }), false);
      }),
    );
  });
});

describe('drift: metadata', () => {
  const desired: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'c',
      namespace: 'ns',
      labels: { 'app.kubernetes.io/name': 'web' },
      finalizers: ['ours.example.com/f'],
      ownerReferences: [{ apiVersion: 'v1', kind: 'Owner', name: 'o', uid: 'u1', controller: true }],
    },
    data: { a: '1' },
  };

  it('is Absent when there is no live object', () => {
    assert.deepEqual(drift(desired, undefined), { drifted: true, reason: DriftReason.Absent, path: '' });
  });

  it('compares labels key by key: others may add theirs, ours must hold', () => {
    const live = clone(desired) as KubeObject & { metadata: { labels: Record<string, string> } };
    live.metadata.labels.team = 'x';
    assert.equal(hasDrifted(desired, live), false);
    live.metadata.labels['app.kubernetes.io/name'] = 'api';
    assert.deepEqual(drift(desired, live), {
      drifted: true,
      reason: DriftReason.ValueDiffers,
      path: 'metadata.labels["app.kubernetes.io/name"]',
    });
  });

  it('finalizers and owner references others add do not drift; ours missing does', () => {
    const live = {
      ...clone(desired),
      metadata: {
        ...clone(desired.metadata),
        finalizers: ['theirs.example.com/f', 'ours.example.com/f'],
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Other', name: 'x', uid: 'u0' },
          {
            apiVersion: 'v1',
            kind: 'Owner',
            name: 'o',
            uid: 'u1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
    };
    assert.equal(hasDrifted(desired, live), false);
    assert.equal(
      drift(desired, { ...live, metadata: { ...live.metadata, finalizers: ['theirs.example.com/f'] } })
        .drifted,
      true,
    );
    const otherOwner = {
      ...live,
      metadata: { ...live.metadata, ownerReferences: [{ ...desiredRef(), uid: 'u9' }] },
    };
    assert.equal(hasDrifted(desired, otherOwner), true);
  });

  function desiredRef(): { apiVersion: string; kind: string; name: string; uid: string } {
    return { apiVersion: 'v1', kind: 'Owner', name: 'o', uid: 'u1' };
  }
});

describe('drift: against what a real apiserver returns', () => {
  let env: TestEnv;
  const MANAGER = 'kit-drift-test';
  before(async () => {
    env = await testEnv();
  });

  function deployment(ns: string): KubeObject {
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns, labels: { app: 'web', tier: 'front' } },
      spec: {
        replicas: 2,
        paused: false,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              {
                name: 'app',
                image: 'registry.example/web:1.0',
                workingDir: '/srv',
                ports: [{ containerPort: 8080 }],
                env: [{ name: 'MODE', value: 'prod' }],
                resources: { limits: { memory: '128Mi' } },
              },
            ],
            nodeSelector: {},
          },
        },
      },
    };
  }

  it('an applied object read back is in sync despite defaults and managedFields; applying it again is a no-op', async (t) => {
    const ns = await env.namespace(t, 'drift');
    const desired = deployment(ns);
    const live = await env.admin.apply(desired, { fieldManager: MANAGER });
    const spec = live.spec as { template: { spec: { containers: Record<string, unknown>[] } } };
    assert.ok(spec.template.spec.containers[0]?.terminationMessagePath, 'the apiserver filled in defaults');
    assert.deepEqual(drift(desired, live, { fieldManager: MANAGER }), { drifted: false });
    const again = await env.admin.apply(desired, { fieldManager: MANAGER });
    assert.equal(
      again.metadata.resourceVersion,
      live.metadata.resourceVersion,
      'in sync meant nothing to write',
    );
  });

  it('a Service with allocated clusterIP and defaulted port fields is in sync', async (t) => {
    const ns = await env.namespace(t, 'drift-svc');
    const desired: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }] },
    };
    const live = await env.admin.apply(desired, { fieldManager: MANAGER });
    assert.ok((live.spec as { clusterIP?: string }).clusterIP);
    assert.deepEqual(drift(desired, live, { fieldManager: MANAGER }), { drifted: false });
  });

  it('another manager changing a field we state is drift, at that field', async (t) => {
    const ns = await env.namespace(t, 'drift-other');
    const desired = deployment(ns);
    await env.admin.apply(desired, { fieldManager: MANAGER });
    const live = await env.admin.patch(
      { apiVersion: 'apps/v1', kind: 'Deployment' },
      'web',
      ns,
      { type: 'merge', body: { spec: { replicas: 5 } } },
      { fieldManager: 'kubectl-scale' },
    );
    assert.deepEqual(drift(desired, live, { fieldManager: MANAGER }), {
      drifted: true,
      reason: DriftReason.ValueDiffers,
      path: 'spec.replicas',
    });
  });

  it('a label and a keyed list element field we stop stating are drift only with our field manager', async (t) => {
    const ns = await env.namespace(t, 'drift-drop');
    const first = deployment(ns);
    const live = await env.admin.apply(first, { fieldManager: MANAGER });
    const next = deployment(ns) as KubeObject & {
      metadata: { labels: Record<string, string> };
      spec: { template: { spec: { containers: Record<string, unknown>[] } } };
    };
    delete next.metadata.labels.tier;
    assert.equal(hasDrifted(next, live), false);
    assert.deepEqual(drift(next, live, { fieldManager: MANAGER }), {
      drifted: true,
      reason: DriftReason.FieldDropped,
      path: 'metadata.labels.tier',
    });
    next.metadata.labels.tier = 'front';
    const container = next.spec.template.spec.containers[0];
    if (container) delete container.workingDir;
    assert.deepEqual(drift(next, live, { fieldManager: MANAGER }), {
      drifted: true,
      reason: DriftReason.FieldDropped,
      path: 'spec.template.spec.containers[{"name":"app"}].workingDir',
    });
    const applied = await env.admin.apply(next, { fieldManager: MANAGER });
    assert.equal((applied.spec as typeof next.spec).template.spec.containers[0]?.workingDir, undefined);
    assert.deepEqual(drift(next, applied, { fieldManager: MANAGER }), { drifted: false });
  });
});
