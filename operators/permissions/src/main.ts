/**
 * The operator process (§4: Deployment stp-controller, container manager):
 * `node operators/permissions/src/main.ts [flags]`. Addresses are flags with the seed's
 * typical ports (§6); the namespace comes from POD_NAMESPACE (§3); ENABLE_WEBHOOKS=false
 * turns the admission webhooks off (§6: for controlled diagnostics only). Exits 0 on
 * SIGTERM after a graceful stop, 1 after a lost lease or a failure, 2 on a bad flag, 3
 * when the cluster lacks a CRD it needs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ApiErrorReason,
  DEFAULT_CERT_DIR,
  DEFAULT_CLIENT_RATE_LIMIT,
  isApiError,
  KubeClient,
  parseDurationMs,
} from '@operators/kit';
import { Registry } from 'prom-client';
import { GROUP_ROLE } from './api/group-role.ts';
import { PERMISSION } from './api/permission.ts';
import { SCOPE } from './api/scope.ts';
import { TENANT } from './api/tenant.ts';
import { USER_ROLE } from './api/user-role.ts';
import { DEFAULT_INTERVALS, type Intervals } from './controllers/deps.ts';
import { CAPI_CLUSTER } from './controllers/gvks.ts';
import { createOperator } from './operator.ts';

export const USAGE = `usage: node operators/permissions/src/main.ts [flags]

  --kubeconfig PATH                  (KUBECONFIG) default: ~/.kube/config, or the pod's service account
  --health-probe-bind-address ADDR   /healthz and /readyz; default :8081
  --bundle-bind-address ADDR         the OPA bundle at /bundle; default :8082
  --metrics-bind-address ADDR        /metrics over HTTPS, callers checked with TokenReview and
                                     SubjectAccessReview; default :8443 ("0" turns metrics off)
  --metrics-cert-dir DIR             tls.crt and tls.key for /metrics; self-signed when absent
  --leader-elect                     elect one writer through the Lease stp-controller.permissions.shturval.tech
                                     in POD_NAMESPACE (the chart sets it)
  --webhook-port N                   the admission webhooks' HTTPS port; default 9443
  --webhook-cert-dir DIR             tls.crt and tls.key for the webhooks; default ${DEFAULT_CERT_DIR}
  --argocd-namespace NS              where argocd-rbac-cm and the AppProjects live; default argocd
  --cluster-deadline DURATION        every call to a client cluster ends after this; default 10s
  --permission-in-use-retry DURATION a deleting Permission still named by a role; default 1m
  --scope-in-use-retry DURATION      a deleting Scope still holding users or groups; default 5s
  --tenant-scope-wait DURATION       a deleting Tenant waiting for its Scope; default 5s
  --scope-namespace-recheck DURATION namespace-level Scopes recheck their namespaces; default 5m
  --scope-cluster-recheck DURATION   cluster-level Scopes recompute their clusters; default 30m
  --resync DURATION                  Permissions, UserRoles, GroupRoles and Tenants are reconciled again
                                     (drift in client clusters sends no event); default 10m
  -h, --help                         print this help
  --version                          print the operator's version

Environment: POD_NAMESPACE (the Lease's namespace; required with --leader-elect), ENABLE_WEBHOOKS (default true;
false: UserRole, GroupRole and Tenant are not validated at admission).

Exit status: 0 after SIGTERM or SIGINT, 1 after a lost lease or a failure, 2 bad flag,
3 the cluster lacks a CRD it needs.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`permissions-operator: ${message}\n`);
  process.exit(code);
}

/** `:8081`, `0.0.0.0:8081`, `127.0.0.1:0` → host and port; `0` alone → off. */
export function parseBindAddress(flag: string, text: string): { host?: string; port: number } | undefined {
  if (text === '0') return undefined;
  const m = /^(.*):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535) fail(`${flag}: not an address such as :8081 or 127.0.0.1:8081: ${text}`, 2);
  return m[1] ? { host: m[1], port } : { port };
}

function duration(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseDurationMs(text);
  if (!ms) fail(`${flag}: not a duration such as 30s or 5m: ${text}`, 2);
  return ms;
}

function parseFlags() {
  const s = { type: 'string' } as const;
  try {
    return parseArgs({
      options: {
        kubeconfig: s,
        'health-probe-bind-address': s,
        'bundle-bind-address': s,
        'metrics-bind-address': s,
        'metrics-cert-dir': s,
        'leader-elect': { type: 'boolean' },
        'webhook-port': s,
        'webhook-cert-dir': s,
        'argocd-namespace': s,
        'cluster-deadline': s,
        'permission-in-use-retry': s,
        'scope-in-use-retry': s,
        'tenant-scope-wait': s,
        'scope-namespace-recheck': s,
        'scope-cluster-recheck': s,
        resync: s,
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    fail(`${e instanceof Error ? e.message : String(e)}\n(--help lists the flags)`, 2);
  }
}

async function main(): Promise<void> {
  const { values } = parseFlags();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.version) {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    process.stdout.write(`${pkg.version}\n`);
    return;
  }
  const env = process.env;
  const namespace = env.POD_NAMESPACE;
  if (values['leader-elect'] && !namespace)
    fail('--leader-elect needs POD_NAMESPACE (the Lease lives there)', 2);
  const health = parseBindAddress(
    '--health-probe-bind-address',
    values['health-probe-bind-address'] ?? ':8081',
  );
  const bundle = parseBindAddress('--bundle-bind-address', values['bundle-bind-address'] ?? ':8082');
  if (!bundle) fail('--bundle-bind-address: the bundle cannot be turned off', 2);
  const metrics = parseBindAddress('--metrics-bind-address', values['metrics-bind-address'] ?? ':8443');
  const webhookPort = Number(values['webhook-port'] ?? 9443);
  if (!Number.isInteger(webhookPort) || webhookPort < 1 || webhookPort > 65535) {
    fail(`--webhook-port: not a port: ${values['webhook-port']}`, 2);
  }
  const enableWebhooks = (env.ENABLE_WEBHOOKS ?? 'true').toLowerCase() !== 'false';
  const intervals: Intervals = {
    permissionInUseRetryMs: duration(
      '--permission-in-use-retry',
      values['permission-in-use-retry'],
      DEFAULT_INTERVALS.permissionInUseRetryMs,
    ),
    scopeInUseRetryMs: duration(
      '--scope-in-use-retry',
      values['scope-in-use-retry'],
      DEFAULT_INTERVALS.scopeInUseRetryMs,
    ),
    tenantScopeWaitMs: duration(
      '--tenant-scope-wait',
      values['tenant-scope-wait'],
      DEFAULT_INTERVALS.tenantScopeWaitMs,
    ),
    scopeNamespaceRecheckMs: duration(
      '--scope-namespace-recheck',
      values['scope-namespace-recheck'],
      DEFAULT_INTERVALS.scopeNamespaceRecheckMs,
    ),
    scopeClusterRecheckMs: duration(
      '--scope-cluster-recheck',
      values['scope-cluster-recheck'],
      DEFAULT_INTERVALS.scopeClusterRecheckMs,
    ),
    resyncMs: duration('--resync', values.resync, DEFAULT_INTERVALS.resyncMs),
  };
  const clusterDeadlineMs = duration('--cluster-deadline', values['cluster-deadline'], 10_000);

  const registry = new Registry();
  const client = await KubeClient.load(values.kubeconfig ?? env.KUBECONFIG, {
    rateLimit: DEFAULT_CLIENT_RATE_LIMIT,
    registry,
  });
  for (const [gvk, where] of [
    [PERMISSION, 'operators/permissions/crds/'],
    [SCOPE, 'operators/permissions/crds/'],
    [USER_ROLE, 'operators/permissions/crds/'],
    [GROUP_ROLE, 'operators/permissions/crds/'],
    [TENANT, 'operators/permissions/crds/'],
    [CAPI_CLUSTER, "Cluster API's CRDs (clusters are read from cluster.x-k8s.io/v1beta2 Cluster objects)"],
  ] as const) {
    try {
      await client.resolve(gvk);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      fail(`the cluster does not serve ${gvk.kind} (${gvk.apiVersion}): install ${where} first`, 3);
    }
  }
  const { manager } = createOperator({
    client,
    ...(values['leader-elect'] && namespace ? { leaderElectionNamespace: namespace } : {}),
    ...(health ? { healthProbe: health } : {}),
    bundle,
    ...(metrics
      ? {
          metrics: {
            port: metrics.port,
            ...(metrics.host ? { host: metrics.host } : {}),
            secure: values['metrics-cert-dir'] ? { tls: { certDir: values['metrics-cert-dir'] } } : {},
          },
        }
      : {}),
    registry,
    ...(enableWebhooks
      ? { webhooks: { port: webhookPort, certDir: values['webhook-cert-dir'] ?? DEFAULT_CERT_DIR } }
      : {}),
    argoCdNamespace: values['argocd-namespace'] ?? 'argocd',
    intervals,
    clusterDeadlineMs,
  });
  manager.installSignalHandlers();
  await manager.start();
  manager.log.info(
    { namespace, health, bundle, metrics, enableWebhooks, intervals, clusterDeadlineMs },
    'permissions operator started',
  );
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err), 1));
