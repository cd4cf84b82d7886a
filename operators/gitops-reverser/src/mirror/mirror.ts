/**
 * The mirror: every admitted GitTarget's data plane, and the writers they share. A
 * leader-only runnable: two replicas never write one branch.
 *
 * Its start-up bootstrap compiles every GitTarget through `compileTarget` (the gate
 * first) before opening anything, exactly as the reconciler does: a fresh process never
 * opens a stream the reconcilers would refuse. After that the GitTarget reconciler
 * drives it (`apply` a compiled target, `revoke` a refused one); streams stop, files stay.
 *
 * The bootstrap never overrules a newer decision: every change to one target's data plane
 * (the reconciler's apply, revoke and forget, the bootstrap's apply) runs in that target's
 * own serial queue, and the bootstrap applies what it compiled only if no reconciler
 * decision about the target was made since it started compiling and the target's
 * generation is still the one it compiled. Otherwise the reconciler's answer stands: a
 * target revoked while the bootstrap compiled it never runs a stream.
 */
import { type Runnable, sharedCounter, sharedGauge, sharedHistogram } from '@operators/kit';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GitTarget } from '../api/git-target.ts';
import type { CloseWindowResult, CommitEvent, PushFailureEvent, RetryPolicy } from '../git/writer.ts';
import { type CompileReads, compileTarget, targetKey } from './compile.ts';
import { type TargetConfig, TargetMirror, type TargetRuntime } from './target-mirror.ts';
import { WriterPool } from './writers.ts';

export interface MirrorOptions {
  readonly workDir: string;
  readonly log: Logger;
  readonly registry?: Registry;
  readonly allowedProtocols?: readonly string[];
  readonly retry?: Partial<RetryPolicy>;
  /** The GitTargets to bootstrap from (the manager's cache) and how compiling reads. */
  readonly targets: () => readonly GitTarget[];
  readonly reads: CompileReads;
  /** A target's runtime state changed (a commit, a stream synced or failed): refresh its status. */
  readonly onTargetChange?: (key: string) => void;
  /** Tests only: runs between the bootstrap's compile of a target and its apply (to race a reconcile there). */
  readonly afterBootstrapCompile?: (key: string) => Promise<void>;
}

/** What the mirror remembers per target beyond its streams. */
export interface TargetRecord {
  readonly lastCommit?: { readonly sha: string; readonly time: string };
  readonly pushError?: { readonly kind: string; readonly message: string; readonly at: string };
}

export class Mirror implements Runnable {
  readonly name = 'gitops-reverser-mirror';
  private readonly opts: MirrorOptions;
  readonly writers: WriterPool;
  private readonly targets = new Map<string, TargetMirror>();
  private readonly records = new Map<string, TargetRecord>();
  private readonly changeTimers = new Map<string, NodeJS.Timeout>();
  private readonly metrics;
  private running = false;
  /** Per target: how many reconciler decisions (apply, revoke, forget) were made so far. */
  private readonly decisions = new Map<string, number>();
  /** Per target: the tail of its serial queue of data-plane changes. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(opts: MirrorOptions) {
    this.opts = opts;
    const r = opts.registry;
    this.metrics = {
      mirrored: sharedCounter(
        r,
        'gitops_reverser_objects_mirrored_total',
        'Object changes handed to a writer, by operation.',
        ['target', 'op'],
      ),
      commits: sharedCounter(r, 'gitops_reverser_commits_total', 'Commits pushed to a remote.', ['target']),
      pushFailures: sharedCounter(
        r,
        'gitops_reverser_push_failures_total',
        'Push or fetch attempts that failed, by kind.',
        ['target', 'kind'],
      ),
      windowSize: sharedHistogram(
        r,
        'gitops_reverser_commit_window_files',
        'Files changed per commit.',
        [],
        [1, 10, 100, 1_000, 10_000],
      ),
      streams: sharedGauge(r, 'gitops_reverser_streams', 'Watch streams open.', []),
    };
    this.writers = new WriterPool({
      workDir: opts.workDir,
      ...(opts.allowedProtocols ? { allowedProtocols: opts.allowedProtocols } : {}),
      ...(opts.retry ? { retry: opts.retry } : {}),
      onCommit: (e) => this.committed(e),
      onPushFailure: (e) => this.pushFailed(e),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    this.running = true;
    signal.addEventListener('abort', () => void this.stop(), { once: true });
    // The bootstrap: the same compile as the reconciler, gate first.
    for (const target of this.opts.targets()) {
      const key = targetKey(target);
      const decided = this.decisions.get(key) ?? 0;
      try {
        const compiled = await compileTarget(this.opts.reads, target);
        await this.opts.afterBootstrapCompile?.(key);
        if (compiled.kind !== 'ready') continue;
        await this.serially(key, async () => {
          // A reconcile decided since (it read newer state), or the target changed (a
          // reconcile is coming): its answer stands, not this older compile.
          if ((this.decisions.get(key) ?? 0) !== decided) return;
          const now = this.opts.targets().find((t) => targetKey(t) === key);
          if (now?.metadata.generation !== target.metadata.generation) return;
          await this.applyNow(compiled.config);
        });
      } catch (err) {
        // A failed read decides nothing: the reconciler retries this target.
        this.opts.log.warn(
          { target: `${target.metadata.namespace}/${target.metadata.name}`, err },
          'bootstrap could not compile a GitTarget',
        );
      }
    }
  }

  /** Whether this process runs the mirror now (it leads). */
  get isRunning(): boolean {
    return this.running;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of this.changeTimers.values()) clearTimeout(t);
    this.changeTimers.clear();
    const all = [...this.targets.values()];
    this.targets.clear();
    await Promise.all(all.map((t) => t.stopAll()));
    await this.writers.close(true);
    this.metrics.streams.set(0);
  }

  /** Runs `fn` after every earlier data-plane change of target `key`. */
  private serially<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  /** A reconciler's decision about `key`: newer than any bootstrap compile still in flight. */
  private decide(key: string): void {
    this.decisions.set(key, (this.decisions.get(key) ?? 0) + 1);
  }

  /** Moves a target's data plane to `config` (the reconciler's decision). */
  apply(config: TargetConfig): Promise<{ started: string[]; stopped: string[] }> {
    if (!this.running) return Promise.reject(new Error('the mirror is not running (not the leader)'));
    this.decide(config.key);
    return this.serially(config.key, () => this.applyNow(config));
  }

  private async applyNow(config: TargetConfig): Promise<{ started: string[]; stopped: string[] }> {
    if (!this.running) throw new Error('the mirror is not running (not the leader)');
    const writer = await this.writers.writer(config.writer);
    let t = this.targets.get(config.key);
    if (!t) {
      t = new TargetMirror(config.key, this.opts.log, {
        onMirrored: (op) => this.metrics.mirrored.inc({ target: config.key, op }),
        onChange: () => this.changed(config.key),
      });
      this.targets.set(config.key, t);
    }
    const result = await t.apply(config, writer);
    this.countStreams();
    if (result.started.length || result.stopped.length) {
      this.opts.log.info(
        { target: config.key, started: result.started, stopped: result.stopped },
        'streams changed',
      );
    }
    return result;
  }

  /** Stops a target's streams (a revocation or deletion); its files stay in Git. */
  revoke(key: string): Promise<string[]> {
    this.decide(key);
    return this.serially(key, () => this.revokeNow(key));
  }

  private async revokeNow(key: string): Promise<string[]> {
    const t = this.targets.get(key);
    if (!t) return [];
    this.targets.delete(key);
    const stopped = await t.stopAll();
    this.countStreams();
    if (stopped.length) this.opts.log.info({ target: key, started: [], stopped }, 'streams changed');
    return stopped;
  }

  /** Forgets a deleted target entirely. */
  async forget(key: string): Promise<void> {
    this.decide(key);
    await this.serially(key, () => this.revokeNow(key));
    this.records.delete(key);
  }

  runtime(key: string): (TargetRuntime & TargetRecord) | undefined {
    const t = this.targets.get(key);
    return t ? { ...t.runtime(), ...this.records.get(key) } : undefined;
  }

  record(key: string): TargetRecord | undefined {
    return this.records.get(key);
  }

  /** For a CommitRequest: commit the target's pending changes now. */
  async closeWindow(
    key: string,
    opts: { message?: string; graceMs?: number },
  ): Promise<CloseWindowResult | undefined> {
    const t = this.targets.get(key);
    const writer = t?.currentWriter();
    if (!t || !writer) return undefined;
    await t.idle();
    return writer.closeWindow(key, opts);
  }

  /** Resolves once every stream of `key` has handed its work to the writer (tests, bench). */
  async idle(key: string): Promise<void> {
    await this.targets.get(key)?.idle();
  }

  private countStreams(): void {
    let n = 0;
    for (const t of this.targets.values()) n += t.runtime().streams.length;
    this.metrics.streams.set(n);
  }

  private committed(e: CommitEvent): void {
    if (e.pushed) {
      this.metrics.commits.inc({ target: e.target });
      this.metrics.windowSize.observe(e.paths.length);
      this.records.set(e.target, { lastCommit: { sha: e.sha, time: new Date().toISOString() } });
    }
    this.changed(e.target, 0);
  }

  private pushFailed(e: PushFailureEvent): void {
    const kind = (e.error as { kind?: string }).kind ?? 'Other';
    this.metrics.pushFailures.inc({ target: e.target, kind });
    this.records.set(e.target, {
      ...this.records.get(e.target),
      pushError: { kind, message: e.error.message, at: new Date().toISOString() },
    });
    this.changed(e.target, 0);
  }

  /** Debounced: a snapshot of 10,000 objects asks for one status refresh, not 10,000. */
  private changed(key: string, delayMs = 1_000): void {
    if (!this.opts.onTargetChange || this.changeTimers.has(key)) return;
    const timer = setTimeout(() => {
      this.changeTimers.delete(key);
      this.opts.onTargetChange?.(key);
    }, delayMs);
    timer.unref();
    this.changeTimers.set(key, timer);
  }
}
