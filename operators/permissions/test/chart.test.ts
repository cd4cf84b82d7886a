/**
 * The permissions operator's installer chart as the real helm renders it (`helm template`, no
 * cluster): `helm lint`; chart/crds/ is crds/ byte for byte; the RBAC is exactly the table
 * below, each row with the call that needs it (the other half, that it is enough, is
 * chart-rbac.test.ts); stp-controller's flags, environment, probes and hardening; the Services
 * of the bundle, the webhooks and metrics; the ValidatingWebhookConfiguration equal to
 * src/webhooks/configuration.ts's with its certificate, self-signed or cert-manager's; the
 * variants without webhooks, metrics or Argo CD; the helm test; and every rendered object
 * accepted by a real apiserver (server-side dry-run), cert-manager's against its real CRDs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { parseAllDocuments } from 'yaml';
import {
  applyAll,
  bindingRows,
  byKind,
  names,
  type RenderedChart,
  renderChart as renderAnyChart,
  ruleRows,
  run,
} from '../../exoledge/test/chart-support.ts';
import { LEASE_NAME } from '../src/operator.ts';
import { webhookConfiguration } from '../src/webhooks/configuration.ts';

const CHART_DIR = join(import.meta.dirname, '..', 'chart');

let env: TestEnv;
let helm: string;
before(async () => {
  env = await testEnv();
  helm = (await resolveBinaries(() => {})).helm;
});

/** `helm template` of operators/permissions/chart, release `permissions`. */
function renderChart(namespace: string, values: Record<string, unknown> = {}): Promise<RenderedChart> {
  return renderAnyChart(helm, { namespace, values, release: 'permissions', chartDir: CHART_DIR });
}

let rendered: Promise<RenderedChart> | undefined;
/** The chart with its default values, in namespace `ops`: rendered once for the tests that only read it. */
function defaults(): Promise<RenderedChart> {
  rendered ??= renderChart('ops');
  return rendered;
}

const LEASE = 'stp-controller.permissions.shturval.tech';
const CRD_NAMES = [
  'permissions.permissions.shturval.tech',
  'scopes.permissions.shturval.tech',
  'userroles.permissions.shturval.tech',
  'grouproles.permissions.shturval.tech',
  'tenants.permissions.shturval.tech',
];
const WEBHOOK_SERVICE = { namespace: 'ops', name: 'stp-controller-webhook', port: 443 } as const;

const one = (objects: readonly KubeObject[], kind: string, name: string): KubeObject => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name} in ${names(objects).join(', ')}`);
  return found[0] as KubeObject;
};

interface Container {
  readonly name: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly args: readonly string[];
  readonly env: { name: string; value?: string; valueFrom?: unknown }[];
  readonly securityContext: unknown;
  readonly livenessProbe: unknown;
  readonly readinessProbe: unknown;
  readonly ports: { name: string; containerPort: number }[];
  readonly volumeMounts: unknown;
  readonly resources: unknown;
}
interface PodSpec {
  readonly serviceAccountName: string;
  readonly securityContext: unknown;
  readonly containers: Container[];
  readonly volumes: unknown;
}
function deployment(objects: readonly KubeObject[]): {
  name: string | undefined;
  namespace: string | undefined;
  replicas: number;
  selector: unknown;
  podLabels: unknown;
  pod: PodSpec;
  container: Container;
} {
  const [d, ...others] = byKind(objects, 'Deployment');
  assert.ok(d, 'a Deployment');
  assert.equal(others.length, 0);
  const spec = d.spec as {
    replicas: number;
    selector: { matchLabels: unknown };
    template: { metadata: { labels: unknown }; spec: PodSpec };
  };
  const [container, ...sidecars] = spec.template.spec.containers;
  assert.ok(container);
  assert.equal(sidecars.length, 0);
  return {
    name: d.metadata.name,
    namespace: d.metadata.namespace,
    replicas: spec.replicas,
    selector: spec.selector.matchLabels,
    podLabels: spec.template.metadata.labels,
    pod: spec.template.spec,
    container,
  };
}
const envOf = (c: Container): Record<string, unknown> =>
  Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));

type Vwc = KubeObject & { webhooks: Record<string, unknown>[] };
type ServiceObj = KubeObject & { spec: { selector: unknown; ports: unknown } };
type SecretObj = KubeObject & { type: string; data: Record<string, string> };

/** The `kubectl` arguments of each container of the helm test pod, init containers first. */
function helmTestCommands(pod: KubeObject): string[][] {
  const spec = pod.spec as { initContainers?: { args: string[] }[]; containers: { args: string[] }[] };
  return [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.args);
}

const pem = (b64: string): string => Buffer.from(b64, 'base64').toString('utf8');

describe('the permissions chart, rendered by helm', () => {
  it('passes helm lint, with defaults and with every optional part switched', async () => {
    await run(helm, ['lint', '--strict', CHART_DIR]);
    await run(helm, [
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'webhooks.enabled=false,metrics.enabled=false,argocd.enabled=false,helmTest.enabled=false,replicas=1',
    ]);
    await run(helm, ['lint', '--strict', CHART_DIR, '--set', 'webhooks.certManager.enabled=true']);
    await run(helm, [
      'lint',
      '--strict',
      CHART_DIR,
      '--set',
      'webhooks.certManager.enabled=true,webhooks.certManager.issuerRef.kind=ClusterIssuer,webhooks.certManager.issuerRef.name=internal-ca',
    ]);
  });

  it('ships the CRDs generated from the types, byte for byte (chart/crds/ is a copy of crds/)', async () => {
    const generatedDir = join(CHART_DIR, '..', 'crds');
    const shippedDir = join(CHART_DIR, 'crds');
    const files = (await readdir(generatedDir)).sort();
    assert.deepEqual(
      (await readdir(shippedDir)).sort(),
      files,
      'chart/crds/ holds exactly the files of crds/: cp operators/permissions/crds/*.yaml operators/permissions/chart/crds/',
    );
    assert.equal(files.length, 5);
    for (const f of files) {
      const generated = await readFile(join(generatedDir, f));
      const shipped = await readFile(join(shippedDir, f));
      assert.ok(
        generated.equals(shipped),
        `chart/crds/${f} differs from crds/${f}: cp operators/permissions/crds/*.yaml operators/permissions/chart/crds/`,
      );
    }
    // What helm installs is those files, in full.
    const { crds } = await defaults();
    assert.deepEqual(crds.map((c) => c.metadata.name).sort(), [...CRD_NAMES].sort());
    for (const f of files) {
      const [doc, ...more] = parseAllDocuments(await readFile(join(generatedDir, f), 'utf8'))
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => !!o);
      assert.equal(more.length, 0);
      assert.deepEqual(
        crds.find((c) => c.metadata.name === doc?.metadata.name),
        doc,
      );
    }
  });

  it('renders, with defaults, stp-controller, what it runs as, its Services, the webhooks and their certificate', async () => {
    const { objects, tests } = await defaults();
    assert.deepEqual(names(objects), [
      'ServiceAccount ops/stp-controller-helm-test',
      'ServiceAccount ops/stp-controller',
      'Secret ops/stp-controller-webhook-tls',
      'ClusterRole /ops-stp-controller-helm-test',
      'ClusterRole /ops-stp-controller',
      'ClusterRole /ops-stp-controller-secrets',
      'ClusterRole /ops-stp-controller-metrics-auth',
      'ClusterRole /ops-stp-controller-metrics-reader',
      'ClusterRoleBinding /ops-stp-controller-helm-test',
      'ClusterRoleBinding /ops-stp-controller',
      'ClusterRoleBinding /ops-stp-controller-secrets',
      'ClusterRoleBinding /ops-stp-controller-metrics-auth',
      'Role ops/stp-controller-helm-test',
      'Role argocd/stp-controller-argocd',
      'Role ops/stp-controller-leader-election',
      'RoleBinding ops/stp-controller-helm-test',
      'RoleBinding argocd/stp-controller-argocd',
      'RoleBinding ops/stp-controller-leader-election',
      'Service ops/stp-controller-bundle',
      'Service ops/stp-controller-webhook',
      'Service ops/stp-controller-metrics',
      'Deployment ops/stp-controller',
      'ValidatingWebhookConfiguration /permissions.shturval.tech',
    ]);
    assert.deepEqual(names(tests), ['Pod ops/stp-controller-ready']);
    for (const o of [...objects, ...tests]) {
      assert.equal(o.metadata.labels?.['app.kubernetes.io/name'], 'stp-controller', names([o])[0]);
      assert.equal(o.metadata.labels?.['app.kubernetes.io/instance'], 'permissions', names([o])[0]);
      assert.equal(
        o.metadata.labels?.['app.kubernetes.io/managed-by'],
        undefined,
        'the operator marks what it writes with managed-by; the chart never does',
      );
    }
  });

  it('grants exactly what the code calls, each grant where it is used; Secrets only by name, deletes only of what the operator writes', async () => {
    assert.equal(LEASE_NAME, LEASE, 'the chart names the Lease the operator elects through');
    const { objects } = await defaults();
    const rows = ruleRows(objects);
    const main = 'ClusterRole /ops-stp-controller:';
    assert.deepEqual(rows, [
      // The helm test (templates/tests/ready.yaml): `kubectl wait` on the five CRDs by name.
      `ClusterRole /ops-stp-controller-helm-test: apiextensions.k8s.io customresourcedefinitions[${CRD_NAMES.join(',')}] get,list,watch`,
      // get: the webhooks' live read; list,watch: the informers; patch: the finalizer.
      `${main} permissions.shturval.tech permissions get,list,watch,patch`,
      // + create,patch: a Tenant's Scope (server-side apply); delete: a deleting Tenant's Scope.
      `${main} permissions.shturval.tech scopes get,list,watch,create,patch,delete`,
      // patch: the finalizer and the Scope as controller owner; never read one by one.
      // delete: never called; OwnerReferencesPermissionEnforcement asks it of an owner change.
      `${main} permissions.shturval.tech userroles,grouproles list,watch,patch,delete`,
      // get: the webhooks' read of a parent Tenant.
      `${main} permissions.shturval.tech tenants get,list,watch,patch`,
      // applyStatus -> kit applyStatusIfChanged (server-side apply of status).
      `${main} permissions.shturval.tech permissions/status,scopes/status,userroles/status,grouproles/status,tenants/status patch`,
      // blockOwnerDeletion owner references to Scopes and Tenants (OwnerReferencesPermissionEnforcement).
      `${main} permissions.shturval.tech scopes/finalizers,tenants/finalizers update`,
      // The Cluster informer; the Scope annotations (merge patch). No get, no delete.
      `${main} cluster.x-k8s.io clusters list,watch,patch`,
      // platform: ClusterRoles (applyIfDiffers, deleteIfOurs); escalate: rules it does not
      // hold, aggregationRule; bind: the ClusterRoleBindings to them.
      `${main} rbac.authorization.k8s.io clusterroles list,get,create,patch,delete,escalate,bind`,
      // The RBAC plugin at platform level (syncSet/removeSet).
      `${main} rbac.authorization.k8s.io clusterrolebindings list,get,create,patch,delete`,
      // tenant-get / tenant-edit Roles; escalate: tenant-edit writes roles; bind: their bindings.
      `${main} rbac.authorization.k8s.io roles list,get,create,patch,delete,escalate,bind`,
      // A Tenant's bindings, the tenant plugin's (list in every namespace by label).
      `${main} rbac.authorization.k8s.io rolebindings list,get,create,patch,delete`,
      // webhooks/grantor.ts mayGrant.
      `${main} authorization.k8s.io subjectaccessreviews create`,
      // The kit's EventRecorder.
      `${main} events.k8s.io events create,patch`,
      // clusters/registry.ts readSecret: <cluster>-kubeconfig, by name.
      'ClusterRole /ops-stp-controller-secrets: core secrets get',
      // Authenticated metrics (kit RequestAuthorizer).
      'ClusterRole /ops-stp-controller-metrics-auth: authentication.k8s.io tokenreviews create',
      'ClusterRole /ops-stp-controller-metrics-auth: authorization.k8s.io subjectaccessreviews create',
      // Not the operator's: for the user to bind to its Prometheus.
      'ClusterRole /ops-stp-controller-metrics-reader: /metrics get',
      // The helm test: the Lease and the Deployment, by name.
      `Role ops/stp-controller-helm-test: coordination.k8s.io leases[${LEASE}] get,list,watch`,
      'Role ops/stp-controller-helm-test: apps deployments[stp-controller] get,list,watch',
      // plugins/argocd.ts: argocd-rbac-cm created when absent, then read and replaced by name.
      'Role argocd/stp-controller-argocd: core configmaps create',
      'Role argocd/stp-controller-argocd: core configmaps[argocd-rbac-cm] get,update',
      // plugins/argocd.ts projects(): list, get after a conflict, replace.
      'Role argocd/stp-controller-argocd: argoproj.io appprojects list,get,update',
      // The kit's LeaderElector: create once, then get and update that one Lease.
      'Role ops/stp-controller-leader-election: coordination.k8s.io leases create',
      `Role ops/stp-controller-leader-election: coordination.k8s.io leases[${LEASE}] get,update`,
    ]);
    assert.deepEqual(
      rows.filter((r) => /[ ,]\*|\*[ ,]/.test(r) || r.includes('deletecollection')),
      [],
      'no wildcard, no deletecollection',
    );
    assert.deepEqual(
      rows.filter((r) => /\bsecrets\b/.test(r)),
      ['ClusterRole /ops-stp-controller-secrets: core secrets get'],
      'Secrets: get only, never list, watch or write',
    );
    assert.deepEqual(
      rows.filter((r) => /[ ,]delete(,|$)/.test(r)).map((r) => r.split(' ')[3]),
      ['scopes', 'userroles,grouproles', 'clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'],
      'deletes only of the kinds the operator writes itself, and of the roles whose owner it sets',
    );
    const operator = 'ServiceAccount ops/stp-controller';
    const helmTest = 'ServiceAccount ops/stp-controller-helm-test';
    assert.deepEqual(bindingRows(objects), [
      `ClusterRoleBinding /ops-stp-controller-helm-test -> ClusterRole ops-stp-controller-helm-test: ${helmTest}`,
      `ClusterRoleBinding /ops-stp-controller -> ClusterRole ops-stp-controller: ${operator}`,
      `ClusterRoleBinding /ops-stp-controller-secrets -> ClusterRole ops-stp-controller-secrets: ${operator}`,
      `ClusterRoleBinding /ops-stp-controller-metrics-auth -> ClusterRole ops-stp-controller-metrics-auth: ${operator}`,
      `RoleBinding ops/stp-controller-helm-test -> Role stp-controller-helm-test: ${helmTest}`,
      `RoleBinding argocd/stp-controller-argocd -> Role stp-controller-argocd: ${operator}`,
      `RoleBinding ops/stp-controller-leader-election -> Role stp-controller-leader-election: ${operator}`,
    ]);
  });

  it('drops the grants of what is switched off, and puts the Argo CD Role where values say', async () => {
    const all = ruleRows((await defaults()).objects);
    const gone = async (values: Record<string, unknown>): Promise<string[]> => {
      const rows = ruleRows((await renderChart('ops', values)).objects);
      assert.deepEqual(
        rows.filter((r) => !all.includes(r)),
        [],
        'switching a part off adds nothing',
      );
      return all.filter((r) => !rows.includes(r));
    };
    assert.deepEqual(await gone({ webhooks: { enabled: false } }), [
      'ClusterRole /ops-stp-controller: authorization.k8s.io subjectaccessreviews create',
    ]);
    assert.deepEqual(await gone({ metrics: { enabled: false } }), [
      'ClusterRole /ops-stp-controller-metrics-auth: authentication.k8s.io tokenreviews create',
      'ClusterRole /ops-stp-controller-metrics-auth: authorization.k8s.io subjectaccessreviews create',
      'ClusterRole /ops-stp-controller-metrics-reader: /metrics get',
    ]);
    assert.deepEqual(await gone({ argocd: { enabled: false } }), [
      'Role argocd/stp-controller-argocd: core configmaps create',
      'Role argocd/stp-controller-argocd: core configmaps[argocd-rbac-cm] get,update',
      'Role argocd/stp-controller-argocd: argoproj.io appprojects list,get,update',
    ]);
    const bare = await renderChart('ops', { helmTest: { enabled: false } });
    assert.deepEqual(bare.tests, []);
    assert.deepEqual(
      byKind(bare.objects, 'ServiceAccount').map((o) => o.metadata.name),
      ['stp-controller'],
    );

    const moved = ruleRows((await renderChart('ops', { argocd: { namespace: 'gitops' } })).objects);
    assert.deepEqual(
      moved.filter((r) => r.includes('argocd-rbac-cm') || r.includes('appprojects')),
      [
        'Role gitops/stp-controller-argocd: core configmaps[argocd-rbac-cm] get,update',
        'Role gitops/stp-controller-argocd: argoproj.io appprojects list,get,update',
      ],
    );
  });

  it('runs stp-controller, container manager, with the flags of main.ts, leader election on, two replicas, hardened, its readiness probed every 2 s', async () => {
    const { objects } = await defaults();
    const { name, namespace, replicas, selector, podLabels, pod, container } = deployment(objects);
    assert.equal(name, 'stp-controller');
    assert.equal(namespace, 'ops');
    assert.equal(replicas, 2, 'every replica serves /bundle and the webhooks; the Lease holder writes');
    assert.deepEqual(selector, {
      'app.kubernetes.io/name': 'stp-controller',
      'app.kubernetes.io/instance': 'permissions',
    });
    assert.deepEqual(podLabels, {
      'app.kubernetes.io/name': 'stp-controller',
      'app.kubernetes.io/instance': 'permissions',
      'app.kubernetes.io/version': '0.1.0',
    });
    assert.equal(pod.serviceAccountName, 'stp-controller');
    assert.equal(container.name, 'manager');
    assert.equal(
      container.image,
      'ghcr.io/kube-operators-ts/permissions-operator:0.1.0',
      'the placeholder repository, tagged with appVersion',
    );
    assert.equal(container.command, undefined, 'the entrypoint runs main.ts');
    assert.deepEqual(container.args, [
      '--health-probe-bind-address=:8081',
      '--bundle-bind-address=:8082',
      '--metrics-bind-address=:8443',
      '--leader-elect',
      '--webhook-port=9443',
      '--webhook-cert-dir=/var/run/stp-controller/webhook-certs',
      '--argocd-namespace=argocd',
      '--cluster-deadline=10s',
      '--permission-in-use-retry=1m',
      '--scope-in-use-retry=5s',
      '--tenant-scope-wait=5s',
      '--scope-namespace-recheck=5m',
      '--scope-cluster-recheck=30m',
      '--resync=10m',
      '--sweep-period=1m',
      '--kubeflow-gateway-principal=cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account',
    ]);
    assert.deepEqual(envOf(container), {
      POD_NAMESPACE: { fieldRef: { fieldPath: 'metadata.namespace' } },
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
      ENABLE_WEBHOOKS: 'true',
      TMPDIR: '/tmp',
    });
    assert.deepEqual(container.ports, [
      { name: 'health', containerPort: 8081 },
      { name: 'bundle', containerPort: 8082 },
      { name: 'metrics', containerPort: 8443 },
      { name: 'webhook', containerPort: 9443 },
    ]);
    assert.deepEqual(container.livenessProbe, { httpGet: { path: '/healthz', port: 'health' } });
    // Every 2 s: the period is how late a replica turns Ready once its model is rebuilt.
    assert.deepEqual(container.readinessProbe, {
      httpGet: { path: '/readyz', port: 'health' },
      periodSeconds: 2,
    });
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    assert.deepEqual(container.volumeMounts, [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'webhook-certs', mountPath: '/var/run/stp-controller/webhook-certs', readOnly: true },
    ]);
    assert.deepEqual(pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'webhook-certs', secret: { secretName: 'stp-controller-webhook-tls' } },
    ]);
    assert.deepEqual(container.resources, {
      requests: { cpu: '100m', memory: '256Mi' },
      limits: { memory: '1Gi' },
    });

    // Each flag and variable is one the operator process documents in its --help (the
    // kit's manager flags and the operator's own, parsed by the same declarations).
    const help = spawnSync(process.execPath, [join(CHART_DIR, '..', 'src', 'main.ts'), '--help'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(help.status, 0, help.stderr);
    for (const arg of container.args) {
      const flag = /^--([a-z-]+)/.exec(arg)?.[1] ?? arg;
      assert.match(help.stdout, new RegExp(`^  --${flag}\\b`, 'm'), `--help documents --${flag}`);
    }
    for (const name of ['POD_NAMESPACE', 'ENABLE_WEBHOOKS']) {
      assert.match(help.stdout, new RegExp(`\\b${name}\\b`), `--help names ${name}`);
    }
  });

  it('passes values on as flags: ports, intervals, the Argo CD namespace, the Kubeflow gateway, metrics off', async () => {
    const { container } = deployment(
      (
        await renderChart('ops', {
          healthPort: 9081,
          bundle: { port: 9082 },
          metrics: { enabled: false },
          argocd: { namespace: 'gitops' },
          intervals: {
            clusterDeadline: '3s',
            permissionInUseRetry: '30s',
            scopeInUseRetry: '1s',
            tenantScopeWait: '2s',
            scopeNamespaceRecheck: '1m',
            scopeClusterRecheck: '10m',
            sweepPeriod: '30s',
          },
          kubeflow: { gatewayPrincipal: 'cluster.local/ns/kubeflow-gw/sa/gateway' },
          image: { repository: 'registry.example/permissions', tag: 'dev' },
        })
      ).objects,
    );
    assert.deepEqual(container.args, [
      '--health-probe-bind-address=:9081',
      '--bundle-bind-address=:9082',
      '--metrics-bind-address=0',
      '--leader-elect',
      '--webhook-port=9443',
      '--webhook-cert-dir=/var/run/stp-controller/webhook-certs',
      '--argocd-namespace=gitops',
      '--cluster-deadline=3s',
      '--permission-in-use-retry=30s',
      '--scope-in-use-retry=1s',
      '--tenant-scope-wait=2s',
      '--scope-namespace-recheck=1m',
      '--scope-cluster-recheck=10m',
      '--resync=10m',
      '--sweep-period=30s',
      '--kubeflow-gateway-principal=cluster.local/ns/kubeflow-gw/sa/gateway',
    ]);
    assert.deepEqual(container.ports, [
      { name: 'health', containerPort: 9081 },
      { name: 'bundle', containerPort: 9082 },
      { name: 'webhook', containerPort: 9443 },
    ]);
    assert.equal(container.image, 'registry.example/permissions:dev');
  });

  it('serves the bundle on 8082, the webhooks on 443 to 9443 and metrics on 8443, each Service in front of every replica', async () => {
    const { objects } = await defaults();
    const selector = {
      'app.kubernetes.io/name': 'stp-controller',
      'app.kubernetes.io/instance': 'permissions',
    };
    const spec = (name: string) => (one(objects, 'Service', name) as ServiceObj).spec;
    assert.deepEqual(spec('stp-controller-bundle'), {
      selector,
      ports: [{ name: 'bundle', port: 8082, targetPort: 'bundle', protocol: 'TCP' }],
    });
    assert.deepEqual(spec('stp-controller-webhook'), {
      selector,
      ports: [{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }],
    });
    assert.deepEqual(spec('stp-controller-metrics'), {
      selector,
      ports: [{ name: 'metrics', port: 8443, targetPort: 'metrics', protocol: 'TCP' }],
    });
    const d = deployment(objects);
    assert.deepEqual(d.selector, selector, 'the Services select what the Deployment runs');
  });

  it("registers exactly src/webhooks/configuration.ts's webhooks (Permission on CREATE and UPDATE; UserRole, GroupRole, Scope, Tenant also on DELETE; Fail) against the webhook Service", async () => {
    const { objects } = await defaults();
    const vwc = one(objects, 'ValidatingWebhookConfiguration', 'permissions.shturval.tech') as Vwc;
    const secret = one(objects, 'Secret', 'stp-controller-webhook-tls') as SecretObj;
    const caBundle = secret.data['ca.crt'] ?? '';
    // Our code is the source of truth for the webhooks' paths and rules.
    const ours = webhookConfiguration({ service: WEBHOOK_SERVICE, caBundle }) as Vwc;
    assert.deepEqual(vwc.webhooks, ours.webhooks);
    assert.equal(vwc.metadata.name, ours.metadata.name);
    // And what that is, written out.
    assert.deepEqual(
      vwc.webhooks.map((w) => {
        const { clientConfig, rules, name, failurePolicy, sideEffects } = w as {
          clientConfig: { service: { name: string; port: number; path: string } };
          rules: { resources: string[]; operations: string[] }[];
          name: string;
          failurePolicy: string;
          sideEffects: string;
        };
        const s = clientConfig.service;
        return `${name} ${failurePolicy} ${sideEffects} ${s.name}:${s.port}${s.path} ${rules
          .map((r) => `${r.operations.join('+')} ${r.resources.join(',')}`)
          .join(';')}`;
      }),
      [
        'permissions.permissions.shturval.tech Fail None stp-controller-webhook:443/validate-permissions-shturval-tech-v1beta1-permission CREATE+UPDATE permissions',
        'userroles.permissions.shturval.tech Fail None stp-controller-webhook:443/validate-permissions-shturval-tech-v1beta1-userrole CREATE+UPDATE+DELETE userroles',
        'grouproles.permissions.shturval.tech Fail None stp-controller-webhook:443/validate-permissions-shturval-tech-v1beta1-grouprole CREATE+UPDATE+DELETE grouproles',
        'scopes.permissions.shturval.tech Fail None stp-controller-webhook:443/validate-permissions-shturval-tech-v1beta1-scope CREATE+UPDATE+DELETE scopes',
        'tenants.permissions.shturval.tech Fail None stp-controller-webhook:443/validate-permissions-shturval-tech-v1beta1-tenant CREATE+UPDATE+DELETE tenants',
      ],
    );
    assert.equal(vwc.metadata.annotations, undefined, 'no cert-manager injection by default');
  });

  it('makes a self-signed CA and a serving certificate for the webhook Service, the CA as caBundle', async () => {
    const { objects } = await defaults();
    const secret = one(objects, 'Secret', 'stp-controller-webhook-tls') as SecretObj;
    assert.equal(secret.type, 'kubernetes.io/tls');
    assert.deepEqual(Object.keys(secret.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    const ca = new X509Certificate(pem(secret.data['ca.crt'] ?? ''));
    const cert = new X509Certificate(pem(secret.data['tls.crt'] ?? ''));
    assert.equal(ca.ca, true, 'ca.crt is a CA');
    assert.equal(cert.ca, false);
    assert.ok(cert.verify(ca.publicKey), 'tls.crt is signed by ca.crt');
    assert.ok(
      cert.checkPrivateKey(createPrivateKey(pem(secret.data['tls.key'] ?? ''))),
      'tls.key is its key',
    );
    assert.deepEqual(cert.subjectAltName?.split(', ').sort(), [
      'DNS:stp-controller-webhook',
      'DNS:stp-controller-webhook.ops',
      'DNS:stp-controller-webhook.ops.svc',
      'DNS:stp-controller-webhook.ops.svc.cluster.local',
    ]);
    assert.ok(cert.checkHost('stp-controller-webhook.ops.svc'), 'the name the apiserver calls');
    const years = (Date.parse(cert.validTo) - Date.now()) / (365 * 24 * 3600 * 1000);
    assert.ok(years > 9, `valid about ten years, not ${years}`);
    const vwc = one(objects, 'ValidatingWebhookConfiguration', 'permissions.shturval.tech') as Vwc;
    for (const w of vwc.webhooks) {
      assert.equal((w.clientConfig as { caBundle?: string }).caBundle, secret.data['ca.crt']);
    }
    // Without a cluster to look the Secret up in, every render makes a new pair.
    const again = one(
      (await renderChart('ops')).objects,
      'Secret',
      'stp-controller-webhook-tls',
    ) as SecretObj;
    assert.notEqual(again.data['ca.crt'], secret.data['ca.crt']);
  });

  it('with cert-manager: an Issuer and a Certificate into the same Secret, the CA injected, no Secret of its own', async () => {
    const { objects } = await renderChart('ops', { webhooks: { certManager: { enabled: true } } });
    assert.deepEqual(
      byKind(objects, 'Secret').map((o) => o.metadata.name),
      [],
      'cert-manager writes the Secret',
    );
    const issuer = one(objects, 'Issuer', 'stp-controller-selfsigned');
    assert.equal(issuer.apiVersion, 'cert-manager.io/v1');
    assert.equal(issuer.metadata.namespace, 'ops');
    assert.deepEqual(issuer.spec, { selfSigned: {} });
    const certificate = one(objects, 'Certificate', 'stp-controller-webhook');
    assert.equal(certificate.apiVersion, 'cert-manager.io/v1');
    assert.equal(certificate.metadata.namespace, 'ops');
    assert.deepEqual(certificate.spec, {
      secretName: 'stp-controller-webhook-tls',
      dnsNames: [
        'stp-controller-webhook',
        'stp-controller-webhook.ops',
        'stp-controller-webhook.ops.svc',
        'stp-controller-webhook.ops.svc.cluster.local',
      ],
      issuerRef: { kind: 'Issuer', name: 'stp-controller-selfsigned' },
    });
    const vwc = one(objects, 'ValidatingWebhookConfiguration', 'permissions.shturval.tech') as Vwc;
    assert.deepEqual(vwc.metadata.annotations, {
      'cert-manager.io/inject-ca-from': 'ops/stp-controller-webhook',
    });
    // The same webhooks, without a caBundle (the injector writes it).
    assert.deepEqual(vwc.webhooks, (webhookConfiguration({ service: WEBHOOK_SERVICE }) as Vwc).webhooks);
    // The Deployment mounts the Secret cert-manager writes.
    assert.deepEqual(deployment(objects).pod.volumes, [
      { name: 'tmp', emptyDir: {} },
      { name: 'webhook-certs', secret: { secretName: 'stp-controller-webhook-tls' } },
    ]);

    const own = await renderChart('ops', {
      webhooks: { certManager: { enabled: true, issuerRef: { kind: 'ClusterIssuer', name: 'internal-ca' } } },
    });
    assert.deepEqual(byKind(own.objects, 'Issuer'), [], 'an issuer of your own: none of the chart');
    assert.deepEqual(
      (one(own.objects, 'Certificate', 'stp-controller-webhook').spec as { issuerRef: unknown }).issuerRef,
      {
        kind: 'ClusterIssuer',
        name: 'internal-ca',
      },
    );
  });

  it('with webhooks disabled: ENABLE_WEBHOOKS=false, and no webhook configuration, certificate, Service, port or mount', async () => {
    const { objects } = await renderChart('ops', { webhooks: { enabled: false } });
    for (const kind of ['ValidatingWebhookConfiguration', 'Secret', 'Issuer', 'Certificate']) {
      assert.deepEqual(byKind(objects, kind), [], kind);
    }
    assert.deepEqual(
      byKind(objects, 'Service').map((o) => o.metadata.name),
      ['stp-controller-bundle', 'stp-controller-metrics'],
    );
    const { container, pod } = deployment(objects);
    assert.equal(envOf(container).ENABLE_WEBHOOKS, 'false');
    assert.deepEqual(
      container.args.filter((a) => a.startsWith('--webhook')),
      [],
    );
    assert.deepEqual(
      container.ports.map((p) => p.name),
      ['health', 'bundle', 'metrics'],
    );
    assert.deepEqual(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    assert.deepEqual(pod.volumes, [{ name: 'tmp', emptyDir: {} }]);
    // cert-manager asked for but webhooks off: still nothing.
    const both = await renderChart('ops', { webhooks: { enabled: false, certManager: { enabled: true } } });
    assert.deepEqual([...byKind(both.objects, 'Certificate'), ...byKind(both.objects, 'Issuer')], []);
  });

  it('has a helm test that waits for the CRDs, then a replica holding the Lease and the Deployment Available', async () => {
    const [pod, ...more] = (await defaults()).tests;
    assert.ok(pod);
    assert.equal(more.length, 0);
    assert.equal((pod.spec as { serviceAccountName: string }).serviceAccountName, 'stp-controller-helm-test');
    assert.deepEqual(helmTestCommands(pod), [
      [
        'wait',
        '--for=condition=Established',
        ...CRD_NAMES.map((n) => `customresourcedefinitions.apiextensions.k8s.io/${n}`),
        '--timeout=120s',
      ],
      [
        'wait',
        '--for=jsonpath={.spec.holderIdentity}',
        '--namespace=ops',
        `leases.coordination.k8s.io/${LEASE}`,
        '--timeout=120s',
      ],
      [
        'wait',
        '--for=condition=Available',
        '--namespace=ops',
        'deployments.apps/stp-controller',
        '--timeout=120s',
      ],
    ]);
  });
});

describe('the permissions chart on a real apiserver', () => {
  it('every rendered object, CRDs and the helm test included, is accepted (server-side dry-run)', async (t) => {
    const release = await env.namespace(t, 'permissions-chart');
    const argocd = await env.namespace(t, 'permissions-argocd');
    const { objects, crds, tests } = await renderChart(release, { argocd: { namespace: argocd } });
    assert.ok(objects.length > 20 && crds.length === 5 && tests.length === 1);
    // The dry-run goes through validation (schemas, RBAC's rules, the webhook configuration's
    // paths and service) and admission, then stops.
    await applyAll(env.admin, t, [...crds, ...objects, ...tests], { dryRun: true });
    assert.equal(
      await env.admin.find({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'stp-controller', release),
      undefined,
      'a dry-run writes nothing',
    );
  });

  it("with cert-manager, the Issuer and the Certificate are valid against cert-manager's real CRDs", async (t) => {
    await env.installThirdParty('certManager');
    const release = await env.namespace(t, 'permissions-cm');
    const argocd = await env.namespace(t, 'permissions-cm-argocd');
    const { objects } = await renderChart(release, {
      argocd: { namespace: argocd },
      webhooks: { certManager: { enabled: true } },
    });
    const certManager = objects.filter((o) => o.apiVersion === 'cert-manager.io/v1');
    assert.deepEqual(names(certManager).sort(), [
      `Certificate ${release}/stp-controller-webhook`,
      `Issuer ${release}/stp-controller-selfsigned`,
    ]);
    await applyAll(env.admin, t, objects, { dryRun: true });
    // A Certificate the CRD refuses is refused here too (the check is not vacuous).
    const certificate = one(objects, 'Certificate', 'stp-controller-webhook');
    await assert.rejects(
      applyAll(
        env.admin,
        t,
        [
          {
            ...certificate,
            spec: { ...(certificate.spec as object), issuerRef: { kind: 'Issuer' } },
          } as KubeObject,
        ],
        { dryRun: true },
      ),
      /issuerRef\.name|Required value/,
    );
  });
});
