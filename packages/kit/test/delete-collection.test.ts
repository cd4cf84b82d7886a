/**
 * deleteCollection on a real apiserver: one request deletes what the selector matches and
 * nothing else, the answer lists what was deleted, and a call that could delete a whole
 * kind or span namespaces is refused before any request.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError } from '../src/client/errors.ts';
import type { KubeObject } from '../src/client/types.ts';

const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' };

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

async function names(namespace: string): Promise<string[]> {
  return (await env.admin.listAll(CONFIG_MAP, { namespace })).items
    .map((o) => o.metadata.name ?? '')
    .filter((n) => n.startsWith('cm-'))
    .sort();
}

describe('deleteCollection', () => {
  it('deletes in one request what the label selector matches, returns those objects, and leaves the rest', async (t) => {
    const ns = await env.namespace(t, 'delete-collection');
    for (const [name, team] of [
      ['cm-a', 'red'],
      ['cm-b', 'red'],
      ['cm-c', 'red'],
      ['cm-d', 'blue'],
    ] as const) {
      await env.admin.create({
        ...CONFIG_MAP,
        metadata: { name, namespace: ns, labels: { team } },
      } as KubeObject);
    }
    const deleted = await env.admin.deleteCollection(CONFIG_MAP, {
      namespace: ns,
      labelSelector: 'team=red',
    });
    assert.deepEqual(deleted.items.map((o) => o.metadata.name).sort(), ['cm-a', 'cm-b', 'cm-c']);
    assert.deepEqual(await names(ns), ['cm-d']);
    const again = await env.admin.deleteCollection(CONFIG_MAP, { namespace: ns, labelSelector: 'team=red' });
    assert.deepEqual(again.items, []);
  });

  it('refuses a call without a selector, or without the namespace of a namespaced kind, and deletes nothing', async (t) => {
    const ns = await env.namespace(t, 'delete-collection');
    await env.admin.create({ ...CONFIG_MAP, metadata: { name: 'cm-kept', namespace: ns } } as KubeObject);
    await assert.rejects(env.admin.deleteCollection(CONFIG_MAP, { namespace: ns }), (err) =>
      isApiError(err, ApiErrorReason.BadRequest),
    );
    await assert.rejects(env.admin.deleteCollection(CONFIG_MAP, { labelSelector: 'team' }), (err) =>
      isApiError(err, ApiErrorReason.BadRequest),
    );
    assert.deepEqual(await names(ns), ['cm-kept']);
  });
});
