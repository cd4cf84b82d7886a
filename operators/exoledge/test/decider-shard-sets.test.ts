/**
 * The decider's choice of shards. The property: whatever the order in which the shards
 * of a new version appear and those of the old one go (rewritten in place under the same
 * names, as the operator does, or side by side under names of their own), each list
 * serves exactly the old version or the new one, never a mix, and the selection's
 * fingerprint changes exactly when what is served does. The oracle is the rule in a few
 * lines: a version is served when all its shards are there; of two, the one served
 * before; none complete, the one served before is kept.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ListKind as Kinds, type ListKind } from '../src/api/blocklist-source.ts';
import {
  IncompleteReason,
  type ListSelection,
  type ObservedConfigMap,
  type ServedVersion,
  ShardProblemReason,
  type ShardSelection,
  selectShardSets,
  servingOf,
} from '../src/decider/shard-sets.ts';
import {
  DECIDER_DATA_KEY,
  deciderConfigMap,
  LABEL_KIND,
  LABEL_MANAGED_BY,
  LABEL_SHARD,
  LABEL_SOURCE,
  SHARD_FINGERPRINT_KEY,
  SHARD_TOTAL_KEY,
} from '../src/domain/blocklist-source/publication.ts';
import type { ResolvedSpec } from '../src/domain/blocklist-source/spec.ts';

interface TestVersion {
  readonly list: string;
  readonly kind: ListKind;
  readonly texts: readonly string[];
  readonly fingerprint: string;
}

function versionOf(list: string, kind: ListKind, texts: readonly string[]): TestVersion {
  const fingerprint = createHash('sha256').update(texts.join('')).digest('hex');
  return { list, kind, texts, fingerprint };
}

/** `n` shards of two lines each, different for every `tag`. */
function textsOf(tag: number, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `10.${tag}.${i}.0/24\n10.${tag}.${i}.128/25\n`);
}

/** Shard `index` of `v`, as the publisher would write it with the version keys. */
function shardOf(v: TestVersion, index: number, name = `blocklist-${v.list}-${index}`): ObservedConfigMap {
  return {
    name,
    labels: {
      [LABEL_SOURCE]: v.list,
      [LABEL_SHARD]: String(index),
      [LABEL_KIND]: v.kind,
      [LABEL_MANAGED_BY]: 'exoledge',
    },
    data: {
      [DECIDER_DATA_KEY]: v.texts[index]!,
      [SHARD_FINGERPRINT_KEY]: v.fingerprint,
      [SHARD_TOTAL_KEY]: String(v.texts.length),
    },
  };
}

function shardsOf(v: TestVersion): ObservedConfigMap[] {
  return v.texts.map((_, i) => shardOf(v, i));
}

function only(selection: ShardSelection, list: string): ListSelection {
  const found = selection.lists.find((l) => l.list === list);
  assert.ok(found, `no selection for ${list}`);
  return found;
}

function assertServes(selection: ListSelection, v: TestVersion): void {
  assert.equal(selection.state, 'complete', JSON.stringify(selection));
  if (selection.state !== 'complete') return;
  assert.equal(selection.fingerprint, v.fingerprint);
  assert.equal(selection.kind, v.kind);
  assert.deepEqual(selection.shards, v.texts);
}

/** What one step of a rollout shows: for each shard of each version, whether it is there. */
interface Scenario {
  readonly sideBySide: boolean;
  readonly old: TestVersion;
  readonly next: TestVersion;
  /** Each step: which version's shard (`old` or `next`), which index, and whether it is now present. */
  readonly steps: readonly {
    readonly version: 'old' | 'next';
    readonly index: number;
    readonly present: boolean;
  }[];
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    sideBySide: fc.boolean(),
    oldShards: fc.integer({ min: 1, max: 4 }),
    nextShards: fc.integer({ min: 1, max: 4 }),
    oldKind: fc.constantFrom<ListKind>(Kinds.Certain, Kinds.Presumed),
    nextKind: fc.constantFrom<ListKind>(Kinds.Certain, Kinds.Presumed),
  })
  .chain(({ sideBySide, oldShards, nextShards, oldKind, nextKind }) => {
    const old = versionOf('proxies', oldKind, textsOf(1, oldShards));
    const next = versionOf('proxies', nextKind, textsOf(2, nextShards));
    const step = fc.oneof(
      fc.record({
        version: fc.constant('old' as const),
        index: fc.integer({ min: 0, max: oldShards - 1 }),
        present: fc.boolean(),
      }),
      fc.record({
        version: fc.constant('next' as const),
        index: fc.integer({ min: 0, max: nextShards - 1 }),
        present: fc.boolean(),
      }),
    );
    return fc.record({
      sideBySide: fc.constant(sideBySide),
      old: fc.constant(old),
      next: fc.constant(next),
      steps: fc.array(step, { maxLength: 30 }),
    });
  });

describe('selectShardSets: a list serves the old version or the new one, never a mix', () => {
  it('for any interleaving of shards appearing and disappearing, in place or side by side', () => {
    fc.assert(
      fc.property(scenario, ({ sideBySide, old, next, steps }) => {
        // The shards present, by ConfigMap name. In place, shard i of both versions has
        // one name, so writing one replaces the other.
        const nameOf = (v: TestVersion, i: number): string =>
          sideBySide ? `blocklist-proxies-${v.fingerprint.slice(0, 8)}-${i}` : `blocklist-proxies-${i}`;
        const present = new Map<string, { version: TestVersion; index: number }>();
        for (let i = 0; i < old.texts.length; i++) present.set(nameOf(old, i), { version: old, index: i });
        // Another list, complete throughout, and a ConfigMap that is no shard.
        const other = versionOf('scanners', Kinds.Certain, textsOf(3, 2));
        const bystanders: ObservedConfigMap[] = [
          ...shardsOf(other),
          { name: 'decider-config', labels: {}, data: { 'config.yaml': 'x' } },
        ];
        const complete = (v: TestVersion): boolean =>
          v.texts.every((_, i) => present.get(nameOf(v, i))?.version === v);

        let serving = new Map<string, ServedVersion>();
        let served: TestVersion | undefined;
        let previous: ShardSelection | undefined;
        for (const step of [undefined, ...steps]) {
          if (step !== undefined) {
            const v = step.version === 'old' ? old : next;
            const name = nameOf(v, step.index);
            if (step.present) present.set(name, { version: v, index: step.index });
            else if (present.get(name)?.version === v) present.delete(name);
          }
          const configMaps = [
            ...[...present.entries()].map(([name, s]) => shardOf(s.version, s.index, name)),
            ...bystanders,
          ];
          const selection = selectShardSets(configMaps, { serving });

          // The oracle.
          const candidates = [old, next].filter(complete);
          const expected =
            candidates.find((c) => c === served) ??
            [...candidates].sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1))[0] ??
            served;
          const list = selection.lists.find((l) => l.list === 'proxies');
          if (candidates.length > 0) {
            assert.ok(list);
            assertServes(list, expected!);
          } else if (list !== undefined) {
            assert.equal(list.state, 'incomplete');
            assert.equal(list.state === 'incomplete' && list.held?.fingerprint, served?.fingerprint);
          } else {
            // No ConfigMap of the list at all: it is not listed, and nothing is held.
            assert.equal(present.size, 0);
          }
          const nowServed = list === undefined ? undefined : expected;
          assert.deepEqual(selection.problems, []);
          assertServes(only(selection, 'scanners'), other);
          if (previous !== undefined) {
            assert.equal(
              selection.fingerprint === previous.fingerprint,
              nowServed === served,
              'the fingerprint changes exactly when what is served does',
            );
          }
          serving = servingOf(selection);
          served = nowServed;
          previous = selection;
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('selectShardSets: named cases', () => {
  const v = versionOf('proxies', Kinds.Presumed, textsOf(1, 3));

  it('a complete version is served, its shards in index order whatever the order seen', () => {
    const selection = selectShardSets([...shardsOf(v)].reverse());
    assertServes(only(selection, 'proxies'), v);
    const list = only(selection, 'proxies');
    assert.deepEqual(list.state === 'complete' && list.configMaps, [
      'blocklist-proxies-0',
      'blocklist-proxies-1',
      'blocklist-proxies-2',
    ]);
  });

  it('a shard that does not parse is a problem naming its ConfigMap, and the others are still used', () => {
    const broken: [string, (cm: ObservedConfigMap) => ObservedConfigMap, string][] = [
      [
        ShardProblemReason.BadIndex,
        (cm) => ({ ...cm, labels: { ...cm.labels, [LABEL_SHARD]: '01' } }),
        'not a decimal index',
      ],
      [
        ShardProblemReason.BadKind,
        (cm) => ({ ...cm, labels: { ...cm.labels, [LABEL_KIND]: 'Maybe' } }),
        'Maybe',
      ],
      [
        ShardProblemReason.BadFingerprint,
        (cm) => ({ ...cm, data: { ...cm.data, [SHARD_FINGERPRINT_KEY]: 'ABC' } }),
        'not a SHA-256',
      ],
      [
        ShardProblemReason.BadTotal,
        (cm) => ({ ...cm, data: { ...cm.data, [SHARD_TOTAL_KEY]: '0' } }),
        'at least 1',
      ],
      [
        ShardProblemReason.IndexBeyondTotal,
        (cm) => ({ ...cm, labels: { ...cm.labels, [LABEL_SHARD]: '7' } }),
        'shard 7 of a version of 3',
      ],
      [
        ShardProblemReason.NoPrefixes,
        (cm) => ({ ...cm, data: { ...cm.data, [DECIDER_DATA_KEY]: 42 } }),
        'a number',
      ],
    ];
    const scanners = versionOf('scanners', Kinds.Certain, textsOf(5, 1));
    for (const [reason, breakIt, words] of broken) {
      const stray = breakIt({ ...shardOf(v, 1), name: 'blocklist-proxies-stray' });
      // Beside a complete version, a stray broken shard changes nothing but the report.
      const beside = selectShardSets([...shardsOf(v), stray, ...shardsOf(scanners)]);
      assertServes(only(beside, 'proxies'), v);
      assertServes(only(beside, 'scanners'), scanners);
      assert.equal(beside.problems.length, 1, reason);
      const problem = beside.problems[0]!;
      assert.equal(problem.reason, reason);
      assert.equal(problem.configMap, 'blocklist-proxies-stray');
      assert.equal(problem.list, 'proxies');
      assert.match(problem.message, /ConfigMap blocklist-proxies-stray of list proxies/);
      assert.ok(problem.message.includes(words), `${problem.message} should say ${words}`);
      // In place of a shard of the version, the version lacks it.
      const instead = selectShardSets([shardOf(v, 0), breakIt(shardOf(v, 1)), shardOf(v, 2)]);
      const list = only(instead, 'proxies');
      assert.equal(list.state, 'incomplete', reason);
      if (list.state !== 'incomplete') continue;
      assert.deepEqual(list.versions, [
        {
          fingerprint: v.fingerprint,
          total: 3,
          kind: v.kind,
          present: 2,
          reason: IncompleteReason.MissingShards,
          missing: [1],
        },
      ]);
      assert.deepEqual(
        instead.problems.map((p) => [p.configMap, p.reason]),
        [['blocklist-proxies-1', reason]],
      );
    }
  });

  it('what the operator publishes is served as one complete version; shards of an older operator (no fingerprint, no total) are reported and not served', () => {
    const spec = { kind: Kinds.Presumed } as ResolvedSpec;
    const source = {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'BlocklistSource',
      name: 'proxies',
      uid: 'u',
    };
    // The fingerprint the publisher is told, computed here the simple way: the shards' texts in order.
    const fingerprint = createHash('sha256').update(v.texts.join(''), 'latin1').digest('hex');
    const published = v.texts.map((text, i) => {
      const cm = deciderConfigMap(source, spec, 'exoledge-system', i, text, {
        fingerprint,
        total: v.texts.length,
      });
      return { name: cm.metadata.name ?? '', labels: cm.metadata.labels, data: cm.data };
    });
    assertServes(only(selectShardSets(published), 'proxies'), { ...v, fingerprint });

    const older = published.map((cm) => ({
      ...cm,
      data: { [DECIDER_DATA_KEY]: cm.data?.[DECIDER_DATA_KEY] },
    }));
    const selection = selectShardSets(older);
    const list = only(selection, 'proxies');
    assert.deepEqual(list.state === 'incomplete' && list.versions, []);
    assert.deepEqual(
      selection.problems.map((p) => p.reason),
      [
        ShardProblemReason.BadFingerprint,
        ShardProblemReason.BadFingerprint,
        ShardProblemReason.BadFingerprint,
      ],
    );
  });

  it('duplicate indexes with the same prefixes are harmless; with other prefixes the version is not served', () => {
    const copy = { ...shardOf(v, 1), name: 'blocklist-proxies-1-copy' };
    const same = selectShardSets([...shardsOf(v), copy]);
    assertServes(only(same, 'proxies'), v);
    assert.deepEqual(same.problems, []);

    const edited = { ...copy, data: { ...copy.data, [DECIDER_DATA_KEY]: '6.6.6.0/24\n' } };
    const conflict = selectShardSets([...shardsOf(v), edited], {
      serving: new Map([['proxies', { fingerprint: 'f'.repeat(64), kind: Kinds.Presumed }]]),
    });
    const list = only(conflict, 'proxies');
    assert.equal(list.state, 'incomplete');
    if (list.state === 'incomplete') {
      assert.deepEqual(list.held, { fingerprint: 'f'.repeat(64), kind: Kinds.Presumed });
      assert.deepEqual(list.versions[0], {
        fingerprint: v.fingerprint,
        total: 3,
        kind: v.kind,
        present: 3,
        reason: IncompleteReason.ConflictingShards,
        conflicting: [1],
      });
    }
    assert.deepEqual(
      conflict.problems.map((p) => [p.configMap, p.reason]),
      [
        ['blocklist-proxies-1', ShardProblemReason.ConflictingShard],
        ['blocklist-proxies-1-copy', ShardProblemReason.ConflictingShard],
      ],
    );
    assert.match(
      conflict.problems[0]!.message,
      /holds other prefixes than ConfigMap blocklist-proxies-1-copy/,
    );
  });

  it('shards of one fingerprint but different totals are different versions', () => {
    const two = versionOf('proxies', Kinds.Presumed, textsOf(1, 2));
    const asThree = { ...shardOf(two, 1), data: { ...shardOf(two, 1).data, [SHARD_TOTAL_KEY]: '3' } };
    const mismatch = selectShardSets([shardOf(two, 0), asThree]);
    const list = only(mismatch, 'proxies');
    assert.equal(list.state, 'incomplete');
    assert.deepEqual(
      list.state === 'incomplete' &&
        list.versions.map((p) => [p.total, p.reason === 'MissingShards' && p.missing]),
      [
        [2, [1]],
        [3, [0, 2]],
      ],
    );
    // The version of two shards, once whole, is served; the stray of three is not mixed in.
    const whole = selectShardSets([...shardsOf(two), { ...asThree, name: 'blocklist-proxies-1-of-3' }]);
    assertServes(only(whole, 'proxies'), two);
  });

  it('shards that do not hash to their fingerprint are not served (an edited shard)', () => {
    const edited = shardOf(v, 2);
    const selection = selectShardSets([
      shardOf(v, 0),
      shardOf(v, 1),
      { ...edited, data: { ...edited.data, [DECIDER_DATA_KEY]: '6.6.6.0/24\n' } },
    ]);
    const list = only(selection, 'proxies');
    assert.equal(
      list.state === 'incomplete' && list.versions[0]?.reason,
      IncompleteReason.FingerprintMismatch,
    );
  });

  it('of two complete versions, the one served stays; serving neither, the least fingerprint', () => {
    const a = versionOf('proxies', Kinds.Presumed, textsOf(1, 2));
    const b = versionOf('proxies', Kinds.Presumed, textsOf(2, 3));
    const both = [
      ...a.texts.map((_, i) => shardOf(a, i, `a-${i}`)),
      ...b.texts.map((_, i) => shardOf(b, i, `b-${i}`)),
    ];
    const [least, greatest] = a.fingerprint < b.fingerprint ? [a, b] : [b, a];
    assertServes(only(selectShardSets(both), 'proxies'), least);
    const serving = new Map([['proxies', { fingerprint: greatest.fingerprint, kind: greatest.kind }]]);
    assertServes(only(selectShardSets(both, { serving }), 'proxies'), greatest);
  });

  it('the fingerprint: unchanged while a list only holds what it served, changed by a swap or a list gone', () => {
    const next = versionOf('proxies', Kinds.Presumed, textsOf(2, 3));
    const first = selectShardSets(shardsOf(v));
    const serving = servingOf(first);
    // Shard 1 rewritten to the new version: neither is complete, the old one is held.
    const midway = selectShardSets([shardOf(v, 0), shardOf(next, 1), shardOf(v, 2)], { serving });
    assert.equal(only(midway, 'proxies').state, 'incomplete');
    assert.equal(midway.fingerprint, first.fingerprint);
    const swapped = selectShardSets(shardsOf(next), { serving: servingOf(midway) });
    assert.notEqual(swapped.fingerprint, first.fingerprint);
    const gone = selectShardSets([], { serving: servingOf(swapped) });
    assert.deepEqual(gone.lists, []);
    assert.notEqual(gone.fingerprint, swapped.fingerprint);
    // A kind change alone is a new version to serve: the answers carry the kind.
    const certain = versionOf('proxies', Kinds.Certain, v.texts);
    assert.notEqual(selectShardSets(shardsOf(certain)).fingerprint, first.fingerprint);
  });

  it('ConfigMaps without the source label are not shards, and are skipped without a word', () => {
    const selection = selectShardSets([
      { name: 'decider-config', data: { 'config.yaml': 'a: b' } },
      { name: 'kube-root-ca.crt', labels: { app: 'x' } },
    ]);
    assert.deepEqual(selection, { lists: [], problems: [], fingerprint: selectShardSets([]).fingerprint });
  });
});
