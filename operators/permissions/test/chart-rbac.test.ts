/**
 * The chart's RBAC is enough, and no more than it says: the chart installed by the real
 * `helm install` (then `helm upgrade`, which keeps the webhook certificate) into a management
 * plane of the test's own, then the operator run in this process as the chart's ServiceAccount
 * (impersonated), with leader election, its webhooks registered by the chart's
 * ValidatingWebhookConfiguration (re-pointed from the Service, which has no pods here, to the
 * in-process server, same paths), and authenticated metrics. Permission, Scope, UserRole (a
 * client cluster and the platform, with Argo CD), Tenant and their deletions all reach their end
 * state, and not one request is refused (the client's own request counter, by status code).
 * SubjectAccessReviews as the ServiceAccount show each call allowed and what it must not do
 * (list Secrets, delete Clusters...) refused. The helm test's commands run with the real kubectl
 * as the helm test's ServiceAccount. A client cluster reached with exactly the rights values.yaml
 * lists for client clusters is enough too.
 *
 * The management plane is private: it runs kube-controller-manager (garbage collector and
 * ClusterRole aggregation, which the operator leans on), the OwnerReferencesPermissionEnforcement
 * admission plugin as hardened clusters do (setting an owner reference needs delete on the
 * dependent, and blockOwnerDeletion update of the owner's finalizers: the chart grants both), and
 * the chart's cluster-wide names.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { KcmController, resolveBinaries } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import {
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  selfSignedCertificates,
  writeCertificates,
} from '@operators/kit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import {
  httpsGet,
  kubectlAs,
  recordRbacRefusals,
  renderChart as renderAnyChart,
  run,
} from '../../exoledge/test/chart-support.ts';
import { createOperator, LEASE_NAME, type Operator } from '../src/operator.ts';
import {
  type ClientPlane,
  ensureClusterApi,
  type RbacRule,
  type RegisteredCluster,
  registerCluster,
  startClientPlane,
} from './support/client-plane.ts';
import {
  CLUSTER_ROLE,
  CLUSTER_ROLE_BINDING,
  KIND,
  type Kind,
  NAMESPACE,
  type Obj,
  ROLE,
  ROLE_BINDING,
  TEST_INTERVALS,
} from './support/harness.ts';

const CHART_DIR = join(import.meta.dirname, '..', 'chart');
/** The release's name and the operator's ServiceAccount, as the chart names it. */
const RELEASE = 'permissions';
const SERVICE_ACCOUNT = 'stp-controller';
const HELM_TEST_SERVICE_ACCOUNT = 'stp-controller-helm-test';
const VWC = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
} as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const APP_PROJECT = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject' } as const;
const EVENT = { apiVersion: 'events.k8s.io/v1', kind: 'Event' } as const;
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;
const DEPLOYMENT = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
/** How long the operator gets for anything the test waits on. */
const WAIT_MS = 30_000;

type Webhook = { clientConfig: { service?: { path: string }; caBundle?: string; url?: string } } & Record<
  string,
  unknown
>;
type VwcObj = KubeObject & { webhooks: Webhook[] };
type SecretObj = KubeObject & { data: Record<string, string> };
type EventObj = KubeObject & { reason?: string; regarding?: { kind?: string; name?: string } };
type SarResult = { status: { allowed: boolean; reason?: string } };

let mgmt: TestEnv;
let clientPlane: ClientPlane;
let helm: string;
let kubectl: string;
let scratch: string;
/** The release namespace: the operator's Lease. */
let release: string;
/** Argo CD's namespace: argocd-rbac-cm and the AppProjects (values argocd.namespace). */
let argocd: string;
let operator: Operator;
let stopped = false;
let registry: Registry;
/** Every request refused (403) to the operator, with what it asked. */
const refused: string[] = [];
const logs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
/** The webhook Secret and the caBundles after `helm install`, and after `helm upgrade`. */
const certs: { installed?: unknown; upgraded?: unknown } = {};

const serviceAccountUser = (name: string): string => `system:serviceaccount:${release}:${name}`;
const holder = { after: (fn: () => Promise<void>) => void cleanups.push(fn) };

/** Requests the operator's client sent, by status code, from `rest_client_requests_total` (watches included). */
async function requestsAnswered(code: string): Promise<number> {
  const metric = await registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.code === code).reduce((sum, v) => sum + v.value, 0);
}

/** kubectl as `user` on the plane the chart is installed on. */
const kubectlAsUser = (user: string, args: readonly string[]) =>
  kubectlAs(kubectl, mgmt.kubeconfigPath, user, args);

/** The symptom, if the operator misbehaves: the object's status, the log's warnings, the refusals. */
async function symptom(gvk: GroupVersionKind, ns: string | undefined, name: string): Promise<string> {
  const o = await mgmt.admin.find<Obj>(gvk, name, ns).catch((e: unknown) => String(e));
  const tail = logs.filter((l) => /"level":(40|50|60)/.test(l)).slice(-20);
  return `\n${gvk.kind} ${ns ?? ''}/${name}: ${JSON.stringify(
    typeof o === 'string' ? o : { metadata: o?.metadata, status: o?.status },
    null,
    1,
  )}\nwarnings and errors logged (last 20):\n${tail.join('\n')}\nrefused: ${refused.join('\n')}`;
}

/** Waits until `pred` holds for one of our objects, and returns it. */
async function until(
  kind: Kind,
  ns: string,
  name: string,
  what: string,
  pred: (o: Obj) => boolean,
): Promise<Obj> {
  try {
    return await eventually(
      `${kind} ${ns}/${name}: ${what}`,
      async () => {
        const o = await mgmt.admin.find<Obj>(KIND[kind], name, ns);
        return o && pred(o) ? o : undefined;
      },
      WAIT_MS,
      200,
    );
  } catch (err) {
    throw new Error(`${String(err)}${await symptom(KIND[kind], ns, name)}`);
  }
}
const ready = (kind: Kind, ns: string, name: string): Promise<Obj> =>
  until(kind, ns, name, 'ready', (o) => o.status?.ready === true);
async function gone(kind: Kind, ns: string, name: string): Promise<void> {
  try {
    await eventually(
      `${kind} ${ns}/${name} gone`,
      async () => ((await mgmt.admin.find(KIND[kind], name, ns)) ? undefined : true),
      WAIT_MS,
      200,
    );
  } catch (err) {
    throw new Error(`${String(err)}${await symptom(KIND[kind], ns, name)}`);
  }
}
const create = (kind: Kind, ns: string, name: string, spec: Record<string, unknown>) =>
  mgmt.admin.create({ ...KIND[kind], metadata: { name, namespace: ns }, spec });

/**
 * The apiserver's own answer: may `user` (with `groups`) do this? `attrs` are a
 * SubjectAccessReview's resourceAttributes, or its nonResourceAttributes when they name a `path`.
 */
async function allowed(
  admin: KubeClient,
  user: string,
  groups: readonly string[],
  attrs: Readonly<Record<string, string>>,
): Promise<boolean> {
  const review = (await admin.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: {
      user,
      groups,
      ...(attrs.path ? { nonResourceAttributes: attrs } : { resourceAttributes: attrs }),
    },
  })) as unknown as SarResult;
  return review.status.allowed;
}

/** The webhook Secret's data and each webhook's caBundle, as the cluster holds them. */
async function certificateState(): Promise<{
  secret: Record<string, string>;
  caBundles: (string | undefined)[];
}> {
  const secret = await mgmt.admin.get<SecretObj>(SECRET, 'stp-controller-webhook-tls', release);
  const vwc = await mgmt.admin.get<VwcObj>(VWC, 'permissions.shturval.tech');
  return { secret: secret.data, caBundles: vwc.webhooks.map((w) => w.clientConfig.caBundle) };
}

before(
  async () => {
    [mgmt, clientPlane] = await Promise.all([
      privateTestEnv({
        controllerManager: {
          controllers: [KcmController.GarbageCollector, KcmController.ClusterRoleAggregation],
        },
        apiserverFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
      }),
      startClientPlane(),
    ]);
    ({ helm, kubectl } = await resolveBinaries(() => {}));
    scratch = await mkdtemp(join(tmpdir(), 'permissions-chart-'));
    release = await mgmt.namespace(holder, 'permissions');
    argocd = await mgmt.namespace(holder, 'argocd');
    await Promise.all([
      ensureClusterApi(mgmt),
      mgmt.installThirdParty('argoCd'),
      clientPlane.installThirdParty('istio'),
    ]);

    // The chart, installed by helm itself (CRDs from crds/ first), then upgraded with the same values.
    const helmEnv = {
      ...process.env,
      HELM_CACHE_HOME: join(scratch, 'helm-cache'),
      HELM_CONFIG_HOME: join(scratch, 'helm-config'),
      HELM_DATA_HOME: join(scratch, 'helm-data'),
    };
    const helmRun = (verb: 'install' | 'upgrade') =>
      run(
        helm,
        [
          verb,
          RELEASE,
          CHART_DIR,
          '--namespace',
          release,
          '--kubeconfig',
          mgmt.kubeconfigPath,
          '--set',
          `argocd.namespace=${argocd}`,
        ],
        { env: helmEnv },
      );
    await helmRun('install');
    certs.installed = await certificateState();
    await helmRun('upgrade');
    certs.upgraded = await certificateState();
    await eventually('the chart CRDs to be Established', async () => {
      const crds = await Promise.all(
        ['permissions', 'scopes', 'userroles', 'grouproles', 'tenants'].map((p) =>
          mgmt.admin.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
            CRD,
            `${p}.permissions.shturval.tech`,
          ),
        ),
      );
      return crds.every((c) =>
        c?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'),
      )
        ? true
        : undefined;
    });

    // The operator's client is the chart's ServiceAccount, on a transport of its own so that
    // its requests are counted by status code.
    registry = new Registry();
    const base = await KubeClient.load(mgmt.kubeconfigPath, { registry });
    cleanups.push(() => base.transport.close());
    const client = base.impersonate({ user: serviceAccountUser(SERVICE_ACCOUNT) });
    recordRbacRefusals(client, refused);
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
        done();
      },
    });
    // The pods would serve the chart's certificate for the Service's name; in this process the
    // apiserver calls 127.0.0.1, so the server gets a pair for that address.
    const certDir = await mkdtemp(join(scratch, 'certs-'));
    const pair = await selfSignedCertificates({ ipAddresses: ['127.0.0.1'] });
    await writeCertificates(certDir, pair);
    operator = createOperator({
      client,
      leaderElection: { namespace: release },
      healthPort: 0,
      bundle: { host: '127.0.0.1', port: 0 },
      metrics: { port: 0, host: '127.0.0.1', secure: {} },
      registry,
      webhooks: { host: '127.0.0.1', port: 0, certDir },
      argoCdNamespace: argocd,
      intervals: TEST_INTERVALS,
      clusterDeadlineMs: 5_000,
      logger: pino({ level: process.env.PERMISSIONS_TEST_LOG ?? 'debug' }, stream),
    });
    await operator.manager.start();

    // The chart's webhook configuration, re-pointed from its Service to this process: same
    // webhooks, rules and paths, a URL instead of the Service.
    const port = operator.webhooks?.port;
    assert.ok(port, 'the webhook server listens');
    const vwc = await mgmt.admin.get<VwcObj>(VWC, 'permissions.shturval.tech');
    await mgmt.admin.replace<VwcObj>({
      ...vwc,
      webhooks: vwc.webhooks.map((w) => ({
        ...w,
        clientConfig: {
          url: `https://127.0.0.1:${port}${w.clientConfig.service?.path ?? '/no-path-in-the-chart'}`,
          caBundle: Buffer.from(pair.ca.cert).toString('base64'),
        },
      })),
    });
    await eventually(
      'the model to be rebuilt',
      async () => (operator.model.isReady() ? true : undefined),
      WAIT_MS,
    );
  },
  { timeout: 240_000 },
);

after(
  async () => {
    if (operator && !stopped) await operator.manager.stop();
    await operator?.clusters.close();
    for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
    await Promise.all([mgmt?.close(), clientPlane?.close()]);
    if (scratch) await rm(scratch, { recursive: true, force: true });
  },
  { timeout: 120_000 },
);

describe("the chart's RBAC on a real apiserver, the operator run as the chart's ServiceAccount", () => {
  it('keeps the webhook certificate and the caBundle across helm upgrade, the caBundle being the CA that signed it', () => {
    const installed = certs.installed as Awaited<ReturnType<typeof certificateState>>;
    assert.ok(installed.secret['tls.crt'] && installed.secret['tls.key'] && installed.secret['ca.crt']);
    // One caBundle per webhook: Permission, UserRole, GroupRole, Scope, Tenant.
    assert.deepEqual(installed.caBundles, Array(5).fill(installed.secret['ca.crt']));
    const pem = (key: string): string => Buffer.from(installed.secret[key] ?? '', 'base64').toString('utf8');
    assert.ok(new X509Certificate(pem('tls.crt')).verify(new X509Certificate(pem('ca.crt')).publicKey));
    assert.deepEqual(certs.upgraded, installed, 'helm upgrade found the Secret (lookup) and kept the pair');
  });

  it('is enough for Permissions, Scopes, UserRoles in a client cluster and on the platform (Argo CD included), a Tenant, and their deletion: no request refused', async (t) => {
    const team = await mgmt.namespace(t, 'team');
    const prod: RegisteredCluster = await registerCluster(mgmt, clientPlane, {
      namespace: team,
      name: 'prod',
    });

    // A client cluster: the shturval: ClusterRole and alice's binding land there. alice's
    // UserRole passes the webhook (the SubjectAccessReview of the grantor, as the ServiceAccount).
    await create('Permission', team, 'viewer', {
      level: 'cluster',
      granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] }],
    });
    await create('Scope', team, 'everywhere', { level: 'cluster', clusters: { ids: [prod.id] } });
    await create('UserRole', team, 'alice', {
      user: 'alice@example.com',
      scope: 'everywhere',
      permissions: ['viewer'],
    });
    const viewer = await ready('Permission', team, 'viewer');
    assert.deepEqual(viewer.status?.applied_to_clusters, [prod.id]);
    const alice = await ready('UserRole', team, 'alice');
    assert.equal(alice.metadata.ownerReferences?.[0]?.kind, 'Scope', 'the Scope is its controller owner');
    await ready('Scope', team, 'everywhere');
    assert.equal(
      (await prod.get()).metadata.annotations?.[`scope.permissions.shturval.tech/${team}.everywhere`],
      'cluster',
      'the Scope annotated the Cluster (a patch)',
    );
    assert.equal(
      await allowed(clientPlane.admin, 'alice@example.com', [], {
        group: 'apps',
        resource: 'deployments',
        verb: 'list',
      }),
      true,
      'the client apiserver says alice may list deployments',
    );

    // The platform: the aggregating platform: ClusterRole (escalate) and bob's
    // ClusterRoleBinding (bind) on the management cluster, his policy.csv lines in
    // argocd-rbac-cm (created) and his role in an AppProject.
    await mgmt.admin.create({
      ...APP_PROJECT,
      metadata: { name: 'shop', namespace: argocd },
      spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }] },
    });
    await create('Permission', team, 'auditor', {
      level: 'platform',
      platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
      plugins: {
        rbac: {},
        argocd: {
          policies: [{ resource: 'applications', action: 'get', object: 'shop/*' }],
          projects: [
            { project: 'shop', policies: [{ resource: 'applications', action: 'sync', object: '*' }] },
          ],
        },
      },
    });
    await create('Scope', team, 'platform', { level: 'platform' });
    await create('UserRole', team, 'bob', {
      user: 'bob@example.com',
      scope: 'platform',
      permissions: ['auditor'],
    });
    await ready('Permission', team, 'auditor');
    await ready('UserRole', team, 'bob');
    await eventually(
      'bob may list pods on the management cluster (kube-controller-manager aggregated the rules)',
      async () =>
        (await allowed(mgmt.admin, 'bob@example.com', [], {
          resource: 'pods',
          verb: 'list',
          namespace: team,
        }))
          ? true
          : undefined,
      WAIT_MS,
    );
    const cm = await mgmt.admin.get<KubeObject & { data?: Record<string, string> }>(
      CONFIG_MAP,
      'argocd-rbac-cm',
      argocd,
    );
    assert.match(cm.data?.['policy.csv'] ?? '', /^p, bob@example\.com, applications, get, shop\/\*, allow$/m);
    const project = await mgmt.admin.get<KubeObject & { spec: { roles?: { policies?: string[] }[] } }>(
      APP_PROJECT,
      'shop',
      argocd,
    );
    assert.equal(project.spec.roles?.length, 1, 'our role in the AppProject');

    // A Tenant: its Scope (server-side apply creates it), tenant-get and tenant-edit Roles
    // (escalate) and their bindings (bind), owned by the Tenant (tenants/finalizers); then a
    // UserRole in the tenant's Scope gets the tenant plugin's binding.
    await create('Tenant', team, 'blue', {
      clusters: { ids: [prod.id] },
      admins: ['carol@example.com'],
      members: ['dave@example.com'],
    });
    await until('Tenant', team, 'blue', 'TenantCreated', (o) =>
      ((o.status?.conditions ?? []) as { type: string; status: string }[]).some(
        (c) => c.type === 'TenantCreated' && c.status === 'True',
      ),
    );
    assert.equal(
      await allowed(mgmt.admin, 'carol@example.com', [], {
        group: 'permissions.shturval.tech',
        resource: 'userroles',
        verb: 'create',
        namespace: team,
      }),
      true,
      'the tenant admin may write UserRoles in the tenant namespace (tenant-edit)',
    );
    await create('UserRole', team, 'erin', {
      user: 'erin@example.com',
      scope: 'tenant-blue',
      permissions: ['viewer'],
    });
    await ready('UserRole', team, 'erin');
    assert.equal(
      await allowed(mgmt.admin, 'erin@example.com', [], {
        group: 'permissions.shturval.tech',
        resource: 'tenants',
        verb: 'get',
        name: 'blue',
        namespace: team,
      }),
      true,
      "erin may read the tenant (the tenant plugin's binding to tenant-get)",
    );

    // A Scope naming a Cluster that does not exist: a Warning Event (the recorder).
    await create('Scope', team, 'nowhere', { level: 'cluster', clusters: { ids: [`${team}/missing`] } });
    await eventually(
      'the ClusterNotFound Event',
      async () =>
        (await mgmt.admin.listAll<EventObj>(EVENT, { namespace: team })).items.find(
          (e) =>
            e.regarding?.kind === 'Scope' && e.regarding.name === 'nowhere' && e.reason === 'ClusterNotFound',
        ),
      WAIT_MS,
    );

    // Deletions: the plugins remove what they wrote, the Tenant deletes its Scope (foreground)
    // and Roles, the Permission its platform: ClusterRoles.
    await mgmt.admin.delete(KIND.UserRole, 'bob', team);
    await gone('UserRole', team, 'bob');
    await mgmt.admin.delete(KIND.UserRole, 'erin', team);
    await gone('UserRole', team, 'erin');
    await mgmt.admin.delete(KIND.Tenant, 'blue', team);
    await gone('Tenant', team, 'blue');
    await gone('Scope', team, 'tenant-blue');
    assert.equal(await mgmt.admin.find(ROLE, 'tenant-edit.blue', team), undefined);
    await mgmt.admin.delete(KIND.Permission, 'auditor', team);
    await gone('Permission', team, 'auditor');
    assert.equal(await mgmt.admin.find(CLUSTER_ROLE, `platform:${team}.auditor`), undefined);
    assert.equal(await mgmt.admin.find(CLUSTER_ROLE, `platform:${team}.auditor:rules`), undefined);
    const cmAfter = await mgmt.admin.get<KubeObject & { data?: Record<string, string> }>(
      CONFIG_MAP,
      'argocd-rbac-cm',
      argocd,
    );
    assert.doesNotMatch(cmAfter.data?.['policy.csv'] ?? '', /bob@example\.com/);
    const bindings = await mgmt.admin.listAll<KubeObject>(CLUSTER_ROLE_BINDING, {});
    assert.deepEqual(
      bindings.items.filter((b) => b.metadata.name?.includes(`${team}.bob`)),
      [],
      "bob's ClusterRoleBinding is gone",
    );
    assert.deepEqual(
      (await mgmt.admin.listAll<KubeObject>(ROLE_BINDING, { namespace: team })).items.filter((b) =>
        b.metadata.name?.includes('erin'),
      ),
      [],
      "erin's tenant binding is gone",
    );

    // Leader election through the chart's Role; the probes; the bundle.
    const lease = await mgmt.admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(
      { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
      LEASE_NAME,
      release,
    );
    assert.ok(lease.spec?.holderIdentity, 'a replica holds the Lease');
    const probe = operator.manager.healthProbeEndpoint;
    assert.ok(probe);
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`http://${probe.host}:${probe.port}${path}`);
      assert.equal(res.status, 200, `${path}: ${await res.text()}`);
    }
    const bundle = operator.bundle.address();
    assert.ok(bundle);
    assert.equal((await fetch(`http://127.0.0.1:${bundle.port}/bundle`)).status, 200);

    // Authenticated metrics: a scraper bound to the chart's metrics-reader ClusterRole gets 200,
    // after the operator's TokenReview and SubjectAccessReview.
    await mgmt.admin.create({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'scraper', namespace: release },
    });
    await mgmt.admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${release}-scraper` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: `${release}-stp-controller-metrics-reader`,
      },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: release }],
    } as KubeObject);
    const token = await mgmt.admin.transport.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${release}/serviceaccounts/scraper/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    const scrape = await eventually(
      'a 200 scrape (the RBAC binding takes a moment to be seen)',
      async () => {
        const r = await httpsGet(operator.manager.metricsEndpoint?.port ?? 0, '/metrics', token.status.token);
        return r.status === 200 ? r : undefined;
      },
      10_000,
    );
    assert.match(scrape.body, /^rest_client_requests_total\{/m);

    assert.ok((await requestsAnswered('200')) > 0, 'the operator made requests');
    assert.deepEqual(refused, [], 'no request was refused');
    assert.equal(await requestsAnswered('403'), 0, 'no request was refused (watches included)');
  });

  it('grants the ServiceAccount each call the operator makes, and refuses what it must not do (the apiserver says)', async (t) => {
    const team = await mgmt.namespace(t, 'sar');
    const user = serviceAccountUser(SERVICE_ACCOUNT);
    const groups = ['system:serviceaccounts', `system:serviceaccounts:${release}`, 'system:authenticated'];
    const P = 'permissions.shturval.tech';
    const RBAC = 'rbac.authorization.k8s.io';
    /** `verb group resource[/subresource] [namespace] [name]`, group `core` for the core API. */
    const row = (text: string): Record<string, string> => {
      const [verb = '', group = '', res = '', namespace, name] = text.split(' ');
      const [resource = '', subresource] = res.split('/');
      return {
        verb,
        group: group === 'core' ? '' : group,
        resource,
        ...(subresource ? { subresource } : {}),
        ...(namespace && namespace !== '-' ? { namespace } : {}),
        ...(name ? { name } : {}),
      };
    };
    const mayDo = [
      ...['get', 'list', 'watch', 'patch'].map((v) => `${v} ${P} permissions ${team}`),
      ...['list', 'watch'].map((v) => `${v} ${P} permissions -`),
      ...['get', 'list', 'watch', 'create', 'patch', 'delete'].map((v) => `${v} ${P} scopes ${team}`),
      // delete: only for OwnerReferencesPermissionEnforcement (role.ts sets the Scope as owner).
      ...['list', 'watch', 'patch', 'delete'].flatMap((v) => [
        `${v} ${P} userroles ${team}`,
        `${v} ${P} grouproles ${team}`,
      ]),
      ...['get', 'list', 'watch', 'patch'].map((v) => `${v} ${P} tenants ${team}`),
      ...['permissions', 'scopes', 'userroles', 'grouproles', 'tenants'].map(
        (r) => `patch ${P} ${r}/status ${team}`,
      ),
      `update ${P} scopes/finalizers ${team}`,
      `update ${P} tenants/finalizers ${team}`,
      ...['list', 'watch'].map((v) => `${v} cluster.x-k8s.io clusters -`),
      `patch cluster.x-k8s.io clusters ${team}`,
      `get core secrets ${team} prod-kubeconfig`,
      ...['get', 'create', 'patch', 'delete', 'escalate', 'bind'].map(
        (v) => `${v} ${RBAC} clusterroles - platform:${team}.x`,
      ),
      // The sweep (controllers/sweep.ts) lists what carries our labels, to delete what lost its owner.
      `list ${RBAC} clusterroles -`,
      `list ${RBAC} roles ${team}`,
      ...['get', 'create', 'patch', 'delete'].map((v) => `${v} ${RBAC} clusterrolebindings - b`),
      `list ${RBAC} clusterrolebindings -`,
      ...['get', 'create', 'patch', 'delete', 'escalate', 'bind'].map(
        (v) => `${v} ${RBAC} roles ${team} tenant-get.blue`,
      ),
      ...['get', 'create', 'patch', 'delete'].map((v) => `${v} ${RBAC} rolebindings ${team} b`),
      `list ${RBAC} rolebindings -`,
      'create authorization.k8s.io subjectaccessreviews -',
      'create authentication.k8s.io tokenreviews -',
      `create events.k8s.io events ${team}`,
      `patch events.k8s.io events ${team}`,
      `create coordination.k8s.io leases ${release}`,
      `get coordination.k8s.io leases ${release} ${LEASE_NAME}`,
      `update coordination.k8s.io leases ${release} ${LEASE_NAME}`,
      `create core configmaps ${argocd}`,
      `get core configmaps ${argocd} argocd-rbac-cm`,
      `update core configmaps ${argocd} argocd-rbac-cm`,
      ...['list', 'get', 'update'].map((v) => `${v} argoproj.io appprojects ${argocd}`),
    ];
    const mayNot = [
      // Kubeconfig Secrets by name only: never a list or a watch, never a write.
      'list core secrets -',
      `list core secrets ${team}`,
      `watch core secrets ${team}`,
      `create core secrets ${team}`,
      `update core secrets ${team} prod-kubeconfig`,
      `patch core secrets ${team} prod-kubeconfig`,
      `delete core secrets ${team} prod-kubeconfig`,
      // Cluster API's Clusters are read and annotated, never created, replaced or deleted.
      `delete cluster.x-k8s.io clusters ${team} prod`,
      `create cluster.x-k8s.io clusters ${team}`,
      `update cluster.x-k8s.io clusters ${team} prod`,
      `patch cluster.x-k8s.io clusters/status ${team} prod`,
      // Its own kinds are the users' to create (but a Tenant's Scope) and to replace.
      `create ${P} permissions ${team}`,
      `delete ${P} permissions ${team}`,
      `update ${P} permissions ${team}`,
      `create ${P} userroles ${team}`,
      `update ${P} userroles ${team}`,
      `create ${P} grouproles ${team}`,
      `delete ${P} tenants ${team}`,
      `deletecollection ${P} scopes ${team}`,
      // Argo CD: only argocd-rbac-cm, only in Argo CD's namespace; AppProjects never created or deleted.
      `get core configmaps ${argocd} argocd-cm`,
      `update core configmaps ${argocd} argocd-cm`,
      `get core configmaps ${team} argocd-rbac-cm`,
      `create core configmaps ${team}`,
      `delete core configmaps ${argocd} argocd-rbac-cm`,
      `create argoproj.io appprojects ${argocd}`,
      `delete argoproj.io appprojects ${argocd}`,
      `update argoproj.io appprojects ${team}`,
      // The Lease: its own, in its own namespace.
      `get coordination.k8s.io leases ${release} another-lease`,
      `create coordination.k8s.io leases ${team}`,
      // No reads of RBAC it does not need, no collections deleted, nothing else at all.
      `watch ${RBAC} clusterroles -`,
      `deletecollection ${RBAC} clusterrolebindings -`,
      `watch ${RBAC} roles ${team}`,
      `create core pods ${team}`,
      'get core nodes -',
      `delete core namespaces - ${team}`,
      `get core namespaces - ${team}`,
      'impersonate core users - alice@example.com',
      `create apps deployments ${team}`,
    ];
    const wrong: string[] = [];
    for (const text of mayDo)
      if (!(await allowed(mgmt.admin, user, groups, row(text)))) wrong.push(`refused: ${text}`);
    for (const text of mayNot)
      if (await allowed(mgmt.admin, user, groups, row(text))) wrong.push(`allowed: ${text}`);
    assert.deepEqual(wrong, []);
    // The metrics reader is the scraper's, not the operator's.
    assert.equal(await allowed(mgmt.admin, user, groups, { verb: 'get', path: '/metrics' }), false);
  });

  /** The namespaces of the client-cluster case: the grant's on the management plane, the Scope's on the client. */
  let narrowCase: { team: string; apps: string } | undefined;

  it('is enough to grant in a client cluster whose kubeconfig holds only the rights values.yaml lists for client clusters', async () => {
    // The rules of values.yaml's CLIENT CLUSTERS comment, parsed from the file, are these.
    const values = await readFile(join(CHART_DIR, 'values.yaml'), 'utf8');
    const block = /these ClusterRole rules:\n((?:# {3}.*\n)+)/.exec(values)?.[1] ?? '';
    const documented = parse(
      block
        .split('\n')
        .map((l) => l.replace(/^# {3}/, '').replace(/\s+#.*$/, ''))
        .join('\n'),
    ) as RbacRule[];
    const rules: RbacRule[] = [
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['list', 'get', 'create', 'patch', 'delete', 'escalate', 'bind'],
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterrolebindings', 'rolebindings'],
        verbs: ['list', 'get', 'create', 'patch', 'delete'],
      },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
      {
        apiGroups: ['security.istio.io'],
        resources: ['authorizationpolicies'],
        verbs: ['list', 'get', 'create', 'patch', 'delete'],
      },
    ];
    assert.deepEqual(documented, rules, 'values.yaml documents these rules');

    // Both namespaces outlive this test: the next one removes the grant.
    const team = await mgmt.namespace(holder, 'narrow');
    const apps = `apps-${team}`.slice(0, 63);
    narrowCase = { team, apps };
    await clientPlane.admin.create({ ...NAMESPACE, metadata: { name: apps } });
    cleanups.push(() =>
      clientPlane.admin.delete(NAMESPACE, apps).then(
        () => undefined,
        () => undefined,
      ),
    );
    const narrow = await registerCluster(mgmt, clientPlane, {
      namespace: team,
      name: 'narrow',
      secret: false,
      labels: { 'example.com/identity': 'narrow' },
    });
    const { user: identity } = await narrow.restrictKubeconfig(rules);

    // A namespace-level grant with Kubeflow's objects: a shturval: ClusterRole, RoleBindings
    // (ours and KFAM's shape) and an Istio AuthorizationPolicy, a namespace looked up.
    await create('Permission', team, 'editor', {
      level: 'namespace',
      granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      clusterSelector: { matchLabels: { 'example.com/identity': 'narrow' } },
      plugins: { rbac: {}, kubeflow: { role: 'edit' } },
    });
    await create('Scope', team, 'apps', {
      level: 'namespace',
      clusters: { ids: [narrow.id] },
      namespaces: [apps],
    });
    await create('UserRole', team, 'frank', {
      user: 'frank@example.com',
      scope: 'apps',
      permissions: ['editor'],
    });
    const editor = await ready('Permission', team, 'editor');
    assert.deepEqual(editor.status?.applied_to_clusters, [narrow.id]);
    await ready('Scope', team, 'apps');
    await ready('UserRole', team, 'frank');
    assert.equal(
      await allowed(clientPlane.admin, 'frank@example.com', [], {
        resource: 'configmaps',
        verb: 'list',
        namespace: apps,
      }),
      true,
      'the client apiserver says frank may list configmaps in the Scope namespace',
    );
    const policies = await clientPlane.admin.listAll<KubeObject>(
      { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' },
      { namespace: apps },
    );
    assert.equal(policies.items.length, 1, "frank's AuthorizationPolicy");

    assert.ok(identity.startsWith('system:serviceaccount:'), identity);
  });

  it('is enough to remove that grant again with the same rights: the UserRole and the Permission go, and what they wrote', async () => {
    assert.ok(narrowCase, 'the grant of the previous test');
    const { team, apps } = narrowCase;
    await mgmt.admin.delete(KIND.UserRole, 'frank', team);
    await gone('UserRole', team, 'frank');
    await mgmt.admin.delete(KIND.Permission, 'editor', team);
    await gone('Permission', team, 'editor');
    assert.equal(await clientPlane.admin.find(CLUSTER_ROLE, `shturval:${team}.editor`), undefined);
    assert.deepEqual(
      (await clientPlane.admin.listAll<KubeObject>(ROLE_BINDING, { namespace: apps })).items.map(
        (b) => b.metadata.name,
      ),
      [],
    );
    assert.deepEqual(
      (
        await clientPlane.admin.listAll<KubeObject>(
          { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy' },
          { namespace: apps },
        )
      ).items,
      [],
    );
  });

  it("has a helm test whose commands pass as the helm test's ServiceAccount once the Deployment is Available, and wait before", async () => {
    const [pod] = (
      await renderAnyChart(helm, {
        namespace: release,
        release: RELEASE,
        chartDir: CHART_DIR,
        values: { argocd: { namespace: argocd } },
      })
    ).tests;
    assert.ok(pod, 'a helm test pod');
    const spec = pod.spec as { initContainers?: { args: string[] }[]; containers: { args: string[] }[] };
    const commands = [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.args);
    assert.equal(commands.length, 3, 'the CRDs served, the Lease held, the Deployment Available');
    const helmTestUser = serviceAccountUser(HELM_TEST_SERVICE_ACCOUNT);
    const [crdsServed = [], leaseHeld = [], available = []] = commands;
    for (const args of [crdsServed, leaseHeld]) {
      const { code, output } = await kubectlAsUser(helmTestUser, args);
      assert.equal(code, 0, `kubectl ${args.join(' ')}: ${output}`);
    }
    // No kubelet runs here: the Deployment has no ready replica, and the check waits (and is
    // not forbidden).
    const quick = available.map((a) => (a.startsWith('--timeout=') ? '--timeout=1s' : a));
    const waiting = await kubectlAsUser(helmTestUser, quick);
    assert.notEqual(waiting.code, 0, `no replica ready: ${waiting.output}`);
    assert.doesNotMatch(waiting.output, /forbidden/i);
    // What the deployment controller writes once the replicas pass /readyz.
    await mgmt.admin.applyStatus(
      {
        ...DEPLOYMENT,
        metadata: { name: 'stp-controller', namespace: release },
        status: {
          conditions: [
            {
              type: 'Available',
              status: 'True',
              reason: 'MinimumReplicasAvailable',
              message: 'Deployment has minimum availability.',
              lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      } as KubeObject,
      { fieldManager: 'deployment-controller', force: true },
    );
    const { code, output } = await kubectlAsUser(helmTestUser, available);
    assert.equal(code, 0, `kubectl ${available.join(' ')}: ${output}`);
  });

  it('has a helm test whose Lease check fails once the operator stops (the Lease released), without being forbidden', async () => {
    const leaseCheck = [
      'wait',
      '--for=jsonpath={.spec.holderIdentity}',
      `--namespace=${release}`,
      `leases.coordination.k8s.io/${LEASE_NAME}`,
      '--timeout=0s',
    ];
    await operator.manager.stop();
    stopped = true;
    const released = await kubectlAsUser(serviceAccountUser(HELM_TEST_SERVICE_ACCOUNT), leaseCheck);
    assert.notEqual(released.code, 0, `a released Lease fails the helm test: ${released.output}`);
    assert.doesNotMatch(released.output, /forbidden/i);
  });
});
