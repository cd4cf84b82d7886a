/**
 * The EdgeSite operator on a real apiserver with the real CRDs of cert-manager, Gateway
 * API and Istio (no controller of theirs runs: their objects are stored and validated,
 * nothing acts on them). One operator per harness, scoped to the harness's namespace, so
 * test files running beside it on the shared plane keep their EdgeSites to themselves.
 */
import { eventually, type TestEnv } from '@operators/controlplane/testing';
import type { GroupVersionKind, KubeObject } from '@operators/kit';
import { EDGE_SITE, type EdgeSite, type EdgeSiteSpec } from '../../src/api/edge-site.ts';
import { discoverEdgeKinds } from '../../src/controllers/edge-site.ts';
import { createOperator, type Operator } from '../../src/operator.ts';
import { CountingClient } from './e2e.ts';
import { EDGE_OPTIONS } from './edge-site-options.ts';

/** Every kind a site may own in its namespace, written out here rather than taken from the planner. */
export const SITE_KINDS: readonly GroupVersionKind[] = [
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'cert-manager.io/v1', kind: 'Certificate' },
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway' },
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute' },
  { apiVersion: 'networking.istio.io/v1alpha3', kind: 'EnvoyFilter' },
  { apiVersion: 'extensions.istio.io/v1alpha1', kind: 'WasmPlugin' },
  { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' },
  { apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule' },
];
export const ROLE: GroupVersionKind = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' };
export const ROLE_BINDING: GroupVersionKind = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
};

export const SITE_LABEL = 'edge.exoledge.io/site';

export class EdgeHarness {
  readonly env: TestEnv;
  readonly ns: string;
  readonly shardNs: string;
  op: { operator: Operator; client: CountingClient } | undefined;

  constructor(env: TestEnv, ns: string, shardNs: string) {
    this.env = env;
    this.ns = ns;
    this.shardNs = shardNs;
  }

  async start(resyncMs = 60_000): Promise<{ operator: Operator; client: CountingClient }> {
    const client = new CountingClient(this.env.admin.transport, this.env.admin.discovery);
    const operator = createOperator({
      client,
      deciderNamespace: this.shardNs,
      watchNamespaces: [this.ns],
      edgeSites: {
        edge: { ...EDGE_OPTIONS, shardNamespace: this.shardNs },
        notServed: await discoverEdgeKinds(client),
        resyncMs,
      },
    });
    operator.manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
    await operator.manager.start();
    this.op = { operator, client };
    return this.op;
  }

  async stop(): Promise<void> {
    await this.op?.operator.manager.stop();
    this.op = undefined;
  }

  get writes(): string[] {
    if (!this.op) throw new Error('no operator running');
    return this.op.client.writes;
  }

  create(name: string, spec: EdgeSiteSpec): Promise<EdgeSite> {
    return this.env.admin.create<EdgeSite>({ ...EDGE_SITE, metadata: { name, namespace: this.ns }, spec });
  }

  async patchSpec(name: string, spec: Record<string, unknown>): Promise<void> {
    await this.env.admin.patch(EDGE_SITE, name, this.ns, { type: 'merge', body: { spec } });
  }

  get(name: string): Promise<EdgeSite | undefined> {
    return this.env.admin.find<EdgeSite>(EDGE_SITE, name, this.ns);
  }

  /** Waits for `pred` on the site, with its generation observed; returns it. */
  until(name: string, what: string, pred: (s: EdgeSite) => boolean, timeoutMs = 15_000): Promise<EdgeSite> {
    return eventually(
      `${name}: ${what}`,
      async () => {
        const s = await this.get(name);
        return s && s.status?.observedGeneration === s.metadata.generation && pred(s) ? s : undefined;
      },
      timeoutMs,
    );
  }

  ready(name: string, reason = 'Reconciled'): Promise<EdgeSite> {
    return this.until(name, `Ready reason ${reason}`, (s) => readyReason(s) === reason);
  }

  /** `Kind/name` of every object labelled with the site in its namespace, sorted. */
  async owned(site: string): Promise<string[]> {
    const out: string[] = [];
    for (const gvk of SITE_KINDS) {
      const served = await this.env.admin.resolve(gvk).then(
        () => true,
        () => false,
      );
      if (!served) continue;
      const list = await this.env.admin.list(gvk, {
        namespace: this.ns,
        labelSelector: `${SITE_LABEL}=${site}`,
      });
      for (const o of list.items) out.push(`${gvk.kind}/${o.metadata.name}`);
    }
    return out.sort();
  }

  /** `Kind` of the site's objects in the shard namespace (their names carry a hash). */
  async inShardNamespace(site: string): Promise<string[]> {
    const out: string[] = [];
    for (const gvk of [ROLE, ROLE_BINDING]) {
      const list = await this.env.admin.list(gvk, {
        namespace: this.shardNs,
        labelSelector: `${SITE_LABEL}=${site},edge.exoledge.io/site-namespace=${this.ns}`,
      });
      for (const _ of list.items) out.push(gvk.kind);
    }
    return out.sort();
  }

  async find(gvk: GroupVersionKind, name: string): Promise<KubeObject | undefined> {
    return this.env.admin.find(gvk, name, this.ns);
  }

  /** Core Events about the site with this reason. */
  async events(site: string, reason: string): Promise<(KubeObject & { message?: string; count?: number })[]> {
    const list = await this.env.admin.list<
      KubeObject & { reason?: string; message?: string; count?: number }
    >(
      { apiVersion: 'v1', kind: 'Event' },
      { namespace: this.ns, fieldSelector: `involvedObject.name=${site},involvedObject.kind=EdgeSite` },
    );
    return list.items.filter((e) => e.reason === reason);
  }
}

export function readyReason(s: EdgeSite): string | undefined {
  return s.status?.conditions?.find((c) => c.type === 'Ready')?.reason;
}

export function readyMessage(s: EdgeSite): string {
  return s.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
}

/** `name=applied|reason` for each feature, for one-line assertions. */
export function featureLine(s: EdgeSite): string[] {
  return (s.status?.features ?? []).map((f) => `${f.name}=${f.applied ? 'applied' : f.reason}`);
}
