/**
 * Starting and stopping: a plane never outlives its run, whether the run ends
 * normally, fails, or is interrupted; and what breaks at start-up says why.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiErrorReason, isApiError, KubeClient, resourcePath, watch } from '@operators/kit';
import { ControlPlane, ControlPlaneError, liveChildren, resolvePlaneBinaries } from '../src/index.ts';

function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number | undefined, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

describe('control plane lifecycle', () => {
  it('stop() reaps etcd, kube-apiserver and kube-controller-manager and removes the plane folder', async () => {
    const plane = await ControlPlane.start({ controllerManager: true, log: () => {} });
    const { etcd, apiserver, controllerManager } = plane.pids;
    assert.ok(alive(etcd) && alive(apiserver) && alive(controllerManager));
    await plane.stop();
    assert.equal(alive(etcd), false, 'etcd still running');
    assert.equal(alive(apiserver), false, 'kube-apiserver still running');
    assert.equal(alive(controllerManager), false, 'kube-controller-manager still running');
    assert.equal(existsSync(plane.dir), false, 'plane folder left behind');
    assert.equal(liveChildren(), 0);
  });

  it('a watch from before an apiserver restart gets 410 Gone, and the data survives in etcd', async () => {
    await using plane = await ControlPlane.start({ log: () => {} });
    const client = await KubeClient.load(plane.kubeconfigPath);
    const gvk = { apiVersion: 'v1', kind: 'ConfigMap' };
    const cm = await client.create(
      { ...gvk, metadata: { name: 'kept', namespace: 'default' }, data: { a: '1' } },
      { fieldManager: 't' },
    );
    for (let i = 0; i < 3; i++) {
      await client.apply(
        { ...gvk, metadata: { name: 'kept', namespace: 'default' }, data: { a: `${i}` } },
        { fieldManager: 't', force: true },
      );
    }
    await plane.compactEtcd();
    await plane.restartApiserver();
    const info = await client.resolve(gvk);
    await assert.rejects(
      (async () => {
        for await (const _ of watch(client.transport, resourcePath(info, 'default'), {
          resourceVersion: cm.metadata.resourceVersion,
          timeoutSeconds: 5,
        })) {
          // Events before the error would mean the old resourceVersion was still served.
        }
      })(),
      (err: unknown) => isApiError(err, ApiErrorReason.Gone),
    );
    const kept = await client.get<{ data: { a: string } } & import('@operators/kit').KubeObject>(
      gvk,
      'kept',
      'default',
    );
    assert.equal(kept.data.a, '2');
    await client.transport.close();
  });

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGKILL'] as const) {
    it(`${signal} to a process running a plane leaves no etcd, kube-apiserver, kube-controller-manager or folder behind`, async () => {
      const child = spawn(process.execPath, [join(import.meta.dirname, 'fixtures', 'hold-plane.ts')], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise((r) => child.once('exit', r));
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d;
          if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
        });
        void exited.then((code) => reject(new Error(`fixture exited early with ${code}`)));
      });
      const { etcd, apiserver, controllerManager, dir } = JSON.parse(line) as {
        etcd: number;
        apiserver: number;
        controllerManager: number;
        dir: string;
      };
      assert.ok(alive(etcd) && alive(apiserver) && alive(controllerManager));
      child.kill(signal);
      assert.ok(await gone(etcd), 'etcd survived');
      assert.ok(await gone(apiserver), 'kube-apiserver survived');
      assert.ok(await gone(controllerManager), 'kube-controller-manager survived');
      if (signal !== 'SIGKILL') {
        // SIGKILL runs no handler: the folder is swept by the next start (see below).
        await exited;
        assert.equal(existsSync(dir), false, 'plane folder left behind');
      } else {
        await (await ControlPlane.start({ log: () => {} })).stop();
        assert.equal(existsSync(dir), false, 'the next start did not sweep the abandoned folder');
      }
    });
  }
});

describe('start-up failures give one clear error and leave nothing half-started', () => {
  it('a fixed port that is taken is named, with the fix', async () => {
    const server: Server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      await assert.rejects(ControlPlane.start({ apiserverPort: port, log: () => {} }), (err: unknown) => {
        assert.ok(err instanceof ControlPlaneError);
        assert.match(err.message, new RegExp(`port ${port}.*taken`));
        assert.match(err.fix, /ss -ltnp/);
        return true;
      });
      assert.equal(liveChildren(), 0);
    } finally {
      server.close();
    }
  });

  it('an etcd that crashes at start-up is reported with its log, and nothing keeps running', async () => {
    const real = await resolvePlaneBinaries(() => {});
    const assets = await mkdtemp(join(tmpdir(), 'assets-'));
    const saved = process.env.KUBEBUILDER_ASSETS;
    try {
      await writeFile(
        join(assets, 'etcd'),
        '#!/bin/sh\necho "panic: simulated corruption of member wal" >&2\nexit 2\n',
        {
          mode: 0o755,
        },
      );
      // The real apiserver and kubectl: only etcd is broken.
      for (const [name, path] of [
        ['kube-apiserver', real.kubeApiserver],
        ['kubectl', real.kubectl],
      ] as const) {
        await writeFile(join(assets, name), `#!/bin/sh\nexec ${path} "$@"\n`, { mode: 0o755 });
      }
      process.env.KUBEBUILDER_ASSETS = assets;
      await assert.rejects(ControlPlane.start({ log: () => {} }), (err: unknown) => {
        assert.ok(err instanceof ControlPlaneError);
        assert.match(err.message, /etcd exited during start-up/);
        assert.match(err.message, /simulated corruption/);
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
