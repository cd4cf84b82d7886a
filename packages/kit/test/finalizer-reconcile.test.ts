/**
 * `finalizerReconcile` on a real apiserver: each outcome of `finalizer()` becomes the
 * result a controller returns, and a stale read is thrown so that it is retried.
 */
import assert from 'node:assert/strict';
import { before, describe, it, type TestContext } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '../src/client/types.ts';
import { finalizerReconcile } from '../src/control/finalizer-reconcile.ts';

const NAME = 'kit.example.com/reconcile';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

/** A ConfigMap in a fresh namespace, freed of any finalizer when the test ends. */
async function created(t: TestContext, prefix: string): Promise<{ ns: string; obj: KubeObject }> {
  const ns = await env.namespace(t, prefix);
  const obj = await env.admin.create({ ...CM, metadata: { name: 'cm', namespace: ns } });
  t.after(() =>
    env.admin.patch(CM, 'cm', ns, { type: 'merge', body: { metadata: { finalizers: null } } }).then(
      () => undefined,
      () => undefined,
    ),
  );
  return { ns, obj };
}

describe('finalizerReconcile', () => {
  it("answers apply's result while live, nothing once cleaned up or no longer ours", async (t) => {
    const { ns, obj } = await created(t, 'fin-reconcile');
    const cleaned: string[] = [];
    const handlers = {
      apply: async () => ({ requeueAfterMs: 5000 }),
      cleanup: async (o: KubeObject) => {
        cleaned.push(o.metadata.name ?? '');
      },
    };
    assert.deepEqual(await finalizerReconcile(env.admin, obj, NAME, handlers), { requeueAfterMs: 5000 });
    await env.admin.delete(CM, 'cm', ns);
    const deleting = await env.admin.get(CM, 'cm', ns);
    assert.deepEqual(await finalizerReconcile(env.admin, deleting, NAME, handlers), {});
    assert.deepEqual(cleaned, ['cm']);
    const stale = { ...deleting, metadata: { ...deleting.metadata, finalizers: [] } };
    assert.deepEqual(await finalizerReconcile(env.admin, stale, NAME, handlers), {});
    assert.deepEqual(cleaned, ['cm'], 'no cleanup once the finalizer is gone');
  });

  it('throws on a stale read, so the controller retries on a fresh one', async (t) => {
    const { ns, obj } = await created(t, 'fin-reconcile-stale');
    await env.admin.patch(CM, 'cm', ns, {
      type: 'merge',
      body: { metadata: { finalizers: ['other.example.com/hold'] } },
    });
    await assert.rejects(
      finalizerReconcile(env.admin, obj, NAME, {
        apply: async () => assert.fail('apply runs only with the finalizer in place'),
        cleanup: async () => undefined,
      }),
      /changed since it was read/,
    );
  });

  it('answers nothing for an object gone before the finalizer was added', async (t) => {
    const { ns, obj } = await created(t, 'fin-reconcile-gone');
    await env.admin.delete(CM, 'cm', ns);
    const answer = await finalizerReconcile(env.admin, obj, NAME, {
      apply: async () => assert.fail('nothing to apply to'),
      cleanup: async () => undefined,
    });
    assert.deepEqual(answer, {});
  });
});
