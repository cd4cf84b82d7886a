/**
 * The operator process: `node operators/exoledge/src/main.ts [flags]`. The manager's
 * flags, their variables and the exit statuses are the kit's (`commandLine`); these are
 * exoledge's own, each with an EXOLEDGE_ variable for a Deployment's env.
 */
import { readFileSync } from 'node:fs';
import { commandLine, FlagError, flag } from '@operators/kit';
import { BLOCKLIST_SOURCE } from './api/blocklist-source.ts';
import { CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY } from './api/cilium.ts';
import { EDGE_SITE } from './api/edge-site.ts';
import { DEFAULT_FETCH_LIMITS } from './controllers/blocklist-source.ts';
import { discoverEdgeKinds } from './controllers/edge-site.ts';
import { DEFAULT_SHORTEST_PREFIX } from './domain/blocklist/index.ts';
import { parseDuration } from './domain/blocklist-source/index.ts';
import { isValkeyUrl, MAX_TRUSTED_HOPS, readTrustedHops } from './domain/decider/index.ts';
import { DEFAULT_DECIDER_PORT } from './domain/edge-site/index.ts';
import { DEFAULT_IMAGES } from './images.ts';
import { createOperator, DEFAULT_DECIDER_NAMESPACE, LEASE_NAME } from './operator.ts';

/** A prefix length: an integer from 0 to `bits`. */
const prefixLength =
  (bits: number, fallback: number) =>
  (text: string | undefined): number => {
    if (text === undefined) return fallback;
    if (!/^\d+$/.test(text) || Number(text) > bits)
      throw new FlagError(`not a prefix length from 0 to ${bits}: ${text}`);
    return Number(text);
  };

/** A parser: `read` of the text, or a bad flag naming `what` was expected; `fallback` when not given. */
const checked =
  <T>(read: (text: string) => T | undefined, what: string, fallback: T) =>
  (text: string | undefined): T => {
    if (text === undefined || text === '') return fallback;
    const v = read(text);
    if (v === undefined) throw new FlagError(`not ${what}: ${text}`);
    return v;
  };

const positiveInteger = (t: string): number | undefined =>
  Number.isSafeInteger(Number(t)) && Number(t) >= 1 ? Number(t) : undefined;

const cl = await commandLine({
  name: 'exoledge',
  command: 'node operators/exoledge/src/main.ts',
  envPrefix: 'EXOLEDGE_',
  lease: LEASE_NAME,
  packageJson: new URL('../package.json', import.meta.url),
  flags: {
    'decider-namespace': flag({
      value: 'NS',
      env: 'EXOLEDGE_DECIDER_NAMESPACE',
      help: `where decider ConfigMaps go; default ${DEFAULT_DECIDER_NAMESPACE}`,
    }),
    'fetch-timeout': flag({
      value: 'DURATION',
      env: 'EXOLEDGE_FETCH_TIMEOUT',
      help: 'one read of a list, all included; default 2m',
      parse: checked(parseDuration, 'a duration such as 2m or 90s', DEFAULT_FETCH_LIMITS.timeoutMs),
    }),
    'max-list-bytes': flag({
      value: 'N',
      env: 'EXOLEDGE_MAX_LIST_BYTES',
      help: `largest list accepted, decoded; default ${DEFAULT_FETCH_LIMITS.maxBytes}`,
      parse: checked(positiveInteger, 'a positive integer', DEFAULT_FETCH_LIMITS.maxBytes),
    }),
    'extra-ca': flag({
      value: 'FILE',
      env: 'EXOLEDGE_EXTRA_CA',
      help: "PEM CAs trusted for https lists besides the system's",
    }),
    'shortest-prefix-ipv4': flag({
      value: 'N',
      env: 'EXOLEDGE_SHORTEST_PREFIX_IPV4',
      help: `IPv4 prefixes shorter than /N in a list\nare refused, never published; 0 to 32, default ${DEFAULT_SHORTEST_PREFIX.ipv4}`,
      parse: prefixLength(32, DEFAULT_SHORTEST_PREFIX.ipv4),
    }),
    'shortest-prefix-ipv6': flag({
      value: 'N',
      env: 'EXOLEDGE_SHORTEST_PREFIX_IPV6',
      help: `the same for IPv6; 0 to 128, default ${DEFAULT_SHORTEST_PREFIX.ipv6}`,
      parse: prefixLength(128, DEFAULT_SHORTEST_PREFIX.ipv6),
    }),
    'decider-image': flag({
      value: 'REF',
      env: 'EXOLEDGE_DECIDER_IMAGE',
      help: `the image of each EdgeSite's decider; default\n${DEFAULT_IMAGES.decider}`,
    }),
    'waf-filter-image': flag({
      value: 'REF',
      env: 'EXOLEDGE_WAF_FILTER_IMAGE',
      help: `Coraza + OWASP CRS as a Wasm module; default\n${DEFAULT_IMAGES.wafFilter}`,
    }),
    'gateway-class': flag({
      value: 'NAME',
      env: 'EXOLEDGE_GATEWAY_CLASS',
      help: "the GatewayClass of a site's own Gateway; default istio",
    }),
    'watch-namespaces': flag({
      value: 'NS,NS',
      env: 'EXOLEDGE_WATCH_NAMESPACES',
      help: 'EdgeSites, Services and EndpointSlices in these\nnamespaces only; every namespace when empty (the default)',
      parse: (text: string | undefined) =>
        (text ?? '').split(',').flatMap((n) => (n.trim() ? [n.trim()] : [])),
    }),
    'valkey-url': flag({
      value: 'URL',
      env: 'EXOLEDGE_VALKEY_URL',
      help: 'redis:// or rediss:// of the Valkey every decider keeps\nits clearances and counters in; none by default (deciders run without state)',
      parse: checked((t) => (isValkeyUrl(t) ? t : undefined), 'a redis:// or rediss:// URL', undefined),
    }),
    'trusted-hops': flag({
      value: 'N',
      env: 'EXOLEDGE_TRUSTED_HOPS',
      help: `Envoy's xff_num_trusted_hops of the gateways: trusted\nproxies in front of them; 0 to ${MAX_TRUSTED_HOPS}, default 0 (the gateway's own peer)`,
      parse: checked(readTrustedHops, `an integer from 0 to ${MAX_TRUSTED_HOPS}`, 0),
    }),
    'client-address-header': flag({
      value: 'NAME',
      env: 'EXOLEDGE_CLIENT_ADDRESS_HEADER',
      help: 'a header deciders read the client address from first;\nonly when a CDN alone reaches the gateways and overwrites it; none by default',
      parse: checked(
        (t) => (/^[A-Za-z0-9-]+$/.test(t) ? t.toLowerCase() : undefined),
        'a header name',
        undefined,
      ),
    }),
  },
});
const f = cl.flags;
const deciderNamespace = f['decider-namespace'] ?? DEFAULT_DECIDER_NAMESPACE;
const shortestPrefix = { ipv4: f['shortest-prefix-ipv4'], ipv6: f['shortest-prefix-ipv6'] };
const watchNamespaces = f['watch-namespaces'];
const caFile = f['extra-ca'];

await cl.requireKinds(
  [BLOCKLIST_SOURCE, EDGE_SITE, CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY],
  (gvk) =>
    gvk === BLOCKLIST_SOURCE || gvk === EDGE_SITE ? 'operators/exoledge/crds/*.yaml' : "Cilium's CRDs",
);
// cert-manager, Gateway API and Istio are optional: what a cluster lacks, sites report.
const notServed = await discoverEdgeKinds(cl.client);
const { manager } = createOperator({
  client: cl.client,
  deciderNamespace,
  watchNamespaces,
  edgeSites: {
    notServed,
    edge: {
      deciderImage: f['decider-image'] ?? DEFAULT_IMAGES.decider,
      wafFilterImage: f['waf-filter-image'] ?? DEFAULT_IMAGES.wafFilter,
      shardNamespace: deciderNamespace,
      gatewayClassName: f['gateway-class'] ?? 'istio',
      deciderPort: DEFAULT_DECIDER_PORT,
      valkeyUrl: f['valkey-url'],
      trustedHops: f['trusted-hops'],
      clientAddressHeader: f['client-address-header'],
    },
  },
  leaderElection: cl.leaderElection,
  healthPort: cl.healthProbe.port,
  metrics: cl.metrics,
  registry: cl.registry,
  logger: cl.logger,
  fetch: {
    timeoutMs: f['fetch-timeout'],
    maxBytes: f['max-list-bytes'],
    ...(caFile ? { ca: readFileSync(caFile, 'utf8') } : {}),
  },
  shortestPrefix,
});
await cl.start(
  manager,
  { deciderNamespace, shortestPrefix, watchNamespaces, notServed: Object.fromEntries(notServed) },
  // The benchmark (bench/blocklist-source.bench.ts) waits for this line.
  'exoledge operator started',
);
