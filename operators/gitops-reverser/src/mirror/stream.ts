/**
 * One stream: a watch of one resource in one namespace (or all) of the source cluster,
 * through the kit's reflector (a streaming watch-list with a list-then-watch fallback,
 * bookmarks, resume, relist on 410), turned into file changes for the target's writer.
 *
 * - A watch event writes or deletes one file, as the item's operations and the target's
 *   prune mode allow; an update that changes nothing but status (or other server-owned
 *   fields) writes nothing.
 * - After each COMPLETE snapshot (the first, and every relist after a 410 or a dropped
 *   watch) every object is written where it differs from the DESIRED branch (the branch
 *   plus the writer's queue: a change still waiting for a push counts as made, so a
 *   re-list that sees an object back at its pushed version queues it again rather than
 *   leaving an older queued version to win), then the resource's folders are swept the
 *   same way: files with no object are deleted under prune Always and reported under
 *   OnEvent and Never. A snapshot cut before its end stores nothing, so
 *   it sweeps nothing; nothing sweeps on a timer.
 * - Work is chained, one change after another, so the files follow the event order.
 */
import type { DeltaOrigin, KubeClient, KubeObject, StoreDelta } from '@operators/kit';
import { Reflector as KitReflector } from '@operators/kit';
import type { Logger } from 'pino';
import { parseObjectFilePath, resourceDir } from '../domain/mirror/file-path.ts';
import { type DeletionMode, eventDeleteAllowed, sweepPlan } from '../domain/mirror/sweep.ts';
import type { Operation, StreamSpec } from '../domain/streams.ts';
import { isGitError } from '../git/errors.ts';
import type { BranchWriter, ChangeOp, CommitPolicy } from '../git/writer.ts';
import { type ContentPolicy, filePathOf, isSecretResource, renderFile, sanitizedText } from './content.ts';

/**
 * What a stream watches through: the kit's reflector in the operator; a scripted source in
 * the model test of the mirror's invariant (so it drives the real Stream and writer on real
 * git through watch drops and re-lists without an apiserver).
 */
export interface WatchSource {
  onDelta(handler: (delta: StoreDelta<KubeObject>, origin: DeltaOrigin) => void): unknown;
  /** After each COMPLETE state (the first and every relist); never for a cut one. */
  onSnapshot(handler: (items: readonly KubeObject[]) => void): unknown;
  start(): void;
  stop(): Promise<void>;
  health(): { readonly synced: boolean; readonly lastError?: string | undefined };
  readonly store: { hasSynced(): boolean; list(): readonly KubeObject[] };
}

export interface StreamContext {
  readonly target: string;
  readonly content: ContentPolicy;
  readonly prune: DeletionMode;
  readonly writer: BranchWriter;
  readonly commit: CommitPolicy;
  readonly client: KubeClient;
  readonly log: Logger;
  /** Each object written (created, updated, deleted) into the writer. */
  readonly onMirrored?: (op: ChangeOp) => void;
  /** Something worth a status refresh happened (synced, failed, swept). */
  readonly onChange?: () => void;
  /** The watch of `spec`; the kit's reflector over `client` when absent. */
  readonly watch?: (spec: StreamSpec) => WatchSource;
  /** Backoff of a snapshot whose mirroring failed: 1 s doubling to 60 s unless set (tests). */
  readonly snapshotRetry?: { readonly baseMs: number; readonly maxMs: number };
}

export type StreamState =
  | { readonly kind: 'syncing'; readonly lastError?: string }
  | { readonly kind: 'running' }
  /** Cannot mirror what it watches (a Secret without encryption); the watch stays off. */
  | { readonly kind: 'refused'; readonly message: string }
  /** Mirroring failed; `gitKind` when git did (the remote unreachable, credentials refused). Retried. */
  | { readonly kind: 'failed'; readonly message: string; readonly gitKind?: string };

export class Stream {
  readonly spec: StreamSpec;
  private operations: ReadonlySet<Operation>;
  private readonly ctx: StreamContext;
  private readonly reflector: WatchSource | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: { message: string; gitKind?: string } | undefined;
  /** The retry of a snapshot whose mirroring failed (the writer could not read the branch). */
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = 0;
  private stopped = false;
  /** Files the last sweep kept although their object is gone (prune OnEvent / Never). */
  retained: readonly string[] = [];
  /** Completed sweeps, for tests and the bench. */
  sweeps = 0;
  /** Changes handed to the writer so far. */
  private submitted = 0;

  constructor(spec: StreamSpec, ctx: StreamContext) {
    this.spec = spec;
    this.ctx = ctx;
    this.operations = new Set(spec.operations);
    if (isSecretResource(spec) && !ctx.content.encryption) return;
    this.reflector =
      ctx.watch?.(spec) ??
      new KitReflector<KubeObject>({
        client: ctx.client,
        gvk: { apiVersion: spec.apiVersion, kind: spec.kind },
        ...(spec.namespaced && spec.namespace ? { namespace: spec.namespace } : {}),
        log: ctx.log,
      });
    this.reflector.onDelta((d, origin) => {
      if (origin === 'watch') this.enqueue(() => this.onEvent(d));
    });
    this.reflector.onSnapshot((items) => this.snapshot(items));
  }

  start(): void {
    this.reflector?.start();
  }

  /** Stops watching; files stay. Waits for the change being handed to the writer. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.reflector?.stop();
    await this.chain;
  }

  /** A rule edit that keeps the stream but changes what its events may do: no restart. */
  setOperations(ops: readonly Operation[]): void {
    this.operations = new Set(ops);
  }

  state(): StreamState {
    if (!this.reflector) {
      return {
        kind: 'refused',
        message: `${this.spec.key}: Secrets are never written in plaintext; set the GitTarget's spec.encryption`,
      };
    }
    if (this.failure) return { kind: 'failed', ...this.failure };
    const h = this.reflector.health();
    if (!h.synced) return h.lastError ? { kind: 'syncing', lastError: h.lastError } : { kind: 'syncing' };
    return { kind: 'running' };
  }

  /** Resolves once the work queued so far is handed to the writer. */
  idle(): Promise<void> {
    return this.chain;
  }

  private enqueue(work: () => Promise<void>, onFailure?: () => void): void {
    this.chain = this.chain.then(async () => {
      if (this.stopped) return;
      try {
        await work();
        this.failure = undefined;
      } catch (err) {
        const gitKind = isGitError(err) ? err.kind : undefined;
        this.failure = {
          message: `${this.spec.key}: ${err instanceof Error ? err.message : String(err)}`,
          ...(gitKind ? { gitKind } : {}),
        };
        this.ctx.log.error(
          { stream: this.spec.key, target: this.ctx.target, err },
          'mirroring a change failed',
        );
        onFailure?.();
      }
      this.ctx.onChange?.();
    });
  }

  /** A snapshot that could not be mirrored is mirrored again from the store, with backoff, until it is. */
  private retrySnapshot(): void {
    if (this.stopped || this.retryTimer || !this.reflector) return;
    const { baseMs, maxMs } = this.ctx.snapshotRetry ?? { baseMs: 1_000, maxMs: 60_000 };
    this.retryMs = Math.min(Math.max(this.retryMs * 2, baseMs), maxMs);
    const reflector = this.reflector;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      const items = reflector.store.hasSynced() ? reflector.store.list() : undefined;
      if (items) this.snapshot(items);
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private snapshot(items: readonly KubeObject[]): void {
    this.enqueue(
      async () => {
        await this.onSnapshot(items);
        this.retryMs = 0;
      },
      () => this.retrySnapshot(),
    );
  }

  private submit(path: string, content: string | null, op: ChangeOp): void {
    this.submitted++;
    this.ctx.writer.submit(this.ctx.target, { path, content, op }, this.ctx.commit);
    this.ctx.onMirrored?.(op);
  }

  private async onEvent(d: StoreDelta<KubeObject>): Promise<void> {
    const path = filePathOf(this.ctx.content, this.spec, d.object);
    switch (d.type) {
      case 'added': {
        if (!this.operations.has('CREATE')) return;
        const text = await renderFile(this.ctx.content, this.spec, d.object, undefined);
        if (text !== undefined) this.submit(path, text, 'CREATE');
        return;
      }
      case 'updated': {
        if (!this.operations.has('UPDATE')) return;
        // Status, resourceVersion, managedFields…: sanitized away, so not a change.
        if (sanitizedText(d.old) === sanitizedText(d.object)) return;
        const text = await renderFile(this.ctx.content, this.spec, d.object, undefined);
        if (text !== undefined) this.submit(path, text, 'UPDATE');
        return;
      }
      case 'deleted':
        if (this.operations.has('DELETE') && eventDeleteAllowed(this.ctx.prune))
          this.submit(path, null, 'DELETE');
        return;
      default:
        return d satisfies never;
    }
  }

  /** The folders this stream owns, one per namespace seen on the desired branch (or its one namespace). */
  private async foldersOnBranch(): Promise<{ files: string[]; namespaces: string[] }> {
    const { targetPath } = this.ctx.content;
    if (!this.spec.namespaced || this.spec.namespace) {
      const dir = resourceDir(targetPath, {
        group: this.spec.group,
        resource: this.spec.resource,
        ...(this.spec.namespace ? { namespace: this.spec.namespace } : {}),
      });
      return { files: await this.ctx.writer.listDesiredFiles(dir), namespaces: [this.spec.namespace] };
    }
    // Every namespace: the folders of this resource under each namespace folder of the target.
    const all = await this.ctx.writer.listDesiredFiles(targetPath);
    const files = all.filter((f) => {
      const p = parseObjectFilePath(targetPath, f);
      return (
        p !== undefined &&
        p.namespace !== undefined &&
        p.group === this.spec.group &&
        p.resource === this.spec.resource
      );
    });
    const namespaces = [...new Set(files.map((f) => parseObjectFilePath(targetPath, f)?.namespace ?? ''))];
    return { files, namespaces };
  }

  private async onSnapshot(items: readonly KubeObject[]): Promise<void> {
    const submittedBefore = this.submitted;
    const { files, namespaces } = await this.foldersOnBranch();
    const onBranch = new Set(files);
    const snapshotPaths = new Set<string>();
    const writes = this.operations.has('CREATE') || this.operations.has('UPDATE');
    for (const obj of items) {
      const path = filePathOf(this.ctx.content, this.spec, obj);
      snapshotPaths.add(path);
      if (!writes) continue;
      const existing = onBranch.has(path) ? await this.ctx.writer.readDesiredFile(path) : undefined;
      const text = await renderFile(this.ctx.content, this.spec, obj, existing);
      if (text !== undefined) this.submit(path, text, existing === undefined ? 'CREATE' : 'UPDATE');
    }
    const retained: string[] = [];
    for (const namespace of namespaces) {
      const plan = sweepPlan({
        targetPath: this.ctx.content.targetPath,
        folder: { group: this.spec.group, resource: this.spec.resource, ...(namespace ? { namespace } : {}) },
        filesInDir: files,
        snapshotPaths,
        // A rule that does not mirror DELETE never deletes, by event or by sweep.
        mode: this.operations.has('DELETE') ? this.ctx.prune : 'Never',
      });
      for (const path of plan.delete) this.submit(path, null, 'DELETE');
      retained.push(...plan.retained);
    }
    this.retained = retained.sort();
    this.sweeps++;
    if (this.submitted > submittedBefore) {
      // A complete snapshot is one change set and nothing more will come of it: commit it
      // now rather than after the window (at start-up the window would only add latency).
      void this.ctx.writer.closeWindow(this.ctx.target).catch(() => undefined);
    }
  }
}
