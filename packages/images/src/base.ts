/**
 * The base layer every image starts from: a distroless-style root holding only what the
 * Node binary links against (glibc, libgcc, libstdc++; `ldd node` lists nothing else),
 * extracted from Debian's own packages by `mmdebstrap --variant=extract`: no shell, no
 * package manager, no dpkg database. Node carries its own CA bundle and time zone data,
 * so neither ca-certificates nor tzdata is needed. Added: `/etc/passwd` and `/etc/group`
 * with root and the `nonroot` user (`IMAGE_USER`), and a world-writable `/tmp` for a
 * pod that mounts nothing there.
 *
 * Extra packages an image needs (the decider's jemalloc) are a layer of their own
 * (`extraPackagesLayer`), so the base stays one layer shared by every image.
 *
 * The suite is the build machine's own Debian release (`VERSION_CODENAME` of
 * /etc/os-release, `IMAGES_DEBIAN_SUITE` to choose), the mirror `IMAGES_DEBIAN_MIRROR`
 * or deb.debian.org. A base is cached by its recipe in the build cache; delete the
 * cache folder to take the mirror's newer packages.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IMAGE_USER } from './catalog.ts';
import { cachedLayer, type Log, recipeKey } from './layer-cache.ts';
import { tarFolder } from './layer-tar.ts';

const execFileP = promisify(execFile);

/** What the Node binary links against (`ldd`): libc6 holds glibc and the loader. */
export const BASE_PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6'] as const;

/** Bumped when the recipe changes, so a cached base of the old recipe is not reused. */
const BASE_RECIPE = 1;

/**
 * What an extracted root holds that a container never uses: documentation, locales,
 * glibc's character-set converters (Node converts with ICU), dpkg's and apt's leftovers,
 * the device nodes (the runtime mounts /dev).
 */
const PRUNED = [
  'dev',
  'etc/apt',
  'etc/dpkg',
  'var/lib/apt',
  'var/lib/dpkg',
  'var/cache',
  'var/log',
  'usr/share/doc',
  'usr/share/man',
  'usr/share/info',
  'usr/share/locale',
  'usr/share/lintian',
  'usr/share/gcc',
  'usr/share/gdb',
  'usr/lib/x86_64-linux-gnu/gconv',
  'usr/lib/aarch64-linux-gnu/gconv',
];

export interface DebianSource {
  readonly suite: string;
  readonly mirror: string;
}

export type { Log } from './layer-cache.ts';

/** The build machine's Debian release and the mirror, unless the environment says otherwise. */
export async function debianSource(): Promise<DebianSource> {
  const mirror = process.env.IMAGES_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
  const fromEnv = process.env.IMAGES_DEBIAN_SUITE;
  if (fromEnv) return { suite: fromEnv, mirror };
  const release = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const suite = /^VERSION_CODENAME=(\S+)$/m.exec(release)?.[1];
  if (!suite) {
    throw new Error(
      'cannot tell the Debian release of this machine (/etc/os-release); set IMAGES_DEBIAN_SUITE, e.g. bookworm',
    );
  }
  return { suite, mirror };
}

/** The base layer's tar, built once per recipe and then taken from the cache. */
export async function baseLayer(source: DebianSource, log: Log): Promise<string> {
  const key = recipeKey({ BASE_RECIPE, source, packages: BASE_PACKAGES, user: IMAGE_USER });
  return cachedLayer(`base-${source.suite}-${key}`, log, async (work, tar) => {
    const root = join(work, 'rootfs');
    await mkdir(root);
    log(
      `base: mmdebstrap --variant=extract ${BASE_PACKAGES.join(',')} from ${source.suite} (${source.mirror})`,
    );
    const started = performance.now();
    await execFileP(
      'mmdebstrap',
      [
        '--variant=extract',
        `--include=${BASE_PACKAGES.join(',')}`,
        '--quiet',
        source.suite,
        `${root}/`,
        source.mirror,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    ).catch((err: { stderr?: string; message: string }) => {
      throw new Error(
        `mmdebstrap failed (is ${source.mirror} reachable?): ${err.stderr?.trim() || err.message}`,
      );
    });
    for (const p of PRUNED) await rm(join(root, p), { recursive: true, force: true });
    await writeFile(
      join(root, 'etc/passwd'),
      `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${IMAGE_USER}:${IMAGE_USER}:nonroot:/nonexistent:/sbin/nologin\n`,
    );
    await writeFile(join(root, 'etc/group'), `root:x:0:\nnonroot:x:${IMAGE_USER}:\n`);
    await mkdir(join(root, 'tmp'), { recursive: true });
    await chmod(join(root, 'tmp'), 0o1777);
    await tarFolder(root, tar);
    log(`base: ${(await stat(tar)).size >> 20} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  });
}

/**
 * A layer of `packages` alone, unpacked with `dpkg-deb -x` from the `.deb`s `apt-get
 * download` fetches for this machine's architecture (their dependencies must be in the
 * base: the image's run check shows it). Cached like the base.
 */
export async function extraPackagesLayer(packages: readonly string[], log: Log): Promise<string> {
  const key = recipeKey({ BASE_RECIPE, packages });
  // The recipe's hash names the layer: a long package list would exceed a file name's length.
  const label =
    packages.length <= 3
      ? packages.join('+')
      : `${packages.slice(0, 2).join('+')}+${packages.length - 2}-more`;
  return cachedLayer(`extra-${label}-${key}`, log, async (work, tar) => {
    const debs = join(work, 'debs');
    const root = join(work, 'rootfs');
    await mkdir(debs);
    await mkdir(root);
    log(`extra layer: apt-get download ${packages.join(' ')}`);
    await execFileP('apt-get', ['download', ...packages], { cwd: debs }).catch(
      (err: { stderr?: string; message: string }) => {
        throw new Error(
          `apt-get download ${packages.join(' ')} failed: ${err.stderr?.trim() || err.message}`,
        );
      },
    );
    for (const deb of (await readdir(debs)).filter((f) => f.endsWith('.deb')).sort()) {
      await execFileP('dpkg-deb', ['-x', join(debs, deb), root]);
    }
    for (const p of PRUNED) await rm(join(root, p), { recursive: true, force: true });
    await tarFolder(root, tar);
  });
}
