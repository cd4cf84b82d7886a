/**
 * `npm run up` runs this: gitops-reverser in-process on the local control plane,
 * mirroring the ConfigMaps of namespace `gitops-demo` into a bare repository on this
 * machine (a `file://` remote: the only transport a laptop has without a Git server),
 * through a ClusterProvider `local` that admits exactly that namespace. Edit a ConfigMap
 * there and watch the commit arrive.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalContext } from '@operators/controlplane';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { API_VERSION } from './api/common.ts';
import { createOperator } from './operator.ts';

const NS = 'gitops-demo';

async function create(client: KubeClient, obj: KubeObject): Promise<void> {
  try {
    await client.create(obj);
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.AlreadyExists)) throw err;
  }
}

export async function runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }> {
  const { client, log } = ctx;
  const root = mkdtempSync(join(tmpdir(), 'gitops-reverser-up-'));
  const bare = join(root, 'mirror.git');
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
  await create(client, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const { manager } = createOperator({
    client,
    logger: ctx.logger,
    operatorNamespace: NS,
    workDir: join(root, 'work'),
    allowedProtocols: ['file'],
    resyncMs: 60_000,
  });
  await manager.start();
  const obj = (kind: string, name: string, spec: Record<string, unknown>, namespaced = true): KubeObject =>
    ({
      apiVersion: API_VERSION,
      kind,
      metadata: { name, ...(namespaced ? { namespace: NS } : {}) },
      spec,
    }) as KubeObject;
  await create(client, obj('ClusterProvider', 'local', { accessFrom: { names: [NS] } }, false));
  await create(
    client,
    obj('GitProvider', 'local-repo', { url: `file://${bare}`, allowedBranches: ['main'] }),
  );
  await create(
    client,
    obj('GitTarget', 'mirror', {
      providerRef: { name: 'local-repo' },
      clusterProviderRef: { name: 'local' },
      branch: 'main',
      path: 'live',
      commit: { window: '2s' },
    }),
  );
  await create(
    client,
    obj('WatchRule', 'configmaps', {
      targetRef: { name: 'mirror' },
      rules: [{ apiGroups: [''], resources: ['configmaps'] }],
    }),
  );
  for (const [name, data] of [
    ['app-settings', { LOG_LEVEL: 'info', FEATURE_X: 'on' }],
    ['nginx', { 'nginx.conf': 'worker_processes 1;\n' }],
  ] as const) {
    await create(client, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: NS },
      data,
    } as KubeObject);
  }
  log(`the repository lives only while up runs (removed on Ctrl-C)`);
  log(`mirroring namespace ${NS}'s ConfigMaps into ${bare} (branch main, folder live/)`);
  log(`look: git --git-dir ${bare} log --stat`);
  log(`change something: npm run kubectl -- -n ${NS} create configmap hello --from-literal=a=b`);
  log('status: npm run kubectl -- get clusterproviders,gitproviders,gittargets,watchrules -A');
  return {
    async stop() {
      await manager.stop();
      // The repository and the clones were this run's: nothing is left behind.
      rmSync(root, { recursive: true, force: true });
    },
  };
}
