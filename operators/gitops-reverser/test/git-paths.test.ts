/**
 * Repository paths: accepted exactly when they name a file inside the repository as
 * written. The oracle is Node's own POSIX path resolution: a path is safe when resolving
 * it under a root gives `root/path` unchanged (nothing climbed out, nothing normalised
 * away), it is not inside `.git`, and it has no NUL.
 */
import assert from 'node:assert/strict';
import { posix } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { pathProblem, safeRepoDir, safeRepoPath, UnsafePathError } from '../src/git/paths.ts';

const ROOT = '/repo';

function oracleSafe(path: string): boolean {
  if (path === '' || path.includes('\0')) return false;
  if (posix.resolve(ROOT, path) !== `${ROOT}/${path}`) return false;
  return !path.split('/').some((s) => s.toLowerCase() === '.git');
}

/** Paths built from the pieces that matter: dots, slashes, `.git` in any case, NUL. */
const tricky = fc
  .array(
    fc.constantFrom('a', 'b.yaml', '.', '..', '...', '/', '.git', '.GIT', '.github', '\\', ' ', '\0', 'x..y'),
    {
      maxLength: 8,
    },
  )
  .map((parts) => parts.join(''));

describe('repository paths', () => {
  it('accepts exactly the paths that stay inside the repository as written', () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string()), (path) => {
        assert.equal(pathProblem(path) === undefined, oracleSafe(path), JSON.stringify(path));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses escapes with an error that names the path and the reason', () => {
    for (const [path, reason] of [
      ['../etc/passwd', /could leave the repository/],
      ['/etc/passwd', /relative to the repository root/],
      ['ns/./x', /could leave the repository/],
      ['.git/hooks/post-commit', /\.git folder/],
      ['ns/.Git/config', /\.git folder/],
      ['ns//x', /empty segments/],
      ['', /must not be empty/],
    ] as const) {
      assert.throws(
        () => safeRepoPath(path),
        (e: unknown) =>
          e instanceof UnsafePathError && reason.test(e.message) && e.message.includes(JSON.stringify(path)),
      );
    }
    assert.equal(safeRepoPath('team-a/apps/deploy.yaml'), 'team-a/apps/deploy.yaml');
    assert.equal(safeRepoPath('.github/CODEOWNERS'), '.github/CODEOWNERS');
  });

  it('takes folders with or without a trailing slash, the root as "", and refuses "/"', () => {
    assert.equal(safeRepoDir(''), '');
    assert.equal(safeRepoDir('team-a/'), 'team-a');
    assert.equal(safeRepoDir('team-a/apps'), 'team-a/apps');
    assert.throws(() => safeRepoDir('/'), UnsafePathError);
    assert.throws(() => safeRepoDir('../x/'), UnsafePathError);
  });
});
