/**
 * The permissions operator as one object: a manager with the five reconcilers (§5), the
 * caches they read, the model fed from those caches, the `/bundle` server for OPA, the
 * client-cluster registry, the plugins, and (unless turned off, §6) the admission
 * webhooks. `main.ts`, `local.ts` and the tests build it here.
 */
import {
  type Clock,
  type Controller,
  type KubeClient,
  type LeaderElectionSettings,
  Manager,
  type ManagerOptions,
  realClock,
  WebhookServer,
} from '@operators/kit';
import { GROUP_ROLE, type GroupRole } from './api/group-role.ts';
import { PERMISSION, type Permission } from './api/permission.ts';
import { SCOPE, type Scope } from './api/scope.ts';
import { TENANT, type Tenant } from './api/tenant.ts';
import { USER_ROLE, type UserRole } from './api/user-role.ts';
import { ClusterRegistry } from './clusters/registry.ts';
import { type Caches, DEFAULT_INTERVALS, type Deps, type Intervals } from './controllers/deps.ts';
import { CAPI_CLUSTER } from './controllers/gvks.ts';
import { ModelFeed } from './controllers/model-feed.ts';
import { NamespacePresence } from './controllers/namespace-presence.ts';
import { addPermissionController } from './controllers/permission.ts';
import { addRoleController } from './controllers/role.ts';
import { addScopeController } from './controllers/scope.ts';
import { DEFAULT_SWEEP_PERIOD_MS, Sweeper } from './controllers/sweep.ts';
import { addTenantController } from './controllers/tenant.ts';
import { type CapiCluster, clusterId } from './domain/cluster-selection.ts';
import { BundleServer } from './model/bundle-server.ts';
import { StorageEngine } from './model/storage-engine.ts';
import { allPlugins } from './plugins/index.ts';
import { AccessReviewer } from './webhooks/access.ts';
import {
  permissionHandler,
  roleHandler,
  scopeHandler,
  selfUser,
  tenantHandler,
  WEBHOOK_PATHS,
  type WebhookDeps,
} from './webhooks/handlers.ts';

/** The Lease that elects one writer among replicas (§4: the Deployment is stp-controller). */
export const LEASE_NAME = 'stp-controller.permissions.shturval.tech';

/** How long a client cluster's kubeconfig Secret read is trusted (src/clusters/registry.ts). */
export const CLUSTER_SECRET_MAX_AGE_MS = 2_000;

/** Connections the admission webhooks' own client opens at most (their reads and SubjectAccessReviews). */
const WEBHOOK_CONNECTIONS = 16;

/** The bundle's default address (§1, §6: "typically 8082"). */
export const DEFAULT_BUNDLE_PORT = 8082;

export interface WebhookOptions {
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** Where tls.crt and tls.key are. */
  readonly certDir: string;
}

export interface OperatorOptions {
  readonly client: KubeClient;
  /** Elect a leader through a Lease in this namespace, with these timings; one replica when absent. */
  readonly leaderElection?: LeaderElectionSettings;
  readonly healthPort?: number;
  /** The probe endpoint with its host (main.ts's --health-probe-bind-address); wins over healthPort. */
  readonly healthProbe?: { readonly host?: string; readonly port: number };
  readonly metrics?: ManagerOptions['metrics'];
  readonly registry?: ManagerOptions['registry'];
  readonly logger?: ManagerOptions['logger'];
  readonly bundle?: { readonly host?: string; readonly port: number; readonly freePortIfTaken?: boolean };
  /** Absent: no webhooks (ENABLE_WEBHOOKS=false). */
  readonly webhooks?: WebhookOptions;
  readonly intervals?: Partial<Intervals>;
  /** Every call to a client cluster ends after this (one unreachable cluster never holds the others). */
  readonly clusterDeadlineMs?: number;
  readonly argoCdNamespace?: string;
  readonly clock?: Clock;
  /** How often objects whose owner is gone are swept (and once at start-up); default 60 s. */
  readonly sweepPeriodMs?: number;
  /**
   * The identities (Istio principals) the Kubeflow plugin's AuthorizationPolicies accept the
   * user header from: the ingress gateway's; default Kubeflow's own.
   */
  readonly kubeflowGatewayPrincipals?: readonly string[];
}

export interface Operator {
  readonly manager: Manager;
  readonly model: StorageEngine;
  readonly bundle: BundleServer;
  readonly webhooks: WebhookServer | undefined;
  /** The webhooks' SubjectAccessReview cache (its hit rate), when the webhooks run. */
  readonly access: AccessReviewer | undefined;
  readonly clusters: ClusterRegistry;
  readonly permissions: Controller<Permission>;
  readonly scopes: Controller<Scope>;
  readonly userRoles: Controller<UserRole | GroupRole>;
  readonly groupRoles: Controller<UserRole | GroupRole>;
  readonly tenants: Controller<Tenant>;
  /** Leader-only: deletes what carries our labels and whose owner is gone. */
  readonly sweeper: Sweeper;
}

export function createOperator(opts: OperatorOptions): Operator {
  const manager = new Manager({
    name: 'permissions',
    client: opts.client,
    ...(opts.leaderElection ? { leaderElection: { ...opts.leaderElection, name: LEASE_NAME } } : {}),
    ...(opts.healthProbe
      ? { healthProbe: opts.healthProbe }
      : opts.healthPort === undefined
        ? {}
        : { healthProbe: { port: opts.healthPort } }),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const caches: Caches = {
    permissions: manager.cache.informer<Permission>(PERMISSION),
    scopes: manager.cache.informer<Scope>(SCOPE),
    userRoles: manager.cache.informer<UserRole>(USER_ROLE),
    groupRoles: manager.cache.informer<GroupRole>(GROUP_ROLE),
    tenants: manager.cache.informer<Tenant>(TENANT),
    clusters: manager.cache.informer<CapiCluster>(CAPI_CLUSTER),
  };
  const model = new StorageEngine();
  // Every replica feeds and serves its own model: OPA may poll any pod behind the Service.
  manager.add(new ModelFeed(model, caches), { needLeaderElection: false });
  const bundle = new BundleServer({
    engine: model,
    port: opts.bundle?.port ?? DEFAULT_BUNDLE_PORT,
    ...(opts.bundle?.host ? { host: opts.bundle.host } : {}),
    ...(opts.bundle?.freePortIfTaken ? { freePortIfTaken: true } : {}),
  });
  manager.add(bundle, { needLeaderElection: false });
  manager.addReadyCheck('model', () => {
    if (!model.isReady()) throw new Error('the model is being rebuilt from the API');
  });

  const clusters = new ClusterRegistry({
    client: opts.client,
    ...(opts.clusterDeadlineMs ? { deadlineMs: opts.clusterDeadlineMs } : {}),
    // One kubeconfig Secret GET per cluster per couple of seconds, not one per reconcile
    // step; a refused or unanswered call re-reads it at once (a rotation with revocation).
    secretMaxAgeMs: CLUSTER_SECRET_MAX_AGE_MS,
  });
  // A deleted Cluster's client (and its connections) is of no further use.
  caches.clusters.onDelta((d) => {
    if (d.type === 'deleted') clusters.forget(clusterId(d.object));
  });
  const argoCdNamespace = opts.argoCdNamespace ?? 'argocd';
  const deps: Deps = {
    client: manager.client,
    recorder: manager.recorder,
    clock: opts.clock ?? realClock,
    caches,
    model,
    registry: clusters,
    namespaces: new NamespacePresence(),
    plugins: allPlugins({
      management: manager.client,
      ...(opts.kubeflowGatewayPrincipals
        ? { kubeflowGatewayPrincipals: opts.kubeflowGatewayPrincipals }
        : {}),
    }),
    intervals: { ...DEFAULT_INTERVALS, ...(opts.intervals ?? {}) },
    argoCdNamespace,
  };

  let webhooks: WebhookServer | undefined;
  let access: AccessReviewer | undefined;
  if (opts.webhooks) {
    // The webhooks' reads and reviews on connections of their own, with no client-side
    // bucket: the apiserver waits on each answer (10 s at most), so they must never queue
    // behind the controllers' writes and rate limit.
    const webhookClient = opts.client.isolated({ connections: WEBHOOK_CONNECTIONS, timeoutMs: 8_000 });
    access = new AccessReviewer(webhookClient, { registry: manager.registry });
    const webhookDeps: WebhookDeps = {
      client: webhookClient,
      cached: { scopes: caches.scopes.store, permissions: caches.permissions.store },
      access,
      self: selfUser(webhookClient),
    };
    webhooks = new WebhookServer({
      name: 'permissions-webhooks',
      port: opts.webhooks.port,
      certDir: opts.webhooks.certDir,
      ...(opts.webhooks.host ? { host: opts.webhooks.host } : {}),
      logger: manager.log,
      registry: manager.registry,
    })
      .validating(WEBHOOK_PATHS.permission, permissionHandler(webhookDeps))
      .validating(WEBHOOK_PATHS.userRole, roleHandler(webhookDeps, 'UserRole'))
      .validating(WEBHOOK_PATHS.groupRole, roleHandler(webhookDeps, 'GroupRole'))
      .validating(WEBHOOK_PATHS.scope, scopeHandler(webhookDeps))
      .validating(WEBHOOK_PATHS.tenant, tenantHandler(webhookDeps));
    const server = webhooks;
    // The server first (it drains its requests), then its client's connections.
    manager.add(
      {
        name: server.name,
        start: (signal: AbortSignal) => server.start(signal),
        stop: async () => {
          await server.stop();
          await webhookClient.transport.close();
        },
      },
      { needLeaderElection: false },
    );
  }

  // It deletes: one writer only, like the reconcilers.
  const sweeper = new Sweeper({
    deps,
    periodMs: opts.sweepPeriodMs ?? DEFAULT_SWEEP_PERIOD_MS,
    log: manager.log,
  });
  manager.add(sweeper, { needLeaderElection: true });

  return {
    manager,
    sweeper,
    model,
    bundle,
    webhooks,
    access,
    clusters,
    permissions: addPermissionController(manager, deps),
    scopes: addScopeController(manager, deps),
    userRoles: addRoleController(manager, deps, 'UserRole'),
    groupRoles: addRoleController(manager, deps, 'GroupRole'),
    tenants: addTenantController(manager, deps),
  };
}
