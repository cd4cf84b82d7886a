/**
 * The no-gap write order, without a cluster: the plan's writes and deletions are played
 * one by one on a model of the live shards, and after every step each address that was
 * listed before and is still listed after must be held by some shard. Coverage is judged
 * by a naive model of its own (10.0.x.0 /24 units, enumerated), not by the planner's spans.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import fc from 'fast-check';
import { merge, parseBlocklist } from '../src/domain/blocklist/index.ts';
import {
  cidrGroup,
  type LiveObjects,
  planPublication,
  publishedSet,
  resolveSpec,
  shardPrefixes,
} from '../src/domain/blocklist-source/index.ts';

const SOURCE = {
  apiVersion: 'edge.exoledge.io/v1alpha1',
  kind: 'BlocklistSource',
  name: 'cve',
  uid: 'uid-1',
};
const NO_LIVE: LiveObjects = { cidrGroups: [], policies: [], configMaps: [] };

const specOf = (shardSize: number) =>
  resolveSpec({
    url: 'https://lists.example/a.txt',
    kind: 'Certain',
    enforce: true,
    shardSize,
    podSelector: {},
  });

/** The /24 units `10.0.x.0` a prefix of 10.0.0.0/16 covers, enumerated. */
function units(prefix: string): number[] {
  const m = /^10\.0\.(\d+)\.0\/(\d+)$/.exec(prefix);
  assert.ok(m, `a test prefix: ${prefix}`);
  const length = Number(m[2]);
  const size = 2 ** (24 - length);
  const first = Math.floor(Number(m[1]) / size) * size;
  return Array.from({ length: size }, (_, i) => first + i);
}

function unitsOf(prefixes: readonly string[]): Set<number> {
  return new Set(prefixes.flatMap(units));
}

type Shards = Map<string, readonly string[]>;

const cidrsOf = (o: KubeObject) =>
  (o as KubeObject & { spec: { externalCIDRs: string[] } }).spec.externalCIDRs;

/**
 * Plays a plan on `state` (CIDR group name to prefixes), checking after every step that
 * every unit of `mustStay` is held; returns the first hole, if any.
 */
function play(
  state: Shards,
  plan: ReturnType<typeof planPublication>,
  mustStay: ReadonlySet<number>,
): string | undefined {
  const hole = (step: string) => {
    const held = unitsOf([...state.values()].flat());
    for (const u of mustStay) if (!held.has(u)) return `10.0.${u}.0/24 held by no shard after ${step}`;
    return undefined;
  };
  for (const o of plan.apply) {
    if (o.kind !== 'CiliumCIDRGroup') continue;
    state.set(o.metadata.name ?? '', [...cidrsOf(o)]);
    const h = hole(`writing ${o.metadata.name}`);
    if (h) return h;
  }
  for (const ref of plan.delete) {
    state.delete(ref.name);
    const h = hole(`deleting ${ref.name}`);
    if (h) return h;
  }
  return undefined;
}

function setOf(text: string, shardSize: number) {
  return publishedSet(merge(parseBlocklist(text).entries), specOf(shardSize));
}

/** The CIDR groups a set is published as, labelled with the source, as live. */
function liveOf(groups: readonly (readonly string[])[]): LiveObjects {
  return {
    ...NO_LIVE,
    cidrGroups: groups.map((g, i) => cidrGroup(SOURCE, i, g.map((p) => `${p}\n`).join(''))),
  };
}

function ordered(state: Shards): string[] {
  return [...state.entries()]
    .sort(([a], [b]) => Number(a.split('-')[1]) - Number(b.split('-')[1]))
    .flatMap(([, p]) => p);
}

/** `10.0.<4i>.0/24` for i in [from, to): /24s four apart, which never merge. */
function spaced(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, k) => `10.0.${4 * (from + k)}.0/24`);
}

describe('the order of shard writes', () => {
  it('writes the lower shards first when a merge moves every later prefix down, though the list grows', () => {
    // 10.0.0.0/24..10.0.7.0/24 merge into one /21, so every later prefix moves one place
    // down; ten new /24s come after them. More addresses, prefixes moving down.
    const before = `${spaced(0, 24).join('\n')}\n`;
    const filled = ['10.0.1.0/24', '10.0.2.0/24', '10.0.3.0/24', '10.0.5.0/24', '10.0.6.0/24', '10.0.7.0/24'];
    const after = `${[...spaced(0, 24), ...filled, ...Array.from({ length: 10 }, (_, i) => `10.0.${128 + 2 * i}.0/24`)].join('\n')}\n`;
    const old = setOf(before, 4);
    const next = setOf(after, 4);
    const plan = planPublication({
      source: SOURCE,
      spec: specOf(4),
      set: next,
      deciderNamespace: 'decider',
      live: liveOf(old.shards.map(shardPrefixes)),
    });
    const names = plan.apply.filter((o) => o.kind === 'CiliumCIDRGroup').map((o) => o.metadata.name);
    assert.deepEqual(names.slice(0, 6), ['cve-0', 'cve-1', 'cve-2', 'cve-3', 'cve-4', 'cve-5']);
    const state: Shards = new Map(old.shards.map((s, i) => [`cve-${i}`, shardPrefixes(s)]));
    // Every address listed before is still listed after.
    const must = unitsOf(spaced(0, 24));
    assert.equal(play(state, plan, must), undefined);
    assert.deepEqual(ordered(state), shardPrefixes(next.shards.join('')));
  });

  it('breaks a cycle in hand-edited shards with an interim write of old and new together', () => {
    // Someone swapped the two shards' contents: each loses what the other must take.
    const next = setOf('10.0.0.0/24\n10.0.2.0/24\n10.0.4.0/24\n10.0.6.0/24\n', 2);
    const plan = planPublication({
      source: SOURCE,
      spec: specOf(2),
      set: next,
      deciderNamespace: 'decider',
      live: liveOf([
        ['10.0.4.0/24', '10.0.6.0/24'],
        ['10.0.0.0/24', '10.0.2.0/24'],
      ]),
    });
    const groups = plan.apply.filter((o) => o.kind === 'CiliumCIDRGroup');
    assert.deepEqual(
      groups.map((o) => [o.metadata.name, cidrsOf(o)]),
      [
        ['cve-0', ['10.0.0.0/24', '10.0.2.0/24', '10.0.4.0/24', '10.0.6.0/24']],
        ['cve-1', ['10.0.4.0/24', '10.0.6.0/24']],
        ['cve-0', ['10.0.0.0/24', '10.0.2.0/24']],
      ],
    );
  });

  it('never leaves an address listed before and after without a shard, whatever the two lists (property)', () => {
    const prefix = fc
      .tuple(fc.integer({ min: 0, max: 63 }), fc.constantFrom(22, 23, 24))
      .map(([x, len]) => `10.0.${x}.0/${len}`);
    fc.assert(
      fc.property(
        fc.array(prefix, { maxLength: 30 }),
        fc.array(prefix, { maxLength: 30 }),
        fc.integer({ min: 1, max: 5 }),
        (beforeList, afterList, shardSize) => {
          const old = setOf(`${beforeList.join('\n')}\n`, shardSize);
          const next = setOf(`${afterList.join('\n')}\n`, shardSize);
          const plan = planPublication({
            source: SOURCE,
            spec: specOf(shardSize),
            set: next,
            deciderNamespace: 'decider',
            live: liveOf(old.shards.map(shardPrefixes)),
          });
          const stay = unitsOf(afterList);
          const must = new Set([...unitsOf(beforeList)].filter((u) => stay.has(u)));
          const state: Shards = new Map(old.shards.map((s, i) => [`cve-${i}`, shardPrefixes(s)]));
          assert.equal(play(state, plan, must), undefined);
          assert.deepEqual(ordered(state), shardPrefixes(next.shards.join('')));
          // Nothing is written twice when the operator wrote the live shards itself.
          const written = plan.apply.map((o) => o.metadata.name);
          assert.equal(new Set(written).size, written.length);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never leaves a gap even when the live shards were shuffled by hand (property)', () => {
    const prefix = fc.integer({ min: 0, max: 31 }).map((x) => `10.0.${2 * x}.0/24`);
    fc.assert(
      fc.property(
        fc.uniqueArray(prefix, { maxLength: 16 }),
        fc.array(prefix, { maxLength: 16 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        (liveAll, afterList, liveShardSize, shardSize) => {
          // Live shards as someone left them: any prefixes, in any grouping and order.
          const groups: string[][] = [];
          for (let i = 0; i < liveAll.length; i += liveShardSize)
            groups.push(liveAll.slice(i, i + liveShardSize));
          const next = setOf(`${afterList.join('\n')}\n`, shardSize);
          const plan = planPublication({
            source: SOURCE,
            spec: specOf(shardSize),
            set: next,
            deciderNamespace: 'decider',
            live: liveOf(groups),
          });
          const stay = unitsOf(afterList);
          const must = new Set([...unitsOf(liveAll)].filter((u) => stay.has(u)));
          const state: Shards = new Map(groups.map((g, i) => [`cve-${i}`, g]));
          assert.equal(play(state, plan, must), undefined);
          assert.deepEqual(ordered(state), shardPrefixes(next.shards.join('')));
        },
      ),
      { numRuns: 500 },
    );
  });
});
