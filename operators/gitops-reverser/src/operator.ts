/**
 * gitops-reverser as one object: a manager with the six controllers, the shared caches
 * they map events through, and the mirror (leader-only) that runs every admitted
 * GitTarget's streams and writers. `main.ts` and `local.ts` build it here.
 */
import {
  type Clock,
  type Controller,
  type KubeClient,
  type LeaderElectionSettings,
  Manager,
  type ManagerOptions,
  realClock,
} from '@operators/kit';
import type { ClusterProvider } from './api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE, type ClusterWatchRule } from './api/cluster-watch-rule.ts';
import type { CommitRequest } from './api/commit-request.ts';
import { GIT_PROVIDER, type GitProvider } from './api/git-provider.ts';
import { GIT_TARGET, type GitTarget } from './api/git-target.ts';
import { WATCH_RULE, type WatchRule } from './api/watch-rule.ts';
import { addClusterWatchRuleController } from './controllers/cluster-watch-rule.ts';
import { addCommitRequestController } from './controllers/commit-request.ts';
import { addGitTargetController } from './controllers/git-target.ts';
import { addClusterProviderController, addGitProviderController } from './controllers/providers.ts';
import { type Caches, compileReads, SECRET_GVK } from './controllers/reads.ts';
import { addWatchRuleController } from './controllers/watch-rule.ts';
import type { RetryPolicy } from './git/writer.ts';
import { Mirror } from './mirror/mirror.ts';
import { SourceClients } from './mirror/source-clients.ts';

/** The lease that elects one leader among replicas: one writer per branch, cluster-wide. */
export const LEASE_NAME = 'gitops-reverser.configbutler.ai';

export interface OperatorOptions {
  readonly client: KubeClient;
  /** Where remote ClusterProviders' kubeconfig Secrets live: the operator's own namespace. */
  readonly operatorNamespace: string;
  /** Where the clones live. */
  readonly workDir: string;
  /** Elect a leader through a Lease in this namespace, with these timings; one replica when absent. */
  readonly leaderElection?: LeaderElectionSettings;
  readonly healthPort?: number;
  readonly metrics?: ManagerOptions['metrics'];
  readonly registry?: ManagerOptions['registry'];
  readonly logger?: ManagerOptions['logger'];
  /** Git transports allowed; `file` only for tests and local runs. */
  readonly allowedProtocols?: readonly string[];
  readonly retry?: Partial<RetryPolicy>;
  /** How often a GitTarget is compiled again without an event. */
  readonly resyncMs?: number;
  readonly clock?: Clock;
}

export interface Operator {
  readonly manager: Manager;
  readonly mirror: Mirror;
  readonly targets: Controller<GitTarget>;
  readonly watchRules: Controller<WatchRule>;
  readonly clusterWatchRules: Controller<ClusterWatchRule>;
  readonly clusterProviders: Controller<ClusterProvider>;
  readonly gitProviders: Controller<GitProvider>;
  readonly commitRequests: Controller<CommitRequest>;
}

export function createOperator(opts: OperatorOptions): Operator {
  const manager = new Manager({
    name: 'gitops-reverser',
    client: opts.client,
    ...(opts.leaderElection ? { leaderElection: { ...opts.leaderElection, name: LEASE_NAME } } : {}),
    ...(opts.healthPort === undefined ? {} : { healthProbe: { port: opts.healthPort } }),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const caches: Caches = {
    targets: manager.cache.informer<GitTarget>(GIT_TARGET),
    gitProviders: manager.cache.informer<GitProvider>(GIT_PROVIDER),
    watchRules: manager.cache.informer<WatchRule>(WATCH_RULE),
    clusterWatchRules: manager.cache.informer<ClusterWatchRule>(CLUSTER_WATCH_RULE),
  };
  const sources = new SourceClients({
    local: opts.client,
    operatorNamespace: opts.operatorNamespace,
    readSecret: (namespace, name) => opts.client.find(SECRET_GVK, name, namespace),
  });
  const reads = compileReads(opts.client, caches, sources);
  let targets: Controller<GitTarget> | undefined;
  const mirror = new Mirror({
    workDir: opts.workDir,
    log: manager.log.child({ component: 'mirror' }),
    registry: manager.registry,
    ...(opts.allowedProtocols ? { allowedProtocols: opts.allowedProtocols } : {}),
    ...(opts.retry ? { retry: opts.retry } : {}),
    targets: () => (caches.targets.store.hasSynced() ? (caches.targets.store.list() as GitTarget[]) : []),
    reads,
    onTargetChange: (key) => targets?.enqueue(key),
  });
  manager.add(mirror, { needLeaderElection: true });
  const clock = opts.clock ?? realClock;
  targets = addGitTargetController(manager, caches, reads, mirror, {
    clock,
    ...(opts.resyncMs ? { resyncMs: opts.resyncMs } : {}),
  });
  return {
    manager,
    mirror,
    targets,
    watchRules: addWatchRuleController(manager, caches, reads, {
      clock,
      ...(opts.resyncMs ? { resyncMs: opts.resyncMs } : {}),
    }),
    clusterWatchRules: addClusterWatchRuleController(manager, caches, reads, {
      clock,
      ...(opts.resyncMs ? { resyncMs: opts.resyncMs } : {}),
    }),
    clusterProviders: addClusterProviderController(manager, reads, { clock }),
    gitProviders: addGitProviderController(manager, reads, { clock }),
    commitRequests: addCommitRequestController(manager, caches, mirror, { clock }),
  };
}
