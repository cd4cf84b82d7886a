/**
 * The RBAC and tenant plugins' bindings and whose a live object is. Every expected
 * object is written out here by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimOf, type Grant, grantSelector, writerOf } from '../src/domain/plugins/grant.ts';
import { desiredBindings } from '../src/domain/plugins/rbac-bindings.ts';
import { tenantBinding, tenantBindingName } from '../src/domain/plugins/tenant-bindings.ts';

const ALICE: Grant = {
  owner: { kind: 'UserRole', namespace: 'team-a', name: 'alice', uid: 'uid-1' },
  permission: 'viewer',
  subject: { kind: 'User', name: 'alice@example.com' },
};
const DEVS: Grant = {
  owner: { kind: 'GroupRole', namespace: 'team-a', name: 'devs', uid: 'uid-2' },
  permission: 'viewer',
  subject: { kind: 'Group', name: 'oidc:devs', members: ['bob@example.com'] },
};

const aliceLabels = (plugin: string) => ({
  'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
  'permissions.shturval.tech/owner-kind': 'UserRole',
  'permissions.shturval.tech/owner-namespace': 'team-a',
  'permissions.shturval.tech/owner-name': 'alice',
  'permissions.shturval.tech/owner-uid': 'uid-1',
  'permissions.shturval.tech/permission': 'viewer',
  'permissions.shturval.tech/plugin': plugin,
});

describe('desiredBindings', () => {
  it('binds a platform-level grant with a ClusterRoleBinding to the platform: ClusterRole', () => {
    assert.deepEqual(desiredBindings(ALICE, 'platform', []), [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'shturval:team-a.alice.viewer', labels: aliceLabels('rbac') },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'platform:team-a.viewer',
        },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
      },
    ]);
  });

  it('binds a cluster-level group grant with a ClusterRoleBinding to the shturval: ClusterRole', () => {
    assert.deepEqual(desiredBindings(DEVS, 'cluster', ['ignored']), [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: {
          name: 'shturval:team-a.g.devs.viewer',
          labels: {
            'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
            'permissions.shturval.tech/owner-kind': 'GroupRole',
            'permissions.shturval.tech/owner-namespace': 'team-a',
            'permissions.shturval.tech/owner-name': 'devs',
            'permissions.shturval.tech/owner-uid': 'uid-2',
            'permissions.shturval.tech/permission': 'viewer',
            'permissions.shturval.tech/plugin': 'rbac',
          },
        },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'shturval:team-a.viewer',
        },
        subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'oidc:devs' }],
      },
    ]);
  });

  it('binds a namespace-level grant with one RoleBinding per Scope namespace, each once', () => {
    const rb = (namespace: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'shturval:team-a.alice.viewer', namespace, labels: aliceLabels('rbac') },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'shturval:team-a.viewer' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
    });
    assert.deepEqual(desiredBindings(ALICE, 'namespace', ['web', 'api', 'web']), [rb('api'), rb('web')]);
  });
});

describe('tenantBinding', () => {
  it("binds the subject to the tenant's tenant-get Role in the role's namespace", () => {
    assert.deepEqual(tenantBinding(ALICE, 'shop'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'tenant-get.shop.alice.viewer', namespace: 'team-a', labels: aliceLabels('tenant') },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-get.shop' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice@example.com' }],
    });
    assert.equal(tenantBindingName(DEVS, 'shop'), 'tenant-get.shop.g.devs.viewer');
  });

  it('cuts a long name to 253 characters ending in a hash', () => {
    const long: Grant = { ...ALICE, permission: 'p'.repeat(250) };
    const name = tenantBindingName(long, 'shop');
    assert.equal(name.length, 253);
    assert.match(name, /^tenant-get\.shop\.alice\.p+-[0-9a-f]{10}$/);
    assert.notEqual(name, tenantBindingName({ ...ALICE, permission: `${'p'.repeat(250)}q` }, 'shop'));
  });
});

describe('claimOf', () => {
  it('tells ours, an earlier owner of the same name, and everyone else apart', () => {
    assert.equal(claimOf(aliceLabels('rbac'), ALICE, 'rbac'), 'ours');
    assert.equal(
      claimOf({ ...aliceLabels('rbac'), 'permissions.shturval.tech/owner-uid': 'uid-0' }, ALICE, 'rbac'),
      'adopt',
    );
    assert.equal(claimOf(aliceLabels('kubeflow'), ALICE, 'rbac'), 'foreign');
    assert.equal(claimOf(undefined, ALICE, 'rbac'), 'foreign');
    assert.equal(
      claimOf({ ...aliceLabels('rbac'), 'permissions.shturval.tech/owner-name': 'bob' }, ALICE, 'rbac'),
      'foreign',
    );
  });

  it('names the writer of a foreign object', () => {
    assert.equal(writerOf(undefined), 'someone else (not permissions.shturval.tech)');
    assert.equal(writerOf(aliceLabels('rbac')), 'UserRole team-a/alice');
  });

  it('selects one plugin and one grant by every label', () => {
    assert.equal(
      grantSelector(ALICE, 'tenant'),
      'app.kubernetes.io/managed-by=permissions.shturval.tech,permissions.shturval.tech/owner-kind=UserRole,' +
        'permissions.shturval.tech/owner-namespace=team-a,permissions.shturval.tech/owner-name=alice,' +
        'permissions.shturval.tech/owner-uid=uid-1,permissions.shturval.tech/permission=viewer,' +
        'permissions.shturval.tech/plugin=tenant',
    );
  });
});
