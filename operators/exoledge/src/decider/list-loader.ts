/**
 * The request thread's side of the served lists: it hands each view of the shard
 * ConfigMaps to the list worker (`list-worker.ts`), which selects, parses and builds
 * there, and swaps each table the worker sends back in with one assignment. Until the
 * new table arrives, the old one answers, whole; so every answer is the old version's or
 * the new one's.
 *
 * What the request thread still pays, and why it stays short:
 * - Copying text to the worker: a structured clone costs about 3 ms a megabyte here
 *   (150 ms for the 49 MB of three million prefixes). So the worker keeps a copy of the
 *   view, and each view sends only the ConfigMaps that changed (a new `data` or `labels`
 *   object: the feed keeps the objects of those that did not), in messages of at most
 *   `CHUNK_CHARS` of text with a turn of the event loop between them. A rollout rewrites
 *   a shard or a few per view; only the first view (or one after the worker died) sends
 *   everything, in slices.
 * - A new table: a few allocations. Its arrays come back as transferred buffers.
 *
 * One view at a time is with the worker. Views that come meanwhile are not queued: the
 * latest replaces the one waiting, as the feed already coalesces them (each is whole, so
 * the latest is all that matters). The view with the worker is not cancelled: it is a
 * view the feed delivered, consistent in itself, and the worker's state (what an
 * incomplete list keeps serving) depends on applying views in order.
 *
 * The worker is retired when idle: once a view is applied with every list complete (and
 * none refused) and no other view comes for `RETIRE_AFTER_MS`, it is terminated, and with
 * it its heap (its copy of the view, the parsed lists, what parsing left): some 80 MB
 * with three million prefixes. Its state then follows from that view alone: each list
 * serves the complete version selected, so the next view starts a new worker that is
 * first sent that view (the feed's objects, kept here by reference, not copied) with
 * what it served (`seed`), then the new view as a change from it. It costs a new
 * worker's start, the whole view cloned again (in slices, as a first view) and parsed
 * again, off this thread; none of that is on a request.
 *
 * If the worker dies (it catches what a view throws, so this means out of memory or a
 * bug in Node), the table it last sent keeps answering, the death is reported, and a new
 * worker takes the next view, whole: it starts from nothing, so a list incomplete in
 * that view is not served until it is complete again.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import type { ListHit } from '../domain/decider/verdict.ts';
import { type Address, PrefixTable, type TableParts } from './prefix-table.ts';
import type { ApplyOutcome, ServedListInfo } from './served-lists.ts';
import type { ObservedConfigMap } from './shard-sets.ts';

/**
 * What the loader sends the worker: ConfigMaps new or changed since the last view
 * (`put`, in slices), then the names gone and the order to apply the view (`apply`).
 * Only `apply` is answered.
 */
export type LoaderRequest =
  | { readonly kind: 'put'; readonly configMaps: readonly ObservedConfigMap[] }
  /** The view a retired worker last applied (with the last `put`s), and what it served: not answered. */
  | {
      readonly kind: 'seed';
      readonly configMaps: readonly ObservedConfigMap[];
      readonly serving: readonly ServedListInfo[];
    }
  | {
      readonly kind: 'apply';
      readonly configMaps: readonly ObservedConfigMap[];
      readonly removed: readonly string[];
    };

/** What the worker answers to each view. */
export type LoaderReply =
  | {
      readonly kind: 'applied';
      readonly outcome: ApplyOutcome;
      readonly served: readonly ServedListInfo[];
      /** The new table, when `outcome.rebuilt`. */
      readonly parts?: TableParts;
    }
  /** The view threw (a bug, not a bad shard): nothing changed. */
  | { readonly kind: 'failed'; readonly error: unknown };

/** What the loader tells its owner, once per view applied or failed. */
export type LoaderEvent =
  | { readonly kind: 'applied'; readonly outcome: ApplyOutcome }
  | { readonly kind: 'failed'; readonly error: unknown };

const WORKER_URL = new URL('./list-worker.ts', import.meta.url);
/** Text sent to the worker per turn of the event loop: a few milliseconds of cloning. */
export const CHUNK_CHARS = 2_000_000;
const EMPTY_TABLE = PrefixTable.build([]);
/** How long the worker stays after a view leaves every list complete, in case another comes. */
export const RETIRE_AFTER_MS = 2_000;

export interface ListLoaderOptions {
  /** `RETIRE_AFTER_MS` by default. */
  readonly retireAfterMs?: number;
}

export class ListLoader {
  readonly #onEvent: (event: LoaderEvent) => void;
  #worker: Worker | undefined;
  #table: PrefixTable = EMPTY_TABLE;
  #served: readonly ServedListInfo[] = [];
  #applied = false;
  #last: ApplyOutcome | undefined;
  /** The latest view not yet sent. */
  #pending: readonly ObservedConfigMap[] | undefined;
  /** A view is with the worker. */
  #busy = false;
  #closed = false;
  /** The view the worker holds, by name: the objects sent, compared by reference. */
  #sent = new Map<string, ObservedConfigMap>();
  #idle: (() => void)[] = [];
  readonly #retireAfterMs: number;
  #retireTimer: NodeJS.Timeout | undefined;
  /**
   * What the retired worker served from `#sent`, its last view: a new worker is seeded
   * with both. Undefined while a worker runs, or when none ran or the last one died.
   */
  #seed: readonly ServedListInfo[] | undefined;

  constructor(onEvent: (event: LoaderEvent) => void, options: ListLoaderOptions = {}) {
    this.#onEvent = onEvent;
    this.#retireAfterMs = options.retireAfterMs ?? RETIRE_AFTER_MS;
  }

  /** Whether a worker runs now (for tests and metrics: it is retired when idle). */
  get workerRunning(): boolean {
    return this.#worker !== undefined;
  }

  /** The lists holding `address`, from the table served now. */
  lookup(address: Address): readonly ListHit[] {
    const found = this.#table.lookup(address);
    return found.outcome === 'listed' ? found.lists : [];
  }

  /** Whether a view was applied: before, the decider knows no list and is not ready. */
  get applied(): boolean {
    return this.#applied;
  }

  get lastOutcome(): ApplyOutcome | undefined {
    return this.#last;
  }

  get served(): readonly ServedListInfo[] {
    return this.#served;
  }

  /** Serves `configMaps` once the worker has built it; returns at once. */
  apply(configMaps: readonly ObservedConfigMap[]): void {
    if (this.#closed) return;
    this.#pending = configMaps;
    this.#send();
  }

  /** Resolves once every view given to `apply` so far is applied (or failed). */
  settled(): Promise<void> {
    if (!this.#busy && this.#pending === undefined) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#pending = undefined;
    this.#cancelRetire();
    const worker = this.#worker;
    this.#worker = undefined;
    this.#busy = false;
    this.#wake();
    await worker?.terminate();
  }

  #send(): void {
    if (this.#busy || this.#pending === undefined || this.#closed) return;
    const view = this.#pending;
    this.#pending = undefined;
    this.#busy = true;
    this.#cancelRetire();
    void this.#post(this.#start(), view);
  }

  /** Sends `view` as the changes from the last one, in slices; the worker applies it at the end. */
  async #post(worker: Worker, view: readonly ObservedConfigMap[]): Promise<void> {
    const sent = this.#sent;
    const seed = this.#seed;
    this.#seed = undefined;
    if (seed !== undefined) {
      // A new worker, after a retired one: first the view that one last applied.
      if (!(await this.#putAll(worker, [...sent.values()]))) return;
      worker.postMessage({ kind: 'seed', configMaps: [], serving: seed } satisfies LoaderRequest);
    }
    const next = new Map<string, ObservedConfigMap>();
    const changed: ObservedConfigMap[] = [];
    for (const cm of view) {
      next.set(cm.name, cm);
      const before = sent.get(cm.name);
      if (before === undefined || before.data !== cm.data || before.labels !== cm.labels) changed.push(cm);
    }
    const removed = [...sent.keys()].filter((name) => !next.has(name));
    this.#sent = next;
    if (!(await this.#putAll(worker, changed))) return;
    worker.postMessage({ kind: 'apply', configMaps: [], removed } satisfies LoaderRequest);
  }

  /**
   * Sends `configMaps` as `put`s of about `CHUNK_CHARS`, a turn of the event loop after
   * each; false if the worker died or the loader closed meanwhile (`#died` or `close`
   * took over).
   */
  async #putAll(worker: Worker, configMaps: readonly ObservedConfigMap[]): Promise<boolean> {
    let slice: ObservedConfigMap[] = [];
    let chars = 0;
    for (const cm of configMaps) {
      slice.push(cm);
      chars += textLength(cm);
      if (chars >= CHUNK_CHARS) {
        worker.postMessage({ kind: 'put', configMaps: slice } satisfies LoaderRequest);
        slice = [];
        chars = 0;
        await nextTurn();
        if (this.#worker !== worker) return false;
      }
    }
    if (slice.length > 0) worker.postMessage({ kind: 'put', configMaps: slice } satisfies LoaderRequest);
    return true;
  }

  #start(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = new Worker(WORKER_URL);
    // The decider's server and feed keep the process alive; the worker alone must not.
    worker.unref();
    worker.on('message', (reply: LoaderReply) => this.#receive(reply));
    worker.on('error', (error) => this.#died(worker, error));
    worker.on('exit', (code) => this.#died(worker, new Error(`the list worker exited with code ${code}`)));
    this.#worker = worker;
    return worker;
  }

  #receive(reply: LoaderReply): void {
    this.#busy = false;
    switch (reply.kind) {
      case 'applied':
        // The swap: one assignment, of a table already whole. Lookups are synchronous, so
        // none is running on the old table: its arrays can go at once.
        if (reply.parts !== undefined) {
          const old = this.#table;
          this.#table = PrefixTable.fromParts(reply.parts);
          if (old !== EMPTY_TABLE) old.release();
        }
        this.#served = reply.served;
        this.#applied = true;
        this.#last = reply.outcome;
        this.#onEvent({ kind: 'applied', outcome: reply.outcome });
        if (reply.outcome.incomplete.length === 0 && reply.outcome.parseProblems.length === 0) {
          this.#scheduleRetire();
        }
        break;
      case 'failed':
        this.#onEvent({ kind: 'failed', error: reply.error });
        break;
      default:
        reply satisfies never;
    }
    this.#send();
    this.#wake();
  }

  #died(worker: Worker, error: unknown): void {
    // `error` then `exit` come for one death: report it once.
    if (this.#closed || this.#worker !== worker) return;
    this.#worker = undefined;
    this.#cancelRetire();
    // The next worker holds no view: it gets the next one whole.
    this.#sent = new Map();
    this.#seed = undefined;
    this.#busy = false;
    this.#onEvent({ kind: 'failed', error });
    this.#send();
    this.#wake();
  }

  /**
   * Retires the worker after `#retireAfterMs` unless a view comes first. Called when the
   * view just applied (`#sent`) left every list complete and none refused: then what each
   * list serves is the version selected from that view, and `seed` rebuilds it exactly.
   */
  #scheduleRetire(): void {
    this.#cancelRetire();
    const timer = setTimeout(() => {
      this.#retireTimer = undefined;
      const worker = this.#worker;
      if (worker === undefined || this.#busy || this.#pending !== undefined || this.#closed) return;
      this.#worker = undefined;
      this.#seed = this.#served;
      // `#died` ignores the exit: this worker is no longer `#worker`.
      void worker.terminate();
    }, this.#retireAfterMs);
    timer.unref();
    this.#retireTimer = timer;
  }

  #cancelRetire(): void {
    if (this.#retireTimer !== undefined) clearTimeout(this.#retireTimer);
    this.#retireTimer = undefined;
  }

  #wake(): void {
    if (this.#busy || this.#pending !== undefined) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}

/** The characters of text a ConfigMap carries: what cloning it costs. */
function textLength(cm: ObservedConfigMap): number {
  let n = 0;
  for (const value of Object.values(cm.data ?? {})) if (typeof value === 'string') n += value.length;
  return n;
}
