/**
 * `npm run up` runs this: the operator in-process on the local control plane, with two
 * sample lists served from 127.0.0.1, so that a newcomer sees CIDR-group shards and a
 * deny policy appear for the Certain list, and decider ConfigMaps for the Presumed one.
 * Cilium's CRDs are installed first (the real ones, read from Cilium's Go module), so the
 * apiserver validates what the operator writes exactly as a cluster with Cilium would.
 * One EdgeSite shows its owned objects, and its decider runs here, answering verdicts for
 * a listed and an unlisted address.
 */
import { installCrds, type LocalContext, thirdPartyCrds } from '@operators/controlplane';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { BLOCKLIST_SOURCE, type BlocklistSource } from './api/blocklist-source.ts';
import { EDGE_SITE, type EdgeSite } from './api/edge-site.ts';
import { discoverEdgeKinds } from './controllers/edge-site.ts';
import { DEFAULT_DECIDER_PORT } from './domain/edge-site/index.ts';
import { DEFAULT_IMAGES } from './images.ts';
import { startLocalDecider } from './local-decider.ts';
import { createOperator, DEFAULT_DECIDER_NAMESPACE } from './operator.ts';
import { startListServer } from './sample/list-server.ts';
import { sampleList } from './sample/sample-list.ts';

async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  try {
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.AlreadyExists)) throw err;
  }
}

/** The Ready condition's message once the source is published (or after 30 s, whatever it says). */
async function readyMessage(client: KubeClient, name: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = await client.get<BlocklistSource>(BLOCKLIST_SOURCE, name);
    const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
    if (
      (ready?.reason === 'Published' && ready.observedGeneration === s.metadata.generation) ||
      Date.now() > deadline
    ) {
      const budget = s.status?.conditions?.find((c) => c.type === 'AllEntriesPublished');
      return `${ready?.reason ?? 'not reconciled yet'}: ${ready?.message ?? ''}${budget?.status === 'False' ? `; ${budget.message}` : ''}`;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Where the sample EdgeSite lives. */
const SITE_NAMESPACE = 'shop';

/** The sample site once Ready has a reason for its generation (or after 30 s, as it is). */
async function siteReady(client: KubeClient): Promise<EdgeSite | undefined> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = await client.find<EdgeSite>(EDGE_SITE, 'shop', SITE_NAMESPACE);
    if ((s && s.status?.observedGeneration === s.metadata.generation) || Date.now() > deadline) return s;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The decider's JSON answer for `url`, once it has read its shards (503 before; 20 s at most). */
async function verdictOnceReady(url: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(url);
    const body = await res.text();
    if (res.status !== 503 || Date.now() > deadline) return body.trim();
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }> {
  const { client, log } = ctx;
  await installCrds(client, (await thirdPartyCrds('cilium')) as unknown as KubeObject[]);
  log('installed Cilium CRDs (ciliumcidrgroups, ciliumclusterwidenetworkpolicies)');
  for (const p of ['certManager', 'gatewayApi', 'istio'] as const) {
    await installCrds(client, (await thirdPartyCrds(p)) as unknown as KubeObject[]);
  }
  log("installed cert-manager's, Gateway API's and Istio's CRDs (none of their controllers runs here)");
  const deciderNamespace = DEFAULT_DECIDER_NAMESPACE;
  await ensureNamespace(client, deciderNamespace);

  const server = await startListServer();
  server.serve('/scanners.txt', { body: sampleList(6) });
  server.serve('/proxies.txt', { body: sampleList(7) });

  let announced = false;
  const { manager } = createOperator({
    client,
    logger: ctx.logger,
    deciderNamespace,
    edgeSites: {
      notServed: await discoverEdgeKinds(client),
      edge: {
        deciderImage: DEFAULT_IMAGES.decider,
        wafFilterImage: DEFAULT_IMAGES.wafFilter,
        shardNamespace: deciderNamespace,
        gatewayClassName: 'istio',
        deciderPort: DEFAULT_DECIDER_PORT,
        valkeyUrl: undefined,
        trustedHops: 0,
      },
    },
    healthPort: 0,
    metrics: { port: 0 },
    onReconciled: (r) => {
      if (announced && (r.applied > 0 || r.deleted > 0)) {
        log(`${r.source}: ${r.publication}: ${r.applied} objects written, ${r.deleted} deleted`);
      }
      if (r.read?.result === 'Failed') log(`${r.source}: read failed (${r.read.reason}); last set kept`);
    },
  });
  // JSON logs would drown the summary; EXOLEDGE_LOG_LEVEL=info shows every reconcile.
  manager.log.level = process.env.EXOLEDGE_LOG_LEVEL ?? 'error';
  await manager.start();

  const sources: BlocklistSource[] = [
    {
      ...BLOCKLIST_SOURCE,
      metadata: { name: 'sample-scanners' },
      spec: {
        url: server.url('/scanners.txt'),
        kind: 'Certain',
        enforce: true,
        maxEntries: 5000,
        shardSize: 2000,
        refreshInterval: '5m',
        podSelector: { matchLabels: { istio: 'ingressgateway' } },
      },
    },
    {
      ...BLOCKLIST_SOURCE,
      metadata: { name: 'sample-proxies' },
      spec: { url: server.url('/proxies.txt'), kind: 'Presumed', maxEntries: 20_000, refreshInterval: '5m' },
    },
  ];
  for (const s of sources) await client.apply(s, { fieldManager: 'exoledge-sample', force: true });
  log(
    `serving two sample lists at ${server.url('/')} and created BlocklistSources sample-scanners, sample-proxies`,
  );
  for (const s of sources) {
    const name = s.metadata.name ?? '';
    log(`${name}: ${await readyMessage(client, name)}`);
  }
  announced = true;
  log(
    'look: kubectl get blocklistsources; kubectl get ciliumcidrgroups,ciliumclusterwidenetworkpolicies; ' +
      `kubectl -n ${deciderNamespace} get configmaps -l edge.exoledge.io/source`,
  );

  // One EdgeSite, in its own namespace: every owned object appears (nothing runs them here).
  await ensureNamespace(client, SITE_NAMESPACE);
  await client.apply(
    {
      ...EDGE_SITE,
      metadata: { name: 'shop', namespace: SITE_NAMESPACE },
      spec: {
        domains: ['shop.example.com'],
        upstream: { name: 'web', port: 80 },
        tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
      },
    },
    { fieldManager: 'exoledge-sample', force: true },
  );
  const site = await siteReady(client);
  const ready = site?.status?.conditions?.find((c) => c.type === 'Ready');
  log(`EdgeSite ${SITE_NAMESPACE}/shop: ${ready?.reason ?? 'not reconciled yet'}: ${ready?.message ?? ''}`);
  log(
    `  features: ${(site?.status?.features ?? []).map((f) => `${f.name}=${f.applied ? 'on' : (f.reason ?? 'off')}`).join(', ')}`,
  );
  log(
    `look: kubectl -n ${SITE_NAMESPACE} get edgesites; kubectl -n ${SITE_NAMESPACE} get ` +
      'deploy,svc,cm,certificates,gateways,httproutes,envoyfilters,wasmplugins,authorizationpolicies -l edge.exoledge.io/site=shop',
  );

  // The site's decider, as one of its pods would run it, answering on 127.0.0.1.
  const decider = await startLocalDecider({
    client,
    logger: ctx.logger,
    siteNamespace: SITE_NAMESPACE,
    site: 'shop',
    shardNamespace: deciderNamespace,
  });
  const listed = (await decider.listedAddress('sample-proxies')) ?? '192.0.2.1';
  const unlisted = '203.0.113.250';
  for (const addr of [listed, unlisted]) {
    const query = `${decider.url}/v1/verdict?addr=${addr}`;
    const answer = await verdictOnceReady(query);
    log(`decider: curl -s '${query}'  ->  ${answer}`);
  }
  log(
    `decider: ext_authz as Envoy asks it: curl -si -H 'x-forwarded-for: ${listed}' ${decider.url}/v1/verdict/cart`,
  );

  const metrics = manager.metricsEndpoint;
  if (metrics) log(`metrics: http://127.0.0.1:${metrics.port}/metrics`);
  return {
    async stop() {
      await decider.close();
      await manager.stop();
      await server.close();
    },
  };
}
