/**
 * The list worker is retired once idle with every list complete (its heap goes with it),
 * and a new one is seeded with the last view when the next comes. What a list serves
 * must not change across that: a rollout that begins after the retirement still answers
 * with the old version, never a mix, until the new one is complete; and of two complete
 * versions side by side, the one served stays served.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ListKind } from '../src/api/blocklist-source.ts';
import { ListLoader, type LoaderEvent } from '../src/decider/list-loader.ts';
import { parseAddress } from '../src/decider/prefix-table.ts';
import type { ObservedConfigMap } from '../src/decider/shard-sets.ts';
import { SHARD_FINGERPRINT_KEY } from '../src/domain/blocklist-source/publication.ts';
import { shardsOf, type TestList } from './support/decider-harness.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function loader(t: { after(fn: () => Promise<void>): void }): { lists: ListLoader; events: LoaderEvent[] } {
  const events: LoaderEvent[] = [];
  const lists = new ListLoader((e) => events.push(e), { retireAfterMs: 20 });
  t.after(() => lists.close());
  return { lists, events };
}

/** The names of the lists holding `addr`. */
function hits(lists: ListLoader, addr: string): string[] {
  const parsed = parseAddress(addr);
  assert.equal(parsed.outcome, 'address');
  return lists.lookup(parsed.address).map((h) => h.name);
}

async function retired(lists: ListLoader): Promise<void> {
  for (let i = 0; i < 200 && lists.workerRunning; i++) await sleep(10);
  assert.equal(lists.workerRunning, false, 'the worker is retired once idle');
}

const OLD: TestList = {
  name: 'proxies',
  kind: ListKind.Presumed,
  entries: ['198.51.100.1', '198.51.100.3', '198.51.100.5', '198.51.100.7', '198.51.100.9', '198.51.100.11'],
};
const NEW: TestList = {
  name: 'proxies',
  kind: ListKind.Presumed,
  entries: ['198.51.100.3', '198.51.100.5', '198.51.100.7', '198.51.100.9', '198.51.100.11', '203.0.113.5'],
};
const SCANNERS: TestList = { name: 'scanners', kind: ListKind.Certain, entries: ['192.0.2.77'] };

describe('list worker retirement', () => {
  it('a rollout that begins after the worker is retired serves the old version until the new one is complete', async (t) => {
    const { lists, events } = loader(t);
    const old = shardsOf(OLD);
    const next = shardsOf(NEW);
    const scanners = shardsOf(SCANNERS);
    assert.equal(old.length, next.length);
    assert.ok(old.length >= 3);
    lists.apply([...old, ...scanners]);
    await lists.settled();
    assert.deepEqual(hits(lists, '198.51.100.1'), ['proxies']);
    await retired(lists);

    // The publisher rewrites the shards in place, one by one: every view but the last mixes versions.
    const byName = new Map<string, ObservedConfigMap>([...old, ...scanners].map((cm) => [cm.name, cm]));
    for (let i = 0; i < next.length - 1; i++) {
      byName.set(next[i]!.name, next[i]!);
      lists.apply([...byName.values()]);
      await lists.settled();
      assert.equal(lists.workerRunning, true);
      assert.deepEqual(lists.lastOutcome?.incomplete, ['proxies']);
      assert.deepEqual(hits(lists, '198.51.100.1'), ['proxies'], `shard ${i}: the old version answers`);
      assert.deepEqual(hits(lists, '203.0.113.5'), [], `shard ${i}: nothing of the new version`);
      assert.deepEqual(hits(lists, '192.0.2.77'), ['scanners']);
    }
    const last = next.at(-1)!;
    byName.set(last.name, last);
    lists.apply([...byName.values()]);
    await lists.settled();
    assert.deepEqual(lists.lastOutcome?.incomplete, []);
    assert.deepEqual(hits(lists, '198.51.100.1'), []);
    assert.deepEqual(hits(lists, '203.0.113.5'), ['proxies']);
    assert.deepEqual(hits(lists, '192.0.2.77'), ['scanners']);
    const fingerprint = next[0]!.data?.[SHARD_FINGERPRINT_KEY];
    assert.equal(lists.served.find((l) => l.name === 'proxies')?.fingerprint, fingerprint);
    await retired(lists);
    assert.equal(
      events.every((e) => e.kind === 'applied'),
      true,
    );
  });

  it('a new worker keeps serving the version that was served among two complete ones', async (t) => {
    const { lists } = loader(t);
    // Two complete versions under different names; the one served first is the greater
    // fingerprint, which a worker starting from nothing would not choose.
    const a = shardsOf(OLD);
    const b = shardsOf(NEW).map((cm) => ({ ...cm, name: `copy-${cm.name}` }));
    const fa = String(a[0]!.data?.[SHARD_FINGERPRINT_KEY]);
    const fb = String(b[0]!.data?.[SHARD_FINGERPRINT_KEY]);
    const [first, second, firstHas, secondHas] =
      fa > fb ? [a, b, '198.51.100.1', '203.0.113.5'] : [b, a, '203.0.113.5', '198.51.100.1'];
    lists.apply(first);
    await lists.settled();
    lists.apply([...first, ...second]);
    await lists.settled();
    assert.deepEqual(hits(lists, firstHas), ['proxies']);
    await retired(lists);
    // Any change starts a new worker, seeded with the last view and what it served.
    const scanners = shardsOf(SCANNERS);
    lists.apply([...first, ...second, ...scanners]);
    await lists.settled();
    assert.deepEqual(hits(lists, firstHas), ['proxies']);
    assert.deepEqual(hits(lists, secondHas), []);
    assert.deepEqual(hits(lists, '192.0.2.77'), ['scanners']);
    // The served version's shards go: the other complete one is served.
    await retired(lists);
    lists.apply([...second, ...scanners]);
    await lists.settled();
    assert.deepEqual(hits(lists, firstHas), []);
    assert.deepEqual(hits(lists, secondHas), ['proxies']);
  });
});
