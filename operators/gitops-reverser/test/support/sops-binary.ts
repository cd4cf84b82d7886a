/**
 * The real `sops` CLI, so that tests check our SOPS files against sops itself
 * rather than against our own reading of its format.
 *
 * Built once from its Go module (the module proxy is the only network the tests
 * use) into the project's binary cache, `<cacheRoot>/bin/sops-<version>/sops`, the
 * way packages/controlplane builds helm: into a temporary folder first and renamed
 * into place when complete, so an interrupted build never looks cached, under a
 * lock so that parallel test processes build it once. A cold build downloads sops'
 * module graph and compiles it: minutes, once per machine and version.
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, runGo, withLock } from '@operators/controlplane';

const exec = promisify(execFile);

/** The sops release the tests hold our files to. Its cache folder is per version, so a bump rebuilds. */
export const SOPS_VERSION = 'v3.13.3';
/** The Go package of the sops command. */
const SOPS_PACKAGE = 'github.com/getsops/sops/v3/cmd/sops';
export type Log = (message: string) => void;

function defaultLog(message: string): void {
  process.stderr.write(`[sops] ${message}\n`);
}

/** The path of the sops binary, building it first if the cache does not hold it. */
export async function sopsBinary(log: Log = defaultLog): Promise<string> {
  const bin = join(cacheRoot(), 'bin', `sops-${SOPS_VERSION}`, 'sops');
  if (await isExecutable(bin)) return bin;
  await withLock(join(cacheRoot(), 'locks', `sops-${SOPS_VERSION}`), log, async () => {
    if (!(await isExecutable(bin))) await buildSops(dirname(bin), log);
  });
  return bin;
}

async function buildSops(dest: string, log: Log): Promise<void> {
  log(`building sops ${SOPS_VERSION} with Go into ${dest} (a few minutes the first time)`);
  const started = Date.now();
  const out = join(cacheRoot(), 'build', `sops-${SOPS_VERSION}`, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  await runGo(['install', '-trimpath', '-ldflags', '-s -w', `${SOPS_PACKAGE}@${SOPS_VERSION}`], {
    // No go.mod around: `go install pkg@version` resolves the module's own requirements.
    cwd: tmpdir(),
    env: { CGO_ENABLED: '0', GOBIN: out },
    purpose: `building sops ${SOPS_VERSION}`,
  });
  const built = join(out, 'sops');
  const { stdout } = await exec(built, ['--version', '--disable-version-check']);
  if (!stdout.includes(SOPS_VERSION.replace(/^v/, ''))) {
    throw new Error(`the sops just built reports "${stdout.trim()}", not ${SOPS_VERSION}`);
  }
  await mkdir(dest, { recursive: true });
  await rename(built, join(dest, 'sops'));
  log(`sops ${SOPS_VERSION} built in ${Math.round((Date.now() - started) / 1000)} s`);
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function _isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface SopsRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs sops in an empty folder with an empty HOME, so that no `.sops.yaml` and no
 * age key file of the machine takes part: only the identity given (as
 * SOPS_AGE_KEY) can decrypt. Resolves with the exit code; never rejects on one.
 */
export async function runSops(
  bin: string,
  args: readonly string[],
  opts: { readonly ageKey?: string; readonly files?: Readonly<Record<string, string>> } = {},
): Promise<SopsRun> {
  const dir = await mkdtemp(join(tmpdir(), 'sops-test-'));
  for (const [name, text] of Object.entries(opts.files ?? {})) await writeFile(join(dir, name), text);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, '.config'),
    SOPS_DISABLE_VERSION_CHECK: 'true',
  };
  if (opts.ageKey !== undefined) env.SOPS_AGE_KEY = opts.ageKey;
  try {
    return await new Promise((resolve, reject) => {
      execFile(bin, args, { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(err);
        resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
