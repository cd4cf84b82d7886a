/**
 * The sweep's decision (src/domain/sweep.ts): which labelled objects have lost their
 * owner. Examples written out by hand; generated inputs against a naive oracle written
 * here, and the safety property that nothing without every one of our labels, exactly,
 * is ever an orphan.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import fc from 'fast-check';
import { labelSafe } from '../src/domain/names.ts';
import { type LiveOwner, orphans } from '../src/domain/sweep.ts';

const MANAGED = 'app.kubernetes.io/managed-by';
const KIND = 'permissions.shturval.tech/owner-kind';
const NS = 'permissions.shturval.tech/owner-namespace';
const NAME = 'permissions.shturval.tech/owner-name';
const UID = 'permissions.shturval.tech/owner-uid';

function obj(name: string, labels?: Record<string, string>): KubeObject {
  return { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, labels } };
}

function ours(
  kind: string,
  ns: string,
  owner: string,
  uid: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    [MANAGED]: 'permissions.shturval.tech',
    [KIND]: kind,
    [NS]: ns,
    [NAME]: owner,
    [UID]: uid,
    ...extra,
  };
}

const ALICE: LiveOwner = { kind: 'UserRole', namespace: 'acme', name: 'alice', uid: 'u-1' };

describe('orphans', () => {
  it('is the objects whose labelled owner (kind, namespace, name, uid) is not live', () => {
    const kept = obj(
      'kept',
      ours('UserRole', 'acme', 'alice', 'u-1', { 'permissions.shturval.tech/plugin': 'rbac' }),
    );
    const gone = obj('gone', ours('UserRole', 'acme', 'bob', 'u-2'));
    const oldUid = obj('old-uid', ours('UserRole', 'acme', 'alice', 'u-0'));
    const otherKind = obj('other-kind', ours('GroupRole', 'acme', 'alice', 'u-1'));
    const perm = obj('perm', ours('Permission', 'acme', 'viewer', 'p-1'));
    const tenant = obj('tenant', ours('Tenant', 'acme', 'team-a', 't-1'));
    assert.deepEqual(
      orphans(
        [kept, gone, oldUid, otherKind, perm, tenant],
        [ALICE, { kind: 'Tenant', namespace: 'acme', name: 'team-a', uid: 't-1' }],
      ).map((o) => o.metadata.name),
      ['gone', 'old-uid', 'other-kind', 'perm'],
    );
  });

  it('never judges an object without every owner label, with another managed-by, or of an unknown kind', () => {
    const full = ours('UserRole', 'acme', 'bob', 'u-2');
    const candidates = [
      obj('no-labels'),
      obj('foreign-tool', { ...full, [MANAGED]: 'helm' }),
      obj('managed-by-only', { [MANAGED]: 'permissions.shturval.tech' }),
      obj('unknown-kind', { ...full, [KIND]: 'Scope' }),
      obj('empty-uid', { ...full, [UID]: '' }),
      ...[KIND, NS, NAME, UID].map((k) => {
        const { [k]: _dropped, ...rest } = full;
        return obj(`without-${k}`, rest);
      }),
    ];
    assert.deepEqual(orphans(candidates, []), []);
  });

  it('matches owners whose names are too long for a label value by the shortened label (names.ts labelSafe)', () => {
    const long = `r${'x'.repeat(80)}`;
    const owner: LiveOwner = { kind: 'UserRole', namespace: 'acme', name: long, uid: 'u-9' };
    const label = labelSafe(long);
    assert.ok(label.length <= 63 && label !== long);
    const kept = obj('kept', ours('UserRole', 'acme', label, 'u-9'));
    const other = obj('other', ours('UserRole', 'acme', label, 'u-8'));
    assert.deepEqual(
      orphans([kept, other], [owner]).map((o) => o.metadata.name),
      ['other'],
    );
  });

  it('property: an orphan always carries all our labels and names no live owner; a live owner’s objects are never orphans', () => {
    const kind = fc.constantFrom('Permission', 'UserRole', 'GroupRole', 'Tenant');
    const small = fc.constantFrom('a', 'b', 'c');
    const owner = fc.record({ kind, namespace: small, name: small, uid: small });
    const labelsArb = fc.oneof(
      owner.map((o) => ours(o.kind, o.namespace, o.name, o.uid)),
      fc.dictionary(
        fc.constantFrom(MANAGED, KIND, NS, NAME, UID, 'x'),
        fc.constantFrom('a', 'b', 'UserRole', 'permissions.shturval.tech', ''),
      ),
    );
    fc.assert(
      fc.property(
        fc.array(labelsArb, { maxLength: 12 }),
        fc.array(owner, { maxLength: 6 }),
        (labelSets, live) => {
          const objects = labelSets.map((l, i) => obj(`o${i}`, l));
          const owners = live as LiveOwner[];
          const out = new Set(orphans(objects, owners));
          for (const o of objects) {
            const l = o.metadata.labels ?? {};
            const complete =
              l[MANAGED] === 'permissions.shturval.tech' &&
              ['Permission', 'UserRole', 'GroupRole', 'Tenant'].includes(l[KIND] ?? '') &&
              [NS, NAME, UID].every((k) => (l[k] ?? '') !== '');
            const named = owners.some(
              (w) => w.kind === l[KIND] && w.namespace === l[NS] && w.name === l[NAME] && w.uid === l[UID],
            );
            assert.equal(out.has(o), complete && !named, JSON.stringify({ l, owners }));
          }
        },
      ),
    );
  });
});
