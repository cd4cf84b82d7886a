/**
 * The decider process: `node operators/exoledge/src/decider/main.ts`, configured by its
 * environment only (`DeciderEnv`, the contract with the operator; see
 * docs/exoledge.md, "The decider"). Reaches the API in-cluster through its ServiceAccount, or
 * through `KUBECONFIG` when run by hand. Exits 0 after SIGTERM or SIGINT (a graceful stop
 * of at most 5 s), 1 on a failure to start, 2 on a bad environment.
 */
import { KubeClient } from '@operators/kit';
import { pino } from 'pino';
import { readDeciderEnv } from '../domain/decider/env.ts';
import { KubeShardFeed } from './kube-shard-feed.ts';
import { runDecider } from './run.ts';

async function main(): Promise<void> {
  const log = pino({ base: { component: 'exoledge-decider' } });
  const read = readDeciderEnv(process.env);
  if (!read.ok) {
    for (const p of read.problems) log.error(p);
    process.exitCode = 2;
    return;
  }
  const { settings } = read;
  const site = log.child({ site: `${settings.siteNamespace}/${settings.site}` });
  const client = await KubeClient.load(process.env.KUBECONFIG);
  const feed = new KubeShardFeed({ client, namespace: settings.shardNamespace, log: site });
  const running = await runDecider({ settings, feed, log: site });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    site.info({ signal }, 'stopping');
    void running
      .close()
      .then(() => client.transport.close())
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `exoledge decider: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
