/**
 * BranchWriter against real git: a real bare repository over file://, the real git CLI
 * on both sides, and the remote's own `git log`, `ls-tree` and `reflog` as the judge.
 * Someone else's pushes come from a second real clone.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import { GitErrorKind, isGitError } from '../src/git/errors.ts';
import { UnsafePathError } from '../src/git/paths.ts';
import { Repository } from '../src/git/repository.ts';
import {
  BranchWriter,
  type CloseWindowResult,
  type CommitEvent,
  type CommitPolicy,
  type PushFailureEvent,
} from '../src/git/writer.ts';
import {
  BOT,
  initBare,
  isAncestor,
  logOf,
  pushAsSomeoneElse,
  tipHistory,
  tipOf,
  treeOf,
} from './support/git-fixtures.ts';

/** A window no test waits for: changes stay pending until closeWindow/flush. */
const LONG_WINDOW: CommitPolicy = { windowMs: 600_000 };

/** Fast retries, so a test about recovery does not wait a minute. */
const FAST_RETRY = { baseMs: 20, maxMs: 100, replayBaseMs: 5 };

interface Setup {
  readonly root: string;
  readonly bare: string;
  readonly url: string;
  readonly writer: BranchWriter;
  readonly commits: CommitEvent[];
  readonly failures: PushFailureEvent[];
}

async function setup(t: TestContext, opts: { bareName?: string; createBare?: boolean } = {}): Promise<Setup> {
  const root = await mkdtemp(join(tmpdir(), 'gitops-reverser-writer-'));
  const bare = join(root, opts.bareName ?? 'remote.git');
  if (opts.createBare ?? true) await initBare(bare);
  const url = `file://${bare}`;
  const commits: CommitEvent[] = [];
  const failures: PushFailureEvent[] = [];
  const writer = new BranchWriter({
    repository: new Repository({
      url,
      branch: 'main',
      dir: join(root, 'clone'),
      auth: { kind: 'none' },
      allowedProtocols: ['file'],
    }),
    committer: BOT,
    retry: FAST_RETRY,
    onCommit: (e) => commits.push(e),
    onPushFailure: (e) => failures.push(e),
  });
  // close() waits for a running git command, so the folder is removed only after it.
  t.after(async () => {
    await writer.close();
    await rm(root, { recursive: true, force: true });
  });
  return { root, bare, url, writer, commits, failures };
}

async function waitFor(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function committed(r: CloseWindowResult): string {
  assert.equal(r.kind, 'committed', `expected a commit, got ${JSON.stringify(r)}`);
  return (r as { sha: string }).sha;
}

const write = (path: string, content: string) => ({ path, content, op: 'UPDATE' as const });
const create = (path: string, content: string) => ({ path, content, op: 'CREATE' as const });
const remove = (path: string) => ({ path, content: null, op: 'DELETE' as const });

describe('BranchWriter (real git over file://)', () => {
  it('real git over file://: the changes of one window become one commit that lists them, when the window closes', async (t) => {
    const s = await setup(t);
    const windowMs = 150;
    const started = Date.now();
    s.writer.submit('team-a/app', create('team-a/app/deploy.yaml', 'kind: Deployment\n'), { windowMs });
    s.writer.submit('team-a/app', create('team-a/app/svc.yaml', 'kind: Service\n'), { windowMs });
    s.writer.submit('team-a/app', create('team-a/app/cm.yaml', 'kind: ConfigMap\n'), { windowMs });
    await waitFor('the window commit', () => s.commits.length === 1);
    assert.ok(Date.now() - started >= windowMs, 'the window stayed open for windowMs');

    const log = await logOf(s.bare);
    assert.equal(log.length, 1);
    assert.deepEqual([...(log[0]?.files ?? [])].sort(), [
      'team-a/app/cm.yaml',
      'team-a/app/deploy.yaml',
      'team-a/app/svc.yaml',
    ]);
    assert.equal(log[0]?.author, 'gitops-reverser <bot@example.com>');
    for (const line of [
      'CREATE team-a/app/deploy.yaml',
      'CREATE team-a/app/svc.yaml',
      'CREATE team-a/app/cm.yaml',
    ]) {
      assert.ok(log[0]?.message.includes(line), `message lists "${line}":\n${log[0]?.message}`);
    }
    assert.equal(s.commits[0]?.sha, log[0]?.sha);
    assert.equal(s.commits[0]?.pushed, true);
  });

  it('real git over file://: windowMs 0 commits each change on its own', async (t) => {
    const s = await setup(t);
    for (const n of [1, 2, 3])
      s.writer.submit('ns/x', create(`ns/x/${n}.yaml`, `n: ${n}\n`), { windowMs: 0 });
    await waitFor('three commits', () => s.commits.length === 3);
    const log = await logOf(s.bare);
    assert.deepEqual(
      log.map((c) => c.files),
      [['ns/x/3.yaml'], ['ns/x/2.yaml'], ['ns/x/1.yaml']],
    );
  });

  it('real git over file://: a later change to a path in the same window replaces the earlier one', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/x', create('ns/x/a.yaml', 'v: 1\n'), LONG_WINDOW);
    s.writer.submit('ns/x', write('ns/x/a.yaml', 'v: 2\n'), LONG_WINDOW);
    s.writer.submit('ns/x', create('ns/x/b.yaml', 'gone soon\n'), LONG_WINDOW);
    s.writer.submit('ns/x', remove('ns/x/b.yaml'), LONG_WINDOW);
    committed(await s.writer.closeWindow('ns/x'));
    assert.deepEqual(await treeOf(s.bare), new Map([['ns/x/a.yaml', 'v: 2\n']]));
    assert.equal((await logOf(s.bare)).length, 1);
  });

  it("real git over file://: a window belongs to one target: B's changes wait, and B's window opens only after A's commit", async (t) => {
    const s = await setup(t);
    const windowMs = 120;
    s.writer.submit('ns/a', create('ns/a/1.yaml', 'a\n'), { windowMs });
    s.writer.submit('ns/b', create('ns/b/1.yaml', 'b\n'), { windowMs });
    const times: number[] = [];
    await waitFor('A committed', () => s.commits.length >= 1);
    times.push(Date.now());
    await waitFor('B committed', () => s.commits.length >= 2);
    times.push(Date.now());
    assert.deepEqual(
      s.commits.map((c) => [c.target, c.paths]),
      [
        ['ns/a', ['ns/a/1.yaml']],
        ['ns/b', ['ns/b/1.yaml']],
      ],
    );
    // B's window opened after A's commit, so B's commit is at least a window later.
    assert.ok((times[1] ?? 0) - (times[0] ?? 0) >= windowMs - 20, `B waited its own window: ${times}`);
  });

  it("real git over file://: closeWindow for one target commits only its changes, never another target's pending ones", async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/1.yaml', 'a1\n'), LONG_WINDOW);
    s.writer.submit('ns/b', create('ns/b/1.yaml', 'b1\n'), LONG_WINDOW);
    s.writer.submit('ns/a', create('ns/a/2.yaml', 'a2\n'), LONG_WINDOW);
    s.writer.submit('ns/b', create('ns/b/2.yaml', 'b2\n'), LONG_WINDOW);

    const shaA = committed(await s.writer.closeWindow('ns/a', { message: 'CommitRequest ns/a: snapshot' }));
    assert.equal(await tipOf(s.bare), shaA);
    const [onlyA] = await logOf(s.bare);
    assert.deepEqual([...(onlyA?.files ?? [])].sort(), ['ns/a/1.yaml', 'ns/a/2.yaml']);
    assert.equal(onlyA?.message.trim(), 'CommitRequest ns/a: snapshot');
    assert.deepEqual([...(await treeOf(s.bare)).keys()].sort(), ['ns/a/1.yaml', 'ns/a/2.yaml']);
    assert.deepEqual(s.writer.unpushed(), [{ target: 'ns/b', paths: ['ns/b/1.yaml', 'ns/b/2.yaml'] }]);

    const shaB = committed(await s.writer.closeWindow('ns/b'));
    const log = await logOf(s.bare);
    assert.deepEqual(
      log.map((c) => [c.sha, [...c.files].sort()]),
      [
        [shaB, ['ns/b/1.yaml', 'ns/b/2.yaml']],
        [shaA, ['ns/a/1.yaml', 'ns/a/2.yaml']],
      ],
    );
  });

  it('real git over file://: interleaved changes of two targets leave the remote equal to a naive model, each commit touching one target', async (t) => {
    const target = fc.constantFrom('ns/a', 'ns/b');
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('submit' as const),
        target,
        file: fc.integer({ min: 0, max: 2 }),
        content: fc.option(fc.string({ maxLength: 8 }), { nil: null }),
      }),
      fc.record({ kind: fc.constant('close' as const), target }),
      fc.record({ kind: fc.constant('sleep' as const), ms: fc.integer({ min: 0, max: 25 }) }),
    );
    const windows = fc.record({ 'ns/a': fc.constantFrom(0, 10, 40), 'ns/b': fc.constantFrom(0, 10, 40) });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), windows, async (steps, windowMs) => {
        const s = await setup(t);
        // The naive model: the last desired content of each path; null deletes.
        const model = new Map<string, string>();
        const closes: Promise<CloseWindowResult>[] = [];
        for (const st of steps) {
          if (st.kind === 'sleep') await new Promise((r) => setTimeout(r, st.ms));
          else if (st.kind === 'close') closes.push(s.writer.closeWindow(st.target));
          else {
            const path = `${st.target}/file-${st.file}.yaml`;
            const policy = { windowMs: windowMs[st.target] };
            if (st.content === null) {
              model.delete(path);
              s.writer.submit(st.target, remove(path), policy);
            } else {
              model.set(path, st.content);
              s.writer.submit(st.target, write(path, st.content), policy);
            }
          }
        }
        for (const r of await Promise.all(closes)) assert.notEqual(r.kind, 'failed', JSON.stringify(r));
        await s.writer.flush();
        assert.deepEqual(s.writer.unpushed(), []);
        assert.deepEqual(
          new Map([...(await treeOf(s.bare))].sort()),
          new Map([...model].sort()),
          'the remote tree is the model',
        );
        for (const c of await logOf(s.bare)) {
          const owners = new Set(c.files.map((f) => f.split('/').slice(0, 2).join('/')));
          assert.equal(owners.size, 1, `commit ${c.sha} touches one target: ${c.files}`);
          assert.ok(c.parents.length <= 1, 'history is linear');
        }
        await s.writer.close();
      }),
      { numRuns: 12 },
    );
  });

  it("real git over file://: someone else's push between our commits is kept: our commit is replayed on top, history is linear, nothing is forced", async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/one.yaml', 'one\n'), LONG_WINDOW);
    const sha1 = committed(await s.writer.closeWindow('ns/a'));

    // Someone else pushes; our clone does not know, so our next push is rejected.
    const sha2 = await pushAsSomeoneElse(s.root, s.url, { 'README.md': 'by hand\n' }, 'add a README');

    s.writer.submit('ns/a', create('ns/a/two.yaml', 'two\n'), LONG_WINDOW);
    s.writer.submit('ns/a', write('ns/a/one.yaml', 'one, v2\n'), LONG_WINDOW);
    const sha3 = committed(await s.writer.closeWindow('ns/a'));

    assert.equal(s.writer.counters().rejections, 1);
    assert.equal(s.writer.counters().replays, 1);
    assert.equal(await tipOf(s.bare), sha3);
    assert.ok(await isAncestor(s.bare, sha2, sha3), "the other party's commit is an ancestor of the tip");
    const log = await logOf(s.bare);
    assert.deepEqual(
      log.map((c) => [c.sha, c.parents]),
      [
        [sha3, [sha2]],
        [sha2, [sha1]],
        [sha1, []],
      ],
    );
    assert.deepEqual([...(log[0]?.files ?? [])].sort(), ['ns/a/one.yaml', 'ns/a/two.yaml']);
    assert.deepEqual(
      await treeOf(s.bare),
      new Map([
        ['README.md', 'by hand\n'],
        ['ns/a/one.yaml', 'one, v2\n'],
        ['ns/a/two.yaml', 'two\n'],
      ]),
    );
    // The remote's reflog holds every value the branch ever had: each is a fast-forward of the one before.
    const history = await tipHistory(s.bare);
    assert.deepEqual(history, [sha1, sha2, sha3]);
    for (let i = 1; i < history.length; i++) {
      assert.ok(await isAncestor(s.bare, history[i - 1] as string, history[i] as string), 'no forced update');
    }
  });

  it('real git over file://: a remote that does not exist yet keeps the changes and pushes them, whole, once it exists', async (t) => {
    const s = await setup(t, { bareName: 'later.git', createBare: false });
    s.writer.submit('ns/a', create('ns/a/1.yaml', 'one\n'), LONG_WINDOW);
    s.writer.submit('ns/a', create('ns/a/2.yaml', 'two\n'), LONG_WINDOW);
    const r = await s.writer.closeWindow('ns/a');
    assert.equal(r.kind, 'failed');
    assert.ok(
      isGitError((r as { error: unknown }).error, GitErrorKind.RepositoryNotFound),
      JSON.stringify(r),
    );
    assert.ok(s.failures.length >= 1);
    assert.deepEqual(s.writer.unpushed(), [{ target: 'ns/a', paths: ['ns/a/1.yaml', 'ns/a/2.yaml'] }]);

    await initBare(s.bare);
    await waitFor('the retried commit', () => s.commits.length === 1);
    const log = await logOf(s.bare);
    assert.equal(log.length, 1);
    assert.deepEqual([...(log[0]?.files ?? [])].sort(), ['ns/a/1.yaml', 'ns/a/2.yaml']);
    assert.deepEqual(s.writer.unpushed(), []);
  });

  it('real git over file://: a remote that goes away keeps the window whole, deletes nothing else, and commits it once back', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/old.yaml', 'old\n'), LONG_WINDOW);
    s.writer.submit('ns/b', create('ns/b/keep.yaml', 'keep\n'), LONG_WINDOW);
    committed(await s.writer.closeWindow('ns/a'));
    committed(await s.writer.closeWindow('ns/b'));

    const away = `${s.bare}.away`;
    await rename(s.bare, away);
    s.writer.submit('ns/a', remove('ns/a/old.yaml'), LONG_WINDOW);
    s.writer.submit('ns/a', create('ns/a/new.yaml', 'new\n'), LONG_WINDOW);
    const r = await s.writer.closeWindow('ns/a');
    assert.equal(r.kind, 'failed');
    await waitFor('a few failed retries', () => s.failures.length >= 3);
    assert.ok(s.failures.every((f) => f.target === 'ns/a'));
    await rename(away, s.bare);

    await waitFor('the retried commit', () => s.commits.filter((c) => c.pushed).length === 3, 10_000);
    // The first attempt committed locally before the push failed: reported, then replaced.
    assert.equal(s.commits.filter((c) => !c.pushed).length, 1);
    const log = await logOf(s.bare);
    assert.equal(log.length, 3, 'no partial commit, no extra commit');
    assert.deepEqual([...(log[0]?.files ?? [])].sort(), ['ns/a/new.yaml', 'ns/a/old.yaml']);
    assert.deepEqual(
      await treeOf(s.bare),
      new Map([
        ['ns/a/new.yaml', 'new\n'],
        ['ns/b/keep.yaml', 'keep\n'],
      ]),
    );
  });

  it('real git over file://: closeWindow answers nothing-pending when no change arrives within the grace', async (t) => {
    const s = await setup(t);
    const started = Date.now();
    assert.deepEqual(await s.writer.closeWindow('ns/quiet', { graceMs: 80 }), { kind: 'nothing-pending' });
    assert.ok(Date.now() - started >= 75, 'it waited for the grace');
    assert.deepEqual(await s.writer.closeWindow('ns/quiet'), { kind: 'nothing-pending' });
    assert.equal(await tipOf(s.bare), undefined);
  });

  it("real git over file://: closeWindow waits within the grace for the target's first change and commits it", async (t) => {
    const s = await setup(t);
    const pending = s.writer.closeWindow('ns/late', { graceMs: 5_000, message: 'requested' });
    setTimeout(() => s.writer.submit('ns/late', create('ns/late/x.yaml', 'x\n'), LONG_WINDOW), 50);
    const sha = committed(await pending);
    assert.equal(await tipOf(s.bare), sha);
    assert.equal((await logOf(s.bare))[0]?.message.trim(), 'requested');
  });

  it('real git over file://: two CommitRequests waiting for the same change both get the one commit', async (t) => {
    const s = await setup(t);
    const first = s.writer.closeWindow('ns/late', { graceMs: 5_000 });
    const second = s.writer.closeWindow('ns/late', { graceMs: 5_000 });
    setTimeout(() => s.writer.submit('ns/late', create('ns/late/x.yaml', 'x\n'), LONG_WINDOW), 30);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(committed(a), committed(b));
    assert.equal((await logOf(s.bare)).length, 1);
  });

  it('real git over file://: closeWindow answers already-present, with the remote tip, when the changes leave the tree unchanged', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/x.yaml', 'same\n'), LONG_WINDOW);
    committed(await s.writer.closeWindow('ns/a'));
    const tip = await tipOf(s.bare);
    s.writer.submit('ns/a', write('ns/a/x.yaml', 'same\n'), LONG_WINDOW);
    assert.deepEqual(await s.writer.closeWindow('ns/a'), { kind: 'already-present', sha: tip });
    assert.equal((await logOf(s.bare)).length, 1);
  });

  it('real git over file://: already-present is judged against the remote now: a file someone else deleted is written again', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/x.yaml', 'same\n'), LONG_WINDOW);
    committed(await s.writer.closeWindow('ns/a'));
    const theirs = await pushAsSomeoneElse(s.root, s.url, { 'ns/a/x.yaml': null }, 'delete by hand');
    s.writer.submit('ns/a', write('ns/a/x.yaml', 'same\n'), LONG_WINDOW);
    const sha = committed(await s.writer.closeWindow('ns/a'));
    assert.ok(await isAncestor(s.bare, theirs, sha));
    assert.deepEqual(await treeOf(s.bare), new Map([['ns/a/x.yaml', 'same\n']]));
  });

  it('real git over file://: reads go through the queue and see what was pushed', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/x.yaml', 'x\n'), { windowMs: 0 });
    s.writer.submit('ns/a', create('ns/a/deep/y.yaml', 'y\n'), { windowMs: 0 });
    await s.writer.flush();
    assert.deepEqual(await s.writer.listFiles('ns/a'), ['ns/a/deep/y.yaml', 'ns/a/x.yaml']);
    assert.equal(await s.writer.readFile('ns/a/deep/y.yaml'), 'y\n');
    assert.equal(await s.writer.readFile('ns/a/none.yaml'), undefined);
    const theirs = await pushAsSomeoneElse(s.root, s.url, { 'ns/a/z.yaml': 'z\n' }, 'by hand');
    await s.writer.refresh();
    assert.deepEqual(await s.writer.listFiles('ns/a'), ['ns/a/deep/y.yaml', 'ns/a/x.yaml', 'ns/a/z.yaml']);
    assert.equal(await tipOf(s.bare), theirs);
  });

  it('real git over file://: paths that leave the repository or enter .git are refused at submit', async (t) => {
    const s = await setup(t);
    for (const path of ['../escape.yaml', '/etc/passwd', 'ns/../../x', '.git/config', 'ns//x', '']) {
      assert.throws(() => s.writer.submit('ns/a', create(path, 'x'), LONG_WINDOW), UnsafePathError, path);
    }
    assert.throws(
      () => s.writer.submit('ns/a', { path: 'ns/a/x', content: null, op: 'UPDATE' }, LONG_WINDOW),
      TypeError,
    );
    assert.deepEqual(s.writer.unpushed(), []);
  });

  it('real git over file://: close() commits nothing and returns the unpushed changes', async (t) => {
    const s = await setup(t);
    s.writer.submit('ns/a', create('ns/a/x.yaml', 'x\n'), LONG_WINDOW);
    s.writer.submit('ns/b', create('ns/b/y.yaml', 'y\n'), LONG_WINDOW);
    assert.deepEqual(await s.writer.close(), [
      { target: 'ns/a', paths: ['ns/a/x.yaml'] },
      { target: 'ns/b', paths: ['ns/b/y.yaml'] },
    ]);
    assert.equal(await tipOf(s.bare), undefined);
    assert.throws(() => s.writer.submit('ns/a', create('ns/a/z.yaml', 'z'), LONG_WINDOW), /closed/);
    assert.equal((await s.writer.closeWindow('ns/a')).kind, 'failed');
  });
});
