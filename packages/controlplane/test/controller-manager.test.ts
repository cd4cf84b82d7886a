/**
 * kube-controller-manager on a test plane: what tests of cascading deletion, namespace
 * deletion and RBAC aggregation stand on. Each controller is shown acting on real
 * objects; a plane that cannot run it, or loses it, says so.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import { ControlPlane, ControlPlaneError, liveChildren, resolvePlaneBinaries } from '../src/index.ts';
import { eventually, privateTestEnv, type TestEnv } from '../src/testing.ts';

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;
const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;

/** Generous: the garbage collector first syncs a monitor per resource, on two shared cores. */
const ACT_WITHIN_MS = 60_000;

function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves true once `get` answers 404; the controller manager's death fails the wait at once. */
async function goneWithin(env: TestEnv & { plane: ControlPlane }, what: string, get: () => Promise<unknown>) {
  const deadline = Date.now() + ACT_WITHIN_MS;
  for (;;) {
    await env.plane.checkControllerManager();
    try {
      await get();
    } catch (err) {
      if (isApiError(err, ApiErrorReason.NotFound)) return;
      throw err;
    }
    if (Date.now() > deadline) assert.fail(`${what} still exists after ${ACT_WITHIN_MS / 1000} s`);
    await sleep(100);
  }
}

describe('a plane with kube-controller-manager', () => {
  let env: TestEnv & { plane: ControlPlane };
  before(async () => {
    env = await privateTestEnv({ controllerManager: true, log: () => {} });
  });
  after(async () => {
    await env?.close();
  });

  it('garbage-collects an object whose owner is deleted', async (t) => {
    const ns = await env.namespace(t, 'gc');
    const owner = await env.admin.create({ ...CONFIGMAP, metadata: { name: 'owner', namespace: ns } });
    await env.admin.create({
      ...CONFIGMAP,
      metadata: {
        name: 'dependent',
        namespace: ns,
        ownerReferences: [{ ...CONFIGMAP, name: 'owner', uid: owner.metadata.uid ?? '' }],
      },
    });
    // A bystander without owner: the collector must not take it too.
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'bystander', namespace: ns } });
    await env.admin.delete(CONFIGMAP, 'owner', ns);
    await goneWithin(env, 'the dependent ConfigMap', () => env.admin.get(CONFIGMAP, 'dependent', ns));
    assert.equal((await env.admin.get(CONFIGMAP, 'bystander', ns)).metadata.name, 'bystander');
  });

  it('deletes a namespace with objects in it to the end', async () => {
    const name = `ns-delete-${process.pid}`;
    await env.admin.create({ ...NAMESPACE, metadata: { name } });
    for (const n of ['a', 'b', 'c']) {
      await env.admin.create({ ...CONFIGMAP, metadata: { name: n, namespace: name }, data: { n } });
    }
    await env.admin.delete(NAMESPACE, name);
    await goneWithin(env, `namespace ${name}`, () => env.admin.get(NAMESPACE, name));
    const left = await env.admin.list(CONFIGMAP, { namespace: name });
    assert.equal(left.items.length, 0);
  });

  it('fills a ClusterRole with an aggregationRule from the ClusterRoles its selector matches', async (t) => {
    const label = `aggregate-to-test-${process.pid}`;
    const aggregated = `aggregated-${process.pid}`;
    const part = `part-${process.pid}`;
    t.after(async () => {
      for (const n of [aggregated, part]) await env.admin.delete(CLUSTER_ROLE, n).catch(() => undefined);
    });
    await env.admin.create({
      ...CLUSTER_ROLE,
      metadata: { name: aggregated },
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [label]: 'true' } }] },
      rules: [],
    } as KubeObject);
    await env.admin.create({
      ...CLUSTER_ROLE,
      metadata: { name: part, labels: { [label]: 'true' } },
      rules: [{ apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get', 'list', 'watch'] }],
    } as KubeObject);
    const filled = await eventually(
      'the aggregated ClusterRole to be filled',
      async () => {
        await env.plane.checkControllerManager();
        const role = await env.admin.get<KubeObject & { rules?: unknown[] }>(CLUSTER_ROLE, aggregated);
        return role.rules?.length ? role.rules : undefined;
      },
      ACT_WITHIN_MS,
    );
    assert.deepEqual(filled, [
      { apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get', 'list', 'watch'] },
    ]);
  });

  it('runs each controller under its own service account, as a cluster does', async () => {
    const accounts = await env.admin.list(
      { apiVersion: 'v1', kind: 'ServiceAccount' },
      { namespace: 'kube-system' },
    );
    const names = accounts.items.map((a) => a.metadata.name);
    for (const sa of [
      'generic-garbage-collector',
      'namespace-controller',
      'clusterrole-aggregation-controller',
    ]) {
      assert.ok(names.includes(sa), `no ServiceAccount kube-system/${sa}: ${names.join(', ')}`);
    }
  });

  it('a controller manager that dies is reported with the tail of its log', async () => {
    const othersRunning = liveChildren(); // the private plane of this suite
    const logged: string[] = [];
    const plane = await ControlPlane.start({ controllerManager: true, log: (m) => logged.push(m) });
    try {
      const pid = plane.pids.controllerManager;
      assert.ok(alive(pid));
      plane.controllerManagerProcess?.kill('SIGKILL');
      await plane.controllerManagerProcess?.done;
      await eventually('the death to be logged', async () =>
        logged.find((m) => /kube-controller-manager exited \(code SIGKILL\)/.test(m)),
      );
      await assert.rejects(plane.checkControllerManager(), (err: unknown) => {
        assert.ok(err instanceof ControlPlaneError, String(err));
        assert.match(err.message, /kube-controller-manager exited \(code SIGKILL\)/);
        assert.ok(err.detail && err.detail.length > 0, 'no log tail');
        return true;
      });
    } finally {
      await plane.stop();
    }
    assert.equal(liveChildren(), othersRunning);
  });
});

describe('a plane without kube-controller-manager', () => {
  it('starts from a KUBEBUILDER_ASSETS folder without kube-controller-manager, says it runs none, and refuses only a plane that asks for it', async () => {
    const real = await resolvePlaneBinaries(() => {});
    const assets = await mkdtemp(join(tmpdir(), 'envtest-assets-'));
    const saved = process.env.KUBEBUILDER_ASSETS;
    try {
      // An envtest folder: kube-apiserver, etcd and kubectl only.
      for (const [name, path] of [
        ['kube-apiserver', real.kubeApiserver],
        ['etcd', real.etcd],
        ['kubectl', real.kubectl],
      ] as const) {
        await writeFile(join(assets, name), `#!/bin/sh\nexec ${path} "$@"\n`, { mode: 0o755 });
      }
      process.env.KUBEBUILDER_ASSETS = assets;
      const b = await resolvePlaneBinaries(() => assert.fail('nothing may be built for an envtest folder'));
      assert.equal(b.kubeControllerManager, undefined);
      const plane = await ControlPlane.start({ log: () => {} });
      try {
        assert.equal(plane.pids.controllerManager, undefined);
        await assert.rejects(plane.checkControllerManager(), /runs no kube-controller-manager/);
      } finally {
        await plane.stop();
      }
      await assert.rejects(ControlPlane.start({ controllerManager: true, log: () => {} }), (err: unknown) => {
        assert.ok(err instanceof ControlPlaneError, String(err));
        assert.match(err.message, /asks for kube-controller-manager.*KUBEBUILDER_ASSETS/s);
        assert.match(err.fix, /unset KUBEBUILDER_ASSETS/);
        return true;
      });
      assert.equal(liveChildren(), 0);
    } finally {
      if (saved === undefined) delete process.env.KUBEBUILDER_ASSETS;
      else process.env.KUBEBUILDER_ASSETS = saved;
      await rm(assets, { recursive: true, force: true });
    }
  });

  it('a controller manager that crashes at start-up is reported with its log, and nothing keeps running', async () => {
    const real = await resolvePlaneBinaries(() => {});
    const assets = await mkdtemp(join(tmpdir(), 'assets-'));
    const saved = process.env.KUBEBUILDER_ASSETS;
    try {
      await writeFile(
        join(assets, 'kube-controller-manager'),
        '#!/bin/sh\necho "E0101 failed to start: simulated bad flag" >&2\nexit 1\n',
        { mode: 0o755 },
      );
      for (const [name, path] of [
        ['kube-apiserver', real.kubeApiserver],
        ['etcd', real.etcd],
        ['kubectl', real.kubectl],
      ] as const) {
        await writeFile(join(assets, name), `#!/bin/sh\nexec ${path} "$@"\n`, { mode: 0o755 });
      }
      process.env.KUBEBUILDER_ASSETS = assets;
      await assert.rejects(ControlPlane.start({ controllerManager: true, log: () => {} }), (err: unknown) => {
        assert.ok(err instanceof ControlPlaneError, String(err));
        assert.match(err.message, /kube-controller-manager exited during start-up/);
        assert.match(err.message, /simulated bad flag/);
        return true;
      });
      assert.equal(liveChildren(), 0);
    } finally {
      if (saved === undefined) delete process.env.KUBEBUILDER_ASSETS;
      else process.env.KUBEBUILDER_ASSETS = saved;
      await rm(assets, { recursive: true, force: true });
    }
  });
});
