/**
 * The daemonless image build, end to end with the real Debian tools (mmdebstrap, umoci,
 * skopeo; installed when missing, as root) and the CNCF reference registry: the
 * weebo-link and decider images are built, unpacked, and their entrypoints run in a
 * chroot as the image's user, with a read-only root and a tmpfs /tmp as a pod would give
 * them; `npm run images -- --push` sends one to a local registry. The expected values
 * come from the repository's own files (package.json versions), the same command run from
 * the repository, the OCI layout's own index, or the registry's answer, never from the
 * builder.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  ensureDebianPackages,
  freePort,
  type Registry,
  startRegistry,
} from '@operators/controlplane/testing';
import { EXAMPLE_RULES_YAML } from '../../../operators/weebo-link/src/example-rules.ts';
import { buildImage, readManifest } from '../src/build.ts';
import { imageNamed } from '../src/catalog.ts';
import { MissingToolsError, requireTools } from '../src/tools.ts';

const execFileP = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..', '..');
const log = (): void => undefined;
const cli = join(repo, 'packages/images/src/cli.ts');

/** A command that exits non-zero, as execFile reports it. */
interface Failed {
  readonly code?: number;
  readonly stdout?: string;
  readonly stderr?: string;
}

/**
 * Runs `argv` in the unpacked `rootfs` as the image's user, on a read-only root with a
 * tmpfs /tmp (holding `files`), with only `env`: as a pod with readOnlyRootFilesystem
 * and an emptyDir on /tmp runs it. The host's `env` and `chroot` set it up; nothing of
 * the image but node runs.
 */
async function runInImage(
  rootfs: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  files: Readonly<Record<string, string>> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const staged = await mkdtemp(join(tmpdir(), 'images-test-files-'));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(join(staged, name), text);
    const script =
      'set -e; root="$1"; staged="$2"; shift 2; mount --bind "$root" "$root"; mount -o remount,bind,ro "$root"; ' +
      'mount -t tmpfs tmpfs "$root/tmp"; cp -a "$staged/." "$root/tmp/"; chmod -R a+rX "$root/tmp"; ' +
      'exec env -i "$@"';
    const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const args = ['--mount', 'sh', '-c', script, 'sh', rootfs, staged, ...vars];
    // `env -i` clears PATH too, so chroot is named by its path.
    const chroot = (await execFileP('sh', ['-c', 'command -v chroot'])).stdout.trim();
    args.push(chroot, '--userspec=65532:65532', rootfs, ...argv);
    try {
      const { stdout, stderr } = await execFileP('unshare', args, { timeout: 60_000 });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as Failed;
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  } finally {
    await rm(staged, { recursive: true, force: true });
  }
}

/** The configuration of the image tagged `tag` in `layout`. */
async function imageConfig(
  layout: string,
  tag: string,
): Promise<{ config: { Env: string[]; Entrypoint: string[]; User: string; WorkingDir: string } }> {
  const { manifest } = await readManifest(layout, tag);
  const [alg, hex] = manifest.config.digest.split(':');
  return JSON.parse(await readFile(join(layout, 'blobs', alg!, hex!), 'utf8'));
}

/** The environment of an image's configuration, as a record. */
function envOf(config: { Env: string[] }): Record<string, string> {
  return Object.fromEntries(config.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

describe('image build (real mmdebstrap and umoci)', () => {
  let out: string;
  let version: string;
  before(async () => {
    await ensureDebianPackages(['mmdebstrap', 'umoci', 'skopeo']);
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

  it('runs its entrypoint with --version and check-rules in a chroot as 65532, on a read-only root with a tmpfs /tmp, with no shell in it', async () => {
    const bundle = join(out, 'bundle');
    await execFileP('umoci', ['unpack', '--image', `${join(out, 'weebo-link')}:${version}`, bundle]);
    const rootfs = join(bundle, 'rootfs');
    await assert.rejects(stat(join(rootfs, 'bin/sh')), 'no shell in the image');
    const { config } = await imageConfig(join(out, 'weebo-link'), version);
    const env = envOf(config);
    const versionRun = await runInImage(rootfs, [...config.Entrypoint, '--version'], env);
    assert.equal(versionRun.code, 0, versionRun.stderr);
    assert.equal(versionRun.stdout.trim(), version);

    // check-rules loads the kit and CEL: the image's dependencies layer must hold them.
    // The oracle is the same command run from the repository with its development tree.
    const rulesFile = join(out, 'rules.yaml');
    await writeFile(rulesFile, EXAMPLE_RULES_YAML);
    const fromRepo = await execFileP(process.execPath, [
      join(repo, 'operators/weebo-link/bin/weebo-link.js'),
      'check-rules',
      rulesFile,
    ]);
    const inImage = await runInImage(rootfs, [...config.Entrypoint, 'check-rules', '/tmp/rules.yaml'], env, {
      'rules.yaml': EXAMPLE_RULES_YAML,
    });
    assert.equal(inImage.code, 0, inImage.stderr);
    assert.match(inImage.stdout, /: ok \(/);
    assert.equal(inImage.stdout, fromRepo.stdout);
  });

  it('the decider image runs its entrypoint with jemalloc preloaded, from the path its configuration names', async () => {
    const decider = imageNamed('exoledge-decider');
    const deciderVersion = JSON.parse(
      await readFile(join(repo, 'operators/exoledge/package.json'), 'utf8'),
    ).version;
    await buildImage(repo, decider, out, log);
    const layout = join(out, decider.name);
    const { config } = await imageConfig(layout, deciderVersion);
    const env = envOf(config);
    assert.match(env.LD_PRELOAD ?? '', /\/libjemalloc\.so\.2$/);
    const bundle = join(out, 'decider-bundle');
    await execFileP('umoci', ['unpack', '--image', `${layout}:${deciderVersion}`, bundle]);
    const rootfs = join(bundle, 'rootfs');
    await stat(join(rootfs, env.LD_PRELOAD!));
    // jemalloc prints its statistics at exit when MALLOC_CONF asks: glibc's malloc ignores
    // the variable, so the statistics prove jemalloc is the allocator node ran with. With
    // no site configured the decider refuses to start (exit 2) naming what is missing:
    // which also proves its modules load from the image.
    const run = await runInImage(rootfs, config.Entrypoint, { ...env, MALLOC_CONF: 'stats_print:true' });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stdout, /EXOLEDGE_SITE is not set/);
    assert.match(run.stderr, /Begin jemalloc statistics/);
    assert.doesNotMatch(run.stderr, /cannot be preloaded/);
  });

  describe('npm run images -- --push (the CNCF reference registry)', () => {
    let registry: Registry;
    before(async () => {
      registry = await startRegistry();
    });
    after(() => registry?.stop());

    it('pushes the image, and the registry serves back the manifest the layout names', async () => {
      const pushOut = await mkdtemp(join(tmpdir(), 'images-test-push-'));
      try {
        const { stdout } = await execFileP(process.execPath, [
          cli,
          'weebo-link',
          '--out',
          pushOut,
          '--push',
          `${registry.host}/ops`,
        ]);
        assert.match(stdout, new RegExp(`pushed ${registry.host}/ops/weebo-link:${version}`));
        const index = JSON.parse(await readFile(join(pushOut, 'weebo-link', 'index.json'), 'utf8')) as {
          manifests: { digest: string; annotations?: Record<string, string> }[];
        };
        const tagged = index.manifests.find(
          (m) => m.annotations?.['org.opencontainers.image.ref.name'] === version,
        );
        assert.ok(tagged, 'the layout names the version');
        const res = await fetch(`${registry.url}/v2/ops/weebo-link/manifests/${version}`, {
          headers: { Accept: 'application/vnd.oci.image.manifest.v1+json' },
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('docker-content-digest'), tagged.digest);
        assert.match(stdout, new RegExp(tagged.digest));
      } finally {
        await rm(pushOut, { recursive: true, force: true });
      }
    });

    it('a registry nobody answers at fails the command with one error naming the registry and what to check', async () => {
      const port = await freePort();
      const failed = await execFileP(process.execPath, [
        cli,
        'weebo-link',
        '--out',
        out,
        '--push',
        `127.0.0.1:${port}`,
      ]).then(
        () => undefined,
        (e: unknown) => e as Failed,
      );
      assert.ok(failed, 'the command must not report success');
      assert.equal(failed.code, 1);
      assert.match(
        failed.stderr ?? '',
        new RegExp(`pushing weebo-link to 127\\.0\\.0\\.1:${port}/weebo-link:${version} failed`),
      );
      assert.match(failed.stderr ?? '', /connection refused/);
      assert.match(failed.stderr ?? '', /is the registry reachable from here/);
    });
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
