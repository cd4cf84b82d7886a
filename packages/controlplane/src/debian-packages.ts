/**
 * Debian packages a test needs from the system (an sshd to push to, a redis-server to keep
 * state in): installed on the fly when running as root (CI, a dev container), otherwise a
 * failure that names the exact command to run. Test files run in parallel processes, so the install runs under a
 * cross-process lock and re-checks after taking it: the second process finds the
 * packages installed by the first.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** The lock folder: `mkdir` is atomic, and the holder's pid inside lets a dead holder's lock be taken over. */
const LOCK_DIR = join(tmpdir(), 'kube-operators-ts-apt.lock');

/** How often a waiting process looks at the lock again. */
const LOCK_POLL_MS = 500;

/** How long a lock folder may exist without a pid file before it counts as abandoned. */
const PID_GRACE_MS = 30_000;

/** apt-get can take minutes on a slow mirror; a test waiting longer than this has a stuck install. */
const APT_TIMEOUT_MS = 15 * 60_000;

/** `apt-get update` runs at most once per process. */
let updated = false;

/** Whether dpkg reports `pkg` as installed. */
export async function isInstalled(pkg: string): Promise<boolean> {
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax, not a JS template.
    const { stdout } = await execFileP('dpkg-query', ['-W', '-f=${Status}', pkg]);
    return stdout.trim() === 'install ok installed';
  } catch {
    // dpkg-query exits 1 for a package it has never heard of.
    return false;
  }
}

async function missing(pkgs: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of pkgs) if (!(await isInstalled(p))) out.push(p);
  return out;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding the lock folder; a lock whose holder died is removed, never waited on forever. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      await mkdir(LOCK_DIR);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(await readFile(join(LOCK_DIR, 'pid'), 'utf8').catch(() => ''), 10);
      // No pid long after the folder appeared: its maker died between mkdir and writing the pid.
      const age = Date.now() - ((await stat(LOCK_DIR).catch(() => undefined))?.mtimeMs ?? Date.now());
      const stale = Number.isFinite(pid) ? !isAlive(pid) : age > PID_GRACE_MS;
      if (stale) await rm(LOCK_DIR, { recursive: true, force: true });
      else await sleep(LOCK_POLL_MS);
    }
  }
  await writeFile(join(LOCK_DIR, 'pid'), String(process.pid));
  try {
    return await fn();
  } finally {
    await rm(LOCK_DIR, { recursive: true, force: true });
  }
}

/** The command a person runs to install `pkgs`. */
export function aptCommand(pkgs: readonly string[]): string {
  return `sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
}

/**
 * Makes sure the Debian packages are installed: nothing when they are, apt-get when
 * running as root, otherwise an error with the command to run.
 */
export async function ensureDebianPackages(pkgs: readonly string[]): Promise<void> {
  if ((await missing(pkgs)).length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `these tests need the Debian packages ${pkgs.join(', ')}; install them with:\n  ${aptCommand(pkgs)}`,
    );
  }
  await withLock(async () => {
    const still = await missing(pkgs);
    if (still.length === 0) return;
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const opts = { env, timeout: APT_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 };
    if (!updated) {
      await execFileP('apt-get', ['update'], opts);
      updated = true;
    }
    try {
      await execFileP('apt-get', ['install', '-y', '--no-install-recommends', ...still], opts);
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`apt-get install ${still.join(' ')} failed: ${e.stderr?.trim() || e.message}`);
    }
    const after = await missing(still);
    if (after.length > 0)
      throw new Error(`apt-get install finished but ${after.join(', ')} is still not installed`);
  });
}
