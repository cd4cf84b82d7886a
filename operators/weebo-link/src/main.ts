/**
 * The weebo-link process, as the chart's Deployment runs it (`weebo-link run`):
 * in-cluster credentials, Lease election in its namespace, /healthz, /readyz and
 * /metrics on METRICS_PORT (8080), rules from the ConfigMap RULES_CONFIGMAP.
 */
import { KubeClient } from '@operators/kit';
import { pino } from 'pino';
import { startWeeboLink } from './app.ts';

export async function run(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const namespace = env.POD_NAMESPACE ?? env.WEEBO_LINK_NAMESPACE;
  if (!namespace)
    throw new Error('POD_NAMESPACE is not set: weebo-link reads its rules and Lease in its own namespace');
  const logger = pino({ base: { operator: 'weebo-link' }, level: env.LOG_LEVEL ?? 'info' });
  const client = await KubeClient.load(env.KUBECONFIG);
  const app = await startWeeboLink({
    client,
    namespace,
    configMap: env.RULES_CONFIGMAP,
    leaderElection: env.LEADER_ELECTION !== 'false',
    endpoint: { port: Number(env.METRICS_PORT ?? 8080) },
    logger,
    resyncMs: env.RESYNC_SECONDS ? Number(env.RESYNC_SECONDS) * 1000 : undefined,
  });
  app.manager.installSignalHandlers();
}
