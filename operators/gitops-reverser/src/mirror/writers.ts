/**
 * One BranchWriter per (GitProvider, branch), shared by every GitTarget on that branch
 * through that provider: the single queue that keeps two targets from ever committing
 * over each other. A writer is rebuilt when its URL, credentials or committer change:
 * the old one pushes what it can once and closes, and its successor takes over the rest
 * through their shared journal (one file per provider and branch in the work folder),
 * so fixing a failing GitProvider loses nothing that was queued, deletes included. The
 * same journal carries the queue across an operator restart or crash.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { GitAuth } from '../git/credentials.ts';
import { Repository } from '../git/repository.ts';
import { BranchWriter, type CommitEvent, type PushFailureEvent, type RetryPolicy } from '../git/writer.ts';

export interface WriterSpec {
  /** `namespace/name` of the GitProvider. */
  readonly provider: string;
  readonly url: string;
  readonly branch: string;
  readonly auth: GitAuth;
  readonly committer: { readonly name: string; readonly email: string };
}

export interface WriterPoolOptions {
  /** Where the clones live (one folder per writer). */
  readonly workDir: string;
  /** Transports allowed; tests add `file`. */
  readonly allowedProtocols?: readonly string[];
  readonly retry?: Partial<RetryPolicy>;
  readonly onCommit?: (e: CommitEvent) => void;
  readonly onPushFailure?: (e: PushFailureEvent) => void;
}

/** The identity of a writer's configuration; a change means a new writer. */
function fingerprint(spec: WriterSpec): string {
  return createHash('sha256')
    .update(JSON.stringify([spec.url, spec.branch, spec.auth, spec.committer]))
    .digest('hex');
}

export class WriterPool {
  private readonly opts: WriterPoolOptions;
  private readonly writers = new Map<string, { writer: BranchWriter; fingerprint: string }>();
  /** Per key: the tail of the `writer()` calls in progress. */
  private readonly replacing = new Map<string, Promise<void>>();

  constructor(opts: WriterPoolOptions) {
    this.opts = opts;
  }

  static key(spec: Pick<WriterSpec, 'provider' | 'branch'>): string {
    return `${spec.provider}@${spec.branch}`;
  }

  /**
   * The writer for `spec`, created or (if its configuration changed) replaced. Calls for
   * one key run one after another: two targets on one branch must not both replace its
   * writer (two writers would then share one clone and one journal).
   */
  writer(spec: WriterSpec): Promise<BranchWriter> {
    const key = WriterPool.key(spec);
    const run = (this.replacing.get(key) ?? Promise.resolve()).then(() => this.writerNow(spec));
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.replacing.set(key, tail);
    void tail.then(() => {
      if (this.replacing.get(key) === tail) this.replacing.delete(key);
    });
    return run;
  }

  private async writerNow(spec: WriterSpec): Promise<BranchWriter> {
    const key = WriterPool.key(spec);
    const fp = fingerprint(spec);
    const cur = this.writers.get(key);
    if (cur?.fingerprint === fp) return cur.writer;
    if (cur) {
      // Push what the old configuration can before letting it go; what it cannot stays in
      // the journal, which the successor below replays.
      await cur.writer.flush().catch(() => undefined);
      await cur.writer.close();
    }
    const dir = join(this.opts.workDir, createHash('sha256').update(key).digest('hex').slice(0, 16));
    mkdirSync(this.opts.workDir, { recursive: true });
    const writer = new BranchWriter({
      journal: `${dir}.queue.jsonl`,
      repository: new Repository({
        url: spec.url,
        branch: spec.branch,
        dir,
        auth: spec.auth,
        ...(this.opts.allowedProtocols ? { allowedProtocols: this.opts.allowedProtocols } : {}),
      }),
      committer: spec.committer,
      ...(this.opts.retry ? { retry: this.opts.retry } : {}),
      ...(this.opts.onCommit ? { onCommit: this.opts.onCommit } : {}),
      ...(this.opts.onPushFailure ? { onPushFailure: this.opts.onPushFailure } : {}),
    });
    cur?.writer.handOverTo(writer);
    this.writers.set(key, { writer, fingerprint: fp });
    return writer;
  }

  get(key: string): BranchWriter | undefined {
    return this.writers.get(key)?.writer;
  }

  all(): BranchWriter[] {
    return [...this.writers.values()].map((w) => w.writer);
  }

  /** Tries to push everything pending, then closes every writer. */
  async close(flush: boolean): Promise<void> {
    const all = [...this.writers.values()];
    this.writers.clear();
    await Promise.all(
      all.map(async ({ writer }) => {
        if (flush) await writer.flush().catch(() => undefined);
        await writer.close();
      }),
    );
  }
}
