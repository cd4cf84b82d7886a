/**
 * Which Cluster API clusters a Permission or a Scope targets. Readiness comes from a
 * table written here (each status shape with the answer it must give); generated
 * selections are compared with a naive matcher and filter written here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ClusterTargets } from '../src/api/common.ts';
import type { ClusterSelector } from '../src/api/permission.ts';
import {
  type CapiCluster,
  clusterId,
  clusterPaused,
  clusterReady,
  parseClusterId,
  permissionClusterSelector,
  selectForPermission,
  selectForScope,
} from '../src/domain/cluster-selection.ts';

const T = '2026-01-01T00:00:00Z';
const cond = (status: 'True' | 'False' | 'Unknown') => ({
  type: 'ControlPlaneAvailable',
  status,
  reason: 'Test',
  message: '',
  lastTransitionTime: T,
});

/** Every status shape this operator must read, with whether it means "ready". */
const STATUSES: readonly {
  readonly what: string;
  readonly status: CapiCluster['status'];
  readonly ready: boolean;
}[] = [
  { what: 'no status', status: undefined, ready: false },
  { what: 'an empty status', status: {}, ready: false },
  { what: 'ControlPlaneAvailable=True', status: { conditions: [cond('True')] }, ready: true },
  {
    what: 'ControlPlaneAvailable=True among other conditions',
    status: { conditions: [{ ...cond('False'), type: 'Available' }, cond('True')] },
    ready: true,
  },
  {
    what: 'ControlPlaneAvailable=True, initialization not reported',
    status: { conditions: [cond('True')], initialization: { infrastructureProvisioned: true } },
    ready: true,
  },
  {
    what: 'ControlPlaneAvailable=False though initialised once',
    status: { conditions: [cond('False')], initialization: { controlPlaneInitialized: true } },
    ready: false,
  },
  {
    what: 'ControlPlaneAvailable=Unknown and initialised',
    status: { conditions: [cond('Unknown')], initialization: { controlPlaneInitialized: true } },
    ready: true,
  },
  {
    what: 'ControlPlaneAvailable=Unknown and not initialised',
    status: { conditions: [cond('Unknown')], initialization: { controlPlaneInitialized: false } },
    ready: false,
  },
  {
    what: 'initialization.controlPlaneInitialized',
    status: { initialization: { controlPlaneInitialized: true } },
    ready: true,
  },
  {
    what: 'initialization.controlPlaneInitialized=false',
    status: { initialization: { controlPlaneInitialized: false } },
    ready: false,
  },
  {
    what: 'only another condition True',
    status: { conditions: [{ ...cond('True'), type: 'Available' }] },
    ready: false,
  },
  { what: 'v1beta1 controlPlaneReady', status: { controlPlaneReady: true }, ready: true },
  { what: 'v1beta1 controlPlaneReady=false', status: { controlPlaneReady: false }, ready: false },
  { what: 'phase Provisioned only', status: { phase: 'Provisioned' }, ready: false },
];

function cluster(
  ns: string,
  name: string,
  o: {
    status?: CapiCluster['status'];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    paused?: boolean;
  } = {},
): CapiCluster {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: {
      namespace: ns,
      name,
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: o.paused === undefined ? {} : { paused: o.paused },
    ...(o.status ? { status: o.status } : {}),
  };
}

const READY = { conditions: [cond('True')] };

describe('cluster ids, readiness and pause', () => {
  it('names a cluster <namespace>/<name> and parses it back', () => {
    assert.equal(clusterId(cluster('capi', 'prod-1')), 'capi/prod-1');
    assert.deepEqual(parseClusterId('capi/prod-1'), { namespace: 'capi', name: 'prod-1' });
    assert.deepEqual(parseClusterId('a/b.c'), { namespace: 'a', name: 'b.c' });
    for (const bad of ['', 'prod-1', '/prod-1', 'capi/', 'a/b/c'])
      assert.equal(parseClusterId(bad), undefined, bad);
  });

  for (const s of STATUSES) {
    it(`reads ${s.what} as ${s.ready ? 'ready' : 'not ready'}`, () => {
      assert.equal(clusterReady(cluster('n', 'c', { status: s.status })), s.ready);
    });
  }

  it('is paused only when spec.paused is true', () => {
    assert.equal(clusterPaused(cluster('n', 'c', { paused: true })), true);
    assert.equal(clusterPaused(cluster('n', 'c', { paused: false })), false);
    assert.equal(clusterPaused(cluster('n', 'c')), false);
    assert.equal(clusterPaused({ metadata: { name: 'c', namespace: 'n' } }), false);
  });
});

describe('selectForPermission', () => {
  const a = cluster('capi', 'a', { status: READY, labels: { env: 'prod', zone: 'x' } });
  const b = cluster('capi', 'b', { status: READY, labels: { env: 'dev' } });
  const c = cluster('other', 'c', { labels: { env: 'prod' } }); // not ready
  const all = [c, b, a];
  const ids = (cs: readonly CapiCluster[]) => cs.map(clusterId);

  it('takes every ready cluster, sorted by id, when the Permission has no selector or an empty one', () => {
    assert.deepEqual(ids(selectForPermission(all, undefined)), ['capi/a', 'capi/b']);
    assert.deepEqual(ids(selectForPermission(all, {})), ['capi/a', 'capi/b']);
  });

  it('narrows ready clusters by matchLabels and matchExpressions', () => {
    assert.deepEqual(ids(selectForPermission(all, { matchLabels: { env: 'prod' } })), ['capi/a']);
    assert.deepEqual(
      ids(selectForPermission(all, { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] })),
      ['capi/b'],
    );
    assert.deepEqual(
      ids(
        selectForPermission(all, { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }),
      ),
      ['capi/a'],
    );
  });

  it('matches unready clusters too when asked to ignore readiness', () => {
    assert.deepEqual(
      ids(selectForPermission(all, { matchLabels: { env: 'prod' } }, { ignoreReadiness: true })),
      ['capi/a', 'other/c'],
    );
  });

  it('selects nothing for a selector the apiserver would not convert, and says why', () => {
    const bad: ClusterSelector = { matchExpressions: [{ key: 'env', operator: 'In', values: [] }] };
    assert.deepEqual(selectForPermission(all, bad), []);
    const conv = permissionClusterSelector(bad);
    assert.equal(conv.ok, false);
    assert.match(conv.ok ? '' : conv.message, /operator In needs at least one value/);
    assert.equal(permissionClusterSelector(undefined).ok, true);
  });
});

describe('selectForScope', () => {
  const a = cluster('capi', 'a', { status: READY, annotations: { tier: 'gold', zone: 'x' } });
  const b = cluster('capi', 'b', { status: READY, annotations: { tier: 'silver' } });
  const c = cluster('capi', 'c', {
    status: { initialization: { controlPlaneInitialized: false } },
    annotations: { tier: 'gold' },
  });
  const all = [a, b, c];

  it('takes every ready cluster when neither ids nor annotations are given (or both are empty)', () => {
    assert.deepEqual(selectForScope(all, {}), { selected: ['capi/a', 'capi/b'], unknown: [], notReady: [] });
    assert.deepEqual(selectForScope(all, { ids: [], annotations: {} }), {
      selected: ['capi/a', 'capi/b'],
      unknown: [],
      notReady: [],
    });
  });

  it('reports named ids that have no Cluster or are not ready, apart from the selection', () => {
    assert.deepEqual(selectForScope(all, { ids: ['capi/zz', 'capi/c', 'capi/b'] }), {
      selected: ['capi/b'],
      unknown: ['capi/zz'],
      notReady: ['capi/c'],
    });
  });

  it('needs every annotation, with exactly its value, and the id when both are given', () => {
    assert.deepEqual(selectForScope(all, { annotations: { tier: 'gold' } }).selected, ['capi/a']);
    assert.deepEqual(selectForScope(all, { annotations: { tier: 'gold', zone: 'y' } }).selected, []);
    assert.deepEqual(selectForScope(all, { ids: ['capi/b'], annotations: { tier: 'gold' } }).selected, []);
    assert.deepEqual(
      selectForScope(all, { ids: ['capi/a', 'capi/b'], annotations: { tier: 'gold' } }).selected,
      ['capi/a'],
    );
  });
});

// ---------------------------------------------------------------------------------------
// Generated clusters and targets against naive versions written here.

const KEYS = ['env', 'zone', 'example.com/team'] as const;
const VALUES = ['a', 'b', 'c'] as const;

interface Gen {
  readonly cluster: CapiCluster;
  readonly ready: boolean;
}

const genCluster: fc.Arbitrary<Gen> = fc
  .record({
    ns: fc.constantFrom('capi', 'other'),
    name: fc.constantFrom('c1', 'c2', 'c3', 'c4', 'c5'),
    status: fc.constantFrom(...STATUSES),
    labels: fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 3 }),
    annotations: fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 3 }),
    paused: fc.boolean(),
  })
  .map((g) => ({
    cluster: cluster(g.ns, g.name, {
      status: g.status.status,
      labels: g.labels,
      annotations: g.annotations,
      paused: g.paused,
    }),
    ready: g.status.ready,
  }));

const genClusters = fc.uniqueArray(genCluster, {
  maxLength: 8,
  selector: (g) => `${g.cluster.metadata.namespace}/${g.cluster.metadata.name}`,
});

const genSelector: fc.Arbitrary<ClusterSelector | undefined> = fc.option(
  fc.record(
    {
      matchLabels: fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 }),
      matchExpressions: fc.array(
        fc.oneof(
          fc.record({
            key: fc.constantFrom(...KEYS),
            operator: fc.constantFrom('In' as const, 'NotIn' as const),
            values: fc.uniqueArray(fc.constantFrom(...VALUES), { minLength: 1 }),
          }),
          fc.record({
            key: fc.constantFrom(...KEYS),
            operator: fc.constantFrom('Exists' as const, 'DoesNotExist' as const),
          }),
        ),
        { maxLength: 2 },
      ),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

/** metav1.LabelSelector semantics, spelled out: every requirement must hold. */
function naiveMatches(
  selector: ClusterSelector | undefined,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) {
    if (!(k in l) || l[k] !== v) return false;
  }
  for (const e of selector?.matchExpressions ?? []) {
    const has = e.key in l;
    const v = l[e.key];
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(v as string))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(v as string)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const idOf = (g: Gen) => `${g.cluster.metadata.namespace}/${g.cluster.metadata.name}`;
const sorted = (xs: string[]) => [...xs].sort();

describe('selections of generated clusters', () => {
  it('selectForPermission is exactly the ready clusters the naive matcher accepts, sorted by id', () => {
    fc.assert(
      fc.property(genClusters, genSelector, (gens, selector) => {
        const got = selectForPermission(
          gens.map((g) => g.cluster),
          selector,
        ).map(clusterId);
        const want = sorted(
          gens.filter((g) => g.ready && naiveMatches(selector, g.cluster.metadata.labels)).map(idOf),
        );
        assert.deepEqual(got, want);
        const ready = new Set(gens.filter((g) => g.ready).map(idOf));
        for (const id of got) assert.ok(ready.has(id), `${id} is selected but not ready`);
      }),
      { numRuns: 500 },
    );
  });

  it('selectForPermission ignoring readiness is a superset: the naive matcher over every cluster', () => {
    fc.assert(
      fc.property(genClusters, genSelector, (gens, selector) => {
        const clusters = gens.map((g) => g.cluster);
        const loose = selectForPermission(clusters, selector, { ignoreReadiness: true }).map(clusterId);
        assert.deepEqual(
          loose,
          sorted(gens.filter((g) => naiveMatches(selector, g.cluster.metadata.labels)).map(idOf)),
        );
        for (const id of selectForPermission(clusters, selector).map(clusterId))
          assert.ok(loose.includes(id));
      }),
      { numRuns: 300 },
    );
  });

  const genTargets: fc.Arbitrary<ClusterTargets> = fc.record(
    {
      ids: fc.uniqueArray(
        fc.constantFrom('capi/c1', 'capi/c2', 'capi/c3', 'other/c1', 'other/c4', 'nope/c9'),
        { maxLength: 4 },
      ),
      annotations: fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 }),
    },
    { requiredKeys: [] },
  );

  it('selectForScope: selected = ready ∧ named (if any named) ∧ carrying every annotation; unknown and notReady as named', () => {
    fc.assert(
      fc.property(genClusters, genTargets, (gens, targets) => {
        const got = selectForScope(
          gens.map((g) => g.cluster),
          targets,
        );
        const named = targets.ids ?? [];
        const wantSelected: string[] = [];
        for (const g of gens) {
          if (!g.ready) continue;
          if (named.length > 0 && !named.includes(idOf(g))) continue;
          const ann = g.cluster.metadata.annotations ?? {};
          let all = true;
          for (const [k, v] of Object.entries(targets.annotations ?? {})) if (ann[k] !== v) all = false;
          if (all) wantSelected.push(idOf(g));
        }
        assert.deepEqual(got.selected, sorted(wantSelected));
        assert.deepEqual(
          got.unknown,
          named.filter((id) => !gens.some((g) => idOf(g) === id)),
        );
        assert.deepEqual(
          got.notReady,
          named.filter((id) => gens.some((g) => idOf(g) === id && !g.ready)),
        );
        // The three never overlap, and paused clusters are not this function's business.
        const sel = new Set(got.selected);
        for (const id of [...got.unknown, ...got.notReady]) assert.ok(!sel.has(id));
      }),
      { numRuns: 500 },
    );
  });
});
