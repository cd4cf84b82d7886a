/**
 * The exoledge operator as one object: a manager with the BlocklistSource controller on
 * it. `main.ts` (the process in a cluster) and `local.ts` (`npm run up`) both build it here.
 */
import { type Controller, type KubeClient, Manager, type ManagerOptions } from '@operators/kit';
import {
  addBlocklistSourceController,
  type BlocklistSourceControllerOptions,
} from './controllers/blocklist-source.ts';

/** The lease that elects one leader among replicas, as the seed names it. */
export const LEASE_NAME = 'exoledge-operator.edge.exoledge.io';
/** The decider's namespace unless told otherwise. */
export const DEFAULT_DECIDER_NAMESPACE = 'exoledge-system';

export interface OperatorOptions extends BlocklistSourceControllerOptions {
  readonly client: KubeClient;
  /** Elect a leader through a Lease in this namespace; one replica when absent. */
  readonly leaderElectionNamespace?: string;
  /** /healthz, /readyz and /metrics on this port; none when absent. */
  readonly port?: number;
  readonly logger?: ManagerOptions['logger'];
}

export interface Operator {
  readonly manager: Manager;
  readonly blocklistSources: Controller;
}

export function createOperator(opts: OperatorOptions): Operator {
  const manager = new Manager({
    name: 'exoledge',
    client: opts.client,
    ...(opts.leaderElectionNamespace
      ? { leaderElection: { namespace: opts.leaderElectionNamespace, name: LEASE_NAME } }
      : {}),
    ...(opts.port === undefined ? {} : { endpoint: { port: opts.port } }),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const blocklistSources = addBlocklistSourceController(manager, opts);
  return { manager, blocklistSources };
}
