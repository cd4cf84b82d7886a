/**
 * The ClusterRoles a Permission wants: whole objects written out by hand for a sample,
 * and, for generated Permissions, which aggregating role picks up which labelled part,
 * decided by a label matcher written here (matchLabels: every pair present and equal).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Level, PolicyRule } from '../src/api/common.ts';
import type { Permission } from '../src/api/permission.ts';
import {
  clientClusterRole,
  desiredPermissionObjects,
  platformAggregatingClusterRole,
  platformRulesClusterRole,
} from '../src/domain/cluster-roles.ts';
import type { ClusterRole } from '../src/domain/rbac.ts';

const OWNER = {
  'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
  'permissions.shturval.tech/owner-kind': 'Permission',
  'permissions.shturval.tech/owner-namespace': 'team-a',
  'permissions.shturval.tech/owner-name': 'viewer',
  'permissions.shturval.tech/owner-uid': 'uid-1',
};

function permission(
  name: string,
  spec: Partial<Permission['spec']> & { level?: Level },
  namespace = 'team-a',
): Permission {
  return {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name, namespace, uid: name === 'viewer' ? 'uid-1' : `uid-${name}` },
    spec: { level: 'cluster', ...spec },
  };
}

const PODS: PolicyRule = { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] };
const DEPLOYMENTS: PolicyRule = { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] };

describe('platformAggregatingClusterRole', () => {
  it('selects the aggregation label of its own Permission and has no rules field', () => {
    const role = platformAggregatingClusterRole(permission('viewer', { platform_rules: [PODS] }));
    assert.deepEqual(role, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'platform:team-a.viewer', labels: OWNER },
      aggregationRule: {
        clusterRoleSelectors: [
          { matchLabels: { 'aggregate-to.permissions.shturval.tech/team-a.viewer': 'true' } },
        ],
      },
    });
    assert.equal('rules' in role, false);
  });
});

describe('platformRulesClusterRole', () => {
  it('holds platform_rules and carries the label of its own and each aggregateTo Permission', () => {
    const role = platformRulesClusterRole(
      permission('viewer', { platform_rules: [PODS], aggregateTo: ['editor', 'admin', 'editor'] }),
    );
    assert.deepEqual(role, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: 'platform:team-a.viewer:rules',
        labels: {
          ...OWNER,
          'aggregate-to.permissions.shturval.tech/team-a.viewer': 'true',
          'aggregate-to.permissions.shturval.tech/team-a.editor': 'true',
          'aggregate-to.permissions.shturval.tech/team-a.admin': 'true',
        },
      },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
    });
  });

  it('drops empty lists from rules, as the apiserver stores them', () => {
    const role = platformRulesClusterRole(
      permission('viewer', {
        platform_rules: [
          { apiGroups: [''], resources: ['pods'], resourceNames: [], nonResourceURLs: [], verbs: ['get'] },
        ],
      }),
    );
    assert.deepEqual(role.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]);
  });
});

describe('clientClusterRole', () => {
  it('is shturval:<ns>.<name> holding granted_cluster_rules', () => {
    assert.deepEqual(
      clientClusterRole(permission('viewer', { granted_cluster_rules: [DEPLOYMENTS, PODS] })),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'shturval:team-a.viewer', labels: OWNER },
        rules: [
          { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
          { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
        ],
      },
    );
  });

  it('does not collide for same-named Permissions in two namespaces', () => {
    const a = clientClusterRole(permission('viewer', { granted_cluster_rules: [PODS] }, 'team-a'));
    const b = clientClusterRole(permission('viewer', { granted_cluster_rules: [PODS] }, 'team-b'));
    assert.equal(a.metadata.name, 'shturval:team-a.viewer');
    assert.equal(b.metadata.name, 'shturval:team-b.viewer');
  });
});

describe('desiredPermissionObjects', () => {
  it('wants no platform roles without platform_rules, and no client role without granted_cluster_rules', () => {
    assert.deepEqual(
      desiredPermissionObjects(permission('viewer', { granted_cluster_rules: [PODS] })).platform,
      [],
    );
    assert.equal(
      desiredPermissionObjects(permission('viewer', { level: 'platform', platform_rules: [PODS] })).client,
      undefined,
    );
    assert.deepEqual(
      desiredPermissionObjects(permission('viewer', { platform_rules: [], granted_cluster_rules: [] })),
      { platform: [], client: undefined },
    );
  });

  it('wants the aggregating role and its labelled part, and the client role, when both rule sets are there', () => {
    const d = desiredPermissionObjects(
      permission('viewer', { platform_rules: [PODS], granted_cluster_rules: [DEPLOYMENTS] }),
    );
    assert.deepEqual(
      d.platform.map((r) => r.metadata.name),
      ['platform:team-a.viewer', 'platform:team-a.viewer:rules'],
    );
    assert.equal(d.client?.metadata.name, 'shturval:team-a.viewer');
  });

  const names = ['a', 'b', 'c', 'd'];
  const rule = fc.record({
    apiGroups: fc.subarray(['', 'apps', 'batch']),
    resources: fc.subarray(['pods', 'deployments', 'jobs']),
    verbs: fc.subarray(['get', 'list', 'watch'], { minLength: 1 }),
  });
  const spec = fc.record({
    platform_rules: fc.array(rule, { maxLength: 2 }),
    granted_cluster_rules: fc.array(rule, { maxLength: 2 }),
    aggregateTo: fc.subarray(names),
  });
  const matches = (
    selector: Readonly<Record<string, string>>,
    labels: Readonly<Record<string, string>>,
  ): boolean =>
    Object.entries(selector).every(([k, v]) =>
      Object.entries(labels).some(([lk, lv]) => lk === k && lv === v),
    );

  it("aggregates one Permission's rules into exactly its own and its aggregateTo platform roles", () => {
    fc.assert(
      fc.property(fc.tuple(spec, spec, spec, spec), (specs) => {
        const perms = names.map((n, i) => {
          const s = specs[i] as (typeof specs)[0];
          return permission(n, { ...s, aggregateTo: s.aggregateTo.filter((t) => t !== n) });
        });
        const desired = perms.map(desiredPermissionObjects);
        for (const [i, d] of desired.entries()) {
          const p = perms[i] as Permission;
          assert.equal(d.platform.length, (p.spec.platform_rules ?? []).length > 0 ? 2 : 0);
          assert.equal(d.client !== undefined, (p.spec.granted_cluster_rules ?? []).length > 0);
        }
        const aggregating = desired.flatMap((d) => d.platform.filter((r) => r.aggregationRule));
        const parts = desired.flatMap((d) => d.platform.filter((r) => !r.aggregationRule));
        for (const agg of aggregating) {
          const target = agg.metadata.name.replace('platform:team-a.', '');
          const selector = (agg as ClusterRole).aggregationRule?.clusterRoleSelectors[0]?.matchLabels ?? {};
          const picked = parts
            .filter((part) => matches(selector, part.metadata.labels))
            .map((r) => r.metadata.name);
          const expected = perms
            .filter((p) => (p.spec.platform_rules ?? []).length > 0)
            .filter((p) => p.metadata.name === target || (p.spec.aggregateTo ?? []).includes(target))
            .map((p) => `platform:team-a.${p.metadata.name}:rules`);
          assert.deepEqual(picked.sort(), expected.sort());
        }
      }),
    );
  });
});
