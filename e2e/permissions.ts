/**
 * permissions installed from its chart on the node, granting into a client cluster the
 * way it does in production: a second kube-apiserver (its own etcd and CA) listening on
 * the node's address, the only address pods can reach, registered the Cluster API way
 * (Cluster API's real Cluster CRD, a `Cluster` and its `<name>-kubeconfig` Secret; no
 * Cluster API controller runs, so the test writes the readiness it would report).
 *
 * Golden path (the shortest of docs/permissions.md): a cluster-level Permission, a Scope
 * naming the client cluster and a UserRole; the grant is read back from the client
 * apiserver, the webhooks are called by the management apiserver through the chart's
 * Service and certificate, and the OPA bundle is fetched through its Service from a pod.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ControlPlane, thirdPartyCrds } from '@operators/controlplane';
import { ApiErrorReason, isApiError, KubeClient, type KubeObject } from '@operators/kit';
import { stringify } from 'yaml';
import { type ChartUnderTest, eventually, podsOf } from './support/chart-checks.ts';
import type { NodeEnv } from './support/node-env.ts';

const RELEASE_NS = 'permissions';
/** Where the user's Permission, Scope and UserRole live (the docs' example namespace). */
const NS = 'acme';
/** Where the Cluster API Cluster and its kubeconfig Secret live. */
const FLEET = 'fleet';
const CLUSTER = 'client-1';
const CLUSTER_ID = `${FLEET}/${CLUSTER}`;
const USER = 'alice@example.com';
const API = 'permissions.shturval.tech/v1beta1';
const CAPI_CRD = 'clusters.cluster.x-k8s.io';

/** The rules the Permission grants, fixed here and expected back from the client apiserver. */
const RULES = [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch'] }];

const GRANT = [
  {
    apiVersion: API,
    kind: 'Permission',
    metadata: { name: 'deploy-viewer', namespace: NS },
    spec: { level: 'cluster', granted_cluster_rules: RULES },
  },
  {
    apiVersion: API,
    kind: 'Scope',
    metadata: { name: 'fleet-clusters', namespace: NS },
    spec: { level: 'cluster', clusters: { ids: [CLUSTER_ID] } },
  },
  {
    apiVersion: API,
    kind: 'UserRole',
    metadata: { name: 'alice-deploy', namespace: NS },
    spec: { user: USER, scope: 'fleet-clusters', permissions: ['deploy-viewer'] },
  },
];

const yamlOf = (objs: readonly object[]): string => objs.map((o) => `---\n${stringify(o)}`).join('\n');

const CLUSTER_ROLE_BINDING = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
} as const;
const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;
const CAPI_CLUSTER = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster' } as const;

/**
 * The client cluster, from prepare to cleanUp. Its start is not awaited in prepare: it
 * runs while `helm install` waits for the pods, and the golden path awaits it.
 */
let clientStarting: Promise<ControlPlane> | undefined;
/** Whether prepare installed Cluster API's CRD (a shared node may have it already: then it stays). */
let installedCapi = false;
/** The management plane, through the kit's client: reads polled every 200 ms cost no kubectl process. */
let management: KubeClient | undefined;

/** Creates `obj`; false when it was there already (a shared node's, or a failed run's). */
async function created(client: KubeClient, obj: KubeObject): Promise<boolean> {
  try {
    await client.create(obj);
    return true;
  } catch (err) {
    if (isApiError(err, ApiErrorReason.AlreadyExists)) return false;
    throw err;
  }
}

const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

/** Deletes a cluster-scoped object and waits until the apiserver no longer has it. */
async function deleteAndWait(client: KubeClient, gvk: typeof CRD, name: string): Promise<void> {
  await client.delete(gvk, name);
  await eventually(`${gvk.kind} ${name} gone`, 30_000, async () =>
    (await client.find(gvk, name)) ? undefined : true,
  );
}

async function clientPlane(): Promise<ControlPlane> {
  if (!clientStarting) throw new Error('the client plane was not started (see prepare)');
  return clientStarting;
}

function managementClient(): KubeClient {
  if (!management) throw new Error('no management client (see prepare)');
  return management;
}

/** The client apiserver's answer to a SubjectAccessReview: may alice `verb` Deployments there? */
async function allowedOn(client: KubeClient, verb: string): Promise<boolean> {
  const review = await client.create({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user: USER, resourceAttributes: { group: 'apps', resource: 'deployments', verb } },
  });
  return (review as unknown as { status: { allowed: boolean } }).status.allowed;
}

/**
 * Registers the client plane the Cluster API way: its admin kubeconfig (credentials
 * inline) as `value` of the Secret `<name>-kubeconfig`, and a Cluster whose status says
 * what Cluster API reports once the control plane is up (no Cluster API controller runs).
 */
async function registerClientCluster(mgmt: KubeClient, plane: ControlPlane): Promise<void> {
  const url = new URL(plane.url);
  await mgmt.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `${CLUSTER}-kubeconfig`,
      namespace: FLEET,
      labels: { 'cluster.x-k8s.io/cluster-name': CLUSTER },
    },
    type: 'cluster.x-k8s.io/secret',
    stringData: { value: plane.kubeconfig() },
  });
  await mgmt.create({
    ...CAPI_CLUSTER,
    metadata: { name: CLUSTER, namespace: FLEET },
    spec: { controlPlaneEndpoint: { host: url.hostname, port: Number(url.port) } },
  });
  await mgmt.patch(
    CAPI_CLUSTER,
    CLUSTER,
    FLEET,
    {
      type: 'merge',
      body: {
        status: {
          initialization: { controlPlaneInitialized: true },
          conditions: [
            {
              type: 'ControlPlaneAvailable',
              status: 'True',
              reason: 'Available',
              message: '',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
    },
    { subresource: 'status' },
  );
}

/**
 * Runs in an operator pod (our image has node): GET /bundle through the Service by its
 * cluster DNS name, as OPA's bundle downloader would, unpacks the tar.gz, and asks again
 * with the ETag it got.
 */
const FETCH_BUNDLE = `
const zlib = require('zlib');
(async () => {
  const url = 'http://stp-controller-bundle.${RELEASE_NS}.svc:8082/bundle';
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  const files = {};
  if (res.status === 200) {
    const tar = zlib.gunzipSync(body);
    for (let o = 0; o + 512 <= tar.length; ) {
      const field = (a, b) => tar.subarray(o + a, o + b).toString().replace(/\\0[^]*$/, '');
      const name = field(0, 100);
      if (!name) break;
      const size = parseInt(field(124, 136).trim(), 8);
      files[name] = tar.subarray(o + 512, o + 512 + size).toString();
      o += 512 + Math.ceil(size / 512) * 512;
    }
  }
  const etag = res.headers.get('etag');
  const again = await fetch(url, { headers: { 'if-none-match': etag ?? '' } });
  console.log(JSON.stringify({
    status: res.status,
    type: res.headers.get('content-type'),
    etag,
    files: Object.keys(files).sort(),
    data: files['data.json'] ? JSON.parse(files['data.json']) : null,
    revalidated: again.status,
  }));
})();
`;

interface BundleSeen {
  status: number;
  type: string | null;
  etag: string | null;
  files: string[];
  data: {
    shturval: {
      users: Record<string, unknown>;
      scopes: Record<string, { level: string; clusters: string[] }>;
    };
  } | null;
  revalidated: number;
}

export const permissionsOnNode: ChartUnderTest = {
  operator: 'permissions',
  release: 'permissions',
  namespace: RELEASE_NS,
  imageValues: { image: 'permissions-operator' },
  // No Argo CD runs on this node: with the plugin on, the chart grants a Role in the
  // namespace `argocd`, which must then exist (a user without Argo CD sets this).
  values: ['argocd.enabled=false'],
  deployment: 'stp-controller',
  lease: 'stp-controller.permissions.shturval.tech',
  metrics: { port: 8443, readerClusterRole: `${RELEASE_NS}-stp-controller-metrics-reader` },
  // The operator refuses to start without Cluster API's Cluster CRD, which a platform has
  // before it; the client plane starts meanwhile and is registered by the golden path.
  prepare: async (env: NodeEnv) => {
    clientStarting = ControlPlane.start({ apiserverHost: '10.244.0.1', log: () => undefined });
    // Awaited by the golden path; a failure is reported there, not as an unhandled rejection.
    clientStarting.catch(() => undefined);
    const mgmt = await KubeClient.load(env.kubeconfig);
    management = mgmt;
    const [crd] = await thirdPartyCrds('clusterApi');
    assert.ok(crd);
    installedCapi = await created(mgmt, crd as unknown as KubeObject);
    for (const name of [NS, FLEET])
      await created(mgmt, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await eventually('the Cluster CRD established', 30_000, async () => {
      const c = await mgmt.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
        CRD,
        CAPI_CRD,
      );
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') || undefined;
    });
  },
  golden: (env) => {
    it("a Permission, a Scope naming a client cluster and a UserRole grant alice the rules there, as that apiserver reports them (a second real apiserver on the pod network, registered through Cluster API's real Cluster CRD; no Cluster API controller runs, the test writes the status it would)", async (t) => {
      const e = env();
      const plane = await clientPlane();
      const onClient = await KubeClient.fromKubeconfigString(plane.kubeconfig());
      try {
        await registerClientCluster(managementClient(), plane);
        const started = Date.now();
        await e.kubectl(['apply', '-f', '-'], yamlOf(GRANT));
        const binding = await eventually('the ClusterRoleBinding in the client cluster', 30_000, () =>
          onClient.find<KubeObject & { roleRef: unknown; subjects: unknown }>(
            CLUSTER_ROLE_BINDING,
            'shturval:acme.alice-deploy.deploy-viewer',
          ),
        );
        t.diagnostic(
          `granted in the client cluster ${((Date.now() - started) / 1000).toFixed(1)} s after the apply`,
        );
        assert.deepEqual(binding.roleRef, {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'shturval:acme.deploy-viewer',
        });
        assert.deepEqual(binding.subjects, [
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER },
        ]);
        const role = await onClient.get<KubeObject & { rules: unknown }>(
          CLUSTER_ROLE,
          'shturval:acme.deploy-viewer',
        );
        assert.deepEqual(role.rules, RULES);
        // The client apiserver's own authorizer: alice may list Deployments there, not delete them.
        assert.equal(await allowedOn(onClient, 'list'), true);
        assert.equal(await allowedOn(onClient, 'delete'), false);
      } finally {
        await onClient.transport.close();
      }
      const status = await eventually('the UserRole ready', 15_000, async () => {
        const r = await managementClient().get<
          KubeObject & {
            status?: {
              ready?: boolean;
              permissions?: Record<string, Record<string, Record<string, { status: string }>>>;
            };
          }
        >({ apiVersion: API, kind: 'UserRole' }, 'alice-deploy', NS);
        return r.status?.ready ? r.status : undefined;
      });
      assert.equal(status.permissions?.['deploy-viewer']?.[CLUSTER_ID]?.rbac?.status, 'Applied');
      // Pod start → Ready of the two replicas, from the kubelet's record (issue 39 asks for it).
      for (const p of await podsOf(e, permissionsOnNode)) {
        const pod = await managementClient().get<
          KubeObject & {
            status: { startTime: string; conditions: { type: string; lastTransitionTime: string }[] };
          }
        >({ apiVersion: 'v1', kind: 'Pod' }, p.metadata.name, RELEASE_NS);
        const ready = pod.status.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '';
        t.diagnostic(
          `${p.metadata.name}: start → Ready ${(Date.parse(ready) - Date.parse(pod.status.startTime)) / 1000} s`,
        );
      }
    });

    it("the apiserver calls the chart's webhooks through their Service with the chart's certificate: a UserRole naming no Permission is refused with the webhook's message, a valid one is admitted", async () => {
      const e = env();
      const ghost = {
        apiVersion: API,
        kind: 'UserRole',
        metadata: { name: 'eve-ghost', namespace: NS },
        spec: { user: 'eve@example.com', scope: 'fleet-clusters', permissions: ['ghost'] },
      };
      await assert.rejects(
        e.kubectl(['create', '-f', '-'], yamlOf([ghost])),
        new RegExp(
          'admission webhook "userroles\\.permissions\\.shturval\\.tech" denied the request: ' +
            'UserRole "eve-ghost" names Permission\\(s\\) "ghost", which do not exist in namespace "acme"',
        ),
      );
      // A server-side dry run goes through admission (the webhooks have no side effects) and stores nothing.
      const bob = {
        ...ghost,
        metadata: { name: 'bob-deploy', namespace: NS },
        spec: { user: 'bob@example.com', scope: 'fleet-clusters', permissions: ['deploy-viewer'] },
      };
      assert.match(
        await e.kubectl(['create', '--dry-run=server', '-f', '-'], yamlOf([bob])),
        /userrole\.permissions\.shturval\.tech\/bob-deploy created \(server dry run\)/,
      );
    });

    it("OPA's bundle answers through the Service stp-controller-bundle from a pod, by its cluster DNS name: data.json holds alice's grant, and its ETag revalidates to 304", async () => {
      const e = env();
      const [pod] = await podsOf(e, permissionsOnNode);
      assert.ok(pod);
      const seen = await eventually('a bundle holding alice', 15_000, async () => {
        const out = await e.kubectl([
          'exec',
          '-n',
          RELEASE_NS,
          pod.metadata.name,
          '--',
          'node',
          '-e',
          FETCH_BUNDLE,
        ]);
        const b = JSON.parse(out.trim().split('\n').pop() ?? '{}') as BundleSeen;
        return b.data?.shturval.users[USER] ? b : undefined;
      });
      assert.equal(seen.status, 200);
      assert.equal(seen.type, 'application/gzip');
      assert.deepEqual(seen.files, ['.manifest', 'data.json']);
      assert.deepEqual(seen.data?.shturval.users[USER], [
        { role: 'acme/alice-deploy', scope: 'acme/fleet-clusters', permissions: ['acme/deploy-viewer'] },
      ]);
      assert.equal(seen.data?.shturval.scopes['acme/fleet-clusters']?.level, 'cluster');
      assert.deepEqual(seen.data?.shturval.scopes['acme/fleet-clusters']?.clusters, [CLUSTER_ID]);
      assert.match(seen.etag ?? '', /^"[0-9a-f]{64}"$/);
      assert.equal(seen.revalidated, 304);
    });
  },
  // The UserRole first (its finalizer revokes the grant in the client cluster, which must
  // still run), then what it named; each delete waits for the operator to lift its finalizer.
  cleanUp: async (env: NodeEnv) => {
    await env.kubectl([
      'delete',
      'userrole',
      'alice-deploy',
      '-n',
      NS,
      '--ignore-not-found',
      '--timeout=30s',
    ]);
    await env.kubectl([
      'delete',
      'scope/fleet-clusters',
      'permission/deploy-viewer',
      '-n',
      NS,
      '--ignore-not-found',
      '--timeout=30s',
    ]);
    // Nothing of the operator's is left in the namespaces or the client cluster: the rest
    // goes side by side (the Cluster with its CRD, when prepare installed it).
    const mgmt = managementClient();
    const starting = clientStarting;
    clientStarting = undefined;
    await Promise.all([
      ...[NS, FLEET].map((name) => mgmt.delete({ apiVersion: 'v1', kind: 'Namespace' }, name)),
      // Gone before the uninstall check lists every kind: a kind vanishing between its
      // discovery and its listing would fail that listing.
      installedCapi ? deleteAndWait(mgmt, CRD, CAPI_CRD) : undefined,
      starting?.then(
        (plane) => plane.stop(),
        () => undefined,
      ),
    ]);
    installedCapi = false;
    management = undefined;
    await mgmt.transport.close();
  },
};
