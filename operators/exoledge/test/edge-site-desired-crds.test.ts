/**
 * Every object an EdgeSite plans, sent to a real apiserver as a server-side dry-run
 * (strict field validation) with the real CRDs installed: the EdgeSite's own, and
 * cert-manager's, Gateway API's and Istio's as their projects publish them (versions in
 * packages/controlplane/src/versions.ts). No controller of those projects runs: this
 * says the objects are well-formed for their schemas and CEL rules, not that Istio or
 * cert-manager acts on them as intended. Nothing is stored but the EdgeSites.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { EDGE_SITE, type EdgeSite, type EdgeSiteSpec, edgeSiteCrd } from '../src/api/edge-site.ts';
import { type DesiredObject, desiredObjects } from '../src/domain/edge-site/index.ts';
import { EDGE_OPTIONS } from './support/edge-site-options.ts';
import { SEED_APP_SPLIT, SEED_ROUTING } from './support/seed-site.ts';

const OPTIONS = EDGE_OPTIONS;

/** The seed's example with every function on, gRPC included, and a drained origin: the most objects a site has. */
const FULL: EdgeSiteSpec = {
  ...SEED_ROUTING,
  routes: [
    { prefix: '/' },
    { prefix: '/app', upstreams: [...SEED_APP_SPLIT, { name: 'demo-old', port: 80, weight: 0 }] },
  ],
  tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
  captcha: { provider: 'Turnstile', siteKey: '0x4AAAAAAAB_example', secretRef: { name: 'turnstile' } },
  grpc: true,
  filter: { failurePolicy: 'Fail' },
  security: { waf: true, challenge: true, sensitiveFiles: true, allowlists: ['payment'] },
};

const SHARED: EdgeSiteSpec = {
  domains: ['blog.example.com'],
  upstream: { name: 'blog', port: 8080 },
  gatewayRef: { name: 'edge', namespace: 'edge-system' },
  security: { waf: false },
};

describe('server-side dry-run of the objects an EdgeSite plans, against the real CRDs of cert-manager, Gateway API and Istio (no controller running)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds([edgeSiteCrd()]);
    await env.installThirdParty('certManager', 'gatewayApi', 'istio');
  });

  /** Stores the site, so its objects carry a real uid, and plans its objects. */
  async function plan(namespace: string, shardNamespace: string, name: string, spec: EdgeSiteSpec) {
    const stored = await env.admin.create<EdgeSite>({ ...EDGE_SITE, metadata: { name, namespace }, spec });
    return desiredObjects(stored, { ...OPTIONS, shardNamespace });
  }

  /** Dry-runs each object; returns those refused, with the apiserver's message. */
  async function refused(objects: readonly DesiredObject<string>[]): Promise<string[]> {
    const out: string[] = [];
    for (const { ref, object } of objects) {
      try {
        const answer: KubeObject = await env.admin.create(object, { dryRun: true });
        assert.equal(answer.metadata.name, ref.name);
      } catch (err) {
        out.push(`${ref.kind}/${ref.name}: ${(err as Error).message}`);
      }
    }
    return out;
  }

  it('accepts every object of an autonomous site with every function on, and its grant in the shard namespace', async (t) => {
    const ns = await env.namespace(t, 'edge-desired');
    const shards = await env.namespace(t, 'edge-shards');
    const set = await plan(ns, shards, 'shop', FULL);
    assert.deepEqual(
      set.apply.map((o) => o.ref.kind),
      [
        'ServiceAccount',
        'ConfigMap',
        'Deployment',
        'Service',
        'Certificate',
        'Gateway',
        'EnvoyFilter',
        'WasmPlugin',
        'AuthorizationPolicy',
        'DestinationRule',
        'DestinationRule',
        'DestinationRule',
        'DestinationRule',
        'HTTPRoute',
      ],
    );
    assert.equal(set.shard.apply.length, 2);
    assert.deepEqual(await refused([...set.shard.apply, ...set.apply]), []);
  });

  it('accepts a minimal autonomous site, every default taken by the planner', async (t) => {
    const ns = await env.namespace(t, 'edge-desired-min');
    const shards = await env.namespace(t, 'edge-shards-min');
    const set = await plan(ns, shards, 'a'.repeat(52), {
      domains: ['min.example.com'],
      upstream: { name: 'min', port: 80 },
      tls: { issuerRef: { name: 'letsencrypt' } },
    });
    assert.deepEqual(await refused([...set.shard.apply, ...set.apply]), []);
  });

  it('refuses a misspelt field and a selector beside targetRefs: the acceptance above is the schemas speaking', async (t) => {
    const ns = await env.namespace(t, 'edge-desired-control');
    const set = await plan(ns, 'unused', 'shop', FULL);
    const pick = (kind: string): DesiredObject<string> => {
      const found = set.apply.find((o) => o.ref.kind === kind);
      assert.ok(found, kind);
      return found;
    };
    const plugin = pick('WasmPlugin');
    const filter = pick('EnvoyFilter');
    const withSpec = (o: DesiredObject<string>, extra: Record<string, unknown>): DesiredObject<string> => ({
      ref: o.ref,
      object: { ...o.object, spec: { ...(o.object.spec as object), ...extra } },
    });
    const answers = await refused([
      withSpec(plugin, { phse: 'AUTHN' }),
      withSpec(filter, {
        workloadSelector: { labels: { 'gateway.networking.k8s.io/gateway-name': 'shop' } },
      }),
    ]);
    assert.equal(answers.length, 2, answers.join('\n'));
    assert.match(answers[0] ?? '', /phse/);
    assert.match(answers[1] ?? '', /only one of targetRefs or workloadSelector/);
  });

  it("accepts a shared site's only object, its HTTPRoute attached to the shared Gateway", async (t) => {
    const ns = await env.namespace(t, 'edge-desired-shared');
    const set = await plan(ns, 'unused', 'blog', SHARED);
    assert.deepEqual(
      set.apply.map((o) => `${o.ref.kind}/${o.ref.name}`),
      ['HTTPRoute/blog'],
    );
    assert.deepEqual(await refused(set.apply), []);
  });
});
