/**
 * The data plane of one admitted GitTarget: its streams and the writer they feed.
 * `apply` moves it to a new plan: streams whose (resource, namespace) stays keep running
 * (a rule edit that leaves the resolved scope unchanged restarts nothing); anything that
 * changes what a file would hold (path, encryption, prune mode, window, source cluster,
 * writer) restarts every stream, whose snapshot then rewrites and sweeps.
 */
import type { KubeClient } from '@operators/kit';
import type { Logger } from 'pino';
import { commitMessage } from '../domain/mirror/commit-message.ts';
import type { DeletionMode } from '../domain/mirror/sweep.ts';
import type { StreamSpec } from '../domain/streams.ts';
import type { BranchWriter, ChangeOp, CommitPolicy } from '../git/writer.ts';
import type { ContentPolicy } from './content.ts';
import { Stream, type StreamState } from './stream.ts';
import { WriterPool, type WriterSpec } from './writers.ts';

export interface TargetConfig {
  /** `namespace/name` of the GitTarget. */
  readonly key: string;
  readonly writer: WriterSpec;
  readonly content: ContentPolicy;
  readonly prune: DeletionMode;
  readonly windowMs: number;
  readonly messageTemplate?: string;
  /** The source cluster: a client and what identifies its configuration. */
  readonly source: { readonly fingerprint: string; readonly client: KubeClient };
  readonly streams: readonly StreamSpec[];
}

export interface TargetRuntime {
  readonly streams: readonly { readonly key: string; readonly state: StreamState }[];
  /** Files kept although their object is gone (prune OnEvent / Never), sorted. */
  readonly retained: readonly string[];
  /** Every stream has finished at least one snapshot and sweep. */
  readonly swept: boolean;
}

function baseFingerprint(c: TargetConfig): string {
  return JSON.stringify([
    WriterPool.key(c.writer),
    c.content,
    c.prune,
    c.windowMs,
    c.messageTemplate ?? null,
    c.source.fingerprint,
  ]);
}

export class TargetMirror {
  readonly key: string;
  private readonly log: Logger;
  private readonly hooks: { onMirrored: (op: ChangeOp) => void; onChange: () => void };
  private base: string | undefined;
  private writer: BranchWriter | undefined;
  private readonly streams = new Map<string, Stream>();

  constructor(key: string, log: Logger, hooks: { onMirrored: (op: ChangeOp) => void; onChange: () => void }) {
    this.key = key;
    this.log = log;
    this.hooks = hooks;
  }

  get writerKey(): string | undefined {
    return this.writer ? `${this.writer.url}@${this.writer.branch}` : undefined;
  }

  currentWriter(): BranchWriter | undefined {
    return this.writer;
  }

  async apply(config: TargetConfig, writer: BranchWriter): Promise<{ started: string[]; stopped: string[] }> {
    const base = baseFingerprint(config);
    const started: string[] = [];
    const stopped: string[] = [];
    if (base !== this.base || writer !== this.writer) {
      stopped.push(...(await this.stopAll()));
      this.base = base;
      this.writer = writer;
    }
    const wanted = new Map(config.streams.map((s) => [s.key, s]));
    for (const [key, stream] of this.streams) {
      const spec = wanted.get(key);
      if (spec && sameStream(spec, stream.spec)) {
        stream.setOperations(spec.operations);
        continue;
      }
      this.streams.delete(key);
      await stream.stop();
      stopped.push(key);
    }
    const commit: CommitPolicy = {
      windowMs: config.windowMs,
      message: (changes) =>
        commitMessage(config.messageTemplate, {
          target: config.key,
          changes: changes.map((c) => ({ op: c.op, path: c.path })),
        }),
    };
    for (const [key, spec] of wanted) {
      if (this.streams.has(key)) continue;
      const stream = new Stream(spec, {
        target: config.key,
        content: config.content,
        prune: config.prune,
        writer,
        commit,
        client: config.source.client,
        log: this.log,
        onMirrored: this.hooks.onMirrored,
        onChange: this.hooks.onChange,
      });
      this.streams.set(key, stream);
      stream.start();
      started.push(key);
    }
    return { started, stopped };
  }

  runtime(): TargetRuntime {
    const streams = [...this.streams.values()];
    return {
      streams: streams.map((s) => ({ key: s.spec.key, state: s.state() })),
      retained: streams.flatMap((s) => s.retained).sort(),
      swept: streams.every((s) => s.sweeps > 0 || s.state().kind === 'refused'),
    };
  }

  /** Resolves once every stream has handed its queued work to the writer. */
  async idle(): Promise<void> {
    await Promise.all([...this.streams.values()].map((s) => s.idle()));
  }

  /** Stops every stream; files stay in Git. Returns the stopped stream keys. */
  async stopAll(): Promise<string[]> {
    const keys = [...this.streams.keys()];
    const all = [...this.streams.values()];
    this.streams.clear();
    await Promise.all(all.map((s) => s.stop()));
    return keys;
  }
}

function sameStream(a: StreamSpec, b: StreamSpec): boolean {
  return (
    a.key === b.key && a.apiVersion === b.apiVersion && a.kind === b.kind && a.namespaced === b.namespaced
  );
}
