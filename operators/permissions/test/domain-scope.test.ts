/**
 * A Scope's computed status: paths and rows written out by hand for examples; for
 * generated inputs, a naive path builder and a naive row builder written here (nested
 * loops, then sorted).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Level } from '../src/api/common.ts';
import type { ObjectStatus } from '../src/api/scope.ts';
import {
  type ClusterNamespaces,
  objectsStatus,
  scopePaths,
  scopeRequeueMs,
  scopeStatus,
} from '../src/domain/scope.ts';

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

describe('scopePaths', () => {
  it('gives /<tenant chain>/<cluster id>/<namespace> at namespace level', () => {
    assert.deepEqual(scopePaths(['org', 'team-a'], ['capi/prod-1'], ['team-a'], 'namespace'), [
      '/org/team-a/capi/prod-1/team-a',
    ]);
    assert.deepEqual(scopePaths(['org'], ['capi/b', 'capi/a'], ['y', 'x'], 'namespace'), [
      '/org/capi/a/x',
      '/org/capi/a/y',
      '/org/capi/b/x',
      '/org/capi/b/y',
    ]);
  });

  it('gives /<tenant chain>/<cluster id> at cluster level and /<tenant chain>/platform at platform level', () => {
    assert.deepEqual(scopePaths(['org', 'team-a'], ['capi/prod-1', 'capi/prod-2'], [], 'cluster'), [
      '/org/team-a/capi/prod-1',
      '/org/team-a/capi/prod-2',
    ]);
    assert.deepEqual(scopePaths(['org', 'team-a'], ['capi/prod-1'], [], 'platform'), [
      '/org/team-a/platform',
    ]);
    assert.deepEqual(scopePaths([], [], [], 'platform'), ['/platform']);
  });

  it('gives no path when no cluster is selected below platform level', () => {
    assert.deepEqual(scopePaths(['org'], [], ['team-a'], 'namespace'), []);
    assert.deepEqual(scopePaths(['org'], [], [], 'cluster'), []);
  });

  const seg = fc.constantFrom('org', 'team-a', 'team-b', 'x');
  const cluster = fc.constantFrom('capi/prod-1', 'capi/prod-2', 'other/dev');
  const ns = fc.constantFrom('team-a', 'kube-system', 'apps');
  it('agrees with nested loops over clusters and namespaces', () => {
    fc.assert(
      fc.property(
        fc.array(seg, { maxLength: 3 }),
        fc.array(cluster, { maxLength: 4 }),
        fc.array(ns, { maxLength: 4 }),
        fc.constantFrom<Level>('platform', 'cluster', 'namespace'),
        (chain, clusters, namespaces, level) => {
          const prefix = chain.length ? `/${chain.join('/')}` : '';
          const expected = new Set<string>();
          if (level === 'platform') expected.add(`${prefix}/platform`);
          for (const c of clusters) {
            if (level === 'cluster') expected.add(`${prefix}/${c}`);
            if (level === 'namespace') for (const n of namespaces) expected.add(`${prefix}/${c}/${n}`);
          }
          assert.deepEqual(scopePaths(chain, clusters, namespaces, level), [...expected].sort(byCodeUnits));
        },
      ),
    );
  });
});

describe('objectsStatus', () => {
  it('marks what exists, what is missing, and every row of an unreachable cluster', () => {
    const table = new Map<string, ClusterNamespaces>([
      ['capi/prod-1', { kind: 'checked', existing: ['team-a'] }],
      ['capi/prod-2', { kind: 'unreachable', reason: 'ClusterUnreachable', message: 'no answer within 10s' }],
    ]);
    assert.deepEqual(objectsStatus(['capi/prod-2', 'capi/prod-1'], ['team-b', 'team-a'], table), [
      { cluster: 'capi/prod-1', namespace: 'team-a', exists: true },
      {
        cluster: 'capi/prod-1',
        namespace: 'team-b',
        exists: false,
        message:
          'NamespaceMissing: namespace team-b does not exist in cluster capi/prod-1; grants land there once it is created (rechecked periodically)',
      },
      {
        cluster: 'capi/prod-2',
        namespace: 'team-a',
        exists: false,
        message: 'ClusterUnreachable: no answer within 10s',
      },
      {
        cluster: 'capi/prod-2',
        namespace: 'team-b',
        exists: false,
        message: 'ClusterUnreachable: no answer within 10s',
      },
    ]);
  });

  it('says a cluster missing from the table was not checked', () => {
    assert.deepEqual(objectsStatus(['capi/x'], ['a'], new Map()), [
      { cluster: 'capi/x', namespace: 'a', exists: false, message: 'not checked yet in cluster capi/x' },
    ]);
  });

  it('has one row per (cluster, namespace), existing exactly where the table says so', () => {
    const cluster = fc.constantFrom('capi/a', 'capi/b', 'capi/c');
    const ns = fc.constantFrom('n1', 'n2', 'n3');
    const entry: fc.Arbitrary<ClusterNamespaces> = fc.oneof(
      fc.record({ kind: fc.constant('checked' as const), existing: fc.array(ns, { maxLength: 3 }) }),
      fc.record({
        kind: fc.constant('unreachable' as const),
        reason: fc.constant('ClusterUnreachable'),
        message: fc.constant('down'),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(cluster, { maxLength: 4 }),
        fc.array(ns, { maxLength: 4 }),
        fc.array(fc.tuple(cluster, entry), { maxLength: 3 }),
        (clusters, namespaces, entries) => {
          const table = new Map(entries);
          const rows = objectsStatus(clusters, namespaces, table);
          const expected: [string, string, boolean][] = [];
          for (const c of [...new Set(clusters)].sort(byCodeUnits)) {
            for (const n of [...new Set(namespaces)].sort(byCodeUnits)) {
              const e = table.get(c);
              expected.push([c, n, e?.kind === 'checked' && e.existing.includes(n)]);
            }
          }
          assert.deepEqual(
            rows.map((r) => [r.cluster, r.namespace, r.exists]),
            expected,
          );
          for (const r of rows) assert.equal(r.message === undefined, r.exists);
        },
      ),
    );
  });
});

describe('scopeRequeueMs', () => {
  const intervals = { scopeClusterRecheckMs: 1_800_000, scopeNamespaceRecheckMs: 300_000 };
  it('rechecks cluster level after the cluster interval, namespace level after the namespace one, platform never', () => {
    assert.equal(scopeRequeueMs('cluster', intervals), 1_800_000);
    assert.equal(scopeRequeueMs('namespace', intervals), 300_000);
    assert.equal(scopeRequeueMs('platform', intervals), undefined);
  });
});

describe('scopeStatus', () => {
  const row = (cluster: string, namespace: string, exists: boolean, message?: string): ObjectStatus =>
    message === undefined ? { cluster, namespace, exists } : { cluster, namespace, exists, message };

  it('is ready when every named cluster exists and every namespace is there', () => {
    assert.deepEqual(
      scopeStatus({
        level: 'namespace',
        selection: { selected: ['capi/b', 'capi/a'], unknown: [], notReady: [] },
        objectsStatus: [row('capi/a', 'team-a', true), row('capi/b', 'team-a', true)],
        permissions: ['viewer', 'editor', 'viewer'],
        paths: ['/team-a/capi/a/team-a', '/team-a/capi/b/team-a'],
        observedGeneration: 3,
      }),
      {
        ready: true,
        clusters: ['capi/a', 'capi/b'],
        permissions: ['editor', 'viewer'],
        paths: ['/team-a/capi/a/team-a', '/team-a/capi/b/team-a'],
        objectsStatus: [row('capi/a', 'team-a', true), row('capi/b', 'team-a', true)],
        observedGeneration: 3,
      },
    );
  });

  it('is not ready, and says why, for an unknown cluster id or a missing namespace', () => {
    const s = scopeStatus({
      level: 'namespace',
      selection: { selected: ['capi/a'], unknown: ['capi/nope'], notReady: ['capi/later'] },
      objectsStatus: [row('capi/a', 'team-a', false, 'NamespaceMissing: not there')],
      permissions: [],
      paths: [],
    });
    assert.equal(s.ready, false);
    assert.equal(
      s.message,
      'ClusterNotFound: no Cluster API Cluster capi/nope; fix spec.clusters.ids (ids are <namespace>/<name>); ' +
        'capi/a/team-a: NamespaceMissing: not there; ' +
        'ClusterNotReady: capi/later: control plane not ready yet; joins when it is',
    );
    assert.equal('observedGeneration' in s, false);
  });

  it('stays ready with a cluster that is not ready yet, and mentions it', () => {
    const s = scopeStatus({
      level: 'cluster',
      selection: { selected: [], unknown: [], notReady: ['capi/later'] },
      objectsStatus: [],
      permissions: [],
      paths: [],
    });
    assert.equal(s.ready, true);
    assert.equal(s.message, 'ClusterNotReady: capi/later: control plane not ready yet; joins when it is');
  });

  it('lists no clusters at platform level and has no message when all is well', () => {
    const s = scopeStatus({
      level: 'platform',
      selection: { selected: [], unknown: [], notReady: [] },
      objectsStatus: [],
      permissions: ['admin'],
      paths: ['/platform'],
    });
    assert.deepEqual(s, {
      ready: true,
      clusters: [],
      permissions: ['admin'],
      paths: ['/platform'],
      objectsStatus: [],
    });
  });
});
