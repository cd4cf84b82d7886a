/**
 * The weebo-link process, as the chart's Deployment runs it (`weebo-link run [flags]`).
 * The manager's flags, their variables (unprefixed: HEALTH_PORT, METRICS_PORT,
 * METRICS_SECURE, METRICS_CERT_DIR, LEADER_ELECTION, LOG_LEVEL) and the exit statuses are
 * the kit's (`commandLine`); these are weebo-link's own. Leader election is on: two
 * replicas, one acts, through the Lease weebo-link in the release namespace.
 */
import { commandLine, FlagError, flag, required } from '@operators/kit';
import { startWeeboLink } from './app.ts';
import { RULES_CONFIGMAP } from './controllers/rules.ts';

export async function run(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const cl = await commandLine(
    {
      name: 'weebo-link',
      command: 'weebo-link run',
      envPrefix: '',
      lease: 'weebo-link',
      packageJson: new URL('../package.json', import.meta.url),
      namespaceFlag: 'namespace',
      flags: {
        namespace: flag({
          value: 'NS',
          env: ['POD_NAMESPACE', 'WEEBO_LINK_NAMESPACE'],
          help: 'the release namespace, where the rules\nConfigMap and the Lease live; required',
          parse: required(
            'POD_NAMESPACE is not set: weebo-link reads its rules and Lease in its own namespace',
          ),
        }),
        'rules-configmap': flag({
          value: 'NAME',
          env: 'RULES_CONFIGMAP',
          help: `the rules ConfigMap; default ${RULES_CONFIGMAP} (key links.yaml)`,
        }),
        'resync-seconds': flag({
          value: 'N',
          env: 'RESYNC_SECONDS',
          help: 'full resync of every target; default 300 (it finds the\ndepartures missed while weebo-link was down)',
          parse: (text: string | undefined) => {
            if (text === undefined) return undefined;
            if (!(Number(text) > 0)) throw new FlagError(`not a positive number of seconds: ${text}`);
            return Number(text) * 1000;
          },
        }),
      },
    },
    argv,
    env,
  );
  const app = await startWeeboLink({
    client: cl.client,
    namespace: cl.flags.namespace,
    configMap: cl.flags['rules-configmap'],
    leaderElection: cl.leaderElection ?? false,
    healthProbe: cl.healthProbe,
    metrics: cl.metrics,
    registry: cl.registry,
    logger: cl.logger,
    resyncMs: cl.flags['resync-seconds'],
  });
  app.manager.installSignalHandlers();
}
