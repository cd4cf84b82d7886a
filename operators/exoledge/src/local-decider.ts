/**
 * The sample site's decider for `npm run up`: the real decider process code (`runDecider`
 * with the watch on the shard namespace), run in this process on 127.0.0.1, reading the
 * configuration the operator wrote for the site. Nothing runs the Deployment the operator
 * created (no kubelet here), so this stands in for one of its pods: the same environment,
 * the site's ConfigMap copied to a folder as the kubelet would mount it.
 *
 * No Valkey: the verdicts of lists do not depend on state; a solved challenge is not kept.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient } from '@operators/kit';
import { type Logger, pino } from 'pino';
import { CONFIG_MAP, type ConfigMap } from './api/cilium.ts';
import { KubeShardFeed } from './decider/kube-shard-feed.ts';
import { type RunningDecider, runDecider } from './decider/run.ts';
import { DECIDER_DATA_KEY, LABEL_SOURCE } from './domain/blocklist-source/publication.ts';
import { SITE_CONFIG_KEY, siteConfigMapName } from './domain/edge-site/index.ts';

export interface LocalDecider {
  readonly url: string;
  /** An address of the first prefix the decider serves for `source`, if it serves one. */
  listedAddress(source: string): Promise<string | undefined>;
  close(): Promise<void>;
}

export async function startLocalDecider(options: {
  readonly client: KubeClient;
  /** `npm run up`'s logger (readable lines); pino's JSON on stdout without it. */
  readonly logger?: Logger;
  readonly siteNamespace: string;
  readonly site: string;
  readonly shardNamespace: string;
}): Promise<LocalDecider> {
  const { client, siteNamespace, site, shardNamespace } = options;
  const dir = await mkdtemp(join(tmpdir(), 'exoledge-up-decider-'));
  const siteDir = join(dir, 'site');
  const allowlists = join(dir, 'allowlists');
  await mkdir(siteDir);
  await mkdir(allowlists);
  const configMap = await client.get<ConfigMap>(CONFIG_MAP, siteConfigMapName(site), siteNamespace);
  await writeFile(join(siteDir, SITE_CONFIG_KEY), configMap.data?.[SITE_CONFIG_KEY] ?? '');

  // Its logs are JSON lines; only problems are worth showing beside the summary.
  const level = process.env.EXOLEDGE_LOG_LEVEL ?? 'warn';
  const log =
    options.logger?.child({ component: 'decider' }, { level }) ??
    pino({ level, base: { component: 'decider' } });
  const running: RunningDecider = await runDecider({
    settings: {
      siteNamespace,
      site,
      siteConfigPath: join(siteDir, SITE_CONFIG_KEY),
      shardNamespace,
      allowlistsDir: allowlists,
      listen: { host: '127.0.0.1', port: 0 },
      valkeyUrl: undefined,
      trustedHops: 0,
      // One process, no Valkey: a key of its own lets it serve the challenge page.
      signingKeys: [randomBytes(32).toString('hex')].map((k) => Buffer.from(k, 'utf8')),
    },
    feed: new KubeShardFeed({ client, namespace: shardNamespace, log }),
    log,
  });
  return {
    url: running.url,
    async listedAddress(source) {
      const { items } = await client.list<ConfigMap>(CONFIG_MAP, {
        namespace: shardNamespace,
        labelSelector: `${LABEL_SOURCE}=${source}`,
      });
      const first = items
        .map((c) => c.data?.[DECIDER_DATA_KEY]?.split('\n')[0])
        .find((l) => l !== undefined && l !== '');
      // The first address of a prefix is in it.
      return first?.split('/')[0];
    },
    async close() {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
