/**
 * An EdgeSite on a cluster without Istio: a private control plane with the real CRDs of
 * Gateway API and cert-manager only. The gateway, its certificate, the route and the
 * decider are applied; the functions Istio carries say why they are not; deleting the
 * site completes (a kind that is not served counts as gone).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { blocklistSourceCrd } from '../src/api/blocklist-source.ts';
import { EDGE_SITE, edgeSiteCrd } from '../src/api/edge-site.ts';
import { EdgeHarness, featureLine, readyMessage } from './support/edge-site-e2e.ts';

describe('EdgeSite on a private apiserver with Gateway API and cert-manager CRDs but no Istio', () => {
  let env: TestEnv;
  let h: EdgeHarness;
  const scope = { after: (_fn: () => Promise<void>) => undefined };

  before(async () => {
    env = await privateTestEnv();
    await env.installCrds([edgeSiteCrd(), blocklistSourceCrd()]);
    await env.installThirdParty('cilium', 'certManager', 'gatewayApi');
    h = new EdgeHarness(
      env,
      await env.namespace(scope, 'edge-no-istio'),
      await env.namespace(scope, 'edge-shards'),
    );
    await h.start();
  });
  after(async () => {
    await h.stop();
    await env.close();
  });

  it('applies the gateway, certificate, route and decider; the Istio functions say KindNotServed; deletion completes', async () => {
    await h.create('plain', {
      domains: ['plain.example.com'],
      upstream: { name: 'web', port: 80 },
      tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
      grpc: true,
    });
    const site = await h.ready('plain', 'KindNotServed');
    assert.deepEqual(await h.owned('plain'), [
      'Certificate/plain-tls',
      'ConfigMap/plain-edge',
      'Deployment/plain-decider',
      'Gateway/plain',
      'HTTPRoute/plain',
      'Service/plain-decider',
      'ServiceAccount/plain-decider',
    ]);
    assert.deepEqual(await h.inShardNamespace('plain'), ['Role', 'RoleBinding']);
    assert.deepEqual(featureLine(site), [
      'waf=KindNotServed',
      'challenge=KindNotServed',
      'sensitiveFiles=KindNotServed',
      'blocklists=KindNotServed',
      'grpc=KindNotServed',
    ]);
    for (const crd of [
      'authorizationpolicies.security.istio.io',
      'destinationrules.networking.istio.io',
      'envoyfilters.networking.istio.io',
      'wasmplugins.extensions.istio.io',
    ]) {
      assert.ok(readyMessage(site).includes(crd), `the message names ${crd}: ${readyMessage(site)}`);
    }

    await env.admin.delete(EDGE_SITE, 'plain', h.ns);
    await eventually('the site gone', async () => ((await h.get('plain')) ? undefined : true), 15_000);
    assert.deepEqual(await h.owned('plain'), []);
    assert.deepEqual(await h.inShardNamespace('plain'), []);
  });
});
