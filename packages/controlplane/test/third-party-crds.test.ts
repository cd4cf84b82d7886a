/**
 * The third-party CRDs our operators write to, installed from their projects' Go
 * modules: each accepts a valid object and, where its schema forbids unknown fields,
 * refuses a misspelt one (as kubectl's strict field validation, the kit's default).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import type { ThirdParty } from '../src/index.ts';
import { type TestEnv, testEnv } from '../src/testing.ts';

interface Sample {
  readonly system: ThirdParty;
  /** A valid object (namespace filled in by the test when namespaced). */
  readonly valid: KubeObject;
  /** The path of `valid` whose key is misspelt in the invalid variant, e.g. ['spec', 'externalCIDRs']. */
  readonly misspell: readonly string[];
  /** Namespaced kinds get the test's namespace. */
  readonly namespaced: boolean;
}

const SAMPLES: readonly Sample[] = [
  {
    system: 'cilium',
    namespaced: false,
    valid: {
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumCIDRGroup',
      metadata: { name: 'sample-group' },
      spec: { externalCIDRs: ['192.0.2.0/24', '2001:db8::/32'] },
    },
    misspell: ['spec', 'externalCIDRs'],
  },
  {
    system: 'cilium',
    namespaced: false,
    valid: {
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumClusterwideNetworkPolicy',
      metadata: { name: 'sample-deny' },
      spec: {
        endpointSelector: { matchLabels: { app: 'web' } },
        ingressDeny: [
          { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { 'edge.exoledge.io/source': 'x' } } }] },
        ],
      },
    },
    misspell: ['spec', 'endpointSelector'],
  },
  {
    system: 'gatewayApi',
    namespaced: true,
    valid: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'edge' },
      spec: { gatewayClassName: 'example', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    },
    misspell: ['spec', 'gatewayClassName'],
  },
  {
    system: 'gatewayApi',
    namespaced: true,
    valid: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'site' },
      spec: {
        parentRefs: [{ name: 'edge' }],
        hostnames: ['www.example.com'],
        rules: [{ backendRefs: [{ name: 'web', port: 8080 }] }],
      },
    },
    misspell: ['spec', 'hostnames'],
  },
  {
    system: 'certManager',
    namespaced: true,
    valid: {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'site' },
      spec: {
        secretName: 'site-tls',
        dnsNames: ['www.example.com'],
        issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' },
      },
    },
    misspell: ['spec', 'dnsNames'],
  },
  {
    system: 'istio',
    namespaced: true,
    valid: {
      apiVersion: 'networking.istio.io/v1alpha3',
      kind: 'EnvoyFilter',
      metadata: { name: 'lua' },
      spec: { workloadSelector: { labels: { app: 'gw' } }, configPatches: [] },
    },
    misspell: ['spec', 'workloadSelector'],
  },
  {
    system: 'istio',
    namespaced: true,
    valid: {
      apiVersion: 'extensions.istio.io/v1alpha1',
      kind: 'WasmPlugin',
      metadata: { name: 'coraza' },
      spec: { selector: { matchLabels: { app: 'gw' } }, url: 'oci://example/coraza:1.0', phase: 'AUTHN' },
    },
    misspell: ['spec', 'phase'],
  },
  {
    system: 'istio',
    namespaced: true,
    valid: {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'deny-bad' },
      spec: { action: 'DENY', rules: [{ from: [{ source: { ipBlocks: ['192.0.2.1'] } }] }] },
    },
    misspell: ['spec', 'action'],
  },
  {
    system: 'istio',
    namespaced: true,
    valid: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: { name: 'web' },
      spec: { host: 'web.default.svc.cluster.local', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } },
    },
    misspell: ['spec', 'host'],
  },
  {
    system: 'zalando',
    namespaced: true,
    valid: {
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'acid-terdut' },
      spec: {
        teamId: 'acid',
        numberOfInstances: 1,
        volume: { size: '1Gi' },
        postgresql: { version: '17' },
        users: { terdut: [] },
        databases: { terdut: 'terdut' },
      },
    },
    misspell: ['spec', 'numberOfInstances'],
  },
  {
    system: 'clusterApi',
    namespaced: true,
    valid: {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: 'workload' },
      spec: { paused: true },
    },
    misspell: ['spec', 'paused'],
  },
  {
    system: 'argoCd',
    namespaced: true,
    valid: {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'team-a' },
      spec: {
        description: 'team A',
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: 'team-a' }],
      },
    },
    misspell: ['spec', 'sourceRepos'],
  },
];

/** A deep copy of `obj` whose key at `path` is misspelt (its last letter doubled). */
function misspelt(obj: KubeObject, path: readonly string[]): KubeObject {
  const copy = structuredClone(obj) as Record<string, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
  const last = path[path.length - 1] ?? '';
  at[`${last}${last.slice(-1)}`] = at[last];
  delete at[last];
  return copy as unknown as KubeObject;
}

let env: TestEnv;
before(async () => {
  env = await testEnv();
  const systems = [...new Set(SAMPLES.map((s) => s.system))];
  await env.installThirdParty(...systems);
});

describe('third-party CRDs from their Go modules', () => {
  for (const sample of SAMPLES) {
    const { kind, apiVersion } = sample.valid;
    it(`${kind} (${apiVersion}) accepts a valid object and refuses a misspelt ${sample.misspell.join('.')}`, async (t) => {
      const ns = sample.namespaced ? await env.namespace(t, kind ?? 'x') : undefined;
      const name = `${sample.valid.metadata.name}-${Math.random().toString(36).slice(2, 7)}`;
      const valid = { ...sample.valid, metadata: { name, ...(ns ? { namespace: ns } : {}) } };
      const created = await env.admin.create(valid);
      assert.equal(created.metadata.name, name);
      if (!sample.namespaced)
        t.after(() => env.admin.delete({ apiVersion: apiVersion ?? '', kind: kind ?? '' }, name));

      const bad = misspelt(
        { ...valid, metadata: { ...valid.metadata, name: `${name}-bad` } },
        sample.misspell,
      );
      await assert.rejects(env.admin.create(bad), (err: unknown) => {
        assert.ok(
          isApiError(err, ApiErrorReason.BadRequest) || isApiError(err, ApiErrorReason.Invalid),
          `expected a refusal, got ${String(err)}`,
        );
        assert.match(err.message, /unknown field/);
        return true;
      });
    });
  }
});
