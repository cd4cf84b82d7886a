/**
 * Finalizers on a real apiserver, with writers racing ours between our read and our
 * patch: we never remove or duplicate someone else's finalizer, and never add ours
 * to an object whose deletion has begun.
 */
import assert from 'node:assert/strict';
import { before, describe, it, type TestContext } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '../src/client/types.ts';
import {
  addFinalizer,
  finalizer,
  finalizerLifecycle,
  removeFinalizer,
  validateFinalizerName,
} from '../src/objects/finalizers.ts';

const OURS = 'kit.example.com/cleanup';
const THEIRS = 'other.example.com/protect';
const ALSO = 'third.example.com/hold';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

function obj(finalizers?: string[], deleting = false): KubeObject {
  return {
    ...CM,
    metadata: {
      name: 'x',
      uid: 'u',
      ...(finalizers ? { finalizers } : {}),
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
  };
}

describe('finalizers: the lifecycle decision', () => {
  it('names the four states of (finalizer present, deleting)', () => {
    assert.deepEqual(finalizerLifecycle(obj(), OURS), { kind: 'add' });
    assert.deepEqual(finalizerLifecycle(obj([THEIRS]), OURS), { kind: 'add' });
    assert.deepEqual(finalizerLifecycle(obj([THEIRS, OURS]), OURS), { kind: 'apply' });
    assert.deepEqual(finalizerLifecycle(obj([OURS], true), OURS), { kind: 'cleanup' });
    assert.deepEqual(finalizerLifecycle(obj([THEIRS], true), OURS), { kind: 'nothing' });
    assert.deepEqual(finalizerLifecycle(obj(undefined, true), OURS), { kind: 'nothing' });
  });

  it('refuses finalizer names the apiserver would refuse', () => {
    for (const bad of [
      'cleanup',
      'Example.com/x',
      'example.com/',
      'example.com/has space',
      `a.b/${'x'.repeat(64)}`,
    ]) {
      assert.throws(() => validateFinalizerName(bad), /not domain-qualified/, bad);
    }
    validateFinalizerName(OURS);
  });
});

describe('finalizers: guarded patches on a real apiserver', () => {
  async function configMap(t: TestContext, finalizers?: string[]): Promise<{ ns: string; live: KubeObject }> {
    const ns = await env.namespace(t, 'finalizers');
    const live = await env.admin.create({
      ...CM,
      metadata: { name: 'cm', namespace: ns, ...(finalizers ? { finalizers } : {}) },
    });
    // Objects left with finalizers are stuck; strip them so the namespace holds no leftovers.
    t.after(async () => {
      await env.admin
        .patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: null } } })
        .catch(() => undefined);
    });
    return { ns, live };
  }

  async function finalizersOf(ns: string): Promise<readonly string[] | undefined> {
    const o = await env.admin.find(CM, 'cm', ns);
    return o === undefined ? undefined : (o.metadata.finalizers ?? []);
  }

  it('adds our finalizer, keeping those of others, and adds nothing when it is there already', async (t) => {
    const { ns, live } = await configMap(t, [THEIRS]);
    const added = await addFinalizer(env.admin, live, OURS);
    assert.equal(added.kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [THEIRS, OURS]);
    if (added.kind !== 'patched') return;
    assert.deepEqual(await addFinalizer(env.admin, added.object, OURS), { kind: 'unchanged' });
  });

  it('adds to an object without finalizers', async (t) => {
    const { ns, live } = await configMap(t);
    assert.equal((await addFinalizer(env.admin, live, OURS)).kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [OURS]);
  });

  it('further operations ride in the same patch as the finalizer: one write, and their failed test is a conflict', async (t) => {
    const { ns, live } = await configMap(t);
    const label = { op: 'add', path: '/metadata/labels', value: { claimed: 'yes' } } as const;
    const added = await addFinalizer(env.admin, live, OURS, {
      also: [{ op: 'test', path: '/metadata/labels', value: null }, label],
    });
    assert.equal(added.kind, 'patched');
    const after = await env.admin.get(CM, 'cm', ns);
    assert.deepEqual(after.metadata.finalizers, [OURS]);
    assert.deepEqual(after.metadata.labels, { claimed: 'yes' });

    const { ns: ns2, live: live2 } = await configMap(t);
    await env.admin.patch(CM, 'cm', ns2, { type: 'merge', body: { metadata: { labels: { theirs: 'x' } } } });
    const refused = await addFinalizer(env.admin, live2, OURS, {
      also: [{ op: 'test', path: '/metadata/labels', value: null }, label],
    });
    assert.equal(refused.kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns2), [], 'neither the finalizer nor the label was written');
  });

  it('a finalizer added by someone else between our read and our add is a conflict, not a lost entry', async (t) => {
    const { ns, live } = await configMap(t);
    await env.admin.patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: [THEIRS] } } });
    const stale = await addFinalizer(env.admin, live, OURS);
    assert.equal(stale.kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [THEIRS], 'their write stands, ours was not applied');
    const fresh = await env.admin.get(CM, 'cm', ns);
    assert.equal((await addFinalizer(env.admin, fresh, OURS)).kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [THEIRS, OURS]);
  });

  it('the same finalizer added by a second instance of us meanwhile is a conflict, not a duplicate', async (t) => {
    const { ns, live } = await configMap(t, [THEIRS]);
    assert.equal((await addFinalizer(env.admin, live, OURS)).kind, 'patched');
    assert.equal((await addFinalizer(env.admin, live, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [THEIRS, OURS]);
  });

  it('a finalizer prepended by someone else before our removal is a conflict, and theirs survives', async (t) => {
    const { ns, live } = await configMap(t, [OURS]);
    await env.admin.patch(CM, 'cm', ns, {
      type: 'json',
      body: [{ op: 'add', path: '/metadata/finalizers/0', value: THEIRS }],
    });
    assert.equal((await removeFinalizer(env.admin, live, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [THEIRS, OURS]);
    const fresh = await env.admin.get(CM, 'cm', ns);
    assert.equal((await removeFinalizer(env.admin, fresh, OURS)).kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [THEIRS]);
  });

  it('a finalizer removed by someone else before ours (shifting its index) is a conflict, never a wrong removal', async (t) => {
    const { ns, live } = await configMap(t, [THEIRS, OURS, ALSO]);
    await env.admin.patch(CM, 'cm', ns, {
      type: 'json',
      body: [
        { op: 'test', path: '/metadata/finalizers/0', value: THEIRS },
        { op: 'remove', path: '/metadata/finalizers/0' },
      ],
    });
    // Unguarded, "remove index 1" would now remove ALSO.
    assert.equal((await removeFinalizer(env.admin, live, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [OURS, ALSO]);
  });

  it('a finalizer appended by someone else before our removal is kept, and ours is removed', async (t) => {
    const { ns, live } = await configMap(t, [THEIRS, OURS]);
    await env.admin.patch(CM, 'cm', ns, {
      type: 'json',
      body: [{ op: 'add', path: '/metadata/finalizers/-', value: ALSO }],
    });
    assert.equal((await removeFinalizer(env.admin, live, OURS)).kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [THEIRS, ALSO]);
  });

  it('removes every copy of our finalizer and nothing else', async (t) => {
    const { ns, live } = await configMap(t, [OURS, THEIRS, OURS]);
    assert.equal((await removeFinalizer(env.admin, live, OURS)).kind, 'patched');
    assert.deepEqual(await finalizersOf(ns), [THEIRS]);
    assert.deepEqual(await removeFinalizer(env.admin, await env.admin.get(CM, 'cm', ns), OURS), {
      kind: 'unchanged',
    });
  });

  it('never re-adds our finalizer after removal, even from a read taken before it was first added', async (t) => {
    const { ns, live: early } = await configMap(t, [THEIRS]);
    assert.equal((await addFinalizer(env.admin, early, OURS)).kind, 'patched');
    await env.admin.delete(CM, 'cm', ns);
    const deleting = await env.admin.get(CM, 'cm', ns);
    assert.ok(deleting.metadata.deletionTimestamp, 'the finalizers keep the object while it is deleted');
    assert.equal((await removeFinalizer(env.admin, deleting, OURS)).kind, 'patched');
    // A late reconcile from a stale cache sees the early object: no finalizer, not deleting.
    assert.deepEqual(finalizerLifecycle(early, OURS), { kind: 'add' });
    assert.equal((await addFinalizer(env.admin, early, OURS)).kind, 'conflict');
    const current = await env.admin.get(CM, 'cm', ns);
    assert.equal((await addFinalizer(env.admin, current, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [THEIRS]);
  });

  it('does not touch a new object that reuses the name of the one we read', async (t) => {
    const { ns, live: old } = await configMap(t);
    await env.admin.delete(CM, 'cm', ns);
    await env.admin.create({ ...CM, metadata: { name: 'cm', namespace: ns } });
    // Same name, same (empty) finalizers: only the uid tells the two objects apart.
    assert.equal((await addFinalizer(env.admin, old, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), []);
    await env.admin.patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: [OURS] } } });
    const oldWithOurs = { ...old, metadata: { ...old.metadata, finalizers: [OURS] } };
    assert.equal((await removeFinalizer(env.admin, oldWithOurs, OURS)).kind, 'conflict');
    assert.deepEqual(await finalizersOf(ns), [OURS]);
  });

  it('reports a vanished object as gone', async (t) => {
    const { ns, live } = await configMap(t);
    await env.admin.delete(CM, 'cm', ns);
    assert.deepEqual(await addFinalizer(env.admin, live, OURS), { kind: 'gone' });
  });
});

describe('finalizers: finalizer() through a whole life', () => {
  it('adds the finalizer, applies, cleans up on deletion, then lets the object go', async (t) => {
    const ns = await env.namespace(t, 'finalizer-flow');
    const calls: string[] = [];
    const handlers = {
      apply: async (o: KubeObject) => {
        calls.push(`apply ${o.metadata.finalizers?.join(',')}`);
        return 'applied';
      },
      cleanup: async (o: KubeObject) => {
        calls.push(`cleanup ${o.metadata.deletionTimestamp ? 'deleting' : 'live'}`);
        return 'cleaned';
      },
    };
    let live = await env.admin.create({ ...CM, metadata: { name: 'cm', namespace: ns } });
    const first = await finalizer(env.admin, live, OURS, handlers);
    assert.deepEqual(first, { kind: 'applied', result: 'applied', finalizerAdded: true });

    live = await env.admin.get(CM, 'cm', ns);
    const second = await finalizer(env.admin, live, OURS, handlers);
    assert.deepEqual(second, { kind: 'applied', result: 'applied', finalizerAdded: false });

    await env.admin.delete(CM, 'cm', ns);
    live = await env.admin.get(CM, 'cm', ns);
    assert.deepEqual(await finalizer(env.admin, live, OURS, handlers), {
      kind: 'cleanedUp',
      result: 'cleaned',
    });
    assert.equal(
      await env.admin.find(CM, 'cm', ns),
      undefined,
      'with our finalizer gone the deletion completed',
    );

    // A late reconcile from a cache that still holds the deleting object without our finalizer.
    const late = { ...live, metadata: { ...live.metadata, finalizers: [] } };
    assert.deepEqual(await finalizer(env.admin, late, OURS, handlers), { kind: 'nothing' });
    assert.deepEqual(calls, [`apply ${OURS}`, `apply ${OURS}`, 'cleanup deleting']);
  });

  it('keeps the finalizer when cleanup fails, so the deletion waits for a cleanup that succeeds', async (t) => {
    const ns = await env.namespace(t, 'finalizer-fail');
    await env.admin.create({ ...CM, metadata: { name: 'cm', namespace: ns, finalizers: [OURS] } });
    t.after(async () => {
      await env.admin
        .patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: null } } })
        .catch(() => undefined);
    });
    await env.admin.delete(CM, 'cm', ns);
    const deleting = await env.admin.get(CM, 'cm', ns);
    await assert.rejects(
      finalizer(env.admin, deleting, OURS, {
        apply: async () => undefined,
        cleanup: async () => {
          throw new Error('the external resource is still there');
        },
      }),
      /still there/,
    );
    assert.deepEqual((await env.admin.get(CM, 'cm', ns)).metadata.finalizers, [OURS]);
  });

  it('reports a conflict when the add races another writer, without running apply', async (t) => {
    const ns = await env.namespace(t, 'finalizer-race');
    const stale = await env.admin.create({ ...CM, metadata: { name: 'cm', namespace: ns } });
    t.after(async () => {
      await env.admin
        .patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: null } } })
        .catch(() => undefined);
    });
    await env.admin.patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: [THEIRS] } } });
    let applied = false;
    const out = await finalizer(env.admin, stale, OURS, {
      apply: async () => {
        applied = true;
      },
      cleanup: async () => undefined,
    });
    assert.equal(out.kind, 'conflict');
    assert.equal(out.kind === 'conflict' ? out.step : undefined, 'add');
    assert.equal(applied, false, 'apply never runs without the finalizer in place');
  });
});
