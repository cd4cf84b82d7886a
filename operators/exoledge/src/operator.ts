/**
 * The exoledge operator as one object: a manager with the BlocklistSource controller on
 * it, and the EdgeSite controller when `edgeSites` is given. `main.ts` (the process in a cluster) and `local.ts` (`npm run up`) both build it here.
 */
import {
  type Controller,
  type KubeClient,
  type LeaderElectionSettings,
  Manager,
  type ManagerOptions,
} from '@operators/kit';
import type { EdgeSite } from './api/edge-site.ts';
import {
  addBlocklistSourceController,
  type BlocklistSourceControllerOptions,
} from './controllers/blocklist-source.ts';
import { addEdgeSiteController, type EdgeSiteControllerOptions } from './controllers/edge-site.ts';

/** The lease that elects one leader among replicas, as the seed names it. */
export const LEASE_NAME = 'exoledge-operator.edge.exoledge.io';
/** The decider's namespace unless told otherwise. */
export const DEFAULT_DECIDER_NAMESPACE = 'exoledge-system';

export interface OperatorOptions extends BlocklistSourceControllerOptions {
  readonly client: KubeClient;
  /** Elect a leader through a Lease in this namespace, with these timings; one replica when absent. */
  readonly leaderElection?: LeaderElectionSettings;
  /** /healthz and /readyz on this port (every address); none when absent. */
  readonly healthPort?: number;
  /** /metrics; none when absent. Loopback HTTP by default; `secure` for HTTPS with TokenReview + SubjectAccessReview. */
  readonly metrics?: ManagerOptions['metrics'];
  /** The registry the client counts its requests on too; the manager makes one when absent. */
  readonly registry?: ManagerOptions['registry'];
  readonly logger?: ManagerOptions['logger'];
  /**
   * The EdgeSite controller's settings; no EdgeSite controller when absent. Its shard
   * namespace must be `deciderNamespace`: the decider reads the shards where they are
   * published.
   */
  readonly edgeSites?: EdgeSiteControllerOptions;
  /**
   * Watch namespaced kinds (EdgeSites and what they own, Services, EndpointSlices) in these
   * namespaces only; every namespace when absent. The shard namespace is watched whatever
   * this says.
   */
  readonly watchNamespaces?: readonly string[];
}

export interface Operator {
  readonly manager: Manager;
  readonly blocklistSources: Controller;
  readonly edgeSites?: Controller<EdgeSite>;
}

export function createOperator(opts: OperatorOptions): Operator {
  const manager = new Manager({
    name: 'exoledge',
    client: opts.client,
    ...(opts.leaderElection ? { leaderElection: { ...opts.leaderElection, name: LEASE_NAME } } : {}),
    ...(opts.healthPort === undefined ? {} : { healthProbe: { port: opts.healthPort } }),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.watchNamespaces?.length ? { cache: { namespaces: opts.watchNamespaces } } : {}),
  });
  const blocklistSources = addBlocklistSourceController(manager, opts);
  if (!opts.edgeSites) return { manager, blocklistSources };
  if (opts.edgeSites.edge.shardNamespace !== opts.deciderNamespace) {
    throw new Error(
      `the EdgeSite shard namespace (${opts.edgeSites.edge.shardNamespace}) must be the decider namespace ` +
        `(${opts.deciderNamespace}): deciders read the shards where BlocklistSources publish them`,
    );
  }
  return { manager, blocklistSources, edgeSites: addEdgeSiteController(manager, opts.edgeSites) };
}
