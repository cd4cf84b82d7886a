/**
 * The mirror's start-up bootstrap against a reconcile that decides while the bootstrap
 * compiles: the reconciler's (newer) decision stands. The race is made deterministic by
 * the bootstrap's test hook between its compile and its apply, where a reconcile revokes
 * the target (as one does when the ClusterProvider was tightened meanwhile). No apiserver:
 * the compile reads are literals that admit the target.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '@operators/kit';
import { pino } from 'pino';
import type { GitProvider } from '../src/api/git-provider.ts';
import type { GitTarget } from '../src/api/git-target.ts';
import type { CompileReads } from '../src/mirror/compile.ts';
import { Mirror } from '../src/mirror/mirror.ts';

const NO_CLIENT = {} as KubeClient;

function setup(target: GitTarget): CompileReads {
  const provider = {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitProvider',
    metadata: { namespace: 'ns', name: 'repo' },
    spec: { url: 'file:///nowhere.git', allowedBranches: ['main'] },
  } as GitProvider;
  return {
    authz: {
      clusterProvider: async (name) => ({ metadata: { name }, spec: { accessFrom: { names: ['ns'] } } }),
      namespaceLabels: async () => ({}),
    },
    gitProvider: () => provider,
    gitTargets: () => [target],
    watchRules: () => [],
    clusterWatchRules: () => [],
    secret: async () => undefined,
    sourceClient: async () => ({ ok: true, client: NO_CLIENT, fingerprint: 'local' }),
    catalogue: async () => [],
  };
}

describe('the mirror bootstrap', () => {
  it('does not start a target that a reconcile revoked while the bootstrap was compiling it', async (t) => {
    const workDir = await mkdtemp(join(tmpdir(), 'gitops-reverser-bootstrap-'));
    t.after(() => rm(workDir, { recursive: true, force: true }));
    const target = {
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { namespace: 'ns', name: 't', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { providerRef: { name: 'repo' }, branch: 'main', path: 'live' },
    } as GitTarget;
    const revoked: string[] = [];
    const mirror: Mirror = new Mirror({
      workDir,
      log: pino({ level: 'silent' }),
      allowedProtocols: ['file'],
      targets: () => [target],
      reads: setup(target),
      afterBootstrapCompile: async (key) => {
        // A reconcile, between the bootstrap's compile and its apply, found the target refused.
        revoked.push(...(await mirror.revoke(key)), key);
      },
    });
    const abort = new AbortController();
    t.after(async () => {
      abort.abort();
      await mirror.stop();
    });
    await mirror.start(abort.signal);
    assert.deepEqual(revoked, ['ns/t'], 'the reconcile ran in the window');
    assert.equal(mirror.runtime('ns/t'), undefined, 'the revoked target has no data plane');
  });

  it('starts an admitted target that nothing decided about meanwhile', async (t) => {
    const workDir = await mkdtemp(join(tmpdir(), 'gitops-reverser-bootstrap-'));
    t.after(() => rm(workDir, { recursive: true, force: true }));
    const target = {
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { namespace: 'ns', name: 't', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { providerRef: { name: 'repo' }, branch: 'main', path: 'live' },
    } as GitTarget;
    const mirror = new Mirror({
      workDir,
      log: pino({ level: 'silent' }),
      allowedProtocols: ['file'],
      targets: () => [target],
      reads: setup(target),
    });
    const abort = new AbortController();
    t.after(async () => {
      abort.abort();
      await mirror.stop();
    });
    await mirror.start(abort.signal);
    assert.deepEqual(mirror.runtime('ns/t')?.streams, [], 'a data plane (of no stream: no rule) runs');
  });
});
