/**
 * A child Tenant kept within its parent, and a Scope's tenant only when that Tenant
 * controls it (src/domain/tenant.ts narrowToParent, scopeTenant, tenantScope with
 * targets). Expected targets written out by hand; generated inputs against a naive
 * oracle of "within" written here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Scope } from '../src/api/scope.ts';
import type { Tenant, TenantSpec } from '../src/api/tenant.ts';
import { narrowToParent, scopeTenant, tenantScope, tenantScopeSlot } from '../src/domain/tenant.ts';

const NONE = 'permissions.shturval.tech/outside-parent';

function tenant(name: string, spec: TenantSpec, uid = `uid-${name}`): Tenant {
  return {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Tenant',
    metadata: { name, namespace: 'acme', uid },
    spec,
  };
}

describe('narrowToParent', () => {
  it('keeps the namespaces and clusters of the child that lie within the parent', () => {
    const parent = tenant('org', { clusters: { ids: ['f/a', 'f/b'] }, namespaces: ['x'], admins: ['p'] });
    const child = tenant('dev', {
      parent: 'org',
      clusters: { ids: ['f/b', 'f/c'] },
      namespaces: ['x', 'y'],
      admins: ['c'],
    });
    assert.deepEqual(narrowToParent(child, parent), { clusters: { ids: ['f/b'] }, namespaces: ['x'] });
  });

  it("takes the parent's ids and annotations where the child leaves them open", () => {
    const parent = tenant('org', { clusters: { ids: ['f/a'], annotations: { zone: 'msk' } }, admins: ['p'] });
    const child = tenant('dev', { parent: 'org', members: ['c'] });
    assert.deepEqual(narrowToParent(child, parent), {
      clusters: { ids: ['f/a'], annotations: { zone: 'msk' } },
      namespaces: [],
    });
  });

  it('selects no cluster when nothing lies within: no common id, no common namespace, a conflicting annotation, a whole-cluster child of a namespace parent', () => {
    const parent = tenant('org', {
      clusters: { ids: ['f/a'], annotations: { zone: 'msk' } },
      namespaces: ['x'],
      admins: ['p'],
    });
    const cases: TenantSpec[] = [
      {
        parent: 'org',
        clusters: { ids: ['f/b'], annotations: { zone: 'msk' } },
        namespaces: ['x'],
        admins: ['c'],
      },
      {
        parent: 'org',
        clusters: { ids: ['f/a'], annotations: { zone: 'msk' } },
        namespaces: ['y'],
        admins: ['c'],
      },
      {
        parent: 'org',
        clusters: { ids: ['f/a'], annotations: { zone: 'spb' } },
        namespaces: ['x'],
        admins: ['c'],
      },
      { parent: 'org', clusters: { ids: ['f/a'], annotations: { zone: 'msk' } }, admins: ['c'] },
    ];
    for (const spec of cases) {
      const t = narrowToParent(tenant('dev', spec, 'uid-dev'), parent);
      assert.equal(t.clusters?.annotations?.[NONE], 'uid-dev', JSON.stringify(spec));
    }
  });

  it('property: the narrowed targets of a child within its parent are its own; otherwise every id and namespace kept is the parent’s too', () => {
    const id = fc.constantFrom<string>('f/a', 'f/b', 'f/c');
    const ns = fc.constantFrom<string>('x', 'y', 'z');
    const spec = fc.record({
      ids: fc.uniqueArray(id, { maxLength: 3 }),
      namespaces: fc.uniqueArray(ns, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(spec, spec, (p, c) => {
        const parent = tenant('org', { clusters: { ids: p.ids }, namespaces: p.namespaces, admins: ['p'] });
        const child = tenant('dev', {
          parent: 'org',
          clusters: { ids: c.ids },
          namespaces: c.namespaces,
          admins: ['c'],
        });
        const t = narrowToParent(child, parent);
        const within =
          (p.ids.length === 0 || (c.ids.length > 0 && c.ids.every((i) => p.ids.includes(i)))) &&
          (p.namespaces.length === 0 ||
            (c.namespaces.length > 0 && c.namespaces.every((n) => p.namespaces.includes(n))));
        if (within) {
          assert.deepEqual(t.clusters?.ids ?? [], c.ids);
          assert.deepEqual(t.namespaces, c.namespaces);
          assert.equal(t.clusters?.annotations?.[NONE], undefined);
          return;
        }
        const none = t.clusters?.annotations?.[NONE] !== undefined;
        if (!none) {
          if (p.ids.length > 0)
            assert.ok(
              (t.clusters?.ids ?? []).length > 0 && (t.clusters?.ids ?? []).every((i) => p.ids.includes(i)),
            );
          if (p.namespaces.length > 0)
            assert.ok(t.namespaces.length > 0 && t.namespaces.every((n) => p.namespaces.includes(n)));
        }
      }),
    );
  });

  it('tenantScope writes the narrowed targets at the level of the spec', () => {
    const child = tenant('dev', {
      parent: 'org',
      clusters: { ids: ['f/a'] },
      namespaces: ['x', 'y'],
      admins: ['c'],
    });
    const scope = tenantScope(child, 'tenant-org', { clusters: { ids: ['f/a'] }, namespaces: ['x'] });
    assert.deepEqual(scope.spec, {
      level: 'namespace',
      clusters: { ids: ['f/a'] },
      namespaces: ['x'],
      tenantRef: { name: 'dev' },
      parentScope: { name: 'tenant-org' },
    });
  });
});

describe('scopeTenant', () => {
  const victim = tenant('victim', { admins: ['v'] }, 'uid-victim');
  const generated = (over: Partial<Scope['metadata']> = {}): Scope => ({
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Scope',
    metadata: {
      name: 'tenant-victim',
      namespace: 'acme',
      ownerReferences: [
        {
          apiVersion: 'permissions.shturval.tech/v1beta1',
          kind: 'Tenant',
          name: 'victim',
          uid: 'uid-victim',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      ...over,
    },
    spec: { level: 'cluster', tenantRef: { name: 'victim' } },
  });

  it('is the Tenant that generated and controls the Scope', () => {
    assert.deepEqual(scopeTenant(generated(), victim), { kind: 'controlled', tenant: 'victim' });
  });

  it('is none without a tenantRef', () => {
    const s = generated();
    assert.deepEqual(scopeTenant({ ...s, spec: { level: 'cluster' } }, undefined), { kind: 'none' });
  });

  it('is borrowed for a hand-written Scope naming someone else’s tenant: another name, no owner, a non-controller owner, another uid, a missing Tenant', () => {
    const ref = generated().metadata.ownerReferences?.[0];
    assert.ok(ref);
    const borrowed: [string, Scope, Tenant | undefined][] = [
      ['another name', generated({ name: 'mine' }), victim],
      ['no owner', generated({ ownerReferences: [] }), victim],
      ['not controller', generated({ ownerReferences: [{ ...ref, controller: false }] }), victim],
      ['another uid', generated({ ownerReferences: [{ ...ref, uid: 'uid-old' }] }), victim],
      [
        'another group',
        generated({ ownerReferences: [{ ...ref, apiVersion: 'evil.example.com/v1' }] }),
        victim,
      ],
      ['no Tenant', generated(), undefined],
    ];
    for (const [what, scope, t] of borrowed) {
      const got = scopeTenant(scope, t);
      assert.equal(got.kind, 'borrowed', what);
      assert.match(
        got.kind === 'borrowed' ? got.message : '',
        /names Tenant "victim", which does not control this Scope/,
        what,
      );
    }
  });
});

describe('tenantScopeSlot: a Tenant writes only a Scope of its own', () => {
  const t = tenant('c', { namespaces: ['x'], admins: ['p'] });
  const scopeWith = (ownerReferences?: NonNullable<Scope['metadata']['ownerReferences']>): Scope => ({
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Scope',
    metadata: { name: 'tenant-c', namespace: 'acme', ...(ownerReferences ? { ownerReferences } : {}) },
    spec: { level: 'namespace', namespaces: ['x'] },
  });
  const ref = (
    over: Partial<{ apiVersion: string; kind: string; name: string; uid: string; controller: boolean }>,
  ) => ({
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Tenant',
    name: 'c',
    uid: 'uid-c',
    controller: true,
    ...over,
  });

  it('is free when no Scope has the name, and its own under its controller reference with its uid', () => {
    assert.equal(tenantScopeSlot(undefined, t).kind, 'free');
    assert.equal(tenantScopeSlot(scopeWith([ref({})]), t).kind, 'own');
  });

  it('is taken by a Scope without that exact controller reference: never adopted', () => {
    for (const refs of [
      undefined,
      [ref({ uid: 'uid-of-a-deleted-c' })],
      [ref({ controller: false })],
      [ref({ name: 'd' })],
      [ref({ kind: 'Scope' })],
      [ref({ apiVersion: 'evil.example.com/v1' })],
    ]) {
      const slot = tenantScopeSlot(scopeWith(refs), t);
      assert.equal(slot.kind, 'taken', JSON.stringify(refs));
      assert.match(
        slot.kind === 'taken' ? slot.message : '',
        /Scope tenant-c exists and is not this Tenant's/,
      );
    }
  });
});
