/**
 * The weebo-link process, as the chart's Deployment runs it (`weebo-link run`):
 * in-cluster credentials with client-go's request rate limit, Lease election in its
 * namespace, /healthz and /readyz on HEALTH_PORT (8081), /metrics on METRICS_PORT
 * (8443, HTTPS, callers authenticated and authorized by the apiserver; with
 * METRICS_SECURE=false, plain HTTP on loopback only), rules from the ConfigMap
 * RULES_CONFIGMAP.
 */
import { DEFAULT_CLIENT_RATE_LIMIT, KubeClient } from '@operators/kit';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { startWeeboLink } from './app.ts';

export async function run(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const namespace = env.POD_NAMESPACE ?? env.WEEBO_LINK_NAMESPACE;
  if (!namespace)
    throw new Error('POD_NAMESPACE is not set: weebo-link reads its rules and Lease in its own namespace');
  const logger = pino({ base: { operator: 'weebo-link' }, level: env.LOG_LEVEL ?? 'info' });
  const registry = new Registry();
  const client = await KubeClient.load(env.KUBECONFIG, { rateLimit: DEFAULT_CLIENT_RATE_LIMIT, registry });
  const secure = env.METRICS_SECURE !== 'false';
  const app = await startWeeboLink({
    client,
    namespace,
    configMap: env.RULES_CONFIGMAP,
    leaderElection: env.LEADER_ELECTION !== 'false',
    healthProbe: { port: Number(env.HEALTH_PORT ?? 8081) },
    metrics: secure
      ? { port: Number(env.METRICS_PORT ?? 8443), secure: metricsTls(env) }
      : { port: Number(env.METRICS_PORT ?? 8080) },
    registry,
    logger,
    resyncMs: env.RESYNC_SECONDS ? Number(env.RESYNC_SECONDS) * 1000 : undefined,
  });
  app.manager.installSignalHandlers();
}

/** The metrics certificate from METRICS_CERT_DIR (`tls.crt`, `tls.key`: a cert-manager Secret), else self-signed. */
function metricsTls(env: NodeJS.ProcessEnv): { tls?: { certDir: string } } {
  return env.METRICS_CERT_DIR ? { tls: { certDir: env.METRICS_CERT_DIR } } : {};
}
