/**
 * Real git repositories for tests, and the real git CLI as the judge of what a remote
 * holds: expected values in the tests come from `git ls-tree`, `git show`, `git log` and
 * `git reflog` run on the bare remote, never from the code under test.
 *
 * Every git here runs with the machine's and the user's configuration switched off, so a
 * developer's `~/.gitconfig` cannot change a test's outcome.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** The identity of "someone else" pushing to the remote in tests. */
export const OTHER_PARTY = { name: 'Someone Else', email: 'someone@example.com' } as const;

/** The operator's committer identity in tests. */
export const BOT = { name: 'gitops-reverser', email: 'bot@example.com' } as const;

function isolatedEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/nonexistent',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: OTHER_PARTY.name,
    GIT_AUTHOR_EMAIL: OTHER_PARTY.email,
    GIT_COMMITTER_NAME: OTHER_PARTY.name,
    GIT_COMMITTER_EMAIL: OTHER_PARTY.email,
  };
}

/** Runs git in `cwd` and returns stdout; throws with stderr on failure. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileP('git', args, { cwd, env: isolatedEnv(), maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`git ${args.join(' ')} in ${cwd}: ${e.stderr || e.message}`);
  }
}

/** A temp folder removed when the test ends. */
export async function tempDir(t: TestContext, prefix = 'gitops-reverser-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * An empty bare repository at `path` whose default branch is `main`. Ref updates are
 * logged (bare repositories do not log by default), so a test can replay the branch's
 * whole history of tips and prove that no update was forced.
 */
export async function initBare(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  await git(path, 'init', '--quiet', '--bare', '--initial-branch=main');
  await git(path, 'config', 'core.logAllRefUpdates', 'always');
  return path;
}

/** The tip of `branch` in a bare repository, or undefined when it has no such branch. */
export async function tipOf(bare: string, branch = 'main'): Promise<string | undefined> {
  const out = await git(bare, 'for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`);
  return out.trim() || undefined;
}

/** Every file of `branch` with its content, as git stores it. */
export async function treeOf(bare: string, branch = 'main'): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  if ((await tipOf(bare, branch)) === undefined) return files;
  const names = (await git(bare, 'ls-tree', '-r', '-z', '--name-only', branch)).split('\0').filter(Boolean);
  for (const name of names) files.set(name, await git(bare, 'show', `${branch}:${name}`));
  return files;
}

export interface LoggedCommit {
  readonly sha: string;
  readonly parents: readonly string[];
  readonly author: string;
  readonly message: string;
  /** Files the commit changed relative to its parent. */
  readonly files: readonly string[];
}

/** The commits of `branch`, newest first. */
export async function logOf(bare: string, branch = 'main'): Promise<LoggedCommit[]> {
  if ((await tipOf(bare, branch)) === undefined) return [];
  const shas = (await git(bare, 'rev-list', branch)).split('\n').filter(Boolean);
  const out: LoggedCommit[] = [];
  for (const sha of shas) {
    const parents = (await git(bare, 'show', '-s', '--format=%P', sha)).trim().split(' ').filter(Boolean);
    const author = (await git(bare, 'show', '-s', '--format=%an <%ae>', sha)).trim();
    const message = await git(bare, 'show', '-s', '--format=%B', sha);
    const files = (await git(bare, 'diff-tree', '--root', '--no-commit-id', '-r', '-z', '--name-only', sha))
      .split('\0')
      .filter(Boolean);
    out.push({ sha, parents, author, message, files });
  }
  return out;
}

/** The successive values of `branch` in the remote's reflog, oldest first. */
export async function tipHistory(bare: string, branch = 'main'): Promise<string[]> {
  const out = await git(bare, 'reflog', 'show', '--format=%H', `refs/heads/${branch}`);
  return out.split('\n').filter(Boolean).reverse();
}

/** True when `ancestor` is `descendant` or one of its ancestors in `bare`. */
export async function isAncestor(bare: string, ancestor: string, descendant: string): Promise<boolean> {
  try {
    await execFileP('git', ['merge-base', '--is-ancestor', ancestor, descendant], {
      cwd: bare,
      env: isolatedEnv(),
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Someone else's push: clones `url` into a temp folder under `scratch`, writes (or, with
 * null, deletes) files, commits as {@link OTHER_PARTY} and pushes normally. The sha pushed.
 */
export async function pushAsSomeoneElse(
  scratch: string,
  url: string,
  files: Readonly<Record<string, string | null>>,
  message: string,
  branch = 'main',
): Promise<string> {
  const dir = await mkdtemp(join(scratch, 'other-'));
  await git(dir, 'clone', '--quiet', '--branch', branch, url, '.');
  for (const [path, content] of Object.entries(files)) {
    if (content === null) await git(dir, 'rm', '--quiet', '--', path);
    else {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), content);
      await git(dir, 'add', '--', path);
    }
  }
  await git(dir, 'commit', '--quiet', '-m', message);
  await git(dir, 'push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
  const sha = (await git(dir, 'rev-parse', 'HEAD')).trim();
  await rm(dir, { recursive: true, force: true });
  return sha;
}

/**
 * Pushes a first commit to `branch` of a bare repository (empty or not), as someone
 * else: files by content, and symlinks by target for `links`. The sha pushed.
 */
export async function seedBranch(
  scratch: string,
  bare: string,
  branch: string,
  files: Readonly<Record<string, string>>,
  links: Readonly<Record<string, string>> = {},
): Promise<string> {
  const dir = await mkdtemp(join(scratch, 'seed-'));
  await git(dir, 'init', '--quiet', `--initial-branch=${branch}`);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  for (const [path, target] of Object.entries(links)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await symlink(target, join(dir, path));
  }
  await git(dir, 'add', '--all', '--force');
  await git(dir, 'commit', '--quiet', '-m', `seed ${branch}`);
  await git(dir, 'push', '--quiet', bare, `HEAD:refs/heads/${branch}`);
  const sha = (await git(dir, 'rev-parse', 'HEAD')).trim();
  await rm(dir, { recursive: true, force: true });
  return sha;
}
