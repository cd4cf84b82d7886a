/** Owner references: built from an owner read from the apiserver, matched by UID. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KubeObject, OwnerReference } from '../src/client/types.ts';
import {
  claimController,
  controllerOf,
  controllerReference,
  isControlledBy,
  isOwnedBy,
  ownerReference,
} from '../src/objects/owner-references.ts';

const owner: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns', uid: 'uid-w' },
};

/** A ConfigMap in `ns`, or cluster-scoped when `namespace` is null. */
function dependent(refs?: OwnerReference[], namespace: string | null = 'ns'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: namespace ?? undefined, ...(refs ? { ownerReferences: refs } : {}) },
  };
}

const other: OwnerReference = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd', uid: 'uid-d' };

describe('owner references', () => {
  it('a controller reference names the owner by apiVersion, kind, name and uid, and blocks its deletion', () => {
    assert.deepEqual(controllerReference(owner), {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      name: 'w',
      uid: 'uid-w',
      controller: true,
      blockOwnerDeletion: true,
    });
    assert.deepEqual(ownerReference(owner), {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      name: 'w',
      uid: 'uid-w',
    });
  });

  it('refuses an owner without uid (one not yet created), naming it', () => {
    const unsaved = { ...owner, metadata: { name: 'w', namespace: 'ns' } };
    assert.throws(() => controllerReference(unsaved), /Widget w .*uid/);
  });

  it('ownership is by uid: a recreated owner of the same name does not own the old dependents', () => {
    const dep = dependent([controllerReference(owner)]);
    assert.equal(isOwnedBy(dep, owner), true);
    assert.equal(isControlledBy(dep, owner), true);
    const recreated = { ...owner, metadata: { ...owner.metadata, uid: 'uid-w2' } };
    assert.equal(isOwnedBy(dep, recreated), false);
    assert.equal(isControlledBy(dep, recreated), false);
  });

  it('a plain owner reference owns but does not control', () => {
    const dep = dependent([ownerReference(owner)]);
    assert.equal(isOwnedBy(dep, owner), true);
    assert.equal(isControlledBy(dep, owner), false);
    assert.equal(controllerOf(dep), undefined);
  });

  it('controllerOf finds the one reference marked controller among others', () => {
    const dep = dependent([other, controllerReference(owner)]);
    assert.equal(controllerOf(dep)?.uid, 'uid-w');
    assert.equal(controllerOf(dependent()), undefined);
  });
});

describe('owner references: claiming control', () => {
  it('claims an unowned dependent, keeping its other owners', () => {
    const claim = claimController(dependent([other]), owner);
    assert.deepEqual(claim, { kind: 'claimed', ownerReferences: [other, controllerReference(owner)] });
  });

  it('refuses a dependent controlled by someone else', () => {
    const theirs = { ...other, controller: true };
    assert.deepEqual(claimController(dependent([theirs]), owner), {
      kind: 'controlledByOther',
      controller: theirs,
    });
  });

  it('refuses across namespaces and from a namespaced owner to a cluster-scoped dependent', () => {
    const inOther = claimController(dependent([], 'elsewhere'), owner);
    assert.equal(inOther.kind, 'invalidScope');
    assert.match(inOther.kind === 'invalidScope' ? inOther.message : '', /namespace elsewhere/);
    assert.equal(claimController(dependent([], null), owner).kind, 'invalidScope');
    const clusterOwner = { ...owner, metadata: { name: 'c', uid: 'uid-c' } };
    assert.equal(claimController(dependent([], 'ns'), clusterOwner).kind, 'claimed');
  });

  it('property: claiming twice is claiming once, and the claimant is then the only controller', () => {
    const refArb = fc.record({
      apiVersion: fc.constantFrom('v1', 'apps/v1'),
      kind: fc.constantFrom('Service', 'Deployment'),
      name: fc.string({ minLength: 1, maxLength: 5 }),
      uid: fc.uuid(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(refArb, { selector: (r) => r.uid, maxLength: 4 }), (refs) => {
        const first = claimController(dependent(refs), owner);
        assert.equal(first.kind, 'claimed');
        if (first.kind !== 'claimed') return;
        const claimed = dependent([...first.ownerReferences]);
        assert.deepEqual(claimController(claimed, owner), first);
        assert.equal(controllerOf(claimed)?.uid, owner.metadata.uid);
        assert.equal(claimed.metadata.ownerReferences?.filter((r) => r.controller).length, 1);
        for (const r of refs)
          assert.ok(claimed.metadata.ownerReferences?.includes(r), 'other owners are kept');
      }),
    );
  });
});
