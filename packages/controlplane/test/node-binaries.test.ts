/**
 * The node's binaries: KUBE_OPERATORS_NODE_ASSETS, the KUBEBUILDER_ASSETS convention for the
 * node, replaces the cache and every build. The real builds are exercised by the node's
 * end-to-end suite, not here: each of these runs against an empty cache and fails if
 * anything would be built.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ControlPlaneError } from '../src/errors.ts';
import { resolveNodeBinaries } from '../src/node-binaries.ts';
import { CNI_PLUGINS_VERSION } from '../src/versions.ts';

/** Every binary a node runs, by the name the override looks for. */
const NAMES = [
  'kubelet',
  'kube-proxy',
  'kube-scheduler',
  'containerd',
  'ctr',
  'containerd-shim-runc-v2',
  'bridge',
  'host-local',
  'loopback',
  'portmap',
  'coredns',
  'pause',
  'runc',
];

/** A folder of stand-in executables: scripts that do nothing, which nothing here runs. */
async function fakeBinaries(dir: string, names: readonly string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const n of names) {
    await writeFile(join(dir, n), '#!/bin/sh\nexit 0\n');
    await chmod(join(dir, n), 0o755);
  }
}

describe('node binaries: KUBE_OPERATORS_NODE_ASSETS', () => {
  let root: string;
  const saved = { assets: process.env.KUBE_OPERATORS_NODE_ASSETS, cache: process.env.KUBE_OPERATORS_CACHE };
  const mustNotBuild = (m: string): never => assert.fail(`nothing may be built or waited on: ${m}`);

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'node-binaries-'));
  });
  after(async () => {
    for (const [k, v] of [
      ['KUBE_OPERATORS_NODE_ASSETS', saved.assets],
      ['KUBE_OPERATORS_CACHE', saved.cache],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await rm(root, { recursive: true, force: true });
  });

  it('a folder holding every node binary is used as is: each path points into it, the CNI folder is it, nothing is built', async () => {
    const assets = join(root, 'all');
    const cache = join(root, 'cache-all');
    await fakeBinaries(assets, NAMES);
    await mkdir(cache);
    process.env.KUBE_OPERATORS_NODE_ASSETS = assets;
    process.env.KUBE_OPERATORS_CACHE = cache;
    const b = await resolveNodeBinaries(mustNotBuild);
    assert.deepEqual(b, {
      kubelet: join(assets, 'kubelet'),
      kubeProxy: join(assets, 'kube-proxy'),
      kubeScheduler: join(assets, 'kube-scheduler'),
      containerd: join(assets, 'containerd'),
      ctr: join(assets, 'ctr'),
      containerdShim: join(assets, 'containerd-shim-runc-v2'),
      cniBinDir: assets,
      coredns: join(assets, 'coredns'),
      pause: join(assets, 'pause'),
      runc: join(assets, 'runc'),
    });
    assert.deepEqual(await readdir(cache), [], 'the cache stays empty: no build, no lock, no work folder');
  });

  it('the CNI plugins come from the folder only when it holds all four; otherwise from the cache, the rest still from the folder', async () => {
    const assets = join(root, 'three-plugins');
    const cache = join(root, 'cache-cni');
    await fakeBinaries(
      assets,
      NAMES.filter((n) => n !== 'portmap'),
    );
    const cached = join(cache, 'bin', `cni-plugins-${CNI_PLUGINS_VERSION}`);
    await fakeBinaries(cached, ['bridge', 'host-local', 'loopback', 'portmap']);
    process.env.KUBE_OPERATORS_NODE_ASSETS = assets;
    process.env.KUBE_OPERATORS_CACHE = cache;
    const b = await resolveNodeBinaries(mustNotBuild);
    assert.equal(b.cniBinDir, cached);
    assert.equal(b.kubelet, join(assets, 'kubelet'));
    assert.equal(b.pause, join(assets, 'pause'));
  });

  it('a folder that does not exist is an error naming the variable, not a silent build', async () => {
    process.env.KUBE_OPERATORS_NODE_ASSETS = join(root, 'nowhere');
    process.env.KUBE_OPERATORS_CACHE = join(root, 'cache-none');
    await assert.rejects(resolveNodeBinaries(mustNotBuild), (err: unknown) => {
      assert.ok(err instanceof ControlPlaneError);
      assert.match(err.message, /KUBE_OPERATORS_NODE_ASSETS names .*nowhere, which does not exist/);
      return true;
    });
  });
});
