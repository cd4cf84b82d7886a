/**
 * One local clone of one branch of one remote, driven through the git CLI.
 *
 * The clone is a cache: everything that matters is on the remote, so `open()` and
 * `fetchAndReset()` make the clone equal to the remote branch (discarding local commits
 * and files), and a crash leaves nothing to recover. Only the branch is fetched, without
 * tags. A branch the remote does not have (or an empty remote) becomes an unborn local
 * branch with an empty tree, created on the remote by the first push: an orphan branch
 * holding only what is written here, not a copy of the default branch.
 *
 * Safety rules that hold for every method:
 * - Paths are repository-relative and checked (paths.ts); no method follows a symlink
 *   found in the clone (the repository's content is written by others), so a link named
 *   like a namespace cannot make a write land outside the clone.
 * - `push()` never forces. A rejection is an answer (`rejected`) for the caller to replay.
 * - The repository's `.gitignore` does not apply (`add --force`, `ls-files` without
 *   excludes): a mirror that silently skipped files would be wrong.
 * - Hooks never run (`core.hooksPath=/dev/null`, `--no-verify`).
 */
import { lstatSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  baseGitEnv,
  DEFAULT_ALLOWED_PROTOCOLS,
  type GitAuth,
  prepareAuth,
  remoteKind,
} from './credentials.ts';
import { GitError, GitErrorKind, isGitError } from './errors.ts';
import { safeRepoDir, safeRepoPath } from './paths.ts';
import { runGit } from './run.ts';

/** Deadline of a command that talks to the remote: a first clone of a large repository is slow. */
export const DEFAULT_NETWORK_TIMEOUT_MS = 300_000;

/** Deadline of a local command. */
const LOCAL_TIMEOUT_MS = 60_000;

/** Who makes the commits (author and committer are the same). */
export interface Committer {
  readonly name: string;
  readonly email: string;
}

/** The answer of a push: any other failure is thrown as a {@link GitError}. */
export type PushResult =
  | { readonly kind: 'pushed' }
  | { readonly kind: 'rejected'; readonly error: GitError };

export interface RepositoryOptions {
  readonly url: string;
  readonly branch: string;
  /**
   * The clone's folder, owned by this object: created when missing, re-initialised when
   * it is a clone of another URL. A non-empty folder that is not a git clone is refused,
   * never emptied.
   */
  readonly dir: string;
  readonly auth: GitAuth;
  /** Transports git may use; `file` is needed for `file://` URLs and local paths (tests). */
  readonly allowedProtocols?: readonly string[];
  readonly networkTimeoutMs?: number;
  /** Commit dates; the system clock by default. */
  readonly now?: () => Date;
}

/** `refs/heads/…` of a branch name, after git's own check of the name. */
function branchRef(branch: string): string {
  return `refs/heads/${branch}`;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** `@<seconds> +0000`, the raw date format git accepts in GIT_*_DATE. */
function gitDate(d: Date): string {
  return `@${Math.floor(d.getTime() / 1000)} +0000`;
}

/** Rejects names git would mangle (angle brackets, newlines) rather than committing under a surprising identity. */
function checkCommitter(c: Committer): void {
  for (const v of [c.name, c.email]) {
    if (v.trim() === '' || /[<>\n\r\0]/.test(v)) {
      throw new GitError(
        GitErrorKind.InvalidConfig,
        `invalid committer ${JSON.stringify(`${c.name} <${c.email}>`)}: name and email must be non-empty, without <, > or newlines`,
      );
    }
  }
}

export class Repository {
  readonly url: string;
  readonly branch: string;
  readonly dir: string;
  private readonly auth: GitAuth;
  private readonly allowedProtocols: readonly string[];
  private readonly networkTimeoutMs: number;
  private readonly now: () => Date;

  constructor(opts: RepositoryOptions) {
    this.url = opts.url;
    this.branch = opts.branch;
    this.dir = opts.dir;
    this.auth = opts.auth;
    this.allowedProtocols = opts.allowedProtocols ?? DEFAULT_ALLOWED_PROTOCOLS;
    this.networkTimeoutMs = opts.networkTimeoutMs ?? DEFAULT_NETWORK_TIMEOUT_MS;
    this.now = opts.now ?? (() => new Date());
    // Fail on construction for URLs that can never work (password in the URL, unknown form).
    remoteKind(opts.url);
  }

  /** Makes the clone exist and equal the remote branch (or an empty unborn branch). */
  async open(): Promise<void> {
    await this.local(
      ['check-ref-format', branchRef(this.branch)],
      `branch name ${JSON.stringify(this.branch)}`,
      {
        cwd: '/',
      },
    ).catch((err: unknown) => {
      // git not there at all (an image without it) is not the branch's fault: say so.
      if (err instanceof GitError && err.message.includes('cannot run git')) throw err;
      throw new GitError(
        GitErrorKind.InvalidConfig,
        `${JSON.stringify(this.branch)} is not a valid branch name`,
      );
    });
    if (!(await this.isCloneOfUrl())) await this.init();
    await this.local(['config', 'remote.origin.fetch', this.trackingRefspec()], 'configure the clone');
    await this.fetchAndReset();
  }

  /**
   * Fetches the branch and makes the clone equal to it: local commits, staged and
   * untracked files are discarded. Used before a replay and after any failure.
   */
  async fetchAndReset(): Promise<void> {
    let exists = true;
    try {
      await this.network(['fetch', '--prune', '--no-tags', '--quiet', 'origin'], `fetch ${this.url}`);
    } catch (err) {
      if (!isGitError(err, GitErrorKind.BranchNotFound)) throw err;
      exists = false;
    }
    await this.local(['symbolic-ref', 'HEAD', branchRef(this.branch)], 'point HEAD at the branch');
    if (exists) {
      await this.local(['reset', '--quiet', '--hard', this.trackingRef()], 'reset to the remote branch');
    } else {
      // The remote lost (or never had) the branch: start over from nothing.
      await this.local(['update-ref', '-d', branchRef(this.branch)], 'drop the local branch');
      await this.local(['update-ref', '-d', this.trackingRef()], 'drop the tracking ref');
      await this.local(['read-tree', '--empty'], 'empty the index');
    }
    await this.local(['clean', '-ffdxq'], 'remove untracked files');
  }

  /** Writes a file (creating its folders), replacing a symlink at that path rather than following it. */
  async writeFile(path: string, content: string): Promise<void> {
    const rel = safeRepoPath(path);
    const parts = rel.split('/');
    await this.checkNoLinkAbove(parts);
    const abs = join(this.dir, ...parts);
    await mkdir(join(this.dir, ...parts.slice(0, -1)), { recursive: true });
    const st = await lstat(abs).catch(() => undefined);
    if (st?.isSymbolicLink()) await unlink(abs);
    else if (st?.isDirectory()) {
      throw new GitError(GitErrorKind.Other, `cannot write ${rel}: the repository has a folder at that path`);
    }
    await writeFile(abs, content);
  }

  /**
   * Writes and deletes a whole batch, with the same guarantees as {@link writeFile} and
   * {@link deleteFile}, but checking and creating each folder once for the batch and
   * writing synchronously: a snapshot of 10,000 objects is 10,000 files, and eight
   * awaited file-system calls each cost more than the commit. Yields to the event loop
   * every few hundred files so that the process keeps answering probes and watches.
   */
  async applyChanges(
    changes: readonly { readonly path: string; readonly content: string | null }[],
  ): Promise<void> {
    const checkedDirs = new Set<string>();
    let n = 0;
    for (const c of changes) {
      if (++n % 256 === 0) await new Promise<void>((r) => setImmediate(r));
      if (c.content === null) {
        await this.deleteFile(c.path);
        continue;
      }
      const rel = safeRepoPath(c.path);
      const parts = rel.split('/');
      const dir = parts.slice(0, -1).join('/');
      if (!checkedDirs.has(dir)) {
        // A folder is trusted for the rest of the batch once checked: only this writer
        // changes the clone while a batch is applied.
        await this.checkNoLinkAbove(parts);
        mkdirSync(join(this.dir, ...parts.slice(0, -1)), { recursive: true });
        checkedDirs.add(dir);
      }
      const abs = join(this.dir, ...parts);
      const st = lstatSync(abs, { throwIfNoEntry: false });
      if (st?.isSymbolicLink()) unlinkSync(abs);
      else if (st?.isDirectory()) {
        throw new GitError(
          GitErrorKind.Other,
          `cannot write ${rel}: the repository has a folder at that path`,
        );
      }
      writeFileSync(abs, c.content);
    }
  }

  /** Deletes a file if present, then every parent folder it leaves empty. */
  async deleteFile(path: string): Promise<void> {
    const rel = safeRepoPath(path);
    const parts = rel.split('/');
    if (!(await this.checkNoLinkAbove(parts))) return;
    const abs = join(this.dir, ...parts);
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined) return;
    if (st.isDirectory()) {
      throw new GitError(GitErrorKind.Other, `cannot delete ${rel}: it is a folder, not a file`);
    }
    await unlink(abs);
    for (let depth = parts.length - 1; depth > 0; depth--) {
      try {
        await rmdir(join(this.dir, ...parts.slice(0, depth)));
      } catch (err) {
        if (errno(err) === 'ENOTEMPTY' || errno(err) === 'EEXIST' || errno(err) === 'ENOENT') return;
        throw err;
      }
    }
  }

  /** A file's content, or undefined when there is no such file. A symlink is not followed. */
  async readFile(path: string): Promise<string | undefined> {
    const rel = safeRepoPath(path);
    const parts = rel.split('/');
    if (!(await this.checkNoLinkAbove(parts))) return undefined;
    const abs = join(this.dir, ...parts);
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined || !st.isFile()) return undefined;
    return readFile(abs, 'utf8');
  }

  /** Files under `dir` (`''` for all), tracked or not, that exist in the working tree; sorted, repo-relative. */
  async listFiles(dir: string): Promise<string[]> {
    const rel = safeRepoDir(dir);
    const { stdout } = await this.local(
      ['--literal-pathspecs', 'ls-files', '-z', '--cached', '--others', '--', rel === '' ? '.' : rel],
      `list ${rel || 'the repository'}`,
    );
    const names = [...new Set(stdout.split('\0').filter((n) => n !== ''))];
    const present: string[] = [];
    for (const name of names) {
      // Tracked files deleted in the working tree (not yet committed) are listed by --cached.
      if (await lstat(join(this.dir, name)).catch(() => undefined)) present.push(name);
    }
    return present.sort();
  }

  /**
   * Commits the whole working tree; the sha, or undefined when the tree equals HEAD's
   * (nothing changed). Author and committer are both `committer`.
   */
  async commit(message: string, committer: Committer): Promise<string | undefined> {
    checkCommitter(committer);
    await this.local(['--literal-pathspecs', 'add', '--all', '--force', '--', '.'], 'stage the changes');
    const diff = await this.local(['diff', '--cached', '--quiet', '--no-ext-diff'], 'compare with HEAD', {
      okCodes: [1],
    });
    if (diff.code === 0) return undefined;
    const date = gitDate(this.now());
    await this.local(
      ['commit', '--quiet', '--no-verify', '--no-gpg-sign', '--cleanup=whitespace', '--file=-'],
      'commit',
      {
        input: message.trim() === '' ? 'gitops-reverser: mirror update' : message,
        env: {
          GIT_AUTHOR_NAME: committer.name,
          GIT_AUTHOR_EMAIL: committer.email,
          GIT_AUTHOR_DATE: date,
          GIT_COMMITTER_NAME: committer.name,
          GIT_COMMITTER_EMAIL: committer.email,
          GIT_COMMITTER_DATE: date,
        },
      },
    );
    const sha = await this.head();
    if (sha === undefined) throw new GitError(GitErrorKind.Other, 'commit: HEAD is missing after a commit');
    return sha;
  }

  /** Pushes HEAD to the branch, never forced. `rejected` when the remote moved on. */
  async push(): Promise<PushResult> {
    try {
      await this.network(
        ['push', '--porcelain', '--no-verify', 'origin', `HEAD:${branchRef(this.branch)}`],
        `push to ${this.url} ${this.branch}`,
      );
      return { kind: 'pushed' };
    } catch (err) {
      if (isGitError(err, GitErrorKind.PushRejected)) return { kind: 'rejected', error: err };
      throw err;
    }
  }

  /** The local branch's commit, or undefined while it is unborn. */
  async head(): Promise<string | undefined> {
    const { stdout, code } = await this.local(
      ['rev-parse', '--quiet', '--verify', 'HEAD^{commit}'],
      'read HEAD',
      {
        okCodes: [1],
      },
    );
    return code === 0 ? stdout.trim() : undefined;
  }

  /** The remote branch's commit as the remote says now, or undefined when it has no such branch. */
  async remoteTip(): Promise<string | undefined> {
    const ref = branchRef(this.branch);
    const { stdout } = await this.network(['ls-remote', '--heads', 'origin', ref], `list ${this.url}`);
    for (const line of stdout.split('\n')) {
      const [sha, name] = line.split('\t');
      if (name === ref && sha) return sha;
    }
    return undefined;
  }

  private trackingRef(): string {
    return `refs/remotes/origin/${this.branch}`;
  }

  private trackingRefspec(): string {
    return `+${branchRef(this.branch)}:${this.trackingRef()}`;
  }

  /** True when `dir` is a clone whose origin is this URL. */
  private async isCloneOfUrl(): Promise<boolean> {
    const st = await lstat(join(this.dir, '.git')).catch(() => undefined);
    if (!st?.isDirectory()) return false;
    const { stdout, code } = await this.local(['config', '--get', 'remote.origin.url'], 'read the clone', {
      okCodes: [1],
    }).catch(() => ({ stdout: '', code: 1 }));
    return code === 0 && stdout.trim() === this.url;
  }

  /** A fresh clone folder: init, origin, and settings that keep the host's habits out. */
  private async init(): Promise<void> {
    const entries = await readdir(this.dir).catch((err) => {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    });
    const gitDir = await lstat(join(this.dir, '.git')).catch(() => undefined);
    if (entries.length > 0 && !gitDir) {
      throw new GitError(
        GitErrorKind.InvalidConfig,
        `${this.dir} is not empty and not a git clone; refusing to replace it`,
      );
    }
    // A clone of another URL (the GitProvider changed): start over.
    if (entries.length > 0) await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    await this.local(
      ['init', '--quiet', '--template=', `--initial-branch=${this.branch}`, '.'],
      'init the clone',
    );
    const settings: readonly (readonly [string, string])[] = [
      ['remote.origin.url', this.url],
      ['core.hooksPath', '/dev/null'],
      ['core.autocrlf', 'false'],
      ['core.quotePath', 'false'],
      ['commit.gpgSign', 'false'],
      // A detached gc would outlive the command and race with a later rm of the folder.
      ['gc.autoDetach', 'false'],
    ];
    for (const [key, value] of settings) await this.local(['config', key, value], 'configure the clone');
  }

  /**
   * Checks that no existing folder on the way to the file is a symlink. False when a
   * folder on the way does not exist (so the file cannot either).
   */
  private async checkNoLinkAbove(parts: readonly string[]): Promise<boolean> {
    for (let depth = 1; depth < parts.length; depth++) {
      const st = await lstat(join(this.dir, ...parts.slice(0, depth))).catch(() => undefined);
      if (st === undefined) return false;
      if (st.isSymbolicLink() || !st.isDirectory()) {
        throw new GitError(
          GitErrorKind.Other,
          `refusing ${parts.join('/')}: ${parts.slice(0, depth).join('/')} in the repository is ${
            st.isSymbolicLink() ? 'a symlink' : 'a file'
          }, not a folder`,
        );
      }
    }
    return true;
  }

  private local(
    args: readonly string[],
    what: string,
    extra: {
      readonly okCodes?: readonly number[];
      readonly input?: string;
      readonly env?: Readonly<Record<string, string>>;
      readonly cwd?: string;
    } = {},
  ) {
    return runGit(args, {
      cwd: extra.cwd ?? this.dir,
      env: { ...baseGitEnv(this.allowedProtocols), ...extra.env },
      timeoutMs: LOCAL_TIMEOUT_MS,
      what,
      okCodes: extra.okCodes,
      input: extra.input,
    });
  }

  private async network(args: readonly string[], what: string) {
    await using auth = await prepareAuth(this.auth, this.url, this.allowedProtocols);
    return await runGit(args, {
      cwd: this.dir,
      env: auth.env,
      secrets: auth.secrets,
      timeoutMs: this.networkTimeoutMs,
      what,
    });
  }
}
