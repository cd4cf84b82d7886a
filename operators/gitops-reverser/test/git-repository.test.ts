/**
 * Repository against real git: one clone of one branch of a real bare repository over
 * file://. What the remote holds is read back with git itself (support/git-fixtures.ts).
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { GitError, GitErrorKind } from '../src/git/errors.ts';
import { Repository } from '../src/git/repository.ts';
import {
  BOT,
  git,
  initBare,
  logOf,
  pushAsSomeoneElse,
  seedBranch,
  tempDir,
  tipOf,
  treeOf,
} from './support/git-fixtures.ts';

interface Setup {
  readonly root: string;
  readonly bare: string;
  readonly url: string;
  repo(opts?: { branch?: string; dir?: string; now?: () => Date }): Repository;
}

async function setup(t: TestContext): Promise<Setup> {
  const root = await tempDir(t);
  const bare = await initBare(join(root, 'remote.git'));
  const url = `file://${bare}`;
  return {
    root,
    bare,
    url,
    repo: (opts = {}) =>
      new Repository({
        url,
        branch: opts.branch ?? 'main',
        dir: opts.dir ?? join(root, 'clone'),
        auth: { kind: 'none' },
        allowedProtocols: ['file'],
        now: opts.now,
      }),
  };
}

const exists = (p: string): Promise<boolean> =>
  lstat(p).then(
    () => true,
    () => false,
  );

describe('Repository (real git over file://)', () => {
  it('a machine or image without git says it cannot run git, not that the branch name is invalid', async (t) => {
    const s = await setup(t);
    const empty = join(s.root, 'no-git-here');
    await mkdir(empty);
    const path = process.env.PATH;
    process.env.PATH = empty;
    t.after(() => {
      process.env.PATH = path;
    });
    await assert.rejects(s.repo().open(), (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.match(err.message, /cannot run git/);
      assert.doesNotMatch(err.message, /not a valid branch name/);
      return true;
    });
  });

  it('real git over file://: an empty remote opens as an unborn branch that the first push creates', async (t) => {
    const s = await setup(t);
    const repo = s.repo();
    await repo.open();
    assert.equal(await repo.head(), undefined);
    assert.equal(await repo.remoteTip(), undefined);
    assert.deepEqual(await repo.listFiles(''), []);
    await repo.writeFile('ns/a.yaml', 'a\n');
    const sha = await repo.commit('first', BOT);
    assert.ok(sha);
    assert.deepEqual(await repo.push(), { kind: 'pushed' });
    assert.equal(await tipOf(s.bare), sha);
    assert.equal(await repo.remoteTip(), sha);
  });

  it('real git over file://: a branch the remote lacks starts as an orphan holding only what is written', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'README.md': 'main branch\n' });
    const repo = s.repo({ branch: 'mirror' });
    await repo.open();
    assert.deepEqual(await repo.listFiles(''), []);
    await repo.writeFile('ns/a.yaml', 'a\n');
    await repo.commit('mirror starts', BOT);
    assert.deepEqual(await repo.push(), { kind: 'pushed' });
    assert.deepEqual(await treeOf(s.bare, 'mirror'), new Map([['ns/a.yaml', 'a\n']]));
    assert.deepEqual(
      (await logOf(s.bare, 'mirror')).map((c) => c.parents),
      [[]],
    );
    assert.deepEqual(await treeOf(s.bare, 'main'), new Map([['README.md', 'main branch\n']]));
  });

  it('real git over file://: commits carry the committer as author and committer, dated by the injected clock', async (t) => {
    const s = await setup(t);
    const repo = s.repo({ now: () => new Date('2024-01-02T03:04:05Z') });
    await repo.open();
    await repo.writeFile('x.yaml', 'x\n');
    const sha = await repo.commit('dated', { name: 'Mirror Bot', email: 'mirror@example.com' });
    await repo.push();
    const shown = await git(s.bare, 'show', '-s', '--format=%an|%ae|%cn|%ce|%at|%ct|%s', sha ?? '');
    assert.equal(
      shown.trim(),
      'Mirror Bot|mirror@example.com|Mirror Bot|mirror@example.com|1704164645|1704164645|dated',
    );
  });

  it('real git over file://: commit answers undefined when the tree did not change', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'x.yaml': 'x\n' });
    const repo = s.repo();
    await repo.open();
    const before = await repo.head();
    await repo.writeFile('x.yaml', 'x\n');
    assert.equal(await repo.commit('nothing', BOT), undefined);
    assert.equal(await repo.head(), before);
  });

  it("real git over file://: the repository's .gitignore does not stop the mirror: ignored paths are committed anyway", async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { '.gitignore': '*.yaml\nsecrets/\n' });
    const repo = s.repo();
    await repo.open();
    await repo.writeFile('ns/deploy.yaml', 'kind: Deployment\n');
    await repo.writeFile('secrets/s.yaml', 'sops: true\n');
    assert.deepEqual(await repo.listFiles(''), ['.gitignore', 'ns/deploy.yaml', 'secrets/s.yaml']);
    await repo.commit('ignored but mirrored', BOT);
    await repo.push();
    assert.deepEqual([...(await treeOf(s.bare)).keys()].sort(), [
      '.gitignore',
      'ns/deploy.yaml',
      'secrets/s.yaml',
    ]);
  });

  it('real git over file://: deleteFile removes the file and the folders it leaves empty, and nothing else', async (t) => {
    const s = await setup(t);
    const repo = s.repo();
    await repo.open();
    await repo.writeFile('a/b/c/d.yaml', 'd\n');
    await repo.writeFile('a/keep.yaml', 'keep\n');
    await repo.commit('two files', BOT);
    await repo.deleteFile('a/b/c/d.yaml');
    assert.equal(await exists(join(s.root, 'clone/a/b')), false);
    assert.equal(await exists(join(s.root, 'clone/a/keep.yaml')), true);
    await repo.deleteFile('a/b/c/d.yaml');
    await repo.deleteFile('never/was.yaml');
    await repo.commit('delete', BOT);
    await repo.push();
    assert.deepEqual([...(await treeOf(s.bare)).keys()], ['a/keep.yaml']);
  });

  it('real git over file://: listFiles lists tracked and untracked files under a folder, not deleted ones', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'ns/x.yaml': 'x', 'ns/y.yaml': 'y', 'other/z.yaml': 'z' });
    const repo = s.repo();
    await repo.open();
    await repo.writeFile('ns/new/n.yaml', 'n');
    await repo.deleteFile('ns/y.yaml');
    assert.deepEqual(await repo.listFiles('ns'), ['ns/new/n.yaml', 'ns/x.yaml']);
    assert.deepEqual(await repo.listFiles('ns/'), ['ns/new/n.yaml', 'ns/x.yaml']);
    assert.deepEqual(await repo.listFiles(''), ['ns/new/n.yaml', 'ns/x.yaml', 'other/z.yaml']);
    assert.deepEqual(await repo.listFiles('n'), [], 'a folder is matched whole, not as a prefix');
    assert.equal(await repo.readFile('ns/x.yaml'), 'x');
    assert.equal(await repo.readFile('ns/y.yaml'), undefined);
  });

  it('real git over file://: a symlink in the repository is never followed, so nothing lands outside the clone', async (t) => {
    const s = await setup(t);
    const outside = join(s.root, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'victim.txt'), 'untouched\n');
    await seedBranch(s.root, s.bare, 'main', {}, { ns: outside, 'link.yaml': join(outside, 'victim.txt') });
    const repo = s.repo();
    await repo.open();
    for (const op of [
      () => repo.writeFile('ns/x.yaml', 'x'),
      () => repo.readFile('ns/victim.txt'),
      () => repo.deleteFile('ns/victim.txt'),
    ]) {
      await assert.rejects(op(), (e: unknown) => e instanceof GitError && /symlink/.test(e.message));
    }
    // A symlink at the path itself is replaced by a regular file, not written through.
    await repo.writeFile('link.yaml', 'mirrored\n');
    assert.equal(await readFile(join(outside, 'victim.txt'), 'utf8'), 'untouched\n');
    await repo.commit('replace the link', BOT);
    await repo.push();
    const mode = (await git(s.bare, 'ls-tree', 'main', 'link.yaml')).split(' ')[0];
    assert.equal(mode, '100644');
    assert.deepEqual(await git(s.bare, 'show', 'main:link.yaml'), 'mirrored\n');
    assert.deepEqual(await readFile(join(outside, 'victim.txt'), 'utf8'), 'untouched\n');
  });

  it('real git over file://: push never forces: a rejected push is an answer, and the other commit stays', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'a.yaml': 'a' });
    const repo = s.repo();
    await repo.open();
    const theirs = await pushAsSomeoneElse(s.root, s.url, { 'b.yaml': 'b' }, 'theirs');
    await repo.writeFile('c.yaml', 'c');
    await repo.commit('ours', BOT);
    const r = await repo.push();
    assert.equal(r.kind, 'rejected');
    assert.equal((r as { error: GitError }).error.kind, GitErrorKind.PushRejected);
    assert.equal(await tipOf(s.bare), theirs);
  });

  it('real git over file://: fetchAndReset discards local commits and stray files and lands on the remote tip', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'a.yaml': 'a' });
    const repo = s.repo();
    await repo.open();
    await repo.writeFile('local.yaml', 'l');
    await repo.commit('local only', BOT);
    await repo.writeFile('stray.yaml', 's');
    await repo.deleteFile('a.yaml');
    const theirs = await pushAsSomeoneElse(s.root, s.url, { 'b.yaml': 'b' }, 'theirs');
    await repo.fetchAndReset();
    assert.equal(await repo.head(), theirs);
    assert.deepEqual(await repo.listFiles(''), ['a.yaml', 'b.yaml']);
  });

  it('real git over file://: an existing clone of the URL is reused, one of another URL is replaced, a foreign folder is refused', async (t) => {
    const s = await setup(t);
    await seedBranch(s.root, s.bare, 'main', { 'a.yaml': 'a' });
    const dir = join(s.root, 'clone');
    await s.repo({ dir }).open();
    const marker = join(dir, '.git', 'reused-marker');
    await writeFile(marker, '');
    await s.repo({ dir }).open();
    assert.equal(await exists(marker), true, 'the same URL reuses the clone');

    const other = await initBare(join(s.root, 'other.git'));
    await seedBranch(s.root, other, 'main', { 'o.yaml': 'o' });
    const repoOther = new Repository({
      url: `file://${other}`,
      branch: 'main',
      dir,
      auth: { kind: 'none' },
      allowedProtocols: ['file'],
    });
    await repoOther.open();
    assert.equal(await exists(marker), false, 'another URL starts over');
    assert.deepEqual(await repoOther.listFiles(''), ['o.yaml']);

    const foreign = join(s.root, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'important.txt'), 'do not delete');
    await assert.rejects(
      s.repo({ dir: foreign }).open(),
      (e: unknown) => e instanceof GitError && e.kind === 'InvalidConfig',
    );
    assert.equal(await readFile(join(foreign, 'important.txt'), 'utf8'), 'do not delete');
  });

  it('real git over file://: an invalid branch name or committer is refused before anything is written', async (t) => {
    const s = await setup(t);
    await assert.rejects(
      s.repo({ branch: 'bad..name' }).open(),
      (e: unknown) => e instanceof GitError && e.kind === 'InvalidConfig',
    );
    const repo = s.repo();
    await repo.open();
    await repo.writeFile('x', 'x');
    await assert.rejects(
      repo.commit('m', { name: 'Evil <x@y>', email: 'e@example.com' }),
      /invalid committer/,
    );
    assert.equal(await repo.head(), undefined);
  });
});
