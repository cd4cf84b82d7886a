/**
 * The EdgeSite controller end to end, on the real apiserver with the real CRDs of
 * cert-manager, Gateway API and Istio (none of their controllers runs: the objects are
 * validated and stored, not acted on). Expected objects are written out by name here,
 * never asked of the planner.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeObject, resourcePath, type WatchEvent, watch } from '@operators/kit';
import { blocklistSourceCrd } from '../src/api/blocklist-source.ts';
import { EDGE_SITE, type EdgeSiteSpec, edgeSiteCrd } from '../src/api/edge-site.ts';
import {
  EdgeHarness,
  featureLine,
  readyMessage,
  readyReason,
  SITE_KINDS,
  SITE_LABEL,
} from './support/edge-site-e2e.ts';

const WASM = { apiVersion: 'extensions.istio.io/v1alpha1', kind: 'WasmPlugin' } as const;
const ROUTE = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute' } as const;
const GATEWAY = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway' } as const;
const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const SLICE = { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' } as const;

const spec = (domain: string, extra: Partial<EdgeSiteSpec> = {}): EdgeSiteSpec => ({
  domains: [domain],
  upstream: { name: 'web', port: 80 },
  tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
  ...extra,
});

/** What an autonomous site with the defaults (every switch on, no gRPC) owns, by name. */
const AUTONOMOUS = (s: string) =>
  [
    `AuthorizationPolicy/${s}-deny-files`,
    `Certificate/${s}-tls`,
    `ConfigMap/${s}-edge`,
    `Deployment/${s}-decider`,
    `EnvoyFilter/${s}-ext-authz`,
    `Gateway/${s}`,
    `HTTPRoute/${s}`,
    `Service/${s}-decider`,
    `ServiceAccount/${s}-decider`,
    `WasmPlugin/${s}-waf`,
  ].sort();

describe('EdgeSite controller on a real apiserver with the real cert-manager, Gateway API and Istio CRDs (no controller of theirs running)', () => {
  let env: TestEnv;
  let h: EdgeHarness;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    env = await testEnv();
    // The operator runs its BlocklistSource controller too, which needs its CRD and Cilium's.
    await env.installCrds([edgeSiteCrd(), blocklistSourceCrd()]);
    await env.installThirdParty('cilium', 'certManager', 'gatewayApi', 'istio');
    const scope = { after: (fn: () => Promise<void>) => cleanups.push(fn) };
    h = new EdgeHarness(
      env,
      await env.namespace(scope, 'edge-e2e'),
      await env.namespace(scope, 'edge-shards'),
    );
    await h.start();
  });
  after(async () => {
    await h.stop();
    for (const c of cleanups) await c();
  });

  async function unrefuse(id: string): Promise<void> {
    const name = `edge-${id}-${h.ns}`.slice(0, 63);
    const group = 'admissionregistration.k8s.io/v1';
    await env.admin
      .delete({ apiVersion: group, kind: 'ValidatingAdmissionPolicyBinding' }, name)
      .catch(() => undefined);
    await env.admin
      .delete({ apiVersion: group, kind: 'ValidatingAdmissionPolicy' }, name)
      .catch(() => undefined);
  }

  /**
   * A ValidatingAdmissionPolicy refusing some requests in the harness's namespace: the
   * apiserver's own way to make a write fail, as a webhook or a missing grant would.
   * Waits until `probe` is refused (policies are enforced a moment after creation).
   */
  async function refuse(
    id: string,
    rule: {
      group: string;
      resource: string;
      operations: string[];
      expression: string;
      message: string;
      probe: () => Promise<void>;
    },
  ): Promise<void> {
    const name = `edge-${id}-${h.ns}`.slice(0, 63);
    const vap = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' } as const;
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
    } as const;
    await env.admin.create({
      ...vap,
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [rule.group],
              apiVersions: ['*'],
              operations: rule.operations,
              resources: [rule.resource],
            },
          ],
        },
        validations: [{ expression: rule.expression, message: rule.message }],
      },
    });
    await env.admin.create({
      ...binding,
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': h.ns } } },
      },
    });
    cleanups.unshift(() => unrefuse(id));
    await eventually(`policy ${name} enforced`, async () => {
      try {
        await rule.probe();
        return undefined;
      } catch {
        return true;
      }
    });
  }

  it('an autonomous site gets exactly its objects, its grant in the shard namespace, every function applied, and one Reconciled event', async () => {
    await h.create('shop', spec('shop.example.com'));
    const site = await h.ready('shop');
    assert.deepEqual(await h.owned('shop'), AUTONOMOUS('shop'));
    assert.deepEqual(await h.inShardNamespace('shop'), ['Role', 'RoleBinding']);
    assert.deepEqual(featureLine(site), [
      'waf=applied',
      'challenge=applied',
      'sensitiveFiles=applied',
      'blocklists=applied',
      'grpc=NotRequested',
    ]);
    assert.equal(site.status?.shared, false);
    assert.deepEqual(site.metadata.finalizers, ['edge.exoledge.io/finalizer']);
    await eventually('the Reconciled event', async () =>
      (await h.events('shop', 'Reconciled')).length === 1 ? true : undefined,
    );
  });

  it('a hand-deleted HTTPRoute comes back within 2 s, and a hand-edited one is put back', async () => {
    await h.create('route-back', spec('back.example.com'));
    await h.ready('route-back');
    const before = await h.find(ROUTE, 'route-back');
    await env.admin.delete(ROUTE, 'route-back', h.ns);
    const started = Date.now();
    const back = await eventually(
      'the route recreated',
      async () => {
        const r = await h.find(ROUTE, 'route-back');
        return r && r.metadata.uid !== before?.metadata.uid ? r : undefined;
      },
      2_000,
    );
    assert.ok(Date.now() - started < 2_000);
    assert.deepEqual((back as KubeObject & { spec: { hostnames: string[] } }).spec.hostnames, [
      'back.example.com',
    ]);

    await env.admin.patch(ROUTE, 'route-back', h.ns, {
      type: 'merge',
      body: { spec: { hostnames: ['evil.example.com'] } },
    });
    await eventually(
      'the route repaired',
      async () => {
        const r = (await h.find(ROUTE, 'route-back')) as KubeObject & { spec: { hostnames: string[] } };
        return r.spec.hostnames.join() === 'back.example.com' ? true : undefined;
      },
      2_000,
    );
  });

  it('a resync of converged sites makes zero writes (no POST, PUT, PATCH or DELETE)', async () => {
    await h.ready('shop');
    await h.ready('route-back');
    // A restart reconciles every site once, as a resync does, from a cold cache.
    await h.stop();
    const { client } = await h.start();
    await new Promise((r) => setTimeout(r, 3_000));
    assert.deepEqual(client.writes, []);
  });

  it('switching the challenge off tells the decider (its configuration), removing no object; the WAF and the deny policy go by name', async () => {
    await h.create('switch', spec('switch.example.com'));
    await h.ready('switch');
    await h.patchSpec('switch', { security: { challenge: false } });
    const site = await h.until('switch', 'challenge off', (s) =>
      featureLine(s).includes('challenge=TurnedOff'),
    );
    assert.equal(readyReason(site), 'Reconciled');
    assert.deepEqual(await h.owned('switch'), AUTONOMOUS('switch'));
    const config = (await h.find(CONFIG_MAP, 'switch-edge')) as KubeObject & { data: Record<string, string> };
    assert.equal(JSON.parse(config.data['config.json']!).challenge, false);
    await h.patchSpec('switch', { security: { challenge: false, waf: false, sensitiveFiles: false } });
    await h.until(
      'switch',
      'all three off',
      (s) => featureLine(s).filter((f) => f.endsWith('TurnedOff')).length === 3,
    );
    assert.deepEqual(
      await h.owned('switch'),
      AUTONOMOUS('switch').filter(
        (o) => !['WasmPlugin/switch-waf', 'AuthorizationPolicy/switch-deny-files'].includes(o),
      ),
    );
  });

  it('a switched-off object stays gone across reconciles and an operator restart, and an unowned object of the same name survives', async () => {
    const unowned = {
      ...WASM,
      metadata: { name: 'switch-waf', namespace: h.ns },
      spec: { url: 'oci://example.com/someone-elses:1', phase: 'AUTHZ' },
    };
    await env.admin.create(unowned);
    await h.stop();
    const { client } = await h.start();
    await new Promise((r) => setTimeout(r, 3_000));
    assert.ok(await h.find(WASM, 'switch-waf'), 'the unowned WasmPlugin is still there');
    const policy = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' } as const;
    assert.equal(await h.find(policy, 'switch-deny-files'), undefined, 'the switched-off policy stays gone');
    assert.deepEqual(
      client.writes.filter((w) => w.includes('switch-waf') || w.includes('switch-deny-files')),
      [],
      'nothing written or deleted under those names',
    );
    // Turning the WAF back on meets the unowned object: refused, never taken over.
    await h.patchSpec('switch', { security: { challenge: false, waf: true, sensitiveFiles: false } });
    const site = await h.ready('switch', 'NameConflict');
    assert.match(readyMessage(site), /WasmPlugin .*\/switch-waf exists and is not this site's/);
    const still = (await h.find(WASM, 'switch-waf')) as KubeObject & { spec: { url: string } };
    assert.equal(still.spec.url, 'oci://example.com/someone-elses:1');
    assert.ok(featureLine(site).includes('waf=ApplyFailed'));
  });

  it('switching to shared mode leaves the route alone, attached to the shared Gateway; switching back brings the edge back', async () => {
    await h.create('modes', spec('modes.example.com'));
    await h.ready('modes');
    await h.patchSpec('modes', { gatewayRef: { name: 'edge', namespace: 'edge-system' }, tls: null });
    const shared = await h.until('modes', 'shared', (s) => s.status?.shared === true);
    assert.equal(readyReason(shared), 'Reconciled');
    assert.deepEqual(await h.owned('modes'), ['HTTPRoute/modes']);
    assert.deepEqual(await h.inShardNamespace('modes'), []);
    assert.deepEqual(
      (shared.status?.features ?? []).map((f) => `${f.name}=${f.applied}/${f.reason}`),
      [
        'waf=false/CarriedBySharedEdge',
        'challenge=false/CarriedBySharedEdge',
        'sensitiveFiles=false/CarriedBySharedEdge',
        'blocklists=false/CarriedBySharedEdge',
        'grpc=false/CarriedBySharedEdge',
      ],
    );
    const route = (await h.find(ROUTE, 'modes')) as KubeObject & {
      spec: { parentRefs: { name: string; namespace?: string }[] };
    };
    assert.deepEqual(
      route.spec.parentRefs.map((p) => `${p.namespace}/${p.name}`),
      ['edge-system/edge'],
    );

    await h.patchSpec('modes', {
      gatewayRef: null,
      tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
    });
    const back = await h.until('modes', 'autonomous again', (s) => s.status?.shared === false);
    assert.equal(readyReason(back), 'Reconciled');
    assert.deepEqual(await h.owned('modes'), AUTONOMOUS('modes'));
    assert.deepEqual(await h.inShardNamespace('modes'), ['Role', 'RoleBinding']);
  });

  it('origins: weights 300/100 become backendRefs 300/100, weight 0 is draining, and 0, 1 and 3 ready endpoints are counted; a readiness flip reaches the status within 2 s', async () => {
    const service = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: h.ns },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    const slice = (service: string, ready: readonly boolean[]) => ({
      ...SLICE,
      metadata: {
        name: `${service}-slice`,
        namespace: h.ns,
        labels: { 'kubernetes.io/service-name': service },
      },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: ready.map((r, i) => ({ addresses: [`10.0.0.${i + 1}`], conditions: { ready: r } })),
    });
    for (const s of ['demo', 'demo-next', 'demo-old']) await env.admin.create(service(s));
    await env.admin.create(slice('demo', [true, true, true]));
    await env.admin.create(slice('demo-next', [false]));
    await env.admin.create(slice('demo-old', [true]));
    await h.create(
      'origins',
      spec('origins.example.com', {
        routes: [
          {
            prefix: '/app',
            upstreams: [
              { name: 'demo', port: 80, weight: 300 },
              { name: 'demo-next', port: 80, weight: 100 },
              { name: 'demo-old', port: 80, weight: 0 },
            ],
          },
        ],
      }),
    );
    const site = await h.until('origins', 'origins reported', (s) => (s.status?.origins ?? []).length === 3);
    assert.deepEqual(
      (site.status?.origins ?? []).map(
        (o) => `${o.name} w${o.weight} ready${o.readyEndpoints} ${o.reason ?? '-'}`,
      ),
      ['demo w300 ready3 -', 'demo-next w100 ready0 NoReadyEndpoints', 'demo-old w0 ready1 Drained'],
    );
    const route = (await h.find(ROUTE, 'origins')) as KubeObject & {
      spec: { rules: { backendRefs: { name: string; weight: number }[] }[] };
    };
    assert.deepEqual(
      route.spec.rules.flatMap((r) => r.backendRefs.map((b) => `${b.name}:${b.weight}`)),
      ['demo:300', 'demo-next:100', 'demo-old:0'],
    );

    await env.admin.patch(SLICE, 'demo-next-slice', h.ns, {
      type: 'merge',
      body: { endpoints: [{ addresses: ['10.0.0.9'], conditions: { ready: true } }] },
    });
    await eventually(
      'the flip in status.origins',
      async () => {
        const s = await h.get('origins');
        const o = s?.status?.origins?.find((x) => x.name === 'demo-next');
        return o?.readyEndpoints === 1 && o.reason === undefined ? true : undefined;
      },
      2_000,
    );
  });

  it('an apply refused mid-loop stops there with ApplyFailed naming the object: the objects before it stay, the functions after it are not counted', async () => {
    await refuse('gateway', {
      group: 'gateway.networking.k8s.io',
      resource: 'gateways',
      operations: ['CREATE', 'UPDATE'],
      expression: "object.metadata.name != 'refused'",
      message: 'gateways named refused are refused here',
      probe: async () => {
        await env.admin.create(
          {
            ...GATEWAY,
            metadata: { name: 'refused', namespace: h.ns },
            spec: { gatewayClassName: 'x', listeners: [{ name: 'h', port: 80, protocol: 'HTTP' }] },
          },
          { dryRun: true },
        );
      },
    });
    await h.create('refused', spec('refused.example.com'));
    const site = await h.ready('refused', 'ApplyFailed');
    assert.match(
      readyMessage(site),
      /^applying Gateway .*\/refused failed, the objects after it were not tried: .*gateways named refused are refused here/,
    );
    assert.deepEqual(await h.owned('refused'), [
      'Certificate/refused-tls',
      'ConfigMap/refused-edge',
      'Deployment/refused-decider',
      'Service/refused-decider',
      'ServiceAccount/refused-decider',
    ]);
    assert.deepEqual(featureLine(site), [
      'waf=ApplyFailed',
      'challenge=ApplyFailed',
      'sensitiveFiles=ApplyFailed',
      'blocklists=ApplyFailed',
      'grpc=NotRequested',
    ]);
    await eventually('an ApplyFailed event', async () =>
      (await h.events('refused', 'ApplyFailed')).length > 0 ? true : undefined,
    );
  });

  it('a deletion the cluster refuses is as visible as a failed apply: DeleteFailed naming the object, and the function still counted off', async () => {
    await h.create('undeletable', spec('undeletable.example.com'));
    await h.ready('undeletable');
    await refuse('keep-waf', {
      group: 'extensions.istio.io',
      resource: 'wasmplugins',
      operations: ['DELETE'],
      expression: "!(oldObject.metadata.name in ['undeletable-waf', 'probe-waf'])",
      message: 'WAFs may not be deleted here',
      probe: async () => {
        // A throwaway WasmPlugin of ours, deleted until the policy refuses it.
        const probe = {
          ...WASM,
          metadata: { name: 'probe-waf', namespace: h.ns },
          spec: { url: 'oci://example.com/p:1' },
        };
        if (!(await h.find(WASM, 'probe-waf'))) await env.admin.create(probe);
        await env.admin.delete(WASM, 'probe-waf', h.ns);
      },
    });
    await h.patchSpec('undeletable', { security: { waf: false } });
    const site = await h.ready('undeletable', 'DeleteFailed');
    assert.match(
      readyMessage(site),
      /^deleting WasmPlugin .*\/undeletable-waf failed: .*WAFs may not be deleted here/,
    );
    assert.ok(await h.find(WASM, 'undeletable-waf'), 'still there, and the status says so');
    assert.ok(featureLine(site).includes('waf=RemoveFailed'), 'never TurnedOff while it exists');
    await eventually('a DeleteFailed event', async () =>
      (await h.events('undeletable', 'DeleteFailed')).length > 0 ? true : undefined,
    );
    // Once the cluster allows it, the retry (with backoff) finishes the job.
    await unrefuse('keep-waf');
    await h.ready('undeletable');
    assert.equal(await h.find(WASM, 'undeletable-waf'), undefined);
  });

  it('a switch turned off while another object fails to apply is removed anyway: status never says TurnedOff while it exists', async () => {
    await h.create('offfail', spec('offfail.example.com'));
    await h.ready('offfail');
    // The site's ConfigMap can no longer be written: any spec change that touches it fails to apply.
    await refuse('keep-config', {
      group: '',
      resource: 'configmaps',
      operations: ['UPDATE'],
      expression: "object.metadata.name != 'offfail-edge' || object.data == oldObject.data",
      message: 'this configuration is frozen',
      probe: async () => {
        const cm = (await h.find(CONFIG_MAP, 'offfail-edge')) as KubeObject & {
          data: Record<string, string>;
        };
        await env.admin.replace({ ...cm, data: { ...cm.data, probe: '1' } }, { dryRun: true });
      },
    });
    await h.patchSpec('offfail', { posture: 'Strict', security: { waf: false } });
    const site = await h.ready('offfail', 'ApplyFailed');
    assert.match(readyMessage(site), /ConfigMap .*\/offfail-edge .*this configuration is frozen/);
    // The status written with ApplyFailed is written after the removals: if it says off, it is off.
    const waf = featureLine(site).find((f) => f.startsWith('waf='));
    assert.equal(waf, 'waf=TurnedOff');
    assert.equal(
      await h.find(WASM, 'offfail-waf'),
      undefined,
      'the WAF is gone although the ConfigMap failed',
    );
    await unrefuse('keep-config');
  });

  it("deleting a site removes every object it owns, the route first (the apiserver's order of deletions), then the site", async () => {
    await h.create('gone', spec('gone.example.com', { grpc: true }));
    await h.ready('gone');
    const owned = await h.owned('gone');
    assert.ok(owned.some((o) => /^DestinationRule\/gone-grpc-[a-z0-9]{5}$/.test(o)));
    // One watch per kind; each DELETED event carries the resourceVersion of the deletion,
    // the apiserver's (etcd's) global revision: sorted by it, the order the deletions happened.
    const stop = new AbortController();
    const deletions: { name: string; rv: number }[] = [];
    let opened = 0;
    const watches = SITE_KINDS.map(async (gvk) => {
      const info = await env.admin.resolve(gvk);
      const events = watch(env.admin.transport, resourcePath(info, h.ns), {
        labelSelector: `${SITE_LABEL}=gone`,
        resourceVersion: '0',
        signal: stop.signal,
        onOpen: () => opened++,
      });
      try {
        for await (const e of events as AsyncIterable<WatchEvent>) {
          if (e.type !== 'DELETED') continue;
          deletions.push({
            name: `${gvk.kind}/${e.object.metadata.name}`,
            rv: Number(e.object.metadata.resourceVersion),
          });
        }
      } catch (err) {
        if (!stop.signal.aborted) throw err;
      }
    });
    await eventually('every watch open', async () => (opened === SITE_KINDS.length ? true : undefined));
    await env.admin.delete(EDGE_SITE, 'gone', h.ns);
    await eventually('the site gone', async () => ((await h.get('gone')) ? undefined : true), 15_000);
    await eventually('every deletion seen', async () =>
      deletions.length === owned.length ? true : undefined,
    );
    stop.abort();
    await Promise.all(watches);
    const order = [...deletions]
      .sort((a, b) => a.rv - b.rv)
      .map((d) => d.name.replace(/-grpc-[a-z0-9]{5}$/, '-grpc'));
    assert.deepEqual(order, [
      'HTTPRoute/gone',
      'DestinationRule/gone-grpc',
      'AuthorizationPolicy/gone-deny-files',
      'WasmPlugin/gone-waf',
      'EnvoyFilter/gone-ext-authz',
      'Gateway/gone',
      'Certificate/gone-tls',
      'Service/gone-decider',
      'Deployment/gone-decider',
      'ConfigMap/gone-edge',
      'ServiceAccount/gone-decider',
    ]);
    assert.deepEqual(await h.owned('gone'), []);
    assert.deepEqual(await h.inShardNamespace('gone'), []);
  });
});
