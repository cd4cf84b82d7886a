/**
 * Tamper repair, without a cluster: what others did to the objects a source publishes,
 * judged by field ownership the way server-side apply judges it (`metadata.managedFields`
 * as the apiserver writes it), and what the operator does about it: rewrite, remove
 * what others added under the content, re-adopt its own unlabelled shard, and read at
 * once after a restart when the published objects no longer match the status.
 *
 * The managed-fields fixtures are written by hand the way the apiserver records them
 * (an apply records what it sent; an update by another manager takes the fields it
 * changed, whole when the field is atomic, as `endpointSelector`, `ingressDeny` and
 * `externalCIDRs` are in Cilium's schema). Expected values are literals.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { KubeObject, ManagedFieldsEntry } from '@operators/kit';
import { type BlocklistSourceStatus, Channel } from '../src/api/blocklist-source.ts';
import { DEFAULT_SHORTEST_PREFIX, merge, parseBlocklist } from '../src/domain/blocklist/index.ts';
import {
  cidrGroup,
  decideRead,
  deciderConfigMap,
  denyPolicy,
  isOurs,
  type LiveObjects,
  planPublication,
  publishedIntact,
  publishedSet,
  ReadWhy,
  repairPatch,
  resolveSpec,
} from '../src/domain/blocklist-source/index.ts';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const MIN = 60_000;
const UID = '6f0c2d1e-0000-4000-8000-00000000c0de';
const SOURCE = { apiVersion: 'edge.exoledge.io/v1alpha1', kind: 'BlocklistSource', name: 'cve', uid: UID };
const certain = resolveSpec({
  url: 'https://lists.example/cve.txt',
  kind: 'Certain',
  enforce: true,
  shardSize: 3,
  podSelector: { matchLabels: { istio: 'ingressgateway' } },
});
const presumed = resolveSpec({ url: 'https://lists.example/cve.txt', kind: 'Presumed' });
/** Seven /24s that never merge: shards of 3, 3 and 1. */
const LIST = '10.0.0.0/24\n10.0.2.0/24\n10.0.4.0/24\n10.0.6.0/24\n10.0.8.0/24\n10.0.10.0/24\n10.0.12.0/24\n';
const SHARD_TEXTS = [
  '10.0.0.0/24\n10.0.2.0/24\n10.0.4.0/24\n',
  '10.0.6.0/24\n10.0.8.0/24\n10.0.10.0/24\n',
  '10.0.12.0/24\n',
];
/** `sha256sum` of the canonical text: the fingerprint's definition, computed here on the literal. */
const LIST_SHA256 = createHash('sha256').update(LIST).digest('hex');

const set = publishedSet(
  merge(parseBlocklist(LIST, { shortestPrefix: DEFAULT_SHORTEST_PREFIX }).entries),
  certain,
);

/** What our apply of a CIDR group records. */
const groupApplied: ManagedFieldsEntry = {
  manager: 'exoledge',
  operation: 'Apply',
  apiVersion: 'cilium.io/v2',
  fieldsType: 'FieldsV1',
  fieldsV1: {
    'f:metadata': {
      'f:labels': {
        'f:app.kubernetes.io/managed-by': {},
        'f:edge.exoledge.io/shard': {},
        'f:edge.exoledge.io/source': {},
      },
      'f:ownerReferences': { [`k:{"uid":"${UID}"}`]: {} },
    },
    'f:spec': { 'f:externalCIDRs': {} },
  },
};

/** What our apply of the policy records, minus the spec fields another manager took. */
function policyApplied(taken: readonly string[] = []): ManagedFieldsEntry {
  const spec: Record<string, unknown> = {
    'f:description': {},
    'f:enableDefaultDeny': { '.': {}, 'f:egress': {}, 'f:ingress': {} },
    'f:endpointSelector': {},
    'f:ingressDeny': {},
  };
  for (const t of taken) delete spec[t];
  return {
    manager: 'exoledge',
    operation: 'Apply',
    apiVersion: 'cilium.io/v2',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:labels': { 'f:app.kubernetes.io/managed-by': {}, 'f:edge.exoledge.io/source': {} },
        'f:ownerReferences': { [`k:{"uid":"${UID}"}`]: {} },
      },
      'f:spec': spec,
    },
  };
}

function byOther(
  manager: string,
  fieldsV1: Record<string, unknown>,
  operation = 'Update',
): ManagedFieldsEntry {
  return { manager, operation, apiVersion: 'cilium.io/v2', fieldsType: 'FieldsV1', fieldsV1 };
}

function live<T extends KubeObject>(o: T, managedFields: readonly ManagedFieldsEntry[], rv = '41'): T {
  return {
    ...o,
    metadata: { ...o.metadata, uid: `uid-of-${o.metadata.name}`, resourceVersion: rv, managedFields },
  };
}

const groups = () => SHARD_TEXTS.map((text, i) => live(cidrGroup(SOURCE, i, text), [groupApplied]));
const policy = () => denyPolicy(SOURCE, certain.podSelector);
const intactLive = (): LiveObjects => ({
  cidrGroups: groups(),
  policies: [live(policy(), [policyApplied()])],
  configMaps: [],
});
const plan = (l: LiveObjects, spec = certain) =>
  planPublication({ source: SOURCE, spec, set, deciderNamespace: 'decider', live: l });
const applied = (l: LiveObjects, spec = certain) => plan(l, spec).apply.map((o) => o.metadata.name);

/** The policy as a hand edit left it: `spec` as given, the fields it changed now the editor's. */
function editedPolicy(spec: Record<string, unknown>, taken: readonly string[]): KubeObject {
  const p = policy();
  const editor = Object.fromEntries(taken.map((t) => [t, {}]));
  return live({ ...p, spec: { ...p.spec, ...spec } }, [
    policyApplied(taken),
    byOther('kubectl-edit', { 'f:spec': editor }),
  ]);
}

describe('drift, judged against the fields exoledge owns', () => {
  it('writes nothing when live is what we publish, whatever labels, annotations and status others added', () => {
    const l = intactLive();
    const decorated: LiveObjects = {
      ...l,
      cidrGroups: l.cidrGroups.map((g) => ({
        ...g,
        metadata: {
          ...g.metadata,
          labels: { ...g.metadata.labels, team: 'net' },
          annotations: { 'example.com/note': 'reviewed' },
          managedFields: [
            ...(g.metadata.managedFields ?? []),
            byOther('platform-team', { 'f:metadata': { 'f:labels': { 'f:team': {} }, 'f:annotations': {} } }),
          ],
        },
      })),
      policies: l.policies.map((p) => ({
        ...p,
        status: { derivativePolicies: { 'node-1': { ok: true } } },
        metadata: {
          ...p.metadata,
          managedFields: [
            ...(p.metadata.managedFields ?? []),
            {
              manager: 'cilium-agent',
              operation: 'Update',
              subresource: 'status',
              fieldsType: 'FieldsV1',
              fieldsV1: { 'f:status': { 'f:derivativePolicies': {} } },
            },
          ],
        },
      })),
    };
    assert.deepEqual(applied(decorated), []);
  });

  it('restores a hand-narrowed endpointSelector: a key another manager added is drift', () => {
    const narrowed = editedPolicy(
      { endpointSelector: { matchLabels: { istio: 'ingressgateway', zone: 'b' } } },
      ['f:endpointSelector'],
    );
    assert.deepEqual(applied({ ...intactLive(), policies: [narrowed] }), ['deny-cve']);
  });

  it('removes a deny rule another manager added to our policy', () => {
    const p = policy();
    const extra = editedPolicy(
      {
        ingressDeny: [
          ...p.spec.ingressDeny,
          { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { x: 'y' } } }] },
        ],
      },
      ['f:ingressDeny'],
    );
    assert.deepEqual(applied({ ...intactLive(), policies: [extra] }), ['deny-cve']);
  });

  it('sees a field another manager added under spec that we never state (an allow rule)', () => {
    const p = policy();
    const allow = live({ ...p, spec: { ...p.spec, ingress: [{ fromEntities: ['world'] }] } }, [
      policyApplied(),
      byOther('platform-team', { 'f:spec': { 'f:ingress': {} } }, 'Apply'),
    ]);
    assert.deepEqual(applied({ ...intactLive(), policies: [allow] }), ['deny-cve']);
  });

  it('sees a CIDR another manager added to a shard', () => {
    const l = intactLive();
    const g0 = cidrGroup(SOURCE, 0, SHARD_TEXTS[0] ?? '');
    const tampered = live({ ...g0, spec: { externalCIDRs: [...g0.spec.externalCIDRs, '192.0.2.0/24'] } }, [
      { ...groupApplied, fieldsV1: { 'f:metadata': groupApplied.fieldsV1?.['f:metadata'] ?? {} } },
      byOther('kubectl-edit', { 'f:spec': { 'f:externalCIDRs': {} } }),
    ]);
    assert.deepEqual(applied({ ...l, cidrGroups: [tampered, ...l.cidrGroups.slice(1)] }), ['cve-0']);
  });

  it('rewrites the policy when a key is removed from podSelector: we own the atomic selector, so the key is ours to drop', () => {
    const wide = live(denyPolicy(SOURCE, { matchLabels: { istio: 'ingressgateway', zone: 'a' } }), [
      policyApplied(),
    ]);
    assert.deepEqual(applied({ ...intactLive(), policies: [wide] }), ['deny-cve']);
  });

  it('sees a data key another manager added to a decider ConfigMap', () => {
    const dset = publishedSet(set.budget.kept, presumed);
    const cm = deciderConfigMap(SOURCE, presumed, 'decider', 0, dset.shards[0] ?? '', {
      fingerprint: dset.fingerprint,
      total: dset.shards.length,
    });
    const tampered = live({ ...cm, data: { ...cm.data, 'extra.txt': '0.0.0.0/0\n' } }, [
      {
        manager: 'exoledge',
        operation: 'Apply',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:prefixes.txt': {}, 'f:fingerprint': {}, 'f:total': {} } },
      },
      byOther('kubectl-edit', { 'f:data': { 'f:extra.txt': {} } }),
    ]);
    const p = planPublication({
      source: SOURCE,
      spec: presumed,
      set: dset,
      deciderNamespace: 'decider',
      live: { cidrGroups: [], policies: [], configMaps: [tampered] },
    });
    assert.deepEqual(
      p.apply.map((o) => o.metadata.name),
      ['blocklist-cve-0'],
    );
  });
});

describe('the repair of fields others added', () => {
  it('removes the selector key, the extra rule and the allow rule, and nothing we state, on the version it read', () => {
    const p = policy();
    const tampered = live(
      {
        ...p,
        spec: {
          ...p.spec,
          endpointSelector: { matchLabels: { istio: 'ingressgateway', 'team.example/zone': 'b' } },
          ingressDeny: [
            { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { x: 'y' } } }] },
            ...p.spec.ingressDeny,
            { fromEntities: ['cluster'] },
          ],
          ingress: [{ fromEntities: ['world'] }],
        },
      },
      [
        policyApplied(['f:endpointSelector', 'f:ingressDeny']),
        byOther('kubectl-edit', {
          'f:spec': { 'f:endpointSelector': {}, 'f:ingressDeny': {}, 'f:ingress': {} },
        }),
      ],
      '77',
    );
    assert.deepEqual(repairPatch(p, tampered, 'exoledge'), [
      { op: 'test', path: '/metadata/resourceVersion', value: '77' },
      { op: 'remove', path: '/spec/ingress' },
      { op: 'remove', path: '/spec/ingressDeny/2' },
      { op: 'remove', path: '/spec/ingressDeny/0' },
      { op: 'remove', path: '/spec/endpointSelector/matchLabels/team.example~1zone' },
    ]);
  });

  it('removes nothing when only our own fields differ, or when a field nobody owns is a server default', () => {
    const wide = live(denyPolicy(SOURCE, { matchLabels: { istio: 'ingressgateway', zone: 'a' } }), [
      policyApplied(),
    ]);
    assert.equal(repairPatch(policy(), wide, 'exoledge'), undefined, 'the apply drops our own key');
    const p = policy();
    const defaulted = live({ ...p, spec: { ...p.spec, defaulted: 'by the apiserver' } }, [policyApplied()]);
    assert.equal(repairPatch(p, defaulted, 'exoledge'), undefined);
    assert.deepEqual(applied({ ...intactLive(), policies: [defaulted] }), []);
  });

  it("treats an object whose managedFields were stripped as the apiserver does: every field someone else's", () => {
    const g0 = cidrGroup(SOURCE, 0, SHARD_TEXTS[0] ?? '');
    const stripped = live({ ...g0, spec: { externalCIDRs: [...g0.spec.externalCIDRs, '192.0.2.0/24'] } }, []);
    assert.deepEqual(repairPatch(g0, stripped, 'exoledge'), [
      { op: 'test', path: '/metadata/resourceVersion', value: '41' },
      { op: 'remove', path: '/spec/externalCIDRs/3' },
    ]);
  });
});

describe('which object under one of our names is ours', () => {
  const desired = cidrGroup(SOURCE, 1, SHARD_TEXTS[1] ?? '');
  const { labels: _labels, ...unlabelled } = desired.metadata;
  it('a shard whose source label was removed by hand, still controlled by the source (same UID)', () => {
    assert.equal(isOurs({ ...desired, metadata: unlabelled }, desired), true);
    assert.equal(isOurs(desired, desired), true);
  });
  it('not an object without our label and without our controller reference, nor one of a recreated source', () => {
    const { ownerReferences: _o, ...bare } = unlabelled;
    assert.equal(isOurs({ ...desired, metadata: bare }, desired), false);
    const otherUid = [{ ...SOURCE, uid: 'uid-of-the-deleted-source', controller: true }];
    assert.equal(isOurs({ ...desired, metadata: { ...bare, ownerReferences: otherUid } }, desired), false);
    const notController = [{ ...SOURCE, controller: false }];
    assert.equal(
      isOurs({ ...desired, metadata: { ...bare, ownerReferences: notController } }, desired),
      false,
    );
  });
});

describe('whether what is published still matches the status', () => {
  const status = { channel: Channel.CiliumPolicy, shards: 3, fingerprint: LIST_SHA256 } as const;
  const check = (l: LiveObjects, s: Parameters<typeof publishedIntact>[0]['status'] = status) =>
    publishedIntact({ source: SOURCE, spec: certain, deciderNamespace: 'decider', status: s, live: l })
      .intact;

  it('matches when the shards hash, in shard order, to the fingerprint and the policy is the one the spec wants', () => {
    assert.equal(check(intactLive()), true);
  });

  it('does not when a shard was edited, two shards swapped their content, or one is missing', () => {
    const l = intactLive();
    const [g0, g1, g2] = l.cidrGroups as ReturnType<typeof groups>;
    const edited = { ...g2!, spec: { externalCIDRs: ['10.0.12.0/24', '10.0.14.0/24'] } };
    assert.equal(check({ ...l, cidrGroups: [g0!, g1!, edited] }), false, 'a CIDR added');
    const swapped = [{ ...g0!, spec: g1!.spec }, { ...g1!, spec: g0!.spec }, g2!];
    assert.equal(check({ ...l, cidrGroups: swapped }), false, 'same prefixes, other order');
    assert.equal(check({ ...l, cidrGroups: [g0!, g2!] }), false, 'a shard missing');
  });

  it('does not when the policy was narrowed, or a shard or policy the status does not name is there', () => {
    const narrowed = editedPolicy(
      { endpointSelector: { matchLabels: { istio: 'ingressgateway', zone: 'b' } } },
      ['f:endpointSelector'],
    );
    assert.equal(check({ ...intactLive(), policies: [narrowed] }), false);
    assert.equal(check({ ...intactLive(), policies: [] }), false);
    const l = intactLive();
    const surplus = live(cidrGroup(SOURCE, 3, '10.9.0.0/24\n'), [groupApplied]);
    assert.equal(check({ ...l, cidrGroups: [...l.cidrGroups, surplus] }), false);
  });

  it('does not when the status names no published set; an empty decider set matches nothing live', () => {
    const unpublished = publishedIntact({
      source: SOURCE,
      spec: certain,
      deciderNamespace: 'decider',
      status: { channel: Channel.CiliumPolicy },
      live: intactLive(),
    });
    assert.equal(unpublished.intact, false);
    const empty = { channel: Channel.Decider, shards: 0, fingerprint: createHash('sha256').digest('hex') };
    assert.equal(check({ cidrGroups: [], policies: [], configMaps: [] }, empty), true);
    assert.equal(check(intactLive(), empty), false, 'the other channel left objects behind');
  });
});

describe('after a restart', () => {
  const status: BlocklistSourceStatus = {
    observedGeneration: 1,
    lastRefreshTime: new Date(NOW - 30 * MIN).toISOString(),
    channel: Channel.CiliumPolicy,
    shards: 3,
    fingerprint: LIST_SHA256,
  };
  const base = { now: NOW, spec: certain, generation: 1, status, memory: undefined } as const;

  it('reads at once, as a repair, when the published objects no longer match the status', () => {
    assert.deepEqual(decideRead({ ...base, publishedComplete: false }), {
      read: true,
      why: ReadWhy.Repair,
      validators: undefined,
    });
  });

  it('waits out the interval when they match', () => {
    assert.deepEqual(decideRead({ ...base, publishedComplete: true }), {
      read: false,
      nextReadAt: NOW + 90 * MIN,
    });
  });
});
