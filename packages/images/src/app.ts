/**
 * The layers above the base, from this repository:
 *
 * - **node**: the pinned Node binary (`node` in the root `package.json`'s
 *   devDependencies, which `npm ci` installs from npm) at `/usr/local/bin/node`. The same
 *   binary the tests run, checked by its `--version`.
 * - **dependencies**: `APP_DIR` with the root `package.json` and lock, every workspace's
 *   `package.json`, and `node_modules` from `npm ci --omit=dev --ignore-scripts`: the
 *   production dependencies of every workspace, without the dev tools (TypeScript, Biome,
 *   the Node package itself). One layer for every image rather than one per workspace:
 *   the operators share the kit's dependencies (the Kubernetes client, pino, prom-client),
 *   so a node pulling several images fetches it once. Cached by the lock's content.
 * - **app**: the image's workspaces' `src/` and `bin/`, nothing else (no tests, charts,
 *   docs). The code is TypeScript, run by Node's type stripping, which refuses files under
 *   `node_modules`: so the workspaces stay at their own paths, which npm's links in
 *   `node_modules/@operators/` point to.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, copyFile, cp, mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { APP_DIR, type ImageSpec } from './catalog.ts';
import { cachedLayer, type Log } from './layer-cache.ts';
import { tarFolder } from './layer-tar.ts';

const execFileP = promisify(execFile);

/** Where the node binary goes in the image. */
export const NODE_PATH = '/usr/local/bin/node';

interface RootPackage {
  readonly devDependencies?: Record<string, string>;
  readonly workspaces?: readonly string[];
}

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The workspaces of the repository at `repo`, as the lock lists them (`packages/kit`, ...). */
export async function workspacesOf(repo: string): Promise<string[]> {
  const lock = await readJson<{ packages: Record<string, { link?: boolean }> }>(
    join(repo, 'package-lock.json'),
  );
  return Object.keys(lock.packages)
    .filter((k) => k !== '' && !k.startsWith('node_modules/'))
    .sort();
}

/** The pinned Node version, and its binary as `npm ci` installed it. */
export async function pinnedNode(repo: string): Promise<{ version: string; binary: string }> {
  const root = await readJson<RootPackage>(join(repo, 'package.json'));
  const version = root.devDependencies?.node;
  if (!version || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error('the root package.json pins no exact Node version in devDependencies.node');
  }
  const binary = join(repo, 'node_modules', 'node', 'bin', 'node');
  if (!(await exists(binary))) {
    throw new Error(
      `${binary} is missing: run npm ci first (the image takes the pinned Node ${version} it installs)`,
    );
  }
  const { stdout } = await execFileP(binary, ['--version']);
  if (stdout.trim() !== `v${version}`) {
    throw new Error(`${binary} is ${stdout.trim()}, the lock pins v${version}: run npm ci`);
  }
  return { version, binary };
}

/** The node layer's tar, in `work`. */
export async function nodeLayer(repo: string, work: string): Promise<string> {
  const { binary } = await pinnedNode(repo);
  const root = join(work, 'node-layer');
  const target = join(root, NODE_PATH);
  await mkdir(dirname(target), { recursive: true });
  await copyFile(binary, target);
  await chmod(target, 0o755);
  const out = join(work, 'node.tar');
  await tarFolder(root, out);
  return out;
}

/**
 * The files the dependencies layer is made from, relative to the repository: the root
 * manifest and lock and every workspace's manifest (what `npm ci` reads).
 */
export async function dependencyManifests(repo: string): Promise<string[]> {
  return ['package.json', 'package-lock.json', ...(await workspacesOf(repo)).map((w) => `${w}/package.json`)];
}

/** The dependencies layer's tar, from the cache when the lock and manifests did not change. */
export async function dependenciesLayer(repo: string, log: Log): Promise<string> {
  const manifests = await dependencyManifests(repo);
  const hash = createHash('sha256');
  for (const m of manifests)
    hash
      .update(m)
      .update('\0')
      .update(await readFile(join(repo, m)));
  const key = hash.digest('hex').slice(0, 16);
  return cachedLayer(`dependencies-${key}`, log, async (work, tar) => {
    const app = join(work, 'rootfs', APP_DIR);
    for (const m of manifests) {
      await mkdir(dirname(join(app, m)), { recursive: true });
      await copyFile(join(repo, m), join(app, m));
    }
    log('dependencies: npm ci --omit=dev --ignore-scripts');
    const started = performance.now();
    await execFileP('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: 'false' },
    }).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`npm ci --omit=dev failed: ${err.stderr?.trim() || err.message}`);
    });
    await tarFolder(join(work, 'rootfs'), tar);
    log(
      `dependencies: ${(await stat(tar)).size >> 20} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  });
}

/** The files of `spec`'s workspaces an image holds, relative to the repository (for the Dockerfile check too). */
export async function appPaths(repo: string, spec: ImageSpec): Promise<string[]> {
  const out: string[] = [];
  for (const w of spec.workspaces) {
    for (const sub of ['src', 'bin']) if (await exists(join(repo, w, sub))) out.push(`${w}/${sub}`);
  }
  return out;
}

/** The app layer's tar, in `work`. */
export async function appLayer(repo: string, spec: ImageSpec, work: string): Promise<string> {
  const root = join(work, 'app-layer');
  const app = join(root, APP_DIR);
  for (const p of await appPaths(repo, spec)) {
    await cp(join(repo, p), join(app, p), { recursive: true });
  }
  if (!(await exists(join(app, spec.entry)))) {
    throw new Error(
      `image ${spec.name}: its entry ${spec.entry} is not in its workspaces ${spec.workspaces.join(', ')}`,
    );
  }
  const out = join(work, 'app.tar');
  await tarFolder(root, out);
  return out;
}
