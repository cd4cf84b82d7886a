/**
 * Status written by server-side apply on a real apiserver, from a read that a newer
 * status write has since overtaken (an informer a moment behind): unguarded, the forced
 * apply removes what the newer write set; guarded, the apiserver refuses it and the newer
 * status stays whole.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError } from '../src/client/errors.ts';
import { applyStatusIfChanged } from '../src/objects/status.ts';
import { WIDGET, WIDGET_CRD, type Widget } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

const MANAGER = 'kit-status-test';

/** A Widget, the read a reconcile starts from, and that read overtaken by a status write with an ID. */
async function overtaken(ns: string): Promise<{ stale: Widget; name: string }> {
  const created = (await env.admin.create({
    ...WIDGET,
    metadata: { name: 'w', namespace: ns },
    spec: { message: 'hi' },
  })) as Widget;
  // The first reconcile learns an ID and records it in the status.
  await applyStatusIfChanged(env.admin, WIDGET, created, { message: 'id-7' }, MANAGER);
  return { stale: created, name: 'w' };
}

describe('applyStatusIfChanged from a stale read', () => {
  it('unguarded, removes the field the newer write set (why a status holding an ID is written guarded)', async (t) => {
    const ns = await env.namespace(t, 'status-unguarded');
    const { stale, name } = await overtaken(ns);
    // A second reconcile, from the read before the ID, writes only what it knows.
    assert.equal(
      await applyStatusIfChanged(env.admin, WIDGET, stale, { observedGeneration: 1 }, MANAGER),
      true,
    );
    const live = (await env.admin.get(WIDGET, name, ns)) as Widget;
    assert.deepEqual(live.status, { observedGeneration: 1 });
  });

  it('guarded, is refused with Conflict and the newer status stays whole; from a fresh read it is written', async (t) => {
    const ns = await env.namespace(t, 'status-guarded');
    const { stale, name } = await overtaken(ns);
    await assert.rejects(
      applyStatusIfChanged(env.admin, WIDGET, stale, { observedGeneration: 1 }, MANAGER, { guarded: true }),
      (err: unknown) => isApiError(err, ApiErrorReason.Conflict),
    );
    const live = (await env.admin.get(WIDGET, name, ns)) as Widget;
    assert.deepEqual(live.status, { message: 'id-7' });
    // The retry, from a fresh read, keeps the ID and adds what it knows.
    await applyStatusIfChanged(env.admin, WIDGET, live, { ...live.status, observedGeneration: 1 }, MANAGER, {
      guarded: true,
    });
    assert.deepEqual(((await env.admin.get(WIDGET, name, ns)) as Widget).status, {
      message: 'id-7',
      observedGeneration: 1,
    });
  });
});
