/**
 * The mirror's invariant, on real git: after any sequence of cluster events, watch drops,
 * re-lists, push failures, provider changes (the writer replaced) and operator restarts
 * (a crash: nothing flushed), once pushes succeed the branch holds exactly the cluster's
 * objects — modulo the prune mode: under OnEvent a file whose delete event the operator
 * never saw stays (with the last content it saw), under Never every file stays.
 *
 * The real Stream and BranchWriter (through the real WriterPool) push to a real bare
 * repository over file://; only the watch is scripted (a `WatchSource` fed by the test's
 * cluster), so a drop really loses events and a re-list really hands the stream a
 * snapshot. The oracle is the test's own model (a Map of name → version) and the branch
 * is read back with git and parsed with `yaml`, never through the code under test.
 *
 * Runs: GITOPS_MODEL_RUNS (default 8, about 1 s each) random interleavings from GITOPS_MODEL_SEED (printed;
 * set it to replay a failure), plus the three reproductions as fixed scripts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { DeltaOrigin, KubeClient, KubeObject, StoreDelta } from '@operators/kit';
import { pino } from 'pino';
import { parse } from 'yaml';
import type { DeletionMode } from '../src/domain/mirror/sweep.ts';
import type { StreamSpec } from '../src/domain/streams.ts';
import type { BranchWriter } from '../src/git/writer.ts';
import { Stream, type WatchSource } from '../src/mirror/stream.ts';
import { WriterPool, type WriterSpec } from '../src/mirror/writers.ts';
import { initBare, treeOf } from './support/git-fixtures.ts';

const NS = 'ns';
const NAMES = ['a', 'b', 'c'] as const;
const SPEC: StreamSpec = {
  key: `/configmaps@${NS}`,
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  kind: 'ConfigMap',
  resource: 'configmaps',
  namespaced: true,
  namespace: NS,
  operations: ['CREATE', 'UPDATE', 'DELETE'],
};
/** Where the operator writes an object of SPEC, spelled by hand (the oracle's own layout). */
const fileOf = (name: string): string => `live/${NS}/configmaps/${name}.yaml`;
const log = pino({ level: 'silent' });
/** The scripted watch needs no client; any use of one is a bug in the test. */
const NO_CLIENT = new Proxy(
  {},
  {
    get() {
      throw new Error('the model test watches through its own source, never a client');
    },
  },
) as KubeClient;

/** The test's cluster: objects by name, and the watches (one per stream incarnation) that see it. */
class Cluster {
  readonly objects = new Map<string, KubeObject>();
  private rv = 0;
  readonly watches = new Set<ScriptedWatch>();

  set(name: string, v: string): void {
    const obj: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: NS, resourceVersion: String(++this.rv) },
      data: { v },
    } as KubeObject;
    this.objects.set(name, obj);
    for (const w of this.watches) w.event(obj, false);
  }

  delete(name: string): void {
    const obj = this.objects.get(name);
    if (!obj) return;
    this.objects.delete(name);
    for (const w of this.watches) w.event(obj, true);
  }
}

/** A watch that delivers the cluster's events while connected, loses them while dropped, and re-lists. */
class ScriptedWatch implements WatchSource {
  private readonly cluster: Cluster;
  private readonly known = new Map<string, KubeObject>();
  private deltaHandlers: ((d: StoreDelta<KubeObject>, origin: DeltaOrigin) => void)[] = [];
  private snapshotHandlers: ((items: readonly KubeObject[]) => void)[] = [];
  connected = false;
  /** What the stream was last told of each name: a version, or null for a delivered delete. */
  readonly delivered: Map<string, string | null>;
  readonly store = {
    hasSynced: (): boolean => true,
    list: (): readonly KubeObject[] => [...this.known.values()],
  };

  constructor(cluster: Cluster, delivered: Map<string, string | null>) {
    this.cluster = cluster;
    this.delivered = delivered;
  }

  onDelta(h: (d: StoreDelta<KubeObject>, origin: DeltaOrigin) => void): void {
    this.deltaHandlers.push(h);
  }
  onSnapshot(h: (items: readonly KubeObject[]) => void): void {
    this.snapshotHandlers.push(h);
  }
  start(): void {
    this.cluster.watches.add(this);
    this.relist();
  }
  async stop(): Promise<void> {
    this.cluster.watches.delete(this);
    this.deltaHandlers = [];
    this.snapshotHandlers = [];
  }
  health(): { synced: boolean } {
    return { synced: true };
  }

  event(obj: KubeObject, deleted: boolean): void {
    if (!this.connected) return;
    const name = obj.metadata.name ?? '';
    const old = this.known.get(name);
    let delta: StoreDelta<KubeObject>;
    if (deleted) {
      this.known.delete(name);
      delta = { type: 'deleted', object: obj };
      this.delivered.set(name, null);
    } else {
      this.known.set(name, obj);
      delta = old ? { type: 'updated', object: obj, old } : { type: 'added', object: obj };
      this.delivered.set(name, versionOf(obj));
    }
    for (const h of this.deltaHandlers) h(delta, 'watch');
  }

  /** The watch drops: every event until the re-list is lost. */
  drop(): void {
    this.connected = false;
  }

  /** A complete new state (after a drop, or the first): the stream gets a snapshot. */
  relist(): void {
    this.connected = true;
    this.known.clear();
    for (const [name, obj] of this.cluster.objects) {
      this.known.set(name, obj);
      this.delivered.set(name, versionOf(obj));
    }
    const items = [...this.known.values()];
    for (const h of this.snapshotHandlers) h(items);
  }
}

const versionOf = (obj: KubeObject): string => (obj as { data?: { v?: string } }).data?.v ?? '';

export type Step =
  | { readonly kind: 'set'; readonly name: string; readonly v: string }
  | { readonly kind: 'delete'; readonly name: string }
  | { readonly kind: 'drop' }
  | { readonly kind: 'relist' }
  | { readonly kind: 'pushes'; readonly ok: boolean }
  | { readonly kind: 'provider-change' }
  | { readonly kind: 'restart' }
  | { readonly kind: 'check' };

/** One operator over one bare repository, driven step by step, with the model beside it. */
class World {
  readonly root: string;
  readonly bare: string;
  readonly prune: DeletionMode;
  readonly cluster = new Cluster();
  /** What the operator last saw of each name (survives restarts: it is the test's record). */
  readonly delivered = new Map<string, string | null>();
  /** The last version the operator saw of each name while it existed (prune Never keeps that file). */
  readonly lastPresent = new Map<string, string>();
  private pool: WriterPool;
  private committer = 0;
  private writer!: BranchWriter;
  private stream!: Stream;
  private watch!: ScriptedWatch;
  private pushesOk = true;

  private constructor(root: string, bare: string, prune: DeletionMode) {
    this.root = root;
    this.bare = bare;
    this.prune = prune;
    this.pool = this.newPool();
  }

  static async create(prune: DeletionMode): Promise<World> {
    const root = await mkdtemp(join(tmpdir(), 'gitops-reverser-model-'));
    const bare = await initBare(join(root, 'remote.git'));
    const w = new World(root, bare, prune);
    await w.startStream();
    return w;
  }

  private newPool(): WriterPool {
    return new WriterPool({
      workDir: join(this.root, 'work'),
      allowedProtocols: ['file'],
      // Retries far apart enough not to flood the machine with git while pushes fail;
      // a drain's flush cuts the writer's backoff short anyway.
      retry: { baseMs: 40, maxMs: 160, replayBaseMs: 1 },
    });
  }

  private writerSpec(): WriterSpec {
    return {
      provider: `${NS}/repo`,
      url: `file://${this.bare}`,
      branch: 'main',
      auth: { kind: 'none' },
      committer: { name: 'gitops-reverser', email: `bot${this.committer}@example.com` },
    };
  }

  /** A stream as TargetMirror starts one: on the current writer, with a fresh watch (a first snapshot). */
  private async startStream(): Promise<void> {
    this.writer = await this.pool.writer(this.writerSpec());
    this.watch = new ScriptedWatch(this.cluster, this.delivered);
    this.stream = new Stream(SPEC, {
      target: `${NS}/mirror`,
      content: { targetPath: 'live' },
      prune: this.prune,
      writer: this.writer,
      // Only flushes commit: one push per check, not one per event.
      commit: { windowMs: 600_000 },
      client: NO_CLIENT,
      log,
      watch: () => this.watch,
      snapshotRetry: { baseMs: 10, maxMs: 40 },
    });
    this.stream.start();
    await this.stream.idle();
  }

  async step(s: Step): Promise<void> {
    switch (s.kind) {
      case 'set':
        this.cluster.set(s.name, s.v);
        break;
      case 'delete':
        this.cluster.delete(s.name);
        break;
      case 'drop':
        this.watch.drop();
        break;
      case 'relist':
        if (!this.watch.connected) this.watch.relist();
        break;
      case 'pushes':
        await this.setPushes(s.ok);
        break;
      case 'provider-change': {
        // As TargetMirror.apply on a GitProvider edit: a new writer, every stream restarted.
        await this.stream.stop();
        this.committer++;
        await this.startStream();
        break;
      }
      case 'restart': {
        // A crash: streams gone, writers closed without a flush; then a fresh process.
        await this.stream.stop();
        await this.pool.close(false);
        this.pool = this.newPool();
        await this.startStream();
        break;
      }
      case 'check':
        await this.check();
        break;
      default:
        return s satisfies never;
    }
    await this.stream.idle();
  }

  private async setPushes(ok: boolean): Promise<void> {
    if (ok === this.pushesOk) return;
    // The remote gone (renamed away) fails every fetch and push; renamed back, it works.
    if (ok) await rename(`${this.bare}.away`, this.bare);
    else await rename(this.bare, `${this.bare}.away`);
    this.pushesOk = ok;
  }

  /** Re-list if dropped, let pushes succeed, wait until nothing is left to push. */
  private async drain(): Promise<void> {
    if (!this.watch.connected) this.watch.relist();
    await this.setPushes(true);
    for (let i = 0; i < 500; i++) {
      await this.stream.idle();
      const results = await this.writer.flush();
      await this.stream.idle();
      if (
        results.every((r) => r.kind !== 'failed') &&
        this.writer.unpushed().length === 0 &&
        this.stream.state().kind !== 'failed'
      ) {
        return;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(
      `never drained: ${JSON.stringify(this.writer.unpushed())} ${JSON.stringify(this.stream.state())}`,
    );
  }

  /** The branch as the model says it must be once pushes succeed: path → version. */
  expected(): Map<string, string> {
    const want = new Map<string, string>();
    for (const [name, obj] of this.cluster.objects) want.set(fileOf(name), versionOf(obj));
    for (const name of NAMES) {
      if (this.cluster.objects.has(name)) continue;
      const seen = this.delivered.get(name);
      // OnEvent: only a delete the operator saw as an event deletes; Never: nothing does.
      if (this.prune === 'OnEvent' && typeof seen === 'string') want.set(fileOf(name), seen);
      if (this.prune === 'Never' && this.lastPresent.has(name))
        want.set(fileOf(name), this.lastPresent.get(name) ?? '');
    }
    return want;
  }

  /** Records what was delivered, for prune Never (called after every step). */
  notePresent(): void {
    for (const [name, v] of this.delivered) if (v !== null) this.lastPresent.set(name, v);
  }

  async check(): Promise<void> {
    await this.drain();
    const got = new Map<string, string>();
    for (const [path, text] of await treeOf(this.bare)) {
      const doc = parse(text) as { metadata?: { name?: string }; data?: { v?: string } };
      assert.equal(path, fileOf(doc.metadata?.name ?? '?'), `${path} holds the object it is named for`);
      got.set(path, doc.data?.v ?? '');
    }
    const sorted = (m: Map<string, string>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
    assert.deepEqual(
      sorted(got),
      sorted(this.expected()),
      `prune ${this.prune}: the branch equals the model`,
    );
  }

  async close(): Promise<void> {
    await this.stream.stop();
    await this.setPushes(true);
    await this.pool.close(false);
    await rm(this.root, { recursive: true, force: true });
  }
}

async function run(prune: DeletionMode, steps: readonly Step[]): Promise<void> {
  const w = await World.create(prune);
  try {
    for (const s of steps) {
      await w.step(s);
      w.notePresent();
    }
    await w.step({ kind: 'check' });
  } finally {
    await w.close();
  }
}

/** mulberry32: a tiny seeded generator, so a printed seed replays a run exactly. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A run: a few objects pushed first (so later changes have a pushed version to race),
 * then 4 to 10 random steps. Pushes are turned off more often than on, so changes wait
 * in the queue while drops, provider changes and restarts happen: where the bugs live.
 */
function randomSteps(next: () => number): Step[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const steps: Step[] = [];
  for (const name of NAMES) if (next() < 0.6) steps.push({ kind: 'set', name, v: pick(['1', '2']) });
  steps.push({ kind: 'check' });
  const n = 4 + Math.floor(next() * 7);
  for (let i = 0; i < n; i++) {
    const r = next();
    if (r < 0.3) steps.push({ kind: 'set', name: pick(NAMES), v: pick(['1', '2', '3']) });
    else if (r < 0.45) steps.push({ kind: 'delete', name: pick(NAMES) });
    else if (r < 0.55) steps.push({ kind: 'drop' });
    else if (r < 0.62) steps.push({ kind: 'relist' });
    else if (r < 0.77) steps.push({ kind: 'pushes', ok: next() < 0.25 });
    else if (r < 0.85) steps.push({ kind: 'provider-change' });
    else if (r < 0.93) steps.push({ kind: 'restart' });
    else steps.push({ kind: 'check' });
  }
  return steps;
}

const PRUNES: readonly DeletionMode[] = ['Always', 'OnEvent', 'Never'];
/** Runs in CI: each is a real repository, clone and dozens of git commands (see the module comment). */
const DEFAULT_RUNS = 8;

describe('the mirror invariant (real Stream, real WriterPool, real git over file://; a scripted watch)', () => {
  it('issue 38 #1: a re-list compares with the branch plus the queue, so an object back at its pushed version wins over a queued newer one', async () => {
    await run('OnEvent', [
      { kind: 'set', name: 'a', v: '1' },
      { kind: 'check' },
      { kind: 'pushes', ok: false },
      { kind: 'set', name: 'a', v: '2' },
      { kind: 'drop' },
      { kind: 'set', name: 'a', v: '1' },
      { kind: 'relist' },
    ]);
  });

  it('issue 38 #2: a provider change (a replaced writer) keeps what was queued, a delete under OnEvent included', async () => {
    await run('OnEvent', [
      { kind: 'set', name: 'a', v: '1' },
      { kind: 'check' },
      { kind: 'pushes', ok: false },
      { kind: 'delete', name: 'a' },
      { kind: 'provider-change' },
    ]);
  });

  it('issue 38 #3: an operator crash with a queued delete under OnEvent: the restarted operator still deletes the file', async () => {
    await run('OnEvent', [
      { kind: 'set', name: 'a', v: '1' },
      { kind: 'set', name: 'b', v: '1' },
      { kind: 'check' },
      { kind: 'pushes', ok: false },
      { kind: 'delete', name: 'a' },
      { kind: 'set', name: 'b', v: '2' },
      { kind: 'restart' },
    ]);
  });

  it('holds for random interleavings of events, drops, re-lists, push failures, provider changes and restarts', async (t) => {
    const runs = Number(process.env.GITOPS_MODEL_RUNS ?? DEFAULT_RUNS);
    const seed = Number(process.env.GITOPS_MODEL_SEED ?? Math.floor(Math.random() * 2 ** 31));
    t.diagnostic(`GITOPS_MODEL_SEED=${seed} GITOPS_MODEL_RUNS=${runs}`);
    for (let i = 0; i < runs; i++) {
      const next = rng(seed + i);
      const prune = PRUNES[Math.floor(next() * PRUNES.length)] as DeletionMode;
      const steps = randomSteps(next);
      try {
        await run(prune, steps);
      } catch (err) {
        throw new Error(
          `run ${i} failed (replay: GITOPS_MODEL_SEED=${seed + i} GITOPS_MODEL_RUNS=1), prune ${prune}, steps ${JSON.stringify(steps)}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  });
});
