/**
 * terdut-operator as one object: a manager with the five controllers on it, sharing the
 * caches they resolve each other through (servers, teams, the operator's labelled
 * Secrets). `main.ts` (the process in a cluster) and `local.ts` (`npm run up`) build it here.
 */
import {
  type Controller,
  type KubeClient,
  type KubeObject,
  type LeaderElectionSettings,
  Manager,
  type ManagerOptions,
} from '@operators/kit';
import type { TerdutAlertSource } from './api/terdut-alert-source.ts';
import type { TerdutDeadmanSwitch } from './api/terdut-deadman-switch.ts';
import type { TerdutEscalationRule } from './api/terdut-escalation-rule.ts';
import { TERDUT_SERVER, type TerdutServer } from './api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam } from './api/terdut-team.ts';
import type { TerdutControllerOptions } from './controllers/common.ts';
import { SECRET_GVK } from './controllers/finish.ts';
import { addTerdutAlertSourceController } from './controllers/terdut-alert-source.ts';
import { addTerdutDeadmanSwitchController } from './controllers/terdut-deadman-switch.ts';
import { addTerdutEscalationRuleController } from './controllers/terdut-escalation-rule.ts';
import { addTerdutServerController } from './controllers/terdut-server.ts';
import { addTerdutTeamController } from './controllers/terdut-team.ts';
import { MANAGED_SELECTOR } from './domain/names.ts';

/** The lease that elects one leader among replicas. */
export const LEASE_NAME = 'terdut-operator.terdut.ryuvia.com';

export interface OperatorOptions extends TerdutControllerOptions {
  readonly client: KubeClient;
  /** Elect a leader through a Lease in this namespace, with these timings; one replica when absent. */
  readonly leaderElection?: LeaderElectionSettings;
  readonly healthPort?: number;
  readonly metrics?: ManagerOptions['metrics'];
  readonly registry?: ManagerOptions['registry'];
  readonly logger?: ManagerOptions['logger'];
}

export interface Operator {
  readonly manager: Manager;
  readonly servers: Controller<TerdutServer>;
  readonly teams: Controller<TerdutTeam>;
  readonly escalationRules: Controller<TerdutEscalationRule>;
  readonly deadmanSwitches: Controller<TerdutDeadmanSwitch>;
  readonly alertSources: Controller<TerdutAlertSource>;
}

export function createOperator(opts: OperatorOptions): Operator {
  const manager = new Manager({
    name: 'terdut-operator',
    client: opts.client,
    ...(opts.leaderElection ? { leaderElection: { ...opts.leaderElection, name: LEASE_NAME } } : {}),
    ...(opts.healthPort === undefined ? {} : { healthProbe: { port: opts.healthPort } }),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const shared = {
    servers: manager.cache.informer<TerdutServer>(TERDUT_SERVER),
    teams: manager.cache.informer<TerdutTeam>(TERDUT_TEAM),
    // Only the operator's own Secrets: credentials, mirrors, webhook keys.
    secrets: manager.cache.informer<KubeObject>(SECRET_GVK, { labelSelector: MANAGED_SELECTOR }),
  };
  const teams = addTerdutTeamController(manager, shared, opts);
  return {
    manager,
    servers: addTerdutServerController(manager, shared, opts),
    teams,
    escalationRules: addTerdutEscalationRuleController(manager, shared, opts),
    deadmanSwitches: addTerdutDeadmanSwitchController(manager, shared, opts),
    alertSources: addTerdutAlertSourceController(manager, shared, opts),
  };
}
