/**
 * `npm run up` runs this: the permissions operator in-process on the local (management)
 * control plane, with a SECOND local kube-apiserver started beside it as a client
 * cluster, registered the Cluster API way (a Cluster object and its `<name>-kubeconfig`
 * Secret). A Tenant, a Permission and a UserRole are created in namespace
 * `permissions-demo`; their ClusterRole and bindings land in the client cluster, the
 * webhooks are registered with a self-signed CA, and the OPA bundle is served on
 * 127.0.0.1:8082, or on a free port (printed) when 8082 is taken: by another program of
 * the user's, or a second `npm run up`. Everything (the client plane, the certificates)
 * goes on Ctrl-C.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlPlane, installCrds, type LocalContext, thirdPartyCrds } from '@operators/controlplane';
import {
  ApiErrorReason,
  isApiError,
  type KubeClient,
  type KubeObject,
  selfSignedCertificates,
  writeCertificates,
} from '@operators/kit';
import { API_VERSION } from './api/common.ts';
import { CAPI_CLUSTER } from './controllers/gvks.ts';
import { createOperator } from './operator.ts';
import { webhookConfiguration } from './webhooks/configuration.ts';

const NS = 'permissions-demo';
const CLUSTER = 'demo-client';
/** The bundle's usual port (§1, §6), used when free. */
const BUNDLE_PORT = 8082;

async function create(client: KubeClient, obj: KubeObject): Promise<void> {
  try {
    await client.create(obj);
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.AlreadyExists)) throw err;
  }
}

const ours = (kind: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: API_VERSION, kind, metadata: { name, namespace: NS }, spec }) as KubeObject;

export async function runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }> {
  const { client, log } = ctx;
  const root = mkdtempSync(join(tmpdir(), 'permissions-up-'));
  log('starting a second local kube-apiserver as the client cluster');
  const clientPlane = await ControlPlane.start({ log: (m) => log(`client plane: ${m}`) });
  const clientKubeconfig = join(root, 'client-kubeconfig');
  writeFileSync(clientKubeconfig, clientPlane.kubeconfig(), { mode: 0o600 });

  await installCrds(client, (await thirdPartyCrds('clusterApi')) as unknown as KubeObject[]);
  await create(client, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  // The Cluster API convention: a Cluster and `<name>-kubeconfig` with the kubeconfig under `value`.
  await create(client, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `${CLUSTER}-kubeconfig`,
      namespace: NS,
      labels: { 'cluster.x-k8s.io/cluster-name': CLUSTER },
    },
    type: 'cluster.x-k8s.io/secret',
    stringData: { value: clientPlane.kubeconfig() },
  } as KubeObject);
  const url = new URL(clientPlane.url);
  await create(client, {
    ...CAPI_CLUSTER,
    metadata: { name: CLUSTER, namespace: NS, labels: { env: 'demo' } },
    spec: { controlPlaneEndpoint: { host: url.hostname, port: Number(url.port) } },
  } as KubeObject);
  // No Cluster API controller runs here: say what it would say once the control plane is up.
  await client.patch(
    CAPI_CLUSTER,
    CLUSTER,
    NS,
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

  const certDir = join(root, 'certs');
  const certs = await selfSignedCertificates({ ipAddresses: ['127.0.0.1'] });
  await writeCertificates(certDir, certs);
  const operator = createOperator({
    client,
    logger: ctx.logger,
    bundle: { host: '127.0.0.1', port: BUNDLE_PORT, freePortIfTaken: true },
    webhooks: { host: '127.0.0.1', port: 0, certDir },
  });
  await operator.manager.start();
  if (operator.webhooks) {
    await client.apply(
      webhookConfiguration({
        url: `https://127.0.0.1:${operator.webhooks.port}`,
        caBundle: Buffer.from(certs.ca.cert).toString('base64'),
      }),
      { fieldManager: 'npm-run-up', force: true },
    );
  }

  await create(
    client,
    ours('Tenant', 'team-a', {
      clusters: { ids: [`${NS}/${CLUSTER}`] },
      admins: ['alice@example.com'],
      members: ['bob@example.com'],
    }),
  );
  await create(
    client,
    ours('Permission', 'deployment-viewer', {
      level: 'cluster',
      granted_cluster_rules: [
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch'] },
      ],
    }),
  );
  // The webhook refuses a UserRole whose Scope does not exist yet: the Tenant's reconcile makes it.
  for (
    let i = 0;
    i < 100 && !(await client.find({ apiVersion: API_VERSION, kind: 'Scope' }, 'tenant-team-a', NS));
    i++
  ) {
    await new Promise((r) => setTimeout(r, 200));
  }
  await create(
    client,
    ours('UserRole', 'alice-viewer', {
      user: 'alice@example.com',
      scope: 'tenant-team-a',
      permissions: ['deployment-viewer'],
    }),
  );

  log(`client cluster "${NS}/${CLUSTER}" is a second apiserver at ${clientPlane.url}`);
  log(
    `its ClusterRole and binding, in the client cluster: npm run kubectl -- --kubeconfig ${clientKubeconfig} get clusterroles,clusterrolebindings -l app.kubernetes.io/managed-by=permissions.shturval.tech`,
  );
  log(`status: npm run kubectl -- -n ${NS} get tenants,scopes,permissions,userroles`);
  log(
    `the OPA bundle: curl -s http://127.0.0.1:${operator.bundle.address()?.port ?? BUNDLE_PORT}/bundle | tar -xzO data.json`,
  );
  log(
    `a refused grant (webhook): npm run kubectl -- -n ${NS} create -f - <<< '{"apiVersion":"${API_VERSION}","kind":"UserRole","metadata":{"name":"x"},"spec":{"user":"eve","scope":"tenant-team-a","permissions":["missing"]}}'`,
  );
  return {
    async stop() {
      await client
        .delete(
          { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' },
          'permissions.shturval.tech',
        )
        .catch(() => undefined);
      await operator.manager.stop();
      await operator.clusters.close();
      await clientPlane.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
