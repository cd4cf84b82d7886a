/**
 * The operator process: `node operators/gitops-reverser/src/main.ts [flags]`. Each flag
 * has an environment variable, for a Deployment's env. Exits 0 on SIGTERM after a
 * graceful stop (pending changes pushed first), 1 after a lost lease or a failure, 2 on
 * a bad flag, 3 when the cluster lacks a CRD it needs.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ApiErrorReason,
  DEFAULT_CLIENT_RATE_LIMIT,
  isApiError,
  KubeClient,
  parseDurationMs,
} from '@operators/kit';
import { Registry } from 'prom-client';
import { CLUSTER_PROVIDER } from './api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE } from './api/cluster-watch-rule.ts';
import { COMMIT_REQUEST } from './api/commit-request.ts';
import { GIT_PROVIDER } from './api/git-provider.ts';
import { GIT_TARGET } from './api/git-target.ts';
import { WATCH_RULE } from './api/watch-rule.ts';
import { DEFAULT_TARGET_RESYNC_MS } from './controllers/git-target.ts';
import { createOperator } from './operator.ts';

export const USAGE = `usage: node operators/gitops-reverser/src/main.ts [flags]

  --kubeconfig PATH                 (KUBECONFIG) default: ~/.kube/config, or the pod's service account
  --namespace NS                    (POD_NAMESPACE) the operator's namespace: where remote ClusterProviders'
                                    kubeconfig Secrets are read from; required
  --leader-election-namespace NS    (GITOPS_REVERSER_LEADER_ELECTION_NAMESPACE, else POD_NAMESPACE) elect a
                                    leader through the Lease gitops-reverser.configbutler.ai
  --work-dir DIR                    (GITOPS_REVERSER_WORK_DIR) where the clones live; default $TMPDIR/gitops-reverser
  --health-port N                   (GITOPS_REVERSER_HEALTH_PORT) /healthz and /readyz; default 8081
  --metrics-port N                  (GITOPS_REVERSER_METRICS_PORT) /metrics; default 8443 (HTTPS, callers checked
                                    with TokenReview + SubjectAccessReview), 8080 with --insecure-metrics
  --insecure-metrics                (GITOPS_REVERSER_METRICS_SECURE=false) plain HTTP /metrics on 127.0.0.1 only
  --metrics-cert-dir DIR            (GITOPS_REVERSER_METRICS_CERT_DIR) tls.crt and tls.key; self-signed when absent
  --resync DURATION                 (GITOPS_REVERSER_RESYNC) how often GitTargets, WatchRules and ClusterWatchRules
                                    are looked at again without an event (Secrets and remotes send none); default 1m
  -h, --help                        print this help
  --version                         print the operator's version

Exit status: 0 after SIGTERM or SIGINT (a graceful stop), 1 after a lost lease (restart it
as a candidate) or a failure, 2 bad flag, 3 the cluster lacks a CRD it needs.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`gitops-reverser: ${message}\n`);
  process.exit(code);
}

function portOf(flag: string, text: string | number): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`${flag}: not a port: ${text}`, 2);
  return port;
}

function parseFlags() {
  try {
    return parseArgs({
      options: {
        kubeconfig: { type: 'string' },
        namespace: { type: 'string' },
        'leader-election-namespace': { type: 'string' },
        'work-dir': { type: 'string' },
        'health-port': { type: 'string' },
        'metrics-port': { type: 'string' },
        'insecure-metrics': { type: 'boolean' },
        'metrics-cert-dir': { type: 'string' },
        resync: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    fail(`${e instanceof Error ? e.message : String(e)}\n(--help lists the flags)`, 2);
  }
}

async function main(): Promise<void> {
  const { values } = parseFlags();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.version) {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    process.stdout.write(`${pkg.version}\n`);
    return;
  }
  const env = process.env;
  const operatorNamespace = values.namespace ?? env.POD_NAMESPACE;
  if (!operatorNamespace)
    fail('--namespace (or POD_NAMESPACE) is required: the operator reads kubeconfig Secrets there', 2);
  const secureMetrics = !values['insecure-metrics'] && env.GITOPS_REVERSER_METRICS_SECURE !== 'false';
  const healthPort = portOf(
    '--health-port',
    values['health-port'] ?? env.GITOPS_REVERSER_HEALTH_PORT ?? 8081,
  );
  const metricsPort = portOf(
    '--metrics-port',
    values['metrics-port'] ?? env.GITOPS_REVERSER_METRICS_PORT ?? (secureMetrics ? 8443 : 8080),
  );
  const certDir = values['metrics-cert-dir'] ?? env.GITOPS_REVERSER_METRICS_CERT_DIR;
  const resyncText = values.resync ?? env.GITOPS_REVERSER_RESYNC;
  const resyncMs = resyncText === undefined ? DEFAULT_TARGET_RESYNC_MS : parseDurationMs(resyncText);
  if (!resyncMs) fail(`--resync: not a duration such as 1m or 30s: ${resyncText}`, 2);
  const workDir = values['work-dir'] ?? env.GITOPS_REVERSER_WORK_DIR ?? join(tmpdir(), 'gitops-reverser');
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  const leaderElectionNamespace =
    values['leader-election-namespace'] ?? env.GITOPS_REVERSER_LEADER_ELECTION_NAMESPACE ?? env.POD_NAMESPACE;

  const registry = new Registry();
  const client = await KubeClient.load(values.kubeconfig ?? env.KUBECONFIG, {
    rateLimit: DEFAULT_CLIENT_RATE_LIMIT,
    registry,
  });
  for (const gvk of [
    CLUSTER_PROVIDER,
    GIT_PROVIDER,
    GIT_TARGET,
    WATCH_RULE,
    CLUSTER_WATCH_RULE,
    COMMIT_REQUEST,
  ]) {
    try {
      await client.resolve(gvk);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      fail(
        `the cluster does not serve ${gvk.kind} (${gvk.apiVersion}): install operators/gitops-reverser/crds/*.yaml first`,
        3,
      );
    }
  }
  const { manager } = createOperator({
    client,
    operatorNamespace,
    workDir,
    resyncMs,
    ...(leaderElectionNamespace ? { leaderElectionNamespace } : {}),
    healthPort,
    metrics: secureMetrics
      ? { port: metricsPort, secure: certDir ? { tls: { certDir } } : {} }
      : { port: metricsPort },
    registry,
  });
  manager.installSignalHandlers();
  await manager.start();
  manager.log.info(
    { operatorNamespace, leaderElectionNamespace, workDir, healthPort, metricsPort, secureMetrics, resyncMs },
    'gitops-reverser started',
  );
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err), 1));
