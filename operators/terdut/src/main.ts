/**
 * The operator process: `node operators/terdut/src/main.ts [flags]`. The manager's flags,
 * their variables and the exit statuses are the kit's (`commandLine`); these are
 * terdut's own, each with a TERDUT_ variable for a Deployment's env.
 */
import {
  ApiErrorReason,
  commandLine,
  durationMs,
  FlagError,
  flag,
  isApiError,
  listFlag,
} from '@operators/kit';
import { TERDUT_ALERT_SOURCE } from './api/terdut-alert-source.ts';
import { TERDUT_DEADMAN_SWITCH } from './api/terdut-deadman-switch.ts';
import { TERDUT_ESCALATION_RULE } from './api/terdut-escalation-rule.ts';
import { TERDUT_SERVER } from './api/terdut-server.ts';
import { TERDUT_TEAM } from './api/terdut-team.ts';
import { DEFAULT_RESYNC_MS } from './controllers/common.ts';
import { POSTGRESQL } from './domain/server/index.ts';
import { createOperator, LEASE_NAME } from './operator.ts';
import { parseServerUrls, serverUrlMapper } from './server-urls.ts';

const cl = await commandLine({
  name: 'terdut-operator',
  command: 'node operators/terdut/src/main.ts',
  envPrefix: 'TERDUT_',
  lease: LEASE_NAME,
  packageJson: new URL('../package.json', import.meta.url),
  flags: {
    resync: flag({
      value: 'DURATION',
      env: 'TERDUT_RESYNC',
      help: 'how often every object is compared with the server\n(drift made on the server directly); default 5m',
      parse: durationMs(DEFAULT_RESYNC_MS),
    }),
    'api-timeout': flag({
      value: 'DURATION',
      env: 'TERDUT_API_TIMEOUT',
      help: 'one terdut-server request; default 10s',
      parse: durationMs(10_000),
    }),
    'server-url': listFlag({
      value: 'NS/NAME=URL',
      env: 'TERDUT_SERVER_URLS',
      help: "comma-separated in the variable; reach TerdutServer\nNS/NAME at URL instead of its Service's cluster DNS name: for runs outside the cluster.\nRepeatable; NAME may be * for every server of NS, and */* for all",
      parse: (texts) => {
        const urls = parseServerUrls(texts);
        if (urls.kind === 'Invalid') throw new FlagError(urls.message);
        return urls.map;
      },
    }),
  },
});
const { resync: resyncMs, 'api-timeout': apiTimeoutMs, 'server-url': urls } = cl.flags;

const kinds = [
  TERDUT_SERVER,
  TERDUT_TEAM,
  TERDUT_ESCALATION_RULE,
  TERDUT_DEADMAN_SWITCH,
  TERDUT_ALERT_SOURCE,
];
await cl.requireKinds(kinds, () => 'operators/terdut/crds/*.yaml');
// Zalando's CRD is optional (§8): without it, a BYO server works and a postgresClusterRef
// says PostgresCrdAbsent. Installing it later needs a restart of the operator.
const zalando = await cl.client.resolve(POSTGRESQL).then(
  () => true,
  (err: unknown) => {
    if (isApiError(err, ApiErrorReason.NotFound)) return false;
    throw err;
  },
);
const serverUrl = serverUrlMapper(urls);
const { manager } = createOperator({
  client: cl.client,
  zalando,
  resyncMs,
  apiTimeoutMs,
  ...(serverUrl ? { serverUrl } : {}),
  leaderElection: cl.leaderElection,
  healthPort: cl.healthProbe.port,
  metrics: cl.metrics,
  registry: cl.registry,
  logger: cl.logger,
});
await cl.start(manager, { resyncMs, zalando, serverUrls: urls.size });
