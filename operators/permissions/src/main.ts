/**
 * The operator process (§4: Deployment stp-controller, container manager):
 * `node operators/permissions/src/main.ts [flags]`. The manager's flags, their variables
 * and the exit statuses are the kit's (`commandLine`); these are the operator's own,
 * addresses with the seed's typical ports (§6), as the chart passes them. The namespace
 * comes from POD_NAMESPACE (§3); ENABLE_WEBHOOKS=false turns the admission webhooks off
 * (§6: for controlled diagnostics only).
 */
import { commandLine, DEFAULT_CERT_DIR, durationMs, FlagError, flag, port } from '@operators/kit';
import { GROUP_ROLE } from './api/group-role.ts';
import { PERMISSION } from './api/permission.ts';
import { SCOPE } from './api/scope.ts';
import { TENANT } from './api/tenant.ts';
import { USER_ROLE } from './api/user-role.ts';
import { DEFAULT_INTERVALS, type Intervals } from './controllers/deps.ts';
import { CAPI_CLUSTER } from './controllers/gvks.ts';
import { DEFAULT_SWEEP_PERIOD_MS } from './controllers/sweep.ts';
import { DEFAULT_GATEWAY_PRINCIPAL } from './domain/plugins/kubeflow-objects.ts';
import { createOperator, LEASE_NAME } from './operator.ts';

interface Address {
  readonly host?: string;
  readonly port: number;
}

/** `:8081`, `0.0.0.0:8081`, `127.0.0.1:0` → host and port; `0` alone → off; not given → undefined too. */
export function parseBindAddress(text: string | undefined): Address | 'off' | undefined {
  if (text === undefined) return undefined;
  if (text === '0') return 'off';
  const m = /^(.*):(\d{1,5})$/.exec(text);
  const p = m ? Number(m[2]) : Number.NaN;
  if (!m || p > 65535) throw new FlagError(`not an address such as :8081 or 127.0.0.1:8081: ${text}`);
  return m[1] ? { host: m[1], port: p } : { port: p };
}

const interval = (help: string, fallback: number) =>
  flag({ value: 'DURATION', help, parse: durationMs(fallback) });

const cl = await commandLine({
  name: 'permissions-operator',
  command: 'node operators/permissions/src/main.ts',
  envPrefix: 'PERMISSIONS_',
  lease: LEASE_NAME,
  packageJson: new URL('../package.json', import.meta.url),
  flags: {
    'health-probe-bind-address': flag({
      value: 'ADDR',
      help: '/healthz and /readyz at host:port (controller-runtime\'s spelling;\nit wins over --health-port); "0" turns them off; default :8081',
      parse: parseBindAddress,
    }),
    'bundle-bind-address': flag({
      value: 'ADDR',
      help: 'the OPA bundle at /bundle; default :8082',
      parse: (text: string | undefined) => {
        const a = parseBindAddress(text ?? ':8082');
        if (a === 'off' || a === undefined) throw new FlagError('the bundle cannot be turned off');
        return a;
      },
    }),
    'metrics-bind-address': flag({
      value: 'ADDR',
      help: '/metrics at host:port (it wins over --metrics-port);\n"0" turns metrics off; default :8443',
      parse: parseBindAddress,
    }),
    'webhook-port': flag({
      value: 'N',
      help: "the admission webhooks' HTTPS port; default 9443",
      parse: port(9443),
    }),
    'webhook-cert-dir': flag({
      value: 'DIR',
      help: `tls.crt and tls.key for the webhooks; default ${DEFAULT_CERT_DIR}`,
    }),
    'argocd-namespace': flag({
      value: 'NS',
      help: 'where argocd-rbac-cm and the AppProjects live; default argocd',
    }),
    'cluster-deadline': interval('every call to a client cluster ends after this; default 10s', 10_000),
    'permission-in-use-retry': interval(
      'a deleting Permission still named by a role; default 1m',
      DEFAULT_INTERVALS.permissionInUseRetryMs,
    ),
    'scope-in-use-retry': interval(
      'a deleting Scope still holding users or groups; default 5s',
      DEFAULT_INTERVALS.scopeInUseRetryMs,
    ),
    'tenant-scope-wait': interval(
      'a deleting Tenant waiting for its Scope; default 5s',
      DEFAULT_INTERVALS.tenantScopeWaitMs,
    ),
    'scope-namespace-recheck': interval(
      'namespace-level Scopes recheck their namespaces; default 5m',
      DEFAULT_INTERVALS.scopeNamespaceRecheckMs,
    ),
    'scope-cluster-recheck': interval(
      'cluster-level Scopes recompute their clusters; default 30m',
      DEFAULT_INTERVALS.scopeClusterRecheckMs,
    ),
    resync: interval(
      'Permissions, UserRoles, GroupRoles and Tenants are reconciled again\n(drift in client clusters sends no event); default 10m',
      DEFAULT_INTERVALS.resyncMs,
    ),
    'sweep-period': interval(
      'objects carrying our labels whose owner is gone (a finalizer removed by hand)\nare deleted this often, in every cluster, and once at start-up; default 1m',
      DEFAULT_SWEEP_PERIOD_MS,
    ),
    'kubeflow-gateway-principal': flag({
      value: 'PRINCIPALS',
      help: `the Istio principal(s), comma-separated, the Kubeflow plugin's AuthorizationPolicies\naccept the kubeflow-userid header from; default ${DEFAULT_GATEWAY_PRINCIPAL}`,
      parse: (text: string | undefined) => {
        if (text === undefined) return [DEFAULT_GATEWAY_PRINCIPAL];
        const list = text
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '');
        // An empty list would be read by Istio as "any principal".
        if (list.length === 0)
          throw new FlagError('--kubeflow-gateway-principal needs at least one principal');
        return list;
      },
    }),
  },
  notes:
    "Environment: POD_NAMESPACE (the Lease's namespace: the chart passes --leader-elect), ENABLE_WEBHOOKS\n(default true; false: UserRole, GroupRole and Tenant are not validated at admission).",
});
const f = cl.flags;
const healthFlag = f['health-probe-bind-address'];
const metricsFlag = f['metrics-bind-address'];
const health = healthFlag === 'off' ? undefined : (healthFlag ?? cl.healthProbe);
const metrics =
  metricsFlag === 'off' ? undefined : metricsFlag ? { ...cl.metrics, ...metricsFlag } : cl.metrics;
const bundle = f['bundle-bind-address'];
const enableWebhooks = (process.env.ENABLE_WEBHOOKS ?? 'true').toLowerCase() !== 'false';
const intervals: Intervals = {
  permissionInUseRetryMs: f['permission-in-use-retry'],
  scopeInUseRetryMs: f['scope-in-use-retry'],
  tenantScopeWaitMs: f['tenant-scope-wait'],
  scopeNamespaceRecheckMs: f['scope-namespace-recheck'],
  scopeClusterRecheckMs: f['scope-cluster-recheck'],
  resyncMs: f.resync,
};
const clusterDeadlineMs = f['cluster-deadline'];

const capi = "Cluster API's CRDs (clusters are read from cluster.x-k8s.io/v1beta2 Cluster objects)";
await cl.requireKinds([PERMISSION, SCOPE, USER_ROLE, GROUP_ROLE, TENANT, CAPI_CLUSTER], (gvk) =>
  gvk === CAPI_CLUSTER ? capi : 'operators/permissions/crds/',
);
const { manager } = createOperator({
  client: cl.client,
  leaderElection: cl.leaderElection,
  ...(health ? { healthProbe: health } : {}),
  bundle,
  ...(metrics ? { metrics } : {}),
  registry: cl.registry,
  logger: cl.logger,
  ...(enableWebhooks
    ? { webhooks: { port: f['webhook-port'], certDir: f['webhook-cert-dir'] ?? DEFAULT_CERT_DIR } }
    : {}),
  argoCdNamespace: f['argocd-namespace'] ?? 'argocd',
  intervals,
  clusterDeadlineMs,
  sweepPeriodMs: f['sweep-period'],
  kubeflowGatewayPrincipals: f['kubeflow-gateway-principal'],
});
await cl.start(manager, {
  health,
  bundle,
  metrics,
  enableWebhooks,
  intervals,
  clusterDeadlineMs,
  sweepPeriodMs: f['sweep-period'],
  kubeflowGatewayPrincipals: f['kubeflow-gateway-principal'],
});
