/**
 * Runs the git CLI: argv, never a shell string, an environment built by
 * credentials.ts, a deadline, and failures turned into typed {@link GitError}s.
 *
 * git starts helpers of its own (ssh, git-remote-https, pack-objects), so a command is
 * started in a process group of its own and the whole group is killed at the deadline:
 * killing git alone could leave an ssh connection hanging on.
 */
import { spawn } from 'node:child_process';
import { classifyGitFailure, GitError, GitErrorKind, redact } from './errors.ts';

/** The git executable, found on PATH. */
const GIT = 'git';

/** Largest stdout kept (ls-files of a large repository, a big file read with `show`). */
const MAX_BUFFER_BYTES = 256 * 1024 * 1024;

export interface RunOptions {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Text written to git's stdin (a commit message). */
  readonly input?: string;
  readonly timeoutMs: number;
  /** What the command is for, at the start of every error message: "fetch https://…". */
  readonly what: string;
  readonly secrets?: readonly string[];
  /** Exit codes that are answers rather than failures (1 of `diff --quiet`). */
  readonly okCodes?: readonly number[];
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

/** Runs `git <args>`; resolves on exit 0 or an `okCodes` code, rejects with a GitError otherwise. */
export function runGit(args: readonly string[], opts: RunOptions): Promise<RunResult> {
  const secrets = opts.secrets ?? [];
  return new Promise((resolve, reject) => {
    let timedOut = false;
    // spawn rather than execFile only because execFile does not pass `detached` on; still argv, no shell.
    const child = spawn(GIT, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let overflow = false;
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > MAX_BUFFER_BYTES) {
        overflow = true;
        killGroup(child.pid);
        return;
      }
      into.push(chunk);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, opts.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new GitError(GitErrorKind.Other, `${opts.what}: cannot run git: ${redact(e.message, secrets)}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (timedOut) {
        reject(
          new GitError(
            GitErrorKind.Unreachable,
            `${opts.what}: no answer within ${Math.round(opts.timeoutMs / 1000)}s`,
            redact(stderr, secrets),
          ),
        );
        return;
      }
      if (overflow) {
        reject(
          new GitError(GitErrorKind.Other, `${opts.what}: more than ${MAX_BUFFER_BYTES} bytes of output`),
        );
        return;
      }
      if (code === 0 || (code !== null && opts.okCodes?.includes(code))) {
        resolve({ stdout, stderr, code });
        return;
      }
      reject(classifyGitFailure(opts.what, stderr, secrets, stdout));
    });
    // git may exit before reading stdin (an early failure): that EPIPE is not the error to report.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** SIGKILL to git and every helper it started (they share its process group). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
