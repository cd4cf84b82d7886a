/**
 * The policy map the enforced sources of one podSelector share: who is admitted, who is
 * refused, and which selectors are the same. Properties over random groups, held to a
 * second, obviously-correct statement of the rule (sort by age, sum the older ones).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { BlocklistSource, LabelSelector } from '../src/api/blocklist-source.ts';
import {
  admitToPolicyMap,
  type PolicyMapClaim,
  policyMapPeers,
  selectorKey,
} from '../src/domain/blocklist-source/index.ts';

const LIMIT = 65_536;

/** A group of claims with distinct names, creation times often equal (to the second). */
const claims = fc
  .uniqueArray(
    fc.record({
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/),
      second: fc.integer({ min: 0, max: 5 }),
      entries: fc.oneof(fc.integer({ min: 0, max: LIMIT }), fc.integer({ min: 0, max: 30_000 })),
    }),
    { selector: (c) => c.name, minLength: 1, maxLength: 8 },
  )
  .map((cs) =>
    cs.map(
      (c): PolicyMapClaim => ({
        name: c.name,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, c.second)).toISOString().replace('.000Z', 'Z'),
        entries: c.entries,
      }),
    ),
  );

/** The rule restated: sort by (creation, name); admitted when the prefix sum up to it fits. */
function expectedAdmitted(group: readonly PolicyMapClaim[], limit = LIMIT): Set<string> {
  const order = [...group].sort((a, b) =>
    a.createdAt === b.createdAt ? (a.name < b.name ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1,
  );
  const admitted = new Set<string>();
  let before = 0;
  for (const c of order) {
    if (before + c.entries <= limit) admitted.add(c.name);
    before += c.entries;
  }
  return admitted;
}

function admittedBy(group: readonly PolicyMapClaim[]): Set<string> {
  return new Set(
    group
      .filter(
        (c) =>
          admitToPolicyMap(
            c,
            group.filter((o) => o !== c),
          ).admitted,
      )
      .map((c) => c.name),
  );
}

describe('the shared policy map', () => {
  it('admits the sources whose older peers and themselves fit, as the rule restated says', () => {
    fc.assert(
      fc.property(claims, (group) => {
        assert.deepEqual(admittedBy(group), expectedAdmitted(group));
      }),
    );
  });

  it('never admits sources that together exceed 65,536 entries', () => {
    fc.assert(
      fc.property(claims, (group) => {
        const admitted = admittedBy(group);
        const sum = group.filter((c) => admitted.has(c.name)).reduce((t, c) => t + c.entries, 0);
        assert.ok(sum <= LIMIT, `${sum} admitted`);
      }),
    );
  });

  it('keeps older sources in their place: a younger source never changes their decision', () => {
    fc.assert(
      fc.property(claims, fc.integer({ min: 0, max: LIMIT }), (group, entries) => {
        const younger: PolicyMapClaim = { name: 'zz-younger', createdAt: '2027-01-01T00:00:00Z', entries };
        const before = admittedBy(group);
        const after = admittedBy([...group, younger]);
        after.delete(younger.name);
        assert.deepEqual(after, before);
      }),
    );
  });

  it('decides the same whatever order the peers come in', () => {
    fc.assert(
      fc.property(claims, fc.func(fc.integer()), (group, rank) => {
        const shuffled = [...group].sort((a, b) => rank(a.name) - rank(b.name));
        for (const c of group) {
          assert.deepEqual(
            admitToPolicyMap(
              c,
              group.filter((o) => o !== c),
            ),
            admitToPolicyMap(
              c,
              shuffled.filter((o) => o !== c),
            ),
          );
        }
      }),
    );
  });

  it('names the older sources with their counts, oldest first, when it refuses', () => {
    const a = { name: 'scanners', createdAt: '2026-01-01T00:00:00Z', entries: 40_000 };
    const b = { name: 'exploits', createdAt: '2026-01-01T00:00:00Z', entries: 10_000 };
    const young = { name: 'botnet', createdAt: '2026-03-01T00:00:00Z', entries: 20_000 };
    const later = { name: 'later', createdAt: '2026-04-01T00:00:00Z', entries: 60_000 };
    assert.deepEqual(admitToPolicyMap(young, [a, later, b]), {
      admitted: false,
      older: [b, a],
      total: 70_000,
      limit: LIMIT,
    });
    assert.deepEqual(admitToPolicyMap({ ...young, entries: 15_536 }, [a, b, later]), { admitted: true });
  });
});

describe('which sources share a policy map', () => {
  it('sees one selector however it is written', () => {
    const same: LabelSelector[] = [
      { matchLabels: { istio: 'ingressgateway', tier: 'edge' } },
      { matchLabels: { tier: 'edge', istio: 'ingressgateway' } },
      {
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['edge'] },
          { key: 'istio', operator: 'In', values: ['ingressgateway'] },
        ],
      },
      {
        matchLabels: { istio: 'ingressgateway' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['edge', 'core'] },
          { key: 'tier', operator: 'Exists' },
          { key: 'tier', operator: 'In', values: ['edge'] },
        ],
      },
    ];
    for (const s of same) assert.equal(selectorKey(s), selectorKey(same[0] ?? {}), JSON.stringify(s));
    assert.equal(selectorKey({}), selectorKey({ matchLabels: {}, matchExpressions: [] }));
    assert.equal(
      selectorKey({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['y', 'x'] }] }),
      selectorKey({
        matchExpressions: [
          { key: 'a', operator: 'NotIn', values: ['x'] },
          { key: 'a', operator: 'NotIn', values: ['y'] },
        ],
      }),
    );
  });

  it('tells different selectors apart, overlapping ones included', () => {
    const different: LabelSelector[] = [
      {},
      { matchLabels: { istio: 'ingressgateway' } },
      { matchLabels: { istio: 'egressgateway' } },
      { matchLabels: { istio: 'ingressgateway', tier: 'edge' } },
      { matchExpressions: [{ key: 'istio', operator: 'Exists' }] },
      { matchExpressions: [{ key: 'istio', operator: 'DoesNotExist' }] },
      { matchExpressions: [{ key: 'istio', operator: 'NotIn', values: ['ingressgateway'] }] },
      { matchExpressions: [{ key: 'istio', operator: 'In', values: ['ingressgateway', 'egressgateway'] }] },
    ];
    assert.equal(new Set(different.map(selectorKey)).size, different.length);
  });

  it('counts the peers enforced with the same selector, by what they publish through Cilium', () => {
    const source = (
      name: string,
      spec: Partial<BlocklistSource['spec']>,
      status?: BlocklistSource['status'],
    ): BlocklistSource => ({
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'BlocklistSource',
      metadata: { name, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { url: 'https://lists.example/x', kind: 'Certain', ...spec },
      ...(status ? { status } : {}),
    });
    const gateway = { matchLabels: { istio: 'ingressgateway' } };
    const inForce = (published: number): BlocklistSource['status'] => ({
      channel: 'CiliumPolicy',
      entries: { read: published, malformed: 0, normalised: 0, merged: published, published, dropped: 0 },
    });
    const all = [
      source('self', { enforce: true, podSelector: gateway }),
      source(
        'peer',
        {
          enforce: true,
          podSelector: { matchExpressions: [{ key: 'istio', operator: 'In', values: ['ingressgateway'] }] },
        },
        inForce(100),
      ),
      source('not-yet', { enforce: true, podSelector: gateway }),
      source(
        'other-endpoints',
        { enforce: true, podSelector: { matchLabels: { app: 'api' } } },
        inForce(200),
      ),
      source('decider', { enforce: false, podSelector: gateway }, inForce(300)),
    ];
    assert.deepEqual(policyMapPeers('self', selectorKey(gateway), all), [
      { name: 'peer', createdAt: '2026-01-01T00:00:00Z', entries: 100 },
      { name: 'not-yet', createdAt: '2026-01-01T00:00:00Z', entries: 0 },
    ]);
  });
});
