/**
 * Client clusters for tests: a SECOND real kube-apiserver (its own etcd and CA), known
 * to a management plane the way Cluster API makes a workload cluster known: a
 * `cluster.x-k8s.io/v1beta2` `Cluster` object (Cluster API's real CRD, at its storage
 * version, so no conversion webhook is involved) and a `<name>-kubeconfig` Secret whose
 * key `value` holds the kubeconfig, in the Cluster's namespace.
 *
 * No Cluster API controller runs: the helpers below write what it would write
 * (readiness in the status subresource, `spec.paused`), so that tests decide when a
 * cluster becomes ready. `unreachableCluster` registers one whose endpoint refuses
 * connections or accepts them and never answers, for deadline tests.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import type { ControlPlane, ControlPlaneOptions } from '@operators/controlplane';
import { privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { KubeClient, KubeObject } from '@operators/kit';
import { parse, stringify } from 'yaml';
import type { CapiCluster } from '../../src/domain/cluster-selection.ts';

export const CAPI_CLUSTER = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster' } as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;

/** The Secret type and label Cluster API gives kubeconfig Secrets. */
const CAPI_SECRET_TYPE = 'cluster.x-k8s.io/secret';
const CAPI_CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';

/** A private control plane playing a client cluster. */
export type ClientPlane = TestEnv & { plane: ControlPlane };

/** Starts a client cluster: a real kube-apiserver with its own etcd, stopped by `close()`. */
export async function startClientPlane(opts: ControlPlaneOptions = {}): Promise<ClientPlane> {
  return privateTestEnv(opts);
}

const installed = new WeakMap<TestEnv, Promise<void>>();

/** Installs Cluster API's Cluster CRD on the management plane, once per env. */
export function ensureClusterApi(management: TestEnv): Promise<void> {
  let p = installed.get(management);
  if (!p) {
    p = management.installThirdParty('clusterApi');
    installed.set(management, p);
  }
  return p;
}

export interface RegisterOptions {
  readonly namespace: string;
  readonly name: string;
  /** Whether the control plane reports ready at once; default true. */
  readonly ready?: boolean;
  readonly paused?: boolean;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Whether to write the kubeconfig Secret; default true. */
  readonly secret?: boolean;
}

/** A Cluster registered on the management plane, with handles to change it as Cluster API would. */
export interface RegisteredCluster {
  /** `<namespace>/<name>`: the operator's id of this cluster. */
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  readonly secretName: string;
  /** The live Cluster object. */
  get(): Promise<CapiCluster>;
  /** Status subresource: condition ControlPlaneAvailable and initialization.controlPlaneInitialized. */
  setReady(ready: boolean): Promise<void>;
  setPaused(paused: boolean): Promise<void>;
  /** Merge-patches the Cluster's labels and annotations (null removes a key). */
  setMetadata(m: {
    labels?: Record<string, string | null>;
    annotations?: Record<string, string | null>;
  }): Promise<void>;
  /** Writes `text` as the Secret's `value` (creating the Secret if needed). */
  writeKubeconfig(text: string): Promise<void>;
  /** Writes the Secret with exactly `data` (already base64), for malformed Secrets. */
  writeSecretData(data: Record<string, string>): Promise<void>;
  deleteSecret(): Promise<void>;
  /**
   * Replaces the kubeconfig with an equivalent one carrying NEW credentials: a token of
   * a fresh ServiceAccount bound to cluster-admin on the client plane. The controlplane
   * package exports no way to issue a second client certificate from its CA, and a
   * token is a real rotation (a different identity, so a test can see which client
   * answered). Returns the identity the new kubeconfig authenticates as.
   */
  rotateKubeconfig(): Promise<{ user: string }>;
  /**
   * Replaces the kubeconfig with one whose identity may do only `rules` on the client
   * plane: a token of a fresh ServiceAccount bound to a ClusterRole holding exactly those
   * rules. The default, {@link CLUSTER_ROLE_WRITER_RULES}, may write ClusterRoles but
   * lacks `escalate`, so the client apiserver's RBAC refuses any ClusterRole granting more
   * than the identity holds itself (a 403 from the escalation check). Returns the identity.
   */
  restrictKubeconfig(rules?: readonly RbacRule[]): Promise<{ user: string }>;
  /** Deletes the Cluster and its Secret (no Cluster API finalizer runs here). */
  remove(): Promise<void>;
}

/**
 * Registers `client` as a Cluster API cluster on `management`: the Cluster object (ready
 * unless told otherwise) and the kubeconfig Secret holding the client plane's admin
 * kubeconfig (the file at its kubeconfigPath, credentials inline).
 */
export async function registerCluster(
  management: TestEnv,
  client: ClientPlane,
  opts: RegisterOptions,
): Promise<RegisteredCluster> {
  const kubeconfig = await readFile(client.kubeconfigPath, 'utf8');
  const server = new URL(client.admin.transport.server);
  return register(
    management,
    opts,
    kubeconfig,
    { host: server.hostname, port: Number(server.port) },
    client.admin,
  );
}

export interface UnreachableCluster extends RegisteredCluster {
  /** The port its kubeconfig points at. */
  readonly port: number;
  /** Stops the silent listener (drops its connections); nothing to do for a closed port. */
  close(): Promise<void>;
}

/**
 * A ready Cluster whose kubeconfig points at 127.0.0.1 on a port that either refuses
 * connections (`closed-port`: the port was bound, then released) or accepts them and
 * never sends a byte (`silent`: not even the TLS handshake, so only a deadline ends a
 * call). The kubeconfig is otherwise valid: the management plane's, re-pointed.
 */
export async function unreachableCluster(
  management: TestEnv,
  opts: RegisterOptions & { readonly mode: 'closed-port' | 'silent' },
): Promise<UnreachableCluster> {
  let port: number;
  let close = async (): Promise<void> => undefined;
  if (opts.mode === 'closed-port') {
    const s = await listen();
    port = s.port;
    await s.close();
  } else {
    const s = await listen();
    port = s.port;
    close = s.close;
  }
  const text = repoint(await readFile(management.kubeconfigPath, 'utf8'), `https://127.0.0.1:${port}`);
  const cluster = await register(management, opts, text, { host: '127.0.0.1', port }, undefined);
  return { ...cluster, port, close };
}

async function register(
  management: TestEnv,
  opts: RegisterOptions,
  kubeconfig: string,
  endpoint: { host: string; port: number },
  clientAdmin: KubeClient | undefined,
): Promise<RegisteredCluster> {
  await ensureClusterApi(management);
  const admin = management.admin;
  const { namespace, name } = opts;
  const secretName = `${name}-kubeconfig`;
  await admin.create<KubeObject>({
    ...CAPI_CLUSTER,
    metadata: {
      namespace,
      name,
      ...(opts.labels ? { labels: { ...opts.labels } } : {}),
      ...(opts.annotations ? { annotations: { ...opts.annotations } } : {}),
    },
    // The schema wants a non-empty spec; the endpoint is what Cluster API would record.
    spec: { controlPlaneEndpoint: endpoint, ...(opts.paused ? { paused: true } : {}) },
  });

  const writeSecretData = async (data: Record<string, string>): Promise<void> => {
    const secret = {
      ...SECRET,
      metadata: { namespace, name: secretName, labels: { [CAPI_CLUSTER_NAME_LABEL]: name } },
      type: CAPI_SECRET_TYPE,
      data,
    };
    const live = await admin.find(SECRET, secretName, namespace);
    if (live)
      await admin.replace({
        ...secret,
        metadata: { ...secret.metadata, resourceVersion: live.metadata.resourceVersion },
      });
    else await admin.create(secret);
  };
  const writeKubeconfig = (text: string) => writeSecretData({ value: Buffer.from(text).toString('base64') });

  const setReady = async (ready: boolean): Promise<void> => {
    await admin.patchStatus(CAPI_CLUSTER, name, namespace, {
      type: 'merge',
      body: {
        status: {
          initialization: { controlPlaneInitialized: ready },
          conditions: [
            {
              type: 'ControlPlaneAvailable',
              status: ready ? 'True' : 'False',
              reason: ready ? 'Available' : 'NotAvailable',
              message: ready ? '' : 'the test says the control plane is not available',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
    });
  };

  let rotations = 0;
  const cluster: RegisteredCluster = {
    id: `${namespace}/${name}`,
    namespace,
    name,
    secretName,
    get: () => admin.get<CapiCluster>(CAPI_CLUSTER, name, namespace),
    setReady,
    async setPaused(paused) {
      await admin.patch(CAPI_CLUSTER, name, namespace, { type: 'merge', body: { spec: { paused } } });
    },
    async setMetadata(m) {
      await admin.patch(CAPI_CLUSTER, name, namespace, { type: 'merge', body: { metadata: m } });
    },
    writeKubeconfig,
    writeSecretData,
    async deleteSecret() {
      await admin.delete(SECRET, secretName, namespace);
    },
    async rotateKubeconfig() {
      if (!clientAdmin)
        throw new Error(`cluster ${namespace}/${name} has no client plane to issue credentials on`);
      const sa = `rotated-${name}-${++rotations}-${Math.random().toString(36).slice(2, 6)}`.slice(0, 63);
      const token = await adminToken(clientAdmin, sa);
      await writeKubeconfig(withToken(kubeconfig, sa, token));
      return { user: `system:serviceaccount:default:${sa}` };
    },
    async restrictKubeconfig(rules = CLUSTER_ROLE_WRITER_RULES) {
      if (!clientAdmin)
        throw new Error(`cluster ${namespace}/${name} has no client plane to issue credentials on`);
      const sa = `restricted-${name}-${++rotations}-${Math.random().toString(36).slice(2, 6)}`.slice(0, 63);
      const token = await restrictedToken(clientAdmin, sa, rules);
      await writeKubeconfig(withToken(kubeconfig, sa, token));
      return { user: `system:serviceaccount:default:${sa}` };
    },
    async remove() {
      await admin.delete(CAPI_CLUSTER, name, namespace);
      await admin.delete(SECRET, secretName, namespace);
    },
  };
  if (opts.secret !== false) await writeKubeconfig(kubeconfig);
  if (opts.ready !== false) await setReady(true);
  return cluster;
}

/**
 * A ServiceAccount in `default` on the client plane, bound to cluster-admin, and a token
 * for it from the TokenRequest API (an hour: longer than any test).
 */
async function adminToken(client: KubeClient, sa: string): Promise<string> {
  await client.create({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { namespace: 'default', name: sa },
  });
  await client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${sa}-admin` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', namespace: 'default', name: sa }],
  });
  const res = await client.transport.request<{ status?: { token?: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/default/serviceaccounts/${sa}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  const token = res.status?.token;
  if (!token) throw new Error(`the TokenRequest for ServiceAccount default/${sa} returned no token`);
  return token;
}

/** An RBAC policy rule, as a ClusterRole holds it. */
export interface RbacRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** Write ClusterRoles, and nothing else: no `escalate`, no `bind`, no other resource. */
export const CLUSTER_ROLE_WRITER_RULES: readonly RbacRule[] = [
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['clusterroles'],
    verbs: ['create', 'get', 'patch', 'delete'],
  },
];

/**
 * A ServiceAccount in `default` on the client plane, bound to a ClusterRole of its own
 * holding exactly `rules`, and a token for it (an hour: longer than any test).
 */
async function restrictedToken(client: KubeClient, sa: string, rules: readonly RbacRule[]): Promise<string> {
  await client.create({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { namespace: 'default', name: sa },
  });
  await client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `${sa}-role` },
    rules: rules.map((r) => ({ ...r })),
  });
  await client.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${sa}-role` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${sa}-role` },
    subjects: [{ kind: 'ServiceAccount', namespace: 'default', name: sa }],
  });
  const res = await client.transport.request<{ status?: { token?: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/default/serviceaccounts/${sa}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  const token = res.status?.token;
  if (!token) throw new Error(`the TokenRequest for ServiceAccount default/${sa} returned no token`);
  return token;
}

interface KubeconfigDoc {
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: Record<string, unknown> }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
  'current-context': string;
}

/** The same kubeconfig (cluster, CA), authenticating with `token`, under a new context name. */
function withToken(text: string, user: string, token: string): string {
  const doc = parse(text) as KubeconfigDoc;
  const cluster = doc.contexts.find((c) => c.name === doc['current-context'])?.context.cluster ?? '';
  const context = `${user}@${cluster}`;
  return stringify({
    ...doc,
    users: [{ name: user, user: { token } }],
    contexts: [{ name: context, context: { cluster, user } }],
    'current-context': context,
  });
}

/** The same kubeconfig, its current cluster's server replaced by `server`. */
function repoint(text: string, server: string): string {
  const doc = parse(text) as KubeconfigDoc;
  const cluster = doc.contexts.find((c) => c.name === doc['current-context'])?.context.cluster;
  return stringify({
    ...doc,
    clusters: doc.clusters.map((c) => (c.name === cluster ? { ...c, cluster: { ...c.cluster, server } } : c)),
  });
}

/** A TCP listener on 127.0.0.1 that accepts and never answers; `close()` drops every connection. */
async function listen(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the listener has no TCP address');
  let closed = false;
  return {
    port: address.port,
    async close() {
      if (closed) return;
      closed = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether a namespace exists, through `client`. */
export async function namespaceExists(client: KubeClient, name: string): Promise<boolean> {
  return (await client.find(NAMESPACE, name)) !== undefined;
}
