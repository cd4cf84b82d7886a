/**
 * Which Scope changes wake the roles in it. Pure: deltas built here by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, StoreDelta } from '@operators/kit';
import { scopeTargetsChanged } from '../src/controllers/predicates.ts';

const scope = (generation: number, status: Record<string, unknown>, deleting = false): KubeObject =>
  ({
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Scope',
    metadata: {
      name: 'team',
      namespace: 'ns',
      generation,
      ...(deleting ? { deletionTimestamp: '2026-12-02T00:00:00Z' } : {}),
    },
    spec: { level: 'namespace', namespaces: ['dev'] },
    status,
  }) as KubeObject;

const updated = (old: KubeObject, object: KubeObject): StoreDelta<KubeObject> => ({
  type: 'updated',
  old,
  object,
});
const rows = (exists: boolean) => [{ cluster: 'fleet/a', namespace: 'dev', exists }];
const base = { clusters: ['fleet/a'], permissions: ['view'], objectsStatus: rows(false) };

describe('scopeTargetsChanged: the Scope changes that move where grants land', () => {
  it('a new role changing only the Scope status permissions list wakes no role', () => {
    assert.equal(
      scopeTargetsChanged(updated(scope(1, base), scope(1, { ...base, permissions: ['edit', 'view'] }))),
      false,
    );
  });

  it('a namespace appearing in a client cluster (objectsStatus) wakes the roles', () => {
    assert.equal(
      scopeTargetsChanged(updated(scope(1, base), scope(1, { ...base, objectsStatus: rows(true) }))),
      true,
    );
  });

  it('a cluster joining or leaving the selection wakes the roles', () => {
    assert.equal(
      scopeTargetsChanged(updated(scope(1, base), scope(1, { ...base, clusters: ['fleet/a', 'fleet/b'] }))),
      true,
    );
  });

  it('a spec change, a deletion starting, a creation and a deletion wake the roles', () => {
    assert.equal(scopeTargetsChanged(updated(scope(1, base), scope(2, base))), true);
    assert.equal(scopeTargetsChanged(updated(scope(1, base), scope(1, base, true))), true);
    assert.equal(scopeTargetsChanged({ type: 'added', object: scope(1, base) }), true);
    assert.equal(scopeTargetsChanged({ type: 'deleted', object: scope(1, base) }), true);
  });
});
