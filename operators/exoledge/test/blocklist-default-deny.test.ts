/**
 * The deny policy must cut only the listed addresses. In Cilium, an endpoint selected by
 * a policy whose rules are all `ingressDeny` enters default-deny for ingress unless the
 * policy says `enableDefaultDeny.ingress: false` (the CRD's own description: "if a policy
 * only has Ingress or IngressDeny rules, then the default for ingress is true"): without
 * it, every packet to the gateway that no other policy allows is dropped.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { CILIUM_CLUSTERWIDE_NETWORK_POLICY, type CiliumClusterwideNetworkPolicy } from '../src/api/cilium.ts';
import { denyPolicy } from '../src/domain/blocklist-source/index.ts';

const source = (name: string) => ({
  apiVersion: 'edge.exoledge.io/v1alpha1',
  kind: 'BlocklistSource',
  name,
  uid: '2c1d5a0e-6f1b-4f8e-9d53-0d1b7f3c9a11',
});

describe('the deny policy', () => {
  it('turns default-deny off in both directions, so only the listed addresses are cut', () => {
    const policy = denyPolicy(source('cve'), { matchLabels: { istio: 'ingressgateway' } });
    assert.deepEqual(policy.spec.enableDefaultDeny, { ingress: false, egress: false });
  });

  describe('on an apiserver with Cilium 1.20 CRDs', () => {
    let env: TestEnv;
    before(async () => {
      env = await testEnv();
      await env.installThirdParty('cilium');
    });

    it('is accepted by the real CiliumClusterwideNetworkPolicy schema, enableDefaultDeny kept as written', async (t) => {
      const name = `default-deny-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
      const policy = denyPolicy(source(name), { matchLabels: { istio: 'ingressgateway' } });
      // No owner: this test has no BlocklistSource for the garbage collector to follow.
      const { ownerReferences: _o, ...metadata } = policy.metadata;
      t.after(() => env.admin.delete(CILIUM_CLUSTERWIDE_NETWORK_POLICY, policy.metadata.name ?? ''));
      await env.admin.apply({ ...policy, metadata }, { fieldManager: 'exoledge-test', force: true });
      const stored = await env.admin.get<CiliumClusterwideNetworkPolicy>(
        CILIUM_CLUSTERWIDE_NETWORK_POLICY,
        policy.metadata.name ?? '',
      );
      // A field the schema did not know would have been refused (strict field validation)
      // or pruned; read back from etcd, it is there as written.
      assert.deepEqual(stored.spec.enableDefaultDeny, { ingress: false, egress: false });
    });
  });
});
