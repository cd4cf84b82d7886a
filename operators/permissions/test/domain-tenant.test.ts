/**
 * What a Tenant wants: its Scope, Roles and RoleBindings written out whole by hand; and
 * the parent check against a naive subset test written here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Tenant, TenantSpec } from '../src/api/tenant.ts';
import { tenantRoleBindings, tenantRoles, tenantScope, tenantWithinParent } from '../src/domain/tenant.ts';

const LABELS = {
  'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
  'permissions.shturval.tech/owner-kind': 'Tenant',
  'permissions.shturval.tech/owner-namespace': 'tenants',
  'permissions.shturval.tech/owner-name': 'team-a',
  'permissions.shturval.tech/owner-uid': 'uid-t',
};

function tenant(name: string, spec: TenantSpec): Tenant {
  return {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Tenant',
    metadata: { name, namespace: 'tenants', uid: name === 'team-a' ? 'uid-t' : `uid-${name}` },
    spec,
  };
}

const G = 'permissions.shturval.tech';

describe('tenantScope', () => {
  it('is a namespace-level Scope when the tenant names namespaces, pointing back at the tenant and its parent', () => {
    assert.deepEqual(
      tenantScope(
        tenant('team-a', {
          parent: 'org',
          clusters: { ids: ['capi/prod-1'] },
          namespaces: ['team-a', 'team-a-dev'],
          admins: ['alice'],
        }),
        'tenant-org',
      ),
      {
        apiVersion: 'permissions.shturval.tech/v1beta1',
        kind: 'Scope',
        metadata: { name: 'tenant-team-a', namespace: 'tenants', labels: LABELS },
        spec: {
          level: 'namespace',
          clusters: { ids: ['capi/prod-1'] },
          namespaces: ['team-a', 'team-a-dev'],
          tenantRef: { name: 'team-a' },
          parentScope: { name: 'tenant-org' },
        },
      },
    );
  });

  it('is a cluster-level Scope without namespaces, and has no clusters or parent when the tenant has none', () => {
    assert.deepEqual(tenantScope(tenant('team-a', { members: ['bob'] })), {
      apiVersion: 'permissions.shturval.tech/v1beta1',
      kind: 'Scope',
      metadata: { name: 'tenant-team-a', namespace: 'tenants', labels: LABELS },
      spec: { level: 'cluster', tenantRef: { name: 'team-a' } },
    });
    assert.deepEqual(
      tenantScope(
        tenant('team-a', { namespaces: [], clusters: { annotations: { zone: 'msk' } }, members: ['bob'] }),
      ).spec,
      { level: 'cluster', clusters: { annotations: { zone: 'msk' } }, tenantRef: { name: 'team-a' } },
    );
  });
});

describe('tenantRoles', () => {
  it("lets members read the tenant and the namespace's kinds, and admins also write UserRoles and GroupRoles and manage this tenant", () => {
    const read = [
      { apiGroups: [G], resources: ['tenants'], resourceNames: ['team-a'], verbs: ['get', 'list', 'watch'] },
      {
        apiGroups: [G],
        resources: ['scopes', 'userroles', 'grouproles', 'permissions'],
        verbs: ['get', 'list', 'watch'],
      },
    ];
    assert.deepEqual(tenantRoles(tenant('team-a', { admins: ['alice'] })), [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'tenant-get.team-a', namespace: 'tenants', labels: LABELS },
        rules: read,
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'tenant-edit.team-a', namespace: 'tenants', labels: LABELS },
        rules: [
          ...read,
          {
            apiGroups: [G],
            resources: ['userroles', 'grouproles'],
            verbs: ['create', 'update', 'patch', 'delete'],
          },
          // What the webhooks ask for before an admin acts inside this tenant (issue 35).
          { apiGroups: [G], resources: ['tenants'], resourceNames: ['team-a'], verbs: ['manage'] },
        ],
      },
    ]);
  });
});

describe('tenantRoleBindings', () => {
  const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name });

  it('binds admins and members to tenant-get and admins to tenant-edit, each user once', () => {
    assert.deepEqual(
      tenantRoleBindings(tenant('team-a', { admins: ['alice', 'carol'], members: ['bob', 'alice'] })),
      [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'tenant-get.team-a', namespace: 'tenants', labels: LABELS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-get.team-a' },
          subjects: [user('alice'), user('carol'), user('bob')],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'tenant-edit.team-a', namespace: 'tenants', labels: LABELS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-edit.team-a' },
          subjects: [user('alice'), user('carol')],
        },
      ],
    );
  });

  it('leaves subjects out, rather than empty, when nobody is bound', () => {
    const [get, edit] = tenantRoleBindings(tenant('team-a', { members: ['bob'] }));
    assert.deepEqual(get?.subjects, [user('bob')]);
    assert.equal(edit && 'subjects' in edit, false);
  });
});

describe('tenantWithinParent', () => {
  const parent = tenant('org', {
    clusters: { ids: ['capi/a', 'capi/b'], annotations: { zone: 'msk' } },
    namespaces: ['n1', 'n2'],
    admins: ['root'],
  });

  it('admits a child at least as narrow as its parent', () => {
    const child = tenant('team-a', {
      parent: 'org',
      clusters: { ids: ['capi/a'], annotations: { zone: 'msk', tier: 'gold' } },
      namespaces: ['n1'],
      admins: ['alice'],
    });
    assert.deepEqual(tenantWithinParent(child, parent), { ok: true });
  });

  it('refuses a child reaching outside, naming both tenants and every offender', () => {
    const child = tenant('team-a', {
      parent: 'org',
      clusters: { ids: ['capi/a', 'capi/c'] },
      namespaces: ['n1', 'n3'],
      admins: ['alice'],
    });
    assert.deepEqual(tenantWithinParent(child, parent), {
      ok: false,
      reason: 'OutsideParentTenant',
      message:
        'Tenant "team-a" reaches outside its parent Tenant "org": ' +
        "clusters capi/c are not among the parent's (capi/a, capi/b); " +
        "spec.clusters.annotations must require the parent's zone=msk; " +
        "namespaces n3 are not among the parent's (n1, n2). Narrow the child, or widen the parent first",
    });
  });

  it('refuses a child that leaves open what the parent restricts', () => {
    const d = tenantWithinParent(tenant('team-a', { parent: 'org', admins: ['a'] }), parent);
    assert.equal(d.ok, false);
    assert.match(
      d.ok ? '' : d.message,
      /spec\.clusters\.ids must name clusters among the parent's \(capi\/a, capi\/b\)/,
    );
    assert.match(
      d.ok ? '' : d.message,
      /spec\.namespaces must name namespaces among the parent's \(n1, n2\)/,
    );
  });

  it('agrees with a naive subset check', () => {
    const ids = fc.subarray(['capi/a', 'capi/b', 'capi/c']);
    const namespaces = fc.subarray(['n1', 'n2', 'n3']);
    const annotations = fc.dictionary(fc.constantFrom('zone', 'tier'), fc.constantFrom('msk', 'spb'), {
      maxKeys: 2,
    });
    const spec = fc.record({ clusters: fc.record({ ids, annotations }), namespaces });
    fc.assert(
      fc.property(spec, spec, (c, p) => {
        const within = (xs: readonly string[], ys: readonly string[]): boolean =>
          ys.length === 0 || (xs.length > 0 && xs.every((x) => ys.includes(x)));
        const annotationsWithin = Object.keys(p.clusters.annotations).every(
          (k) =>
            Object.keys(c.clusters.annotations).includes(k) &&
            c.clusters.annotations[k] === p.clusters.annotations[k],
        );
        const expected =
          within(c.clusters.ids, p.clusters.ids) && within(c.namespaces, p.namespaces) && annotationsWithin;
        const d = tenantWithinParent(tenant('child', { parent: 'parent', ...c }), tenant('parent', p));
        assert.equal(d.ok, expected);
      }),
    );
  });
});
