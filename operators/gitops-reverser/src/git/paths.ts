/**
 * Repository-relative paths, checked before any file operation: the paths come from
 * object names in the cluster and from a repository anyone with push access can fill,
 * so a path that climbs out of the clone (`..`, absolute) or into git's own folder
 * (`.git/hooks/…`) is refused rather than normalised into something else.
 */

/** Why a path was refused, as a short phrase for the error message. */
export type PathProblem = 'empty' | 'absolute' | 'dot-segment' | 'empty-segment' | 'git-dir' | 'nul';

export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';
  readonly path: string;
  readonly problem: PathProblem;
  constructor(path: string, problem: PathProblem) {
    super(`refusing path ${JSON.stringify(path)}: ${PROBLEM_TEXT[problem]}`);
    this.path = path;
    this.problem = problem;
  }
}

const PROBLEM_TEXT: Record<PathProblem, string> = {
  empty: 'a file path must not be empty',
  absolute: 'paths are relative to the repository root',
  'dot-segment': '"." and ".." segments could leave the repository',
  'empty-segment': 'empty segments ("a//b", a trailing "/") are not file paths',
  'git-dir': "git's own .git folder is not part of the tree",
  nul: 'a NUL character cannot be in a file name',
};

/** The problem with `path` as a repository file path, or undefined when it is safe. */
export function pathProblem(path: string, allowRoot = false): PathProblem | undefined {
  if (path === '') return allowRoot ? undefined : 'empty';
  if (path.includes('\0')) return 'nul';
  if (path.startsWith('/')) return 'absolute';
  for (const segment of path.split('/')) {
    if (segment === '') return 'empty-segment';
    if (segment === '.' || segment === '..') return 'dot-segment';
    // git itself refuses `.git` in any case at any depth (core.protectNTFS/HFS variants aside).
    if (segment.toLowerCase() === '.git') return 'git-dir';
  }
  return undefined;
}

/** `path` when it is a safe repository file path; throws {@link UnsafePathError} otherwise. */
export function safeRepoPath(path: string): string {
  const problem = pathProblem(path);
  if (problem) throw new UnsafePathError(path, problem);
  return path;
}

/** A folder inside the repository; `''` is the root. Trailing slashes are accepted and dropped. */
export function safeRepoDir(dir: string): string {
  const trimmed = dir.replace(/\/+$/, '');
  const problem = dir.startsWith('/') ? 'absolute' : pathProblem(trimmed, true);
  if (problem) throw new UnsafePathError(dir, problem);
  return trimmed;
}
