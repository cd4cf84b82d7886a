/**
 * The operator process: `node operators/exoledge/src/main.ts [flags]`. Each flag has an
 * environment variable, for a Deployment's env. Exits 0 on SIGTERM after a graceful
 * stop, 1 after a lost lease (to be restarted as a candidate), 2 on a bad flag, 3 when
 * the cluster lacks a CRD it needs.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ApiErrorReason, DEFAULT_CLIENT_RATE_LIMIT, isApiError, KubeClient } from '@operators/kit';
import { Registry } from 'prom-client';
import { BLOCKLIST_SOURCE } from './api/blocklist-source.ts';
import { CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY } from './api/cilium.ts';
import { EDGE_SITE } from './api/edge-site.ts';
import { packageVersion } from './cli.ts';
import { DEFAULT_FETCH_LIMITS } from './controllers/blocklist-source.ts';
import { discoverEdgeKinds } from './controllers/edge-site.ts';
import { DEFAULT_SHORTEST_PREFIX } from './domain/blocklist/index.ts';
import { parseDuration } from './domain/blocklist-source/index.ts';
import { isValkeyUrl, MAX_TRUSTED_HOPS, readTrustedHops } from './domain/decider/index.ts';
import { DEFAULT_DECIDER_PORT } from './domain/edge-site/index.ts';
import { DEFAULT_IMAGES } from './images.ts';
import { createOperator, DEFAULT_DECIDER_NAMESPACE } from './operator.ts';

export const USAGE = `usage: node operators/exoledge/src/main.ts [flags]

  --kubeconfig PATH                 (KUBECONFIG) default: ~/.kube/config, or the pod's service account
  --decider-namespace NS            (EXOLEDGE_DECIDER_NAMESPACE) where decider ConfigMaps go; default ${DEFAULT_DECIDER_NAMESPACE}
  --leader-election-namespace NS    (EXOLEDGE_LEADER_ELECTION_NAMESPACE, else POD_NAMESPACE) elect a leader
                                    through the Lease exoledge-operator.edge.exoledge.io; off when neither is set
  --health-port N                   (EXOLEDGE_HEALTH_PORT) /healthz and /readyz; default 8081
  --metrics-port N                  (EXOLEDGE_METRICS_PORT) /metrics; default 8443 (HTTPS, callers checked
                                    with TokenReview + SubjectAccessReview), 8080 with --insecure-metrics
  --insecure-metrics                (EXOLEDGE_METRICS_SECURE=false) plain HTTP /metrics on 127.0.0.1 only
  --metrics-cert-dir DIR            (EXOLEDGE_METRICS_CERT_DIR) tls.crt and tls.key; self-signed when absent
  --fetch-timeout DURATION          (EXOLEDGE_FETCH_TIMEOUT) one read of a list, all included; default 2m
  --max-list-bytes N                (EXOLEDGE_MAX_LIST_BYTES) largest list accepted, decoded; default 268435456
  --extra-ca FILE                   (EXOLEDGE_EXTRA_CA) PEM CAs trusted for https lists besides the system's
  --shortest-prefix-ipv4 N          (EXOLEDGE_SHORTEST_PREFIX_IPV4) IPv4 prefixes shorter than /N in a list
                                    are refused, never published; 0 to 32, default ${DEFAULT_SHORTEST_PREFIX.ipv4}
  --shortest-prefix-ipv6 N          (EXOLEDGE_SHORTEST_PREFIX_IPV6) the same for IPv6; 0 to 128, default ${DEFAULT_SHORTEST_PREFIX.ipv6}
  --decider-image REF               (EXOLEDGE_DECIDER_IMAGE) the image of each EdgeSite's decider; default
                                    ${DEFAULT_IMAGES.decider}
  --challenge-filter-image REF      (EXOLEDGE_CHALLENGE_FILTER_IMAGE) the proof-of-work Wasm module (oci://, https://)
                                    of the challenge WasmPlugin; default ${DEFAULT_IMAGES.challengeFilter}
  --waf-filter-image REF            (EXOLEDGE_WAF_FILTER_IMAGE) Coraza + OWASP CRS as a Wasm module; default
                                    ${DEFAULT_IMAGES.wafFilter}
  --gateway-class NAME              (EXOLEDGE_GATEWAY_CLASS) the GatewayClass of a site's own Gateway; default istio
  --watch-namespaces NS,NS          (EXOLEDGE_WATCH_NAMESPACES) EdgeSites, Services and EndpointSlices in these
                                    namespaces only; every namespace when empty (the default)
  --valkey-url URL                  (EXOLEDGE_VALKEY_URL) redis:// or rediss:// of the Valkey every decider keeps
                                    its clearances and counters in; none by default (deciders run without state)
  --trusted-hops N                  (EXOLEDGE_TRUSTED_HOPS) proxies in front of the gateway whose X-Forwarded-For
                                    entries deciders trust; 0 to ${MAX_TRUSTED_HOPS}, default 0 (the header is never read)
  -h, --help                        print this help
  --version                         print exoledge's version

Exit status: 0 after SIGTERM or SIGINT (a graceful stop), 1 after a lost lease (restart it
as a candidate) or a failure, 2 bad flag, 3 the cluster lacks a CRD it needs.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`exoledge: ${message}\n`);
  process.exit(code);
}

function portOf(flag: string, text: string | number): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`${flag}: not a port: ${text}`, 2);
  return port;
}

/** A prefix length from a flag or its variable: an integer from 0 to `bits`, else exit 2. */
function prefixLengthOf(flag: string, text: string, bits: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > bits) fail(`${flag}: not a prefix length from 0 to ${bits}: ${text}`, 2);
  return n;
}

function parseFlags() {
  try {
    return parseFlagsStrictly();
  } catch (e) {
    // parseArgs refuses an unknown flag or a missing value with a TypeError: a usage error.
    fail(`${e instanceof Error ? e.message : String(e)}\n(--help lists the flags)`, 2);
  }
}

function parseFlagsStrictly() {
  return parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      'decider-namespace': { type: 'string' },
      'leader-election-namespace': { type: 'string' },
      'health-port': { type: 'string' },
      'metrics-port': { type: 'string' },
      'insecure-metrics': { type: 'boolean' },
      'metrics-cert-dir': { type: 'string' },
      'fetch-timeout': { type: 'string' },
      'max-list-bytes': { type: 'string' },
      'extra-ca': { type: 'string' },
      'shortest-prefix-ipv4': { type: 'string' },
      'shortest-prefix-ipv6': { type: 'string' },
      'decider-image': { type: 'string' },
      'challenge-filter-image': { type: 'string' },
      'waf-filter-image': { type: 'string' },
      'gateway-class': { type: 'string' },
      'watch-namespaces': { type: 'string' },
      'valkey-url': { type: 'string' },
      'trusted-hops': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean' },
    },
  });
}

async function main(): Promise<void> {
  const { values } = parseFlags();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.version) {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  const env = process.env;
  const secureMetrics = !values['insecure-metrics'] && env.EXOLEDGE_METRICS_SECURE !== 'false';
  const healthPort = portOf('--health-port', values['health-port'] ?? env.EXOLEDGE_HEALTH_PORT ?? 8081);
  const metricsPort = portOf(
    '--metrics-port',
    values['metrics-port'] ?? env.EXOLEDGE_METRICS_PORT ?? (secureMetrics ? 8443 : 8080),
  );
  const certDir = values['metrics-cert-dir'] ?? env.EXOLEDGE_METRICS_CERT_DIR;
  const timeoutText = values['fetch-timeout'] ?? env.EXOLEDGE_FETCH_TIMEOUT;
  const timeoutMs = timeoutText === undefined ? DEFAULT_FETCH_LIMITS.timeoutMs : parseDuration(timeoutText);
  if (!timeoutMs) fail(`--fetch-timeout: not a duration such as 2m or 90s: ${timeoutText}`, 2);
  const maxBytes = Number(
    values['max-list-bytes'] ?? env.EXOLEDGE_MAX_LIST_BYTES ?? DEFAULT_FETCH_LIMITS.maxBytes,
  );
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) fail(`--max-list-bytes: not a positive integer`, 2);
  const caFile = values['extra-ca'] ?? env.EXOLEDGE_EXTRA_CA;
  const shortestPrefix = {
    ipv4: prefixLengthOf(
      '--shortest-prefix-ipv4',
      values['shortest-prefix-ipv4'] ??
        env.EXOLEDGE_SHORTEST_PREFIX_IPV4 ??
        String(DEFAULT_SHORTEST_PREFIX.ipv4),
      32,
    ),
    ipv6: prefixLengthOf(
      '--shortest-prefix-ipv6',
      values['shortest-prefix-ipv6'] ??
        env.EXOLEDGE_SHORTEST_PREFIX_IPV6 ??
        String(DEFAULT_SHORTEST_PREFIX.ipv6),
      128,
    ),
  };
  const deciderNamespace =
    values['decider-namespace'] ?? env.EXOLEDGE_DECIDER_NAMESPACE ?? DEFAULT_DECIDER_NAMESPACE;
  const leaderElectionNamespace =
    values['leader-election-namespace'] ?? env.EXOLEDGE_LEADER_ELECTION_NAMESPACE ?? env.POD_NAMESPACE;

  const registry = new Registry();
  const client = await KubeClient.load(values.kubeconfig ?? env.KUBECONFIG, {
    rateLimit: DEFAULT_CLIENT_RATE_LIMIT,
    registry,
  });
  for (const gvk of [BLOCKLIST_SOURCE, EDGE_SITE, CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY]) {
    try {
      await client.resolve(gvk);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      fail(
        `the cluster does not serve ${gvk.kind} (${gvk.apiVersion}): install ` +
          (gvk === BLOCKLIST_SOURCE || gvk === EDGE_SITE
            ? 'operators/exoledge/crds/*.yaml'
            : "Cilium's CRDs") +
          ' first',
        3,
      );
    }
  }
  const watchNamespaces = (values['watch-namespaces'] ?? env.EXOLEDGE_WATCH_NAMESPACES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  const valkeyUrl = values['valkey-url'] ?? (env.EXOLEDGE_VALKEY_URL || undefined);
  if (valkeyUrl !== undefined && !isValkeyUrl(valkeyUrl)) {
    fail(`--valkey-url: not a redis:// or rediss:// URL: ${valkeyUrl}`, 2);
  }
  const hopsText = values['trusted-hops'] ?? env.EXOLEDGE_TRUSTED_HOPS ?? '0';
  const trustedHops = readTrustedHops(hopsText);
  if (trustedHops === undefined) {
    fail(`--trusted-hops: not an integer from 0 to ${MAX_TRUSTED_HOPS}: ${hopsText}`, 2);
  }
  // cert-manager, Gateway API and Istio are optional: what a cluster lacks, sites report.
  const notServed = await discoverEdgeKinds(client);
  const { manager } = createOperator({
    client,
    deciderNamespace,
    watchNamespaces,
    edgeSites: {
      notServed,
      edge: {
        deciderImage: values['decider-image'] ?? env.EXOLEDGE_DECIDER_IMAGE ?? DEFAULT_IMAGES.decider,
        challengeFilterImage:
          values['challenge-filter-image'] ??
          env.EXOLEDGE_CHALLENGE_FILTER_IMAGE ??
          DEFAULT_IMAGES.challengeFilter,
        wafFilterImage:
          values['waf-filter-image'] ?? env.EXOLEDGE_WAF_FILTER_IMAGE ?? DEFAULT_IMAGES.wafFilter,
        shardNamespace: deciderNamespace,
        gatewayClassName: values['gateway-class'] ?? env.EXOLEDGE_GATEWAY_CLASS ?? 'istio',
        deciderPort: DEFAULT_DECIDER_PORT,
        valkeyUrl,
        trustedHops,
      },
    },
    ...(leaderElectionNamespace ? { leaderElectionNamespace } : {}),
    healthPort,
    metrics: secureMetrics
      ? { port: metricsPort, secure: certDir ? { tls: { certDir } } : {} }
      : { port: metricsPort },
    registry,
    fetch: { timeoutMs, maxBytes, ...(caFile ? { ca: readFileSync(caFile, 'utf8') } : {}) },
    shortestPrefix,
  });
  manager.installSignalHandlers();
  await manager.start();
  manager.log.info(
    {
      deciderNamespace,
      leaderElectionNamespace,
      healthPort,
      metricsPort,
      secureMetrics,
      shortestPrefix,
      watchNamespaces,
      notServed: Object.fromEntries(notServed),
    },
    'exoledge operator started',
  );
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err), 1));
