/**
 * The daemonless image build, end to end with the real Debian tools (mmdebstrap, umoci;
 * installed when missing, as root): the weebo-link image is built, unpacked, and its
 * entrypoint run in a chroot as the image's user, with a read-only root and a tmpfs /tmp
 * as a pod would give it. The expected values come from the repository's own files
 * (package.json versions), not from the builder.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureDebianPackages } from '@operators/controlplane/testing';
import { buildImage, readManifest } from '../src/build.ts';
import { imageNamed } from '../src/catalog.ts';
import { MissingToolsError, requireTools } from '../src/tools.ts';

const execFileP = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..', '..');
const log = (): void => undefined;

describe('image build (real mmdebstrap and umoci)', () => {
  let out: string;
  let version: string;
  before(async () => {
    await ensureDebianPackages(['mmdebstrap', 'umoci']);
    out = await mkdtemp(join(tmpdir(), 'images-test-'));
    version = JSON.parse(await readFile(join(repo, 'operators/weebo-link/package.json'), 'utf8')).version;
  });
  after(() => rm(out, { recursive: true, force: true }));

  it('builds weebo-link as an OCI layout tagged with its version, running node as 65532 from /app', async () => {
    const built = await buildImage(repo, imageNamed('weebo-link'), out, log);
    assert.equal(built.tag, version);
    const { digest, manifest } = await readManifest(join(out, 'weebo-link'), version);
    assert.equal(digest, built.digest);
    const [alg, hex] = manifest.config.digest.split(':');
    const config = JSON.parse(await readFile(join(out, 'weebo-link', 'blobs', alg!, hex!), 'utf8'));
    assert.equal(config.config.User, '65532:65532');
    assert.equal(config.config.WorkingDir, '/app');
    assert.deepEqual(config.config.Entrypoint, [
      '/usr/local/bin/node',
      '/app/operators/weebo-link/bin/weebo-link.js',
    ]);
    const total = manifest.layers.reduce((n: number, l: { size: number }) => n + l.size, 0);
    assert.ok(total < 120 * 1024 * 1024, `compressed size ${total} under 120 MB`);
    // Nothing of the build left beside the layout.
    assert.deepEqual(await readdir(out), ['weebo-link']);
  });

  it('gives the same digest when built twice from the same sources', async () => {
    const again = await mkdtemp(join(tmpdir(), 'images-test-again-'));
    try {
      const a = await readManifest(join(out, 'weebo-link'), version);
      const b = await buildImage(repo, imageNamed('weebo-link'), again, log);
      assert.equal(b.digest, a.digest);
    } finally {
      await rm(again, { recursive: true, force: true });
    }
  });

  it('runs its entrypoint with --version in a chroot as 65532, on a read-only root with a tmpfs /tmp, with no shell in it', async () => {
    const bundle = join(out, 'bundle');
    await execFileP('umoci', ['unpack', '--image', `${join(out, 'weebo-link')}:${version}`, bundle]);
    const rootfs = join(bundle, 'rootfs');
    await assert.rejects(stat(join(rootfs, 'bin/sh')), 'no shell in the image');
    const script =
      'set -e; mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; mount -t tmpfs tmpfs "$1/tmp"; ' +
      'exec chroot --userspec=65532:65532 "$1" /usr/local/bin/node /app/operators/weebo-link/bin/weebo-link.js --version';
    const { stdout } = await execFileP('unshare', ['--mount', 'sh', '-c', script, 'sh', rootfs]);
    assert.equal(stdout.trim(), version);
  });

  it('refuses to start without a tool, naming it and the apt-get command that installs it', async () => {
    const tool = { command: 'no-such-tool-for-images', debianPackage: 'no-such-package', purpose: 'a test' };
    await assert.rejects(requireTools([tool]), (err: unknown) => {
      assert.ok(err instanceof MissingToolsError);
      assert.match(err.message, /no-such-tool-for-images \(a test\)/);
      assert.match(err.message, /apt-get install -y --no-install-recommends no-such-package/);
      return true;
    });
  });

  it('fails a build whose entry is not in its workspaces, leaving no image behind', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'images-test-bad-'));
    try {
      const spec = { ...imageNamed('weebo-link'), name: 'broken', entry: 'operators/weebo-link/src/nope.ts' };
      await assert.rejects(buildImage(repo, spec, bad, log), /its entry operators\/weebo-link\/src\/nope.ts/);
      assert.deepEqual(await readdir(bad), []);
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });
});
