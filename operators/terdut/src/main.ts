/**
 * The operator process: `node operators/terdut/src/main.ts [flags]`. Each flag has an
 * environment variable, for a Deployment's env. Exits 0 on SIGTERM after a graceful
 * stop, 1 after a lost lease (to be restarted as a candidate) or a failure, 2 on a bad
 * flag, 3 when the cluster lacks a CRD it needs.
 */
import { readFileSync } from 'node:fs';
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
import { TERDUT_ALERT_SOURCE } from './api/terdut-alert-source.ts';
import { TERDUT_DEADMAN_SWITCH } from './api/terdut-deadman-switch.ts';
import { TERDUT_ESCALATION_RULE } from './api/terdut-escalation-rule.ts';
import { TERDUT_SERVER } from './api/terdut-server.ts';
import { TERDUT_TEAM } from './api/terdut-team.ts';
import { DEFAULT_RESYNC_MS } from './controllers/common.ts';
import { POSTGRESQL } from './domain/server/index.ts';
import { createOperator } from './operator.ts';
import { parseServerUrls, serverUrlMapper } from './server-urls.ts';

export const USAGE = `usage: node operators/terdut/src/main.ts [flags]

  --kubeconfig PATH                 (KUBECONFIG) default: ~/.kube/config, or the pod's service account
  --leader-election-namespace NS    (TERDUT_LEADER_ELECTION_NAMESPACE, else POD_NAMESPACE) elect a leader
                                    through the Lease terdut-operator.terdut.ryuvia.com; off when neither is set
  --health-port N                   (TERDUT_HEALTH_PORT) /healthz and /readyz; default 8081
  --metrics-port N                  (TERDUT_METRICS_PORT) /metrics; default 8443 (HTTPS, callers checked
                                    with TokenReview + SubjectAccessReview), 8080 with --insecure-metrics
  --insecure-metrics                (TERDUT_METRICS_SECURE=false) plain HTTP /metrics on 127.0.0.1 only
  --metrics-cert-dir DIR            (TERDUT_METRICS_CERT_DIR) tls.crt and tls.key; self-signed when absent
  --resync DURATION                 (TERDUT_RESYNC) how often every object is compared with the server
                                    (drift made on the server directly); default 5m
  --api-timeout DURATION            (TERDUT_API_TIMEOUT) one terdut-server request; default 10s
  --server-url NS/NAME=URL          (TERDUT_SERVER_URLS, comma-separated) reach TerdutServer NS/NAME at URL
                                    instead of its Service's cluster DNS name: for runs outside the cluster.
                                    Repeatable; NAME may be * for every server of NS, and */* for all
  -h, --help                        print this help
  --version                         print the operator's version

Exit status: 0 after SIGTERM or SIGINT (a graceful stop), 1 after a lost lease (restart it
as a candidate) or a failure, 2 bad flag, 3 the cluster lacks a CRD it needs.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`terdut-operator: ${message}\n`);
  process.exit(code);
}

function portOf(flag: string, text: string | number): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`${flag}: not a port: ${text}`, 2);
  return port;
}

function durationOf(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseDurationMs(text);
  if (!ms) fail(`${flag}: not a duration such as 5m or 30s: ${text}`, 2);
  return ms;
}

function parseFlags() {
  try {
    return parseArgs({
      options: {
        kubeconfig: { type: 'string' },
        'leader-election-namespace': { type: 'string' },
        'health-port': { type: 'string' },
        'metrics-port': { type: 'string' },
        'insecure-metrics': { type: 'boolean' },
        'metrics-cert-dir': { type: 'string' },
        resync: { type: 'string' },
        'api-timeout': { type: 'string' },
        'server-url': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    // parseArgs refuses an unknown flag or a missing value with a TypeError: a usage error.
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
  const secureMetrics = !values['insecure-metrics'] && env.TERDUT_METRICS_SECURE !== 'false';
  const healthPort = portOf('--health-port', values['health-port'] ?? env.TERDUT_HEALTH_PORT ?? 8081);
  const metricsPort = portOf(
    '--metrics-port',
    values['metrics-port'] ?? env.TERDUT_METRICS_PORT ?? (secureMetrics ? 8443 : 8080),
  );
  const certDir = values['metrics-cert-dir'] ?? env.TERDUT_METRICS_CERT_DIR;
  const resyncMs = durationOf('--resync', values.resync ?? env.TERDUT_RESYNC, DEFAULT_RESYNC_MS);
  const apiTimeoutMs = durationOf('--api-timeout', values['api-timeout'] ?? env.TERDUT_API_TIMEOUT, 10_000);
  const urlTexts = values['server-url'] ?? (env.TERDUT_SERVER_URLS ? env.TERDUT_SERVER_URLS.split(',') : []);
  const urls = parseServerUrls(urlTexts);
  if (urls.kind === 'Invalid') fail(`--server-url: ${urls.message}`, 2);
  const leaderElectionNamespace =
    values['leader-election-namespace'] ?? env.TERDUT_LEADER_ELECTION_NAMESPACE ?? env.POD_NAMESPACE;

  const registry = new Registry();
  const client = await KubeClient.load(values.kubeconfig ?? env.KUBECONFIG, {
    rateLimit: DEFAULT_CLIENT_RATE_LIMIT,
    registry,
  });
  for (const gvk of [
    TERDUT_SERVER,
    TERDUT_TEAM,
    TERDUT_ESCALATION_RULE,
    TERDUT_DEADMAN_SWITCH,
    TERDUT_ALERT_SOURCE,
  ]) {
    try {
      await client.resolve(gvk);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      fail(
        `the cluster does not serve ${gvk.kind} (${gvk.apiVersion}): install operators/terdut/crds/*.yaml first`,
        3,
      );
    }
  }
  // Zalando's CRD is optional (§8): without it, a BYO server works and a postgresClusterRef
  // says PostgresCrdAbsent. Installing it later needs a restart of the operator.
  let zalando = true;
  try {
    await client.resolve(POSTGRESQL);
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
    zalando = false;
  }
  const serverUrl = serverUrlMapper(urls.map);
  const { manager } = createOperator({
    client,
    zalando,
    resyncMs,
    apiTimeoutMs,
    ...(serverUrl ? { serverUrl } : {}),
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
    {
      leaderElectionNamespace,
      healthPort,
      metricsPort,
      secureMetrics,
      resyncMs,
      zalando,
      serverUrls: urls.map.size,
    },
    'terdut-operator started',
  );
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err), 1));
