/**
 * `Discovery.preferredResources`: what a rule naming resources by plural expands
 * against, checked against the apiserver's own discovery documents read naively.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { Discovery } from '@operators/kit';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});
after(async () => {
  await env?.close();
});

describe('Discovery.preferredResources', () => {
  it("lists every top-level resource of each group's preferred version, as the apiserver's documents say", async () => {
    const t = env.admin.transport;
    type Doc = { resources: { name: string }[] };
    const expected = new Set<string>();
    for (const r of (await t.request<Doc>({ method: 'GET', path: '/api/v1' })).resources) {
      if (!r.name.includes('/')) expected.add(`/${r.name}`);
    }
    const groups = await t.request<{
      groups: { name: string; preferredVersion: { groupVersion: string } }[];
    }>({
      method: 'GET',
      path: '/apis',
    });
    for (const g of groups.groups) {
      const doc = await t.request<Doc>({ method: 'GET', path: `/apis/${g.preferredVersion.groupVersion}` });
      for (const r of doc.resources) if (!r.name.includes('/')) expected.add(`${g.name}/${r.name}`);
    }

    const { resources, unavailable } = await new Discovery(t).preferredResources();
    assert.deepEqual(unavailable, []);
    assert.deepEqual(new Set(resources.map((r) => `${r.group}/${r.resource}`)), expected);
    const cm = resources.find((r) => r.group === '' && r.resource === 'configmaps');
    assert.deepEqual(cm && { apiVersion: cm.apiVersion, kind: cm.kind, namespaced: cm.namespaced }, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespaced: true,
    });
    const cr = resources.find((r) => r.resource === 'clusterroles');
    assert.equal(cr?.apiVersion, 'rbac.authorization.k8s.io/v1');
    assert.equal(cr?.namespaced, false);
    assert.ok(resources.find((r) => r.resource === 'pods')?.subresources.includes('log'));
  });
});
