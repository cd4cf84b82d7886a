/**
 * Where the decider's shard ConfigMaps come from: one small interface, so that the
 * decider does not care whether they are watched through the API (`KubeShardFeed`) or
 * handed to it by a test or a local run (`MemoryShardFeed`).
 *
 * The contract: after `start`, `onChange` is called with every shard ConfigMap the feed
 * knows, whole (not a delta), once the feed has read them all for the first time and
 * after every change since (changes close together may be delivered as one). The
 * decider selects what to serve from each view (`selectShardSets`), so a feed never
 * needs to say what changed.
 */
import type { ObservedConfigMap } from './shard-sets.ts';

export interface FeedHealth {
  /** The first complete view was delivered. */
  readonly synced: boolean;
  /** The view may be behind the source (a watch down or silent): the decider serves what it has. */
  readonly stale: boolean;
  readonly lastError?: string | undefined;
}

export interface ShardFeed {
  start(onChange: (configMaps: readonly ObservedConfigMap[]) => void): void;
  health(): FeedHealth;
  stop(): Promise<void>;
}

/**
 * A feed held in memory: `set`, `put` and `remove` change it and deliver the new view at
 * once, synchronously, as a watch event would. Synced from `start`.
 */
export class MemoryShardFeed implements ShardFeed {
  readonly #configMaps = new Map<string, ObservedConfigMap>();
  #onChange: ((configMaps: readonly ObservedConfigMap[]) => void) | undefined;

  constructor(initial: readonly ObservedConfigMap[] = []) {
    for (const cm of initial) this.#configMaps.set(cm.name, cm);
  }

  start(onChange: (configMaps: readonly ObservedConfigMap[]) => void): void {
    this.#onChange = onChange;
    this.#deliver();
  }

  health(): FeedHealth {
    return { synced: this.#onChange !== undefined, stale: false };
  }

  async stop(): Promise<void> {
    this.#onChange = undefined;
  }

  /** Replaces every ConfigMap. */
  set(configMaps: readonly ObservedConfigMap[]): void {
    this.#configMaps.clear();
    for (const cm of configMaps) this.#configMaps.set(cm.name, cm);
    this.#deliver();
  }

  /** Creates or replaces one ConfigMap, by name. */
  put(configMap: ObservedConfigMap): void {
    this.#configMaps.set(configMap.name, configMap);
    this.#deliver();
  }

  remove(name: string): void {
    this.#configMaps.delete(name);
    this.#deliver();
  }

  #deliver(): void {
    this.#onChange?.([...this.#configMaps.values()]);
  }
}
