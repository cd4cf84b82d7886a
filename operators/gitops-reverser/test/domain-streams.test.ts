/**
 * Which watches a GitTarget opens: rule items (already through the gate) expanded
 * against the source cluster's resources, one stream per (resource, namespace).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AdmittedItem, type CatalogueEntry, planStreams } from '../src/domain/streams.ts';

const rw = ['list', 'watch', 'get'];
const catalogue: CatalogueEntry[] = [
  {
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    resource: 'configmaps',
    namespaced: true,
    verbs: rw,
  },
  {
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    kind: 'Secret',
    resource: 'secrets',
    namespaced: true,
    verbs: rw,
  },
  {
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    kind: 'Event',
    resource: 'events',
    namespaced: true,
    verbs: rw,
  },
  {
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    kind: 'Binding',
    resource: 'bindings',
    namespaced: true,
    verbs: ['create'],
  },
  {
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    kind: 'Namespace',
    resource: 'namespaces',
    namespaced: false,
    verbs: rw,
  },
  {
    group: 'apps',
    version: 'v1',
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    resource: 'deployments',
    namespaced: true,
    verbs: rw,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    resource: 'clusterroles',
    namespaced: false,
    verbs: rw,
  },
];

const item = (over: Partial<AdmittedItem>): AdmittedItem => ({
  source: 'WatchRule a/r spec.rules[0]',
  scope: 'Namespaced',
  apiGroups: [''],
  resources: ['configmaps'],
  namespace: 'a',
  ...over,
});

describe('planStreams', () => {
  it('opens one stream per named resource in the resolved namespace, with all operations by default', () => {
    const plan = planStreams([item({})], catalogue);
    assert.deepEqual(plan.unmatched, []);
    assert.deepEqual(
      plan.streams.map((s) => [s.key, s.apiVersion, s.kind, s.namespace, s.operations.join(',')]),
      [['/configmaps@a', 'v1', 'ConfigMap', 'a', 'CREATE,UPDATE,DELETE']],
    );
  });

  it('an allowed "*" namespace ("") is exactly one cluster-wide stream that subsumes per-namespace ones', () => {
    const plan = planStreams(
      [
        item({ operations: ['CREATE'] }),
        item({ namespace: '', operations: ['DELETE'] }),
        item({ namespace: 'b' }),
      ],
      catalogue,
    );
    assert.deepEqual(
      plan.streams.map((s) => [s.key, s.operations.join(',')]),
      [['/configmaps@', 'CREATE,UPDATE,DELETE']],
    );
  });

  it('"*" resources skip Events and what cannot be listed and watched; cluster-scoped ones stay out of a WatchRule', () => {
    const plan = planStreams([item({ resources: ['*'] })], catalogue);
    assert.deepEqual(
      plan.streams.map((s) => s.key),
      ['/configmaps@a', '/secrets@a'],
    );
  });

  it('a ClusterWatchRule watches cluster-scoped resources only, across groups', () => {
    const plan = planStreams(
      [
        item({
          scope: 'Cluster',
          apiGroups: ['*'],
          resources: ['*'],
          namespace: 'ignored',
          source: 'ClusterWatchRule c',
        }),
      ],
      catalogue,
    );
    assert.deepEqual(
      plan.streams.map((s) => s.key),
      ['/namespaces@', 'rbac.authorization.k8s.io/clusterroles@'],
    );
  });

  it('a resource the cluster does not serve in scope is reported with its item, never guessed', () => {
    const plan = planStreams(
      [
        item({ resources: ['configmapz', 'namespaces'] }),
        item({ apiGroups: ['apps'], apiVersions: ['v2'], resources: ['deployments'] }),
      ],
      catalogue,
    );
    assert.deepEqual(plan.streams, []);
    assert.equal(plan.unmatched.length, 3);
    assert.match(
      plan.unmatched[0] ?? '',
      /^WatchRule a\/r spec\.rules\[0\]: resource "configmapz" in apiGroups \[""\] is not served as a namespaced resource/,
    );
    assert.match(plan.unmatched[1] ?? '', /resource "namespaces"/);
  });

  it('operations filter what an event may do, united across items claiming one stream', () => {
    const plan = planStreams([item({ operations: ['CREATE'] }), item({ operations: ['UPDATE'] })], catalogue);
    assert.deepEqual(plan.streams[0]?.operations, ['CREATE', 'UPDATE']);
  });
});
