/**
 * The only writer of one branch of one remote: every git operation for that branch runs
 * in one serial queue, and changes are grouped into commits by "commit windows".
 *
 * Windows. A window belongs to one target (a `namespace/name` key) at a time. The first
 * change of target A opens A's window; it closes `windowMs` after it opened, and all of
 * A's changes so far become one commit (later changes to a path replace earlier ones:
 * the mirror needs the latest content, not every step). Changes of B meanwhile wait in
 * B's pending set; B's window opens only once A's commit is done (pushed, or failed and
 * set aside for a retry), so a commit never mixes targets. `windowMs` 0 commits each
 * pending path on its own. `closeWindow()` (a CommitRequest) commits a target's
 * pending changes at once, whatever window is open.
 *
 * Pushing. A commit is pushed at once, never forced. When the push is rejected (someone
 * else pushed), the writer fetches, resets to the remote tip and re-applies the batch —
 * the desired content of each path, kept until pushed — then commits and pushes again,
 * a few times with backoff. The other party's commit survives and history stays linear.
 *
 * Failures. An unreachable remote, refused credentials or an exhausted replay keep the
 * batch whole (a window commits all of its changes or none) and retry it with backoff;
 * the clone is reset to the remote before the next attempt, so a half-applied batch is
 * never committed and nothing on the remote is deleted by an error path. Batches are
 * pushed in the order they were sealed; while the oldest fails, the others wait behind it
 * (the failure is nearly always the remote's, not the batch's). A batch that can never
 * apply — its path blocked by a symlink or by a file where a folder is needed, a push the
 * server declines (protected branch) — blocks the branch until the repository or the
 * settings are fixed, reporting each attempt through `onPushFailure`; dropping it would
 * lose data silently. Every waiting closeWindow hears of each failure at once.
 *
 * Already present. A batch that leaves the tree unchanged makes no commit. For a window
 * closed by its timer this is judged against the clone (no extra round trip); for a
 * closeWindow caller it is checked against the remote tip now, and a remote that moved
 * (someone deleted our file) gets the batch replayed on top instead.
 *
 * The queue outlives the process. With a `journal` file, every change is appended to it
 * (one JSON line, the content as it goes to Git: a Secret only encrypted) before it is
 * queued, and the file is emptied once nothing is left to push. A writer created over a
 * journal replays it first, so what a crash, a failed graceful stop or a replaced writer
 * (new URL, credentials or committer) left unpushed is pushed by its successor, deletes
 * included. Without a journal the queue lives in memory only.
 *
 * The desired branch. `listDesiredFiles` and `readDesiredFile` answer for the branch as
 * it will be once the queue is pushed (the latest queued change of each path over the
 * branch): a re-list compares with that, not with a branch that still lacks the queue.
 * `close()` stops everything and returns what was not pushed (still in the journal).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { GitError, GitErrorKind } from './errors.ts';
import { safeRepoDir, safeRepoPath } from './paths.ts';
import type { Committer, PushResult, Repository } from './repository.ts';

/** What happened to a file in the cluster. */
export type ChangeOp = 'CREATE' | 'UPDATE' | 'DELETE';

/** The desired state of one file: its content, or null to delete it. */
export interface FileChange {
  readonly path: string;
  readonly content: string | null;
  readonly op: ChangeOp;
}

/** How a target's changes are grouped. */
export interface CommitPolicy {
  /** How long a window stays open from its first change; 0 commits each change on its own. */
  readonly windowMs: number;
  /** The commit message for a window's changes; {@link defaultCommitMessage} otherwise. */
  readonly message?: (changes: readonly FileChange[]) => string;
}

/** The answer to {@link BranchWriter.closeWindow}. */
export type CloseWindowResult =
  | { readonly kind: 'committed'; readonly sha: string }
  | { readonly kind: 'nothing-pending' }
  /** The changes leave the tree as the remote has it; sha is the remote tip (undefined: no branch yet). */
  | { readonly kind: 'already-present'; readonly sha: string | undefined }
  /** The attempt failed; the changes are kept and retried in the background. */
  | { readonly kind: 'failed'; readonly error: Error };

export interface CommitEvent {
  readonly target: string;
  readonly sha: string;
  readonly paths: readonly string[];
  /** False when the commit was made but its push failed (it will be replayed, with a new sha). */
  readonly pushed: boolean;
}

export interface PushFailureEvent {
  readonly target: string;
  readonly error: Error;
  readonly paths: readonly string[];
  /** How many attempts of this batch have failed so far. */
  readonly attempts: number;
  /** When the next attempt starts. */
  readonly retryInMs: number;
}

/** Counters for metrics and tests; monotonic. */
export interface WriterCounters {
  /** Commits pushed. */
  readonly commits: number;
  /** Batches that left the tree unchanged. */
  readonly alreadyPresent: number;
  /** Pushes rejected because the remote moved on. */
  readonly rejections: number;
  /** Batches re-applied on top of a newer remote tip. */
  readonly replays: number;
  /** Failed batch attempts (each is retried). */
  readonly failures: number;
}

export interface RetryPolicy {
  /** First delay after a failed attempt; doubled each time. */
  readonly baseMs: number;
  /** Longest delay between attempts. */
  readonly maxMs: number;
  /** Replays after rejected pushes within one attempt, before it counts as failed. */
  readonly replays: number;
  /** First delay between replays; doubled each time. */
  readonly replayBaseMs: number;
}

/** Retries: quick at first, then once a minute, for a remote that is down for a while. */
export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1_000, maxMs: 60_000, replays: 5, replayBaseMs: 100 };

export interface BranchWriterOptions {
  readonly repository: Repository;
  readonly committer: Committer;
  readonly retry?: Partial<RetryPolicy>;
  readonly onCommit?: (event: CommitEvent) => void;
  readonly onPushFailure?: (event: PushFailureEvent) => void;
  /**
   * A file that keeps the unpushed queue across restarts and writer replacements (see the
   * module comment); replayed by the constructor. Absent: the queue is in memory only.
   */
  readonly journal?: string;
}

/** One line of the journal: a change as `submit` took it. */
interface JournalLine {
  readonly target: string;
  readonly path: string;
  readonly content: string | null;
  readonly op: ChangeOp;
  readonly windowMs: number;
}

/** Rewrite the journal (keeping only the queue) once it holds this many lines more than the queue. */
const JOURNAL_COMPACT_SLACK = 10_000;

/** Changes not pushed when the writer was closed. */
export interface UnpushedChanges {
  readonly target: string;
  readonly paths: readonly string[];
}

/** Subject `Mirror <target>: N change(s)`, then one `OP path` line per file. */
export function defaultCommitMessage(target: string, changes: readonly FileChange[]): string {
  const n = changes.length;
  const lines = changes.map((c) => `${c.op} ${c.path}`);
  return `Mirror ${target}: ${n} change${n === 1 ? '' : 's'}\n\n${lines.join('\n')}\n`;
}

/** Delay before attempt `attempts + 1`, given `attempts` failures so far. */
export function backoffMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
}

interface PendingSet {
  /** Path → latest change; Map order is the order of each path's latest change. */
  readonly changes: Map<string, FileChange>;
  /** The policy of the change that made the set. */
  readonly policy: CommitPolicy;
}

interface Batch {
  readonly target: string;
  readonly changes: readonly FileChange[];
  readonly policy: CommitPolicy;
  /** A CommitRequest's message, over the policy's. */
  message: string | undefined;
  /** An attempt has begun: the message is fixed. */
  started: boolean;
  attempts: number;
  readonly waiters: ((r: CloseWindowResult) => void)[];
}

/** The clone's state relative to the remote: whether it must be (re)built before use. */
type CloneState = 'unopened' | 'dirty' | 'clean';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class BranchWriter {
  private readonly repo: Repository;
  private readonly committer: Committer;
  private readonly retry: RetryPolicy;
  private readonly onCommit: ((e: CommitEvent) => void) | undefined;
  private readonly onPushFailure: ((e: PushFailureEvent) => void) | undefined;

  /** Targets with changes not yet sealed into a batch; Map order is the order windows open in. */
  private readonly pending = new Map<string, PendingSet>();
  /** The open window, if any. */
  private window: { readonly target: string; readonly timer: NodeJS.Timeout } | undefined;
  /** Sealed batches, oldest first; the head is the one being pushed (or retried). */
  private readonly sealed: Batch[] = [];
  /** A flush of the head batch is queued or running. */
  private flushing = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** closeWindow calls waiting (within their grace) for a target's first change. */
  private readonly graceWaiters = new Map<string, Set<() => void>>();
  private state: CloneState = 'unopened';
  /** The serial queue: every git operation chains here. */
  private tail: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly counts = { commits: 0, alreadyPresent: 0, rejections: 0, replays: 0, failures: 0 };
  private readonly journal: string | undefined;
  private successor: BranchWriter | undefined;
  /** `queuedView()`, until the queue changes (a snapshot reads it once per object). */
  private view: Map<string, string | null> | undefined;
  /** Lines in the journal file now. */
  private journalLines = 0;

  constructor(opts: BranchWriterOptions) {
    this.repo = opts.repository;
    this.committer = opts.committer;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.onCommit = opts.onCommit;
    this.onPushFailure = opts.onPushFailure;
    this.journal = opts.journal;
    this.replayJournal();
  }

  /**
   * Queues what a predecessor (a crashed process, a writer replaced for its new
   * configuration) journaled and never pushed: the latest line of each path wins, as in
   * `submit`. A line that does not parse (a torn last write) is skipped.
   */
  private replayJournal(): void {
    if (!this.journal) return;
    let text: string;
    try {
      text = readFileSync(this.journal, 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      let entry: JournalLine;
      try {
        entry = JSON.parse(line) as JournalLine;
      } catch {
        continue;
      }
      this.journalLines++;
      try {
        this.queue(
          entry.target,
          { path: entry.path, content: entry.content, op: entry.op },
          { windowMs: entry.windowMs },
        );
      } catch {
        // A line a newer version would refuse (an unsafe path): never replayed.
      }
    }
    if (this.pending.size > 0) this.schedule();
  }

  private journalAppend(entry: JournalLine): void {
    if (!this.journal) return;
    appendFileSync(this.journal, `${JSON.stringify(entry)}\n`);
    this.journalLines++;
    // A closed writer's memory no longer holds the whole queue: only appends then.
    if (!this.closed && this.journalLines > this.queuedCount() + JOURNAL_COMPACT_SLACK) this.journalRewrite();
  }

  /** Rewrites the journal to hold exactly the unpushed queue (empty when nothing is left). */
  private journalRewrite(): void {
    if (!this.journal) return;
    const lines: string[] = [];
    for (const b of this.sealed)
      for (const c of b.changes)
        lines.push(JSON.stringify({ target: b.target, ...c, windowMs: b.policy.windowMs }));
    for (const [target, set] of this.pending)
      for (const c of set.changes.values())
        lines.push(JSON.stringify({ target, ...c, windowMs: set.policy.windowMs }));
    writeFileSync(this.journal, lines.length ? `${lines.join('\n')}\n` : '');
    this.journalLines = lines.length;
  }

  private journalTruncate(): void {
    if (!this.journal || this.journalLines === 0 || this.closed) return;
    writeFileSync(this.journal, '');
    this.journalLines = 0;
  }

  private queuedCount(): number {
    let n = 0;
    for (const b of this.sealed) n += b.changes.length;
    for (const set of this.pending.values()) n += set.changes.size;
    return n;
  }

  get url(): string {
    return this.repo.url;
  }

  get branch(): string {
    return this.repo.branch;
  }

  counters(): WriterCounters {
    return { ...this.counts };
  }

  /**
   * Records the desired content of `change.path` for `target`. Throws at once for a path
   * that leaves the repository, or a delete with content (or a write without).
   */
  submit(target: string, change: FileChange, policy: CommitPolicy): void {
    if (this.closed) {
      // A change that reaches a replaced writer goes to its successor; one that arrives
      // while it closes goes to the journal the successor will replay. Never dropped.
      if (this.successor) {
        this.successor.submit(target, change, policy);
        return;
      }
      if (!this.journal) throw new Error(`writer for ${this.url} ${this.branch} is closed`);
      const path = checkedPath(change);
      this.journalAppend({ target, path, content: change.content, op: change.op, windowMs: policy.windowMs });
      return;
    }
    const path = this.queue(target, change, policy);
    this.journalAppend({ target, path, content: change.content, op: change.op, windowMs: policy.windowMs });
    const waiters = this.graceWaiters.get(target);
    if (waiters) {
      this.graceWaiters.delete(target);
      for (const w of waiters) w();
      return;
    }
    this.schedule();
  }

  /**
   * Makes `successor` (the writer built for this one's new configuration, after this one
   * closed) take every change still submitted here.
   */
  handOverTo(successor: BranchWriter): void {
    this.successor = successor;
  }

  /** Records a change in `target`'s pending set (checked); returns its normalized path. */
  private queue(target: string, change: FileChange, policy: CommitPolicy): string {
    const path = checkedPath(change);
    let set = this.pending.get(target);
    if (!set) {
      set = { changes: new Map(), policy };
      this.pending.set(target, set);
    }
    set.changes.delete(path);
    set.changes.set(path, { path, content: change.content, op: change.op });
    this.view = undefined;
    return path;
  }

  /**
   * Commits and pushes `target`'s pending changes now (only that target's), for a
   * CommitRequest. When it has none, waits up to `graceMs` for its first change (the
   * watch may not have delivered it yet) and commits that. A batch of the target already
   * sealed is waited for instead (and takes `message` if it has not been tried yet).
   */
  async closeWindow(
    target: string,
    opts: { readonly message?: string; readonly graceMs?: number } = {},
  ): Promise<CloseWindowResult> {
    const sealedOf = (): Batch | undefined => this.sealed.filter((b) => b.target === target).at(-1);
    const graceMs = opts.graceMs ?? 0;
    if (!this.closed && !this.pending.has(target) && !sealedOf() && graceMs > 0) {
      await this.waitForChange(target, graceMs);
    }
    if (this.closed) return { kind: 'failed', error: this.closedError() };
    if (this.pending.has(target)) {
      const batch = this.seal(target, 'all', opts.message);
      if (batch) return this.await(batch);
    }
    const sealed = sealedOf();
    if (sealed) {
      if (!sealed.started && opts.message !== undefined) sealed.message = opts.message;
      return this.await(sealed);
    }
    return { kind: 'nothing-pending' };
  }

  /**
   * Seals every pending change (each target its own batch) and waits until each batch
   * was tried once; the outcome of each, oldest first.
   */
  async flush(): Promise<CloseWindowResult[]> {
    if (this.window) {
      clearTimeout(this.window.timer);
      this.window = undefined;
    }
    const batches: Batch[] = [];
    for (const target of [...this.pending.keys()]) {
      const b = this.seal(target, 'all', undefined);
      if (b) batches.push(b);
    }
    batches.push(...this.sealed.filter((b) => !batches.includes(b)));
    return Promise.all(batches.map((b) => this.await(b)));
  }

  /** Files under `dir` on the branch as last fetched or pushed (pending changes not included). */
  listFiles(dir: string): Promise<string[]> {
    const rel = safeRepoDir(dir);
    return this.enqueue(async () => {
      await this.ensureClean();
      return this.repo.listFiles(rel);
    });
  }

  /** A file on the branch as last fetched or pushed, or undefined. */
  readFile(path: string): Promise<string | undefined> {
    const rel = safeRepoPath(path);
    return this.enqueue(async () => {
      await this.ensureClean();
      return this.repo.readFile(rel);
    });
  }

  /**
   * Files under `dir` on the branch as it will be once the queue is pushed: the branch as
   * last fetched or pushed, plus queued writes, minus queued deletes. Read in the serial
   * queue, so no push slips between the branch read and the queue read.
   */
  listDesiredFiles(dir: string): Promise<string[]> {
    const rel = safeRepoDir(dir);
    return this.enqueue(async () => {
      await this.ensureClean();
      const files = new Set(await this.repo.listFiles(rel));
      const under = (p: string): boolean => rel === '' || rel === '.' || p.startsWith(`${rel}/`);
      for (const [path, content] of this.queuedView()) {
        if (!under(path)) continue;
        if (content === null) files.delete(path);
        else files.add(path);
      }
      return [...files].sort();
    });
  }

  /** A file as it will be once the queue is pushed (undefined: absent or to be deleted). */
  readDesiredFile(path: string): Promise<string | undefined> {
    const rel = safeRepoPath(path);
    return this.enqueue(async () => {
      const queued = this.queuedView();
      if (queued.has(rel)) return queued.get(rel) ?? undefined;
      await this.ensureClean();
      return this.repo.readFile(rel);
    });
  }

  /** The latest queued content of each path: sealed batches oldest first, then pending sets. */
  private queuedView(): Map<string, string | null> {
    if (this.view) return this.view;
    const view = new Map<string, string | null>();
    for (const b of this.sealed) for (const c of b.changes) view.set(c.path, c.content);
    for (const set of this.pending.values())
      for (const c of set.changes.values()) view.set(c.path, c.content);
    this.view = view;
    return view;
  }

  /** Fetches the remote branch so that reads see other parties' pushes (for a sweep). */
  refresh(): Promise<void> {
    return this.enqueue(async () => {
      if (this.state === 'unopened') await this.open();
      else await this.resetToRemote();
    });
  }

  /** Paths with changes not yet pushed, per target. */
  unpushed(): UnpushedChanges[] {
    const byTarget = new Map<string, Set<string>>();
    const add = (target: string, paths: Iterable<string>): void => {
      const set = byTarget.get(target) ?? new Set<string>();
      for (const p of paths) set.add(p);
      byTarget.set(target, set);
    };
    for (const b of this.sealed)
      add(
        b.target,
        b.changes.map((c) => c.path),
      );
    for (const [target, set] of this.pending) add(target, set.changes.keys());
    return [...byTarget].map(([target, paths]) => ({ target, paths: [...paths].sort() }));
  }

  /**
   * Stops timers and the queue (a git command already running finishes first); waiting
   * closeWindow calls get `failed`. Nothing is committed on the way out. Returns the
   * changes that were never pushed: the caller reports them as lost if it wants to.
   */
  async close(): Promise<UnpushedChanges[]> {
    if (this.closed) return this.unpushed();
    this.closed = true;
    if (this.window) clearTimeout(this.window.timer);
    this.window = undefined;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    for (const waiters of this.graceWaiters.values()) for (const w of waiters) w();
    this.graceWaiters.clear();
    const error = this.closedError();
    for (const b of this.sealed) this.notify(b, { kind: 'failed', error });
    await this.tail;
    return this.unpushed();
  }

  // ---- windows ----

  /** Opens the next window when none is open and no batch is being pushed. */
  private schedule(): void {
    if (this.closed || this.window || this.sealed.length > 0) return;
    const next = this.pending.entries().next();
    if (next.done) return;
    const [target, set] = next.value;
    if (set.policy.windowMs <= 0) {
      this.seal(target, 'first', undefined);
      return;
    }
    const timer = setTimeout(() => {
      this.window = undefined;
      this.seal(target, 'all', undefined);
    }, set.policy.windowMs);
    this.window = { target, timer };
  }

  /**
   * Moves `target`'s pending changes (all, or only the oldest one for windowMs 0) into a
   * batch at the end of the push queue, closing its window if open.
   */
  private seal(target: string, which: 'all' | 'first', message: string | undefined): Batch | undefined {
    const set = this.pending.get(target);
    if (!set) return undefined;
    if (this.window?.target === target) {
      clearTimeout(this.window.timer);
      this.window = undefined;
    }
    let changes: FileChange[];
    if (which === 'all') {
      changes = [...set.changes.values()];
      this.pending.delete(target);
    } else {
      const first = set.changes.values().next().value as FileChange;
      changes = [first];
      set.changes.delete(first.path);
      // Round-robin: the target's next change waits behind the other targets.
      this.pending.delete(target);
      if (set.changes.size > 0) this.pending.set(target, set);
    }
    const batch: Batch = {
      target,
      changes,
      policy: set.policy,
      message,
      started: false,
      attempts: 0,
      waiters: [],
    };
    this.sealed.push(batch);
    this.kick(message !== undefined);
    return batch;
  }

  /** Resolves at the target's first change, at close, or after `graceMs`, whichever comes first. */
  private waitForChange(target: string, graceMs: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.graceWaiters.get(target) ?? new Set<() => void>();
      this.graceWaiters.set(target, waiters);
      const arrived = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(arrived);
        if (waiters.size === 0 && this.graceWaiters.get(target) === waiters) this.graceWaiters.delete(target);
        resolve();
      }, graceMs);
      waiters.add(arrived);
    });
  }

  private await(batch: Batch): Promise<CloseWindowResult> {
    if (this.closed) return Promise.resolve({ kind: 'failed', error: this.closedError() });
    return new Promise((resolve) => {
      batch.waiters.push(resolve);
      // Someone is waiting: do not leave them to the end of a long backoff.
      this.kick(true);
    });
  }

  private notify(batch: Batch, result: CloseWindowResult): void {
    for (const w of batch.waiters.splice(0)) w(result);
  }

  // ---- pushing ----

  /**
   * Queues a flush of the head batch unless one is queued or running (its end kicks the
   * next one); `now` cuts a backoff short.
   */
  private kick(now: boolean): void {
    if (this.closed || this.flushing || this.sealed.length === 0) return;
    if (this.retryTimer) {
      if (!now) return;
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    this.flushing = true;
    this.enqueue(() => this.flushHead()).catch(() => {
      // Only a close: flushHead itself never throws.
      this.flushing = false;
    });
  }

  private async flushHead(): Promise<void> {
    const batch = this.sealed[0];
    if (this.closed || !batch) {
      this.flushing = false;
      return;
    }
    try {
      const result = await this.attempt(batch);
      this.flushing = false;
      this.sealed.shift();
      this.view = undefined;
      if (result.kind === 'committed') {
        this.counts.commits++;
        this.emitCommit({ target: batch.target, sha: result.sha, paths: paths(batch), pushed: true });
      } else {
        this.counts.alreadyPresent++;
      }
      this.notify(batch, result);
      // Nothing left to push: the journal has nothing left to keep.
      if (this.sealed.length === 0 && this.pending.size === 0) this.journalTruncate();
      if (this.sealed.length > 0) this.kick(false);
      else this.schedule();
    } catch (err) {
      this.flushing = false;
      const error = err instanceof Error ? err : new Error(String(err));
      batch.attempts++;
      this.counts.failures++;
      this.state = this.state === 'unopened' ? 'unopened' : 'dirty';
      const retryInMs = backoffMs(batch.attempts, this.retry.baseMs, this.retry.maxMs);
      this.emitFailure({
        target: batch.target,
        error,
        paths: paths(batch),
        attempts: batch.attempts,
        retryInMs,
      });
      // Everyone waiting on the branch hears of the failure; their batches stay queued.
      for (const b of this.sealed) this.notify(b, { kind: 'failed', error });
      if (!this.closed) {
        if (this.retryTimer) clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.kick(false);
        }, retryInMs);
      }
    }
  }

  /**
   * One attempt at a batch: apply, commit, push; on rejection reset to the remote tip and
   * re-apply (bounded). Throws on any other failure, leaving the clone marked dirty.
   */
  private async attempt(batch: Batch): Promise<CloseWindowResult> {
    batch.started = true;
    await this.ensureClean();
    const message = batch.message ?? this.policyMessage(batch);
    for (let replay = 0; ; replay++) {
      this.state = 'dirty';
      await this.repo.applyChanges(batch.changes);
      const sha = await this.repo.commit(message, this.committer);
      if (sha === undefined) {
        const head = await this.repo.head();
        // A CommitRequest is told "already present" only when that is true of the remote now.
        if (
          batch.waiters.length > 0 &&
          replay < this.retry.replays &&
          (await this.repo.remoteTip()) !== head
        ) {
          await this.resetToRemote();
          this.counts.replays++;
          continue;
        }
        this.state = 'clean';
        return { kind: 'already-present', sha: head };
      }
      let pushed: PushResult;
      try {
        pushed = await this.repo.push();
      } catch (err) {
        this.emitCommit({ target: batch.target, sha, paths: paths(batch), pushed: false });
        throw err;
      }
      if (pushed.kind === 'pushed') {
        this.state = 'clean';
        return { kind: 'committed', sha };
      }
      this.counts.rejections++;
      if (replay >= this.retry.replays) throw pushed.error;
      await sleep(backoffMs(replay + 1, this.retry.replayBaseMs, this.retry.maxMs));
      await this.resetToRemote();
      this.counts.replays++;
    }
  }

  /** The policy's message, or the default one when there is none or it throws (a bug there must not block the branch). */
  private policyMessage(batch: Batch): string {
    try {
      const m = batch.policy.message?.(batch.changes);
      if (m !== undefined && m.trim() !== '') return m;
    } catch {
      // Fall through to the default.
    }
    return defaultCommitMessage(batch.target, batch.changes);
  }

  /** Makes the clone match the remote when its state is unknown. */
  private async ensureClean(): Promise<void> {
    if (this.state === 'unopened') await this.open();
    else if (this.state === 'dirty') await this.resetToRemote();
  }

  private async open(): Promise<void> {
    await this.repo.open();
    this.state = 'clean';
  }

  private async resetToRemote(): Promise<void> {
    this.state = 'dirty';
    await this.repo.fetchAndReset();
    this.state = 'clean';
  }

  /** Runs `fn` after every operation queued before it. After close, nothing more runs. */
  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    // Reads after close fail rather than touch a clone the caller may be removing.
    if (this.closed) return Promise.reject(this.closedError());
    const run = this.tail.then(() => {
      if (this.closed) throw this.closedError();
      return fn();
    });
    this.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private closedError(): GitError {
    return new GitError(GitErrorKind.Other, `writer for ${this.url} ${this.branch} is closed`);
  }

  private emitCommit(e: CommitEvent): void {
    try {
      this.onCommit?.(e);
    } catch {
      // An observer's bug must not stop the branch.
    }
  }

  private emitFailure(e: PushFailureEvent): void {
    try {
      this.onPushFailure?.(e);
    } catch {
      // An observer's bug must not stop the branch.
    }
  }
}

/** The change's normalized path; throws for a path that leaves the repository, or content not null exactly for DELETE. */
function checkedPath(change: FileChange): string {
  const path = safeRepoPath(change.path);
  if ((change.op === 'DELETE') !== (change.content === null)) {
    throw new TypeError(`change ${change.op} ${path}: content must be null exactly for DELETE`);
  }
  return path;
}

function paths(batch: Batch): string[] {
  return batch.changes.map((c) => c.path);
}
