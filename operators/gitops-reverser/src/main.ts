/**
 * The operator process: `node operators/gitops-reverser/src/main.ts [flags]`. The
 * manager's flags, their variables and the exit statuses are the kit's (`commandLine`);
 * these are gitops-reverser's own. On SIGTERM, pending changes are pushed before the exit.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandLine, durationMs, flag, required } from '@operators/kit';
import { CLUSTER_PROVIDER } from './api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE } from './api/cluster-watch-rule.ts';
import { COMMIT_REQUEST } from './api/commit-request.ts';
import { GIT_PROVIDER } from './api/git-provider.ts';
import { GIT_TARGET } from './api/git-target.ts';
import { WATCH_RULE } from './api/watch-rule.ts';
import { DEFAULT_TARGET_RESYNC_MS } from './controllers/git-target.ts';
import { createOperator, LEASE_NAME } from './operator.ts';

const cl = await commandLine({
  name: 'gitops-reverser',
  command: 'node operators/gitops-reverser/src/main.ts',
  envPrefix: 'GITOPS_REVERSER_',
  lease: LEASE_NAME,
  packageJson: new URL('../package.json', import.meta.url),
  namespaceFlag: 'namespace',
  flags: {
    namespace: flag({
      value: 'NS',
      env: 'POD_NAMESPACE',
      help: "the operator's namespace: where remote ClusterProviders'\nkubeconfig Secrets are read from; required",
      parse: required('POD_NAMESPACE is not set: the operator reads kubeconfig Secrets there'),
    }),
    'work-dir': flag({
      value: 'DIR',
      env: 'GITOPS_REVERSER_WORK_DIR',
      help: 'where the clones live; default $TMPDIR/gitops-reverser',
    }),
    resync: flag({
      value: 'DURATION',
      env: 'GITOPS_REVERSER_RESYNC',
      help: 'how often GitTargets, WatchRules and ClusterWatchRules\nare looked at again without an event (Secrets and remotes send none); default 1m',
      parse: durationMs(DEFAULT_TARGET_RESYNC_MS),
    }),
  },
});
const { namespace: operatorNamespace, resync: resyncMs } = cl.flags;
const workDir = cl.flags['work-dir'] ?? join(tmpdir(), 'gitops-reverser');
mkdirSync(workDir, { recursive: true, mode: 0o700 });

const kinds = [CLUSTER_PROVIDER, GIT_PROVIDER, GIT_TARGET, WATCH_RULE, CLUSTER_WATCH_RULE, COMMIT_REQUEST];
await cl.requireKinds(kinds, () => 'operators/gitops-reverser/crds/*.yaml');
const { manager } = createOperator({
  client: cl.client,
  operatorNamespace,
  workDir,
  resyncMs,
  leaderElection: cl.leaderElection,
  healthPort: cl.healthProbe.port,
  metrics: cl.metrics,
  registry: cl.registry,
  logger: cl.logger,
});
await cl.start(manager, { operatorNamespace, workDir, resyncMs });
