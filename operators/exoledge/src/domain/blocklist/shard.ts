/**
 * Sharding: the published set cut into objects of at most `shardSize` prefixes, because
 * one Kubernetes object cannot hold a whole list (the apiserver refuses objects over
 * about 1.5 MiB). Shards are consecutive runs of the canonical order: the same set always
 * gives the same shards, so a reconcile that finds nothing changed writes nothing.
 */
import { formatPrefix } from './format.ts';
import { type PrefixList, prefixesOf } from './prefix-list.ts';

export interface Shard {
  /** 0-based position: shard names derive from it. */
  readonly index: number;
  /** Canonical prefix text, in canonical order. */
  readonly prefixes: readonly string[];
}

/** The shards of a canonical list; an empty list has no shards. */
export function shard(list: PrefixList, shardSize: number): Shard[] {
  if (!(Number.isSafeInteger(shardSize) && shardSize >= 1)) {
    throw new RangeError(`shardSize must be an integer of at least 1, not ${shardSize}`);
  }
  const shards: Shard[] = [];
  let current: string[] = [];
  for (const prefix of prefixesOf(list)) {
    current.push(formatPrefix(prefix));
    if (current.length === shardSize) {
      shards.push({ index: shards.length, prefixes: current });
      current = [];
    }
  }
  if (current.length > 0) shards.push({ index: shards.length, prefixes: current });
  return shards;
}
