/**
 * The in-cluster path against the real apiserver: a client loaded with no kubeconfig,
 * no `$KUBECONFIG`, no `~/.kube/config` and `KUBERNETES_SERVICE_HOST`/`_PORT` set reads
 * the service account's `token` and `ca.crt` natively, authenticates as that service
 * account, and picks up a rotated token after the refresh interval. The precedence
 * (kubeconfig before service account) is client-node's `loadFromDefault`.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  InClusterCredentials,
  KubeClient,
  KubeconfigCredentials,
  type KubeObject,
  loadCredentials,
} from '@operators/kit';

let env: TestEnv;
let dir: string;
before(async () => {
  env = await testEnv();
  dir = mkdtempSync(join(tmpdir(), 'kit-in-cluster-'));
});
after(async () => {
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The plane's CA, from the admin kubeconfig's `certificate-authority-data`. */
function planeCa(): Buffer {
  const m = /certificate-authority-data:\s*(\S+)/.exec(readFileSync(env.kubeconfigPath, 'utf8'));
  assert.ok(m?.[1], 'the test kubeconfig has no certificate-authority-data');
  return Buffer.from(m[1], 'base64');
}

/**
 * A service account that may list ConfigMaps in `namespace`, and a bound token of it
 * from the TokenRequest API. (Not the `view` ClusterRole: it is aggregated by
 * kube-controller-manager, which the shared plane does not run.)
 */
async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  await env.admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await env.admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
  } as KubeObject);
  await env.admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as KubeObject);
  const req = await env.admin.transport.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return req.status.token;
}

async function whoAmI(client: KubeClient): Promise<string> {
  const review = await client.transport.request<{ status: { userInfo: { username: string } } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status.userInfo.username;
}

/** Replaces a file at once, as the kubelet's atomic writer does. */
function replace(path: string, content: string | Buffer): void {
  writeFileSync(`${path}.tmp`, content);
  renameSync(`${path}.tmp`, path);
}

function serviceEnv(): NodeJS.ProcessEnv {
  const url = new URL(env.admin.transport.server);
  return { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
}

describe('in-cluster credentials', () => {
  it('a client loaded without a kubeconfig authenticates with the mounted token and follows its rotation', async (t) => {
    const ns = await env.namespace(t, 'in-cluster');
    const tokenA = await serviceAccountToken(ns, 'first');
    const tokenB = await serviceAccountToken(ns, 'second');
    await env.admin.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'seen', namespace: ns },
    });
    const sa = join(dir, 'rotation');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), planeCa());
    writeFileSync(join(sa, 'token'), tokenA);

    const refreshMs = 300;
    const client = await KubeClient.load(undefined, {
      inCluster: { dir: sa, tokenRefreshMs: refreshMs, env: serviceEnv() },
    });
    t.after(() => client.transport.close());
    // The apiserver's serving certificate names 127.0.0.1; the URL is client-go's.
    assert.equal(client.transport.server, `https://127.0.0.1:${serviceEnv().KUBERNETES_SERVICE_PORT}`);

    // The RoleBinding reaches the apiserver's RBAC cache a moment after it is created.
    const names = await eventually('the service account to list ConfigMaps', async () =>
      (await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: ns })).items.map(
        (o) => o.metadata.name,
      ),
    );
    assert.ok(names.includes('seen'), `listed ${names.join(', ')}`);
    assert.equal(await whoAmI(client), `system:serviceaccount:${ns}:first`);

    replace(join(sa, 'token'), tokenB);
    const started = performance.now();
    await eventually('requests to switch to the rotated token', async () =>
      (await whoAmI(client)) === `system:serviceaccount:${ns}:second` ? true : undefined,
    );
    const tookMs = performance.now() - started;
    assert.ok(tookMs < refreshMs + 2_000, `the new token was used after ${tookMs.toFixed(0)} ms`);
  });

  it('re-reads the token file no more often than the interval, and keeps the token while the file is missing', async () => {
    const sa = join(dir, 'interval');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), planeCa());
    writeFileSync(join(sa, 'token'), 'one\n');
    const slow = await InClusterCredentials.load({ dir: sa, env: serviceEnv() });
    const fast = await InClusterCredentials.load({ dir: sa, env: serviceEnv(), tokenRefreshMs: 0 });
    assert.deepEqual(await slow.authHeaders(), { Authorization: 'Bearer one' });

    replace(join(sa, 'token'), 'two');
    assert.deepEqual(await slow.authHeaders(), { Authorization: 'Bearer one' }, 'within the minute');
    assert.deepEqual(await fast.authHeaders(), { Authorization: 'Bearer two' });

    rmSync(join(sa, 'token'));
    assert.deepEqual(await fast.authHeaders(), { Authorization: 'Bearer two' }, 'file gone for a moment');
  });

  it('brackets an IPv6 service host', async () => {
    const sa = join(dir, 'ipv6');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), planeCa());
    writeFileSync(join(sa, 'token'), 't');
    const creds = await InClusterCredentials.load({
      dir: sa,
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
    });
    assert.equal(creds.server, 'https://[fd00::1]:443');
  });

  it('a kubeconfig path, $KUBECONFIG or ~/.kube/config comes before the service account', async () => {
    const sa = join(dir, 'precedence');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), planeCa());
    writeFileSync(join(sa, 'token'), 't');
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), readFileSync(env.kubeconfigPath));
    const base = serviceEnv();

    assert.ok((await loadCredentials(undefined, { dir: sa, env: base })) instanceof InClusterCredentials);
    assert.ok(
      (await loadCredentials(undefined, { dir: sa, env: { ...base, HOME: join(dir, 'nowhere') } })) instanceof
        InClusterCredentials,
    );
    assert.ok(
      (await loadCredentials(env.kubeconfigPath, { dir: sa, env: base })) instanceof KubeconfigCredentials,
    );
    // Any other case is client-node's loadFromDefault, which reads process.env itself:
    // pointed at the plane's kubeconfig here, so that it loads.
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = env.kubeconfigPath;
    try {
      for (const [other, saDir] of [
        [{ ...base, KUBECONFIG: env.kubeconfigPath }, sa],
        [{ ...base, HOME: home }, sa],
        [{ KUBERNETES_SERVICE_HOST: base.KUBERNETES_SERVICE_HOST }, sa],
        [base, join(dir, 'no-service-account')],
      ] as const) {
        const creds = await loadCredentials(undefined, { dir: saDir, env: other });
        assert.ok(creds instanceof KubeconfigCredentials, JSON.stringify(other));
      }
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });
});
