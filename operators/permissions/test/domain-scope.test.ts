/**
 * A Scope's paths and recheck intervals: paths written out by hand for examples; for
 * generated inputs, a naive path builder written here (nested loops, then sorted).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Level } from '../src/api/common.ts';
import { scopePaths, scopeRequeueMs } from '../src/domain/scope.ts';

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

describe('scopeRequeueMs', () => {
  const intervals = { scopeClusterRecheckMs: 1_800_000, scopeNamespaceRecheckMs: 300_000 };
  it('rechecks cluster level after the cluster interval, namespace level after the namespace one, platform never', () => {
    assert.equal(scopeRequeueMs('cluster', intervals), 1_800_000);
    assert.equal(scopeRequeueMs('namespace', intervals), 300_000);
    assert.equal(scopeRequeueMs('platform', intervals), undefined);
  });
});
