/**
 * A Permission's status from per-cluster outcomes: examples written out by hand, and a
 * property against a naive re-statement of the rules (held = applied, kept, or failed
 * where it was held before; `platform` first, the rest in code-unit order).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  appliedToClusters,
  type ClusterOutcome,
  permissionStatus,
  sortApplied,
} from '../src/domain/applied-clusters.ts';

describe('permissionStatus', () => {
  it('is ready and lists platform first when every cluster took the role', () => {
    assert.deepEqual(
      permissionStatus([
        { kind: 'applied', id: 'capi/prod-2' },
        { kind: 'applied', id: 'platform' },
        { kind: 'applied', id: 'capi/prod-1' },
      ]),
      { ready: true, applied_to_clusters: ['platform', 'capi/prod-1', 'capi/prod-2'], message: '' },
    );
  });

  it('names the failed cluster and its reason while still listing the others', () => {
    assert.deepEqual(
      permissionStatus(
        [
          { kind: 'applied', id: 'platform' },
          {
            kind: 'failed',
            id: 'capi/prod-2',
            reason: 'ClusterUnreachable',
            message: 'no answer within 10s',
          },
          { kind: 'applied', id: 'capi/prod-1' },
        ],
        [],
      ),
      {
        ready: false,
        applied_to_clusters: ['platform', 'capi/prod-1'],
        message: 'capi/prod-2: ClusterUnreachable: no answer within 10s',
      },
    );
  });

  it('keeps listing a failed cluster that held the role before: nothing is claimed revoked by mistake', () => {
    const s = permissionStatus(
      [{ kind: 'failed', id: 'capi/prod-1', reason: 'KubeconfigInvalid', message: 'does not parse' }],
      ['platform', 'capi/prod-1'],
    );
    assert.deepEqual(s.applied_to_clusters, ['capi/prod-1']);
    assert.equal(s.ready, false);
  });

  it('drops removed clusters and clusters with no outcome (a deleted Cluster)', () => {
    assert.deepEqual(
      appliedToClusters(
        [
          { kind: 'removed', id: 'capi/old' },
          { kind: 'kept', id: 'capi/paused' },
        ],
        ['capi/old', 'capi/gone', 'capi/paused'],
      ),
      ['capi/paused'],
    );
  });

  it('names five failures and counts the rest', () => {
    const outcomes: ClusterOutcome[] = ['g', 'f', 'e', 'd', 'c', 'b', 'a'].map((n) => ({
      kind: 'failed',
      id: `capi/${n}`,
      reason: 'RuleRefused',
      message: 'x',
    }));
    assert.equal(
      permissionStatus(outcomes).message,
      'capi/a: RuleRefused: x; capi/b: RuleRefused: x; capi/c: RuleRefused: x; capi/d: RuleRefused: x; ' +
        'capi/e: RuleRefused: x; and 2 more cluster(s) failed',
    );
  });

  const id = fc.constantFrom('platform', 'capi/a', 'capi/b', 'ns2/a', 'capi/c');
  const outcome: fc.Arbitrary<ClusterOutcome> = fc.oneof(
    fc.record({ kind: fc.constant('applied' as const), id }),
    fc.record({ kind: fc.constant('removed' as const), id }),
    fc.record({ kind: fc.constant('kept' as const), id }),
    fc.record({
      kind: fc.constant('failed' as const),
      id,
      reason: fc.constantFrom('RuleRefused', 'ClusterUnreachable'),
      message: fc.string({ maxLength: 5 }),
    }),
  );

  it('agrees with a naive statement of the rules', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(outcome, { selector: (o) => o.id, maxLength: 5 }),
        fc.subarray(['platform', 'capi/a', 'capi/b', 'ns2/a', 'capi/c']),
        (outcomes, previous) => {
          const held: string[] = [];
          for (const o of outcomes) {
            if (o.kind === 'applied' || o.kind === 'kept') held.push(o.id);
            if (o.kind === 'failed' && previous.includes(o.id)) held.push(o.id);
          }
          const expected = [
            ...held.filter((h) => h === 'platform'),
            ...held.filter((h) => h !== 'platform').sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
          ];
          const s = permissionStatus(outcomes, previous);
          assert.deepEqual(s.applied_to_clusters, expected);
          const failed = outcomes.filter((o) => o.kind === 'failed');
          assert.equal(s.ready, failed.length === 0);
          for (const f of failed) assert.ok(s.message.includes(`${f.id}: ${f.reason}`), s.message);
          assert.equal(s.message === '', failed.length === 0);
        },
      ),
    );
  });
});

describe('sortApplied', () => {
  it('puts platform first, sorts the rest and drops duplicates', () => {
    assert.deepEqual(sortApplied(['capi/b', 'platform', 'capi/a', 'capi/b']), [
      'platform',
      'capi/a',
      'capi/b',
    ]);
    assert.deepEqual(sortApplied(['capi/b', 'capi/a']), ['capi/a', 'capi/b']);
    assert.deepEqual(sortApplied([]), []);
  });
});
