/**
 * What a BlocklistSource publishes, held to expectations the operator did not compute:
 * literals worked out by hand and the test's own oracle (`support/oracle.ts`), on lists
 * where prefixes merge and the budget bites. Also what it keeps when the list goes bad,
 * the events a user sees, and the order of its writes, watched on the apiserver.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eventually } from '@operators/controlplane/testing';
import { watch } from '@operators/kit';
import { BLOCKLIST_SOURCE, type BlocklistSource } from '../src/api/blocklist-source.ts';
import type { CiliumCidrGroup } from '../src/api/cilium.ts';
import { Harness, HOUR } from './support/e2e.ts';
import { type Block, expectedSet, mergeBlocks, parseList, uncovered } from './support/oracle.ts';

let h: Harness;

before(async () => {
  h = await Harness.start();
  await h.startOperator();
});

after(() => h.close());

const condition = (s: BlocklistSource, type: string) => s.status?.conditions?.find((c) => c.type === type);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A list where prefixes merge, duplicates and host bits occur, and every budget rule has
 * something to drop. Merged by hand (13 prefixes):
 *   IPv4 10.1.0.0/22 (four lines), 10.2.0.0/24 (three lines), 10.3.0.1/32, 10.3.0.2/31,
 *        10.4.0.0/25, 10.5.0.0/24, 10.6.0.0/24, 10.7.0.0/24, 10.8.0.0/24;
 *   IPv6 2001:db8::/119 (two /120s), 2001:db8:1::1/128, 2001:db8:2::/121, 2001:db8:5::/120.
 */
const BUDGET_LIST = `# a scanner list
10.1.0.0/24
10.1.1.0/24
10.1.2.0/23
10.2.0.0/24
10.2.0.77/24 ; host bits set
10.2.0.128/25
10.3.0.1
10.3.0.2/31
10.4.0.0/25
10.5.0.0/24
10.6.0.0/24
10.7.0.0/24
10.8.0.0/24
2001:db8::/120
2001:db8::100/120
2001:db8:1::1
2001:db8:2::/121
2001:db8:5::/120
not-an-address
`;

/** A small list whose four /24s merge into one /22, plus an IPv6 /64. */
const GOOD_LIST = '192.0.2.0/24\n10.9.0.0/24\n10.9.1.0/24\n10.9.2.0/23\n2001:db8:9::/64\n';

describe('a BlocklistSource on the apiserver, against an independent oracle', () => {
  it('publishes what minPrefixLength and maxEntries keep, and reports exactly what they dropped', async () => {
    const name = h.uniqueName('budget');
    await h.createSource(name, BUDGET_LIST, {
      enforce: true,
      podSelector: {},
      shardSize: 2,
      minPrefixLength: 24,
      maxEntries: 5,
    });
    const source = await h.ready(name);

    // minPrefixLength 24 drops the IPv4 /32, /31, /25 and the IPv6 /128, /121 (longer than
    // /120); 8 are left for 5 places: the IPv6 /120 goes first (256 addresses like an IPv4
    // /24, IPv6 first), then the two highest /24s, 10.8 and 10.7.
    const kept = ['10.1.0.0/22', '10.2.0.0/24', '10.5.0.0/24', '10.6.0.0/24', '2001:db8::/119'];
    assert.deepEqual(expectedSet(BUDGET_LIST, { minPrefixLength: 24, maxEntries: 5 }).prefixes, kept);
    assert.deepEqual(
      (await h.groupsOf(name)).map((g) => [g.metadata.name, g.spec.externalCIDRs]),
      [
        [`${name}-0`, ['10.1.0.0/22', '10.2.0.0/24']],
        [`${name}-1`, ['10.5.0.0/24', '10.6.0.0/24']],
        [`${name}-2`, ['2001:db8::/119']],
      ],
    );
    assert.deepEqual(source.status?.entries, {
      read: 18,
      malformed: 1,
      normalised: 1,
      refused: 0,
      merged: 13,
      published: 5,
      dropped: 8,
    });
    assert.deepEqual(source.status?.dropped, [
      { reason: 'LongerThanMinPrefixLength', family: 'IPv4', prefixLength: 32, count: 1 },
      { reason: 'LongerThanMinPrefixLength', family: 'IPv4', prefixLength: 31, count: 1 },
      { reason: 'LongerThanMinPrefixLength', family: 'IPv4', prefixLength: 25, count: 1 },
      { reason: 'LongerThanMinPrefixLength', family: 'IPv6', prefixLength: 128, count: 1 },
      { reason: 'LongerThanMinPrefixLength', family: 'IPv6', prefixLength: 121, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv6', prefixLength: 120, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv4', prefixLength: 24, count: 2 },
    ]);
    assert.equal(source.status?.shards, 3);
    assert.equal(source.status?.fingerprint, sha256(`${kept.join('\n')}\n`));
    const all = condition(source, 'AllEntriesPublished');
    assert.deepEqual([all?.status, all?.reason], ['False', 'DroppedByBudget']);
    assert.match(all?.message ?? '', /dropped 8 of 13 merged prefixes/);
    const warning = await h.eventOf(source.metadata.uid ?? '', 'DroppedByBudget');
    assert.equal(warning.type, 'Warning');

    // Without minPrefixLength and with 7 places, the six smallest go: one address each
    // (IPv6 /128 before IPv4 /32), the /31, 128 addresses each (IPv6 /121 before IPv4 /25),
    // then the IPv6 /120. Republished from memory: a spec change reads nothing.
    const since = h.op.reports.length;
    await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'json',
      body: [
        { op: 'remove', path: '/spec/minPrefixLength' },
        { op: 'replace', path: '/spec/maxEntries', value: 7 },
      ],
    });
    const wider = await h.ready(name);
    const keptWider = [
      '10.1.0.0/22',
      '10.2.0.0/24',
      '10.5.0.0/24',
      '10.6.0.0/24',
      '10.7.0.0/24',
      '10.8.0.0/24',
      '2001:db8::/119',
    ];
    assert.deepEqual(expectedSet(BUDGET_LIST, { maxEntries: 7 }).prefixes, keptWider);
    assert.deepEqual(await h.publishedPrefixes(name), keptWider);
    assert.deepEqual(wider.status?.dropped, [
      { reason: 'OverMaxEntries', family: 'IPv6', prefixLength: 128, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv4', prefixLength: 32, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv4', prefixLength: 31, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv6', prefixLength: 121, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv4', prefixLength: 25, count: 1 },
      { reason: 'OverMaxEntries', family: 'IPv6', prefixLength: 120, count: 1 },
    ]);
    assert.deepEqual([wider.status?.entries?.published, wider.status?.entries?.dropped], [7, 6]);
    assert.equal(wider.status?.shards, 4);
    assert.equal(wider.status?.fingerprint, sha256(`${keptWider.join('\n')}\n`));
    assert.ok(h.op.reports.slice(since).every((r) => r.source !== name || r.read === undefined));

    // Room for everything: all 13, and the condition says so.
    await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { maxEntries: 13 } },
    });
    const whole = await h.ready(name);
    assert.deepEqual(await h.publishedPrefixes(name), expectedSet(BUDGET_LIST).prefixes);
    assert.equal(whole.status?.dropped, undefined);
    const allPublished = condition(whole, 'AllEntriesPublished');
    assert.deepEqual([allPublished?.status, allPublished?.reason], ['True', 'AllPublished']);
  });

  it('keeps the last set when the list turns into an HTML error page served with a 200', async () => {
    const name = h.uniqueName('html');
    await h.createSource(name, GOOD_LIST, { enforce: true, podSelector: {}, shardSize: 2 });
    await h.ready(name);
    const expected = ['10.9.0.0/22', '192.0.2.0/24', '2001:db8:9::/64'];
    assert.deepEqual(expectedSet(GOOD_LIST).prefixes, expected);
    assert.deepEqual(await h.publishedPrefixes(name), expected);
    await h.settled();
    const versions = await h.versions(name);

    h.serve(
      name,
      '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body>\n' +
        '<h1>Bad Gateway</h1>\n<p>upstream 10.0.0.1 did not answer</p>\n</body></html>\n',
    );
    const since = await h.later(name, 3 * HOUR);
    const report = await h.reportAfter(name, since, (r) => r.read !== undefined);
    assert.deepEqual([report.read?.result, report.read?.reason], ['Failed', 'NotABlocklist']);
    const kept = await h.ready(name, 'LastSetKept');
    const read = condition(kept, 'SourceRead');
    assert.deepEqual([read?.status, read?.reason], ['False', 'NotABlocklist']);
    assert.equal(condition(kept, 'Ready')?.status, 'False');
    await h.settled();
    assert.deepEqual(await h.versions(name), versions, 'no shard or policy written or deleted');
    assert.deepEqual(await h.publishedPrefixes(name), expected);
    assert.equal(kept.status?.fingerprint, sha256(`${expected.join('\n')}\n`));
    const event = await h.eventOf(kept.metadata.uid ?? '', 'ReadFailed', (e) =>
      /NotABlocklist/.test(e.message ?? ''),
    );
    assert.equal(event.type, 'Warning');
  });

  it('keeps the last set when the url is changed to one that fails, answered 404 or refused', async () => {
    const name = h.uniqueName('moved');
    await h.createSource(name, GOOD_LIST, { enforce: true, podSelector: {}, shardSize: 2 });
    const first = await h.ready(name);
    await h.settled();
    const versions = await h.versions(name);
    const expected = expectedSet(GOOD_LIST).prefixes;

    for (const [url, reason] of [
      [h.server.url(`/${name}-gone.txt`), 'HttpStatus'],
      // Port 1 on the loopback: nothing listens there, the connection is refused.
      ['http://127.0.0.1:1/list.txt', 'Unreachable'],
    ] as const) {
      const since = h.op.reports.length;
      await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, { type: 'merge', body: { spec: { url } } });
      // A new url is read at once, without moving the clock.
      const report = await h.reportAfter(name, since, (r) => r.read !== undefined);
      assert.deepEqual(
        [report.read?.why, report.read?.result, report.read?.reason],
        ['UrlChanged', 'Failed', reason],
      );
      const kept = await eventually(`${name} LastSetKept for ${reason}`, async () => {
        const s = await h.getSource(name);
        return condition(s, 'SourceRead')?.reason === reason &&
          condition(s, 'Ready')?.reason === 'LastSetKept'
          ? s
          : undefined;
      });
      assert.equal(condition(kept, 'SourceRead')?.status, 'False');
      // The generation in force is still the first: the new url has published nothing.
      assert.equal(kept.status?.observedGeneration, first.metadata.generation);
      assert.equal(kept.status?.fingerprint, first.status?.fingerprint);
      await h.settled();
      assert.deepEqual(await h.versions(name), versions, `nothing deleted or rewritten after ${reason}`);
      assert.deepEqual(await h.publishedPrefixes(name), expected);
    }
  });

  it('says Published with the fingerprint of a new set, and CleanedUp once a deleted source left nothing', async () => {
    const name = h.uniqueName('events');
    const source = await h.createSource(name, BUDGET_LIST, { enforce: true, podSelector: {}, shardSize: 5 });
    const uid = source.metadata.uid ?? '';
    await h.ready(name);
    const { prefixes, fingerprint } = expectedSet(BUDGET_LIST);
    assert.equal(prefixes.length, 13);
    const published = await h.eventOf(uid, 'Published');
    assert.equal(published.type, 'Normal');
    assert.equal(published.involvedObject?.name, name);
    // The note identifies the set: its fingerprint, its size and its shards.
    assert.ok(published.message?.includes(fingerprint), published.message);
    assert.match(published.message ?? '', /\b13 prefixes\b.*\b3 shards\b/);

    await h.env.admin.delete(BLOCKLIST_SOURCE, name);
    const cleaned = await h.eventOf(uid, 'CleanedUp');
    assert.equal(cleaned.type, 'Normal');
    // Three CIDR groups and the policy.
    assert.match(cleaned.message ?? '', /deleted 4 published objects/);
    await eventually(`${name} gone`, async () =>
      (await h.env.admin.find(BLOCKLIST_SOURCE, name)) ? undefined : true,
    );
    assert.deepEqual(await h.groupsOf(name), []);
    assert.deepEqual(await h.policiesOf(name), []);
  });
});

/**
 * Watches the source's CIDR groups from the apiserver while `change` happens, rebuilds
 * the union of all shards after every event, and returns the first moment an address
 * of `mustStay` was held by no shard, if one came, with the number of states seen.
 */
async function watchCoverage(
  name: string,
  mustStay: readonly Block[],
  finalPrefixes: readonly string[],
  change: () => Promise<void>,
): Promise<{ gap?: string; states: number; final: string[] }> {
  const list = await h.env.admin.listAll<CiliumCidrGroup>(
    { apiVersion: 'cilium.io/v2', kind: 'CiliumCIDRGroup' },
    { labelSelector: `edge.exoledge.io/source=${name}` },
  );
  const shards = new Map(list.items.map((g) => [g.metadata.name ?? '', [...g.spec.externalCIDRs]]));
  const union = () => parseList([...shards.values()].flat().join('\n'));
  const ordered = () =>
    [...shards.entries()]
      .sort(([a], [b]) => Number(a.slice(a.lastIndexOf('-') + 1)) - Number(b.slice(b.lastIndexOf('-') + 1)))
      .flatMap(([, cidrs]) => cidrs);
  assert.equal(uncovered(mustStay, union()), undefined, 'covered before the change');

  const abort = new AbortController();
  let opened!: () => void;
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  let gap: string | undefined;
  let states = 0;
  const watching = (async () => {
    try {
      for await (const ev of watch<CiliumCidrGroup>(
        h.env.admin.transport,
        '/apis/cilium.io/v2/ciliumcidrgroups',
        {
          labelSelector: `edge.exoledge.io/source=${name}`,
          resourceVersion: list.resourceVersion,
          signal: abort.signal,
          onOpen: opened,
        },
      )) {
        if (ev.type === 'BOOKMARK') continue;
        const g = ev.object;
        if (ev.type === 'DELETED') shards.delete(g.metadata.name ?? '');
        else shards.set(g.metadata.name ?? '', [...g.spec.externalCIDRs]);
        states++;
        const hole = uncovered(mustStay, union());
        if (hole && gap === undefined) {
          gap = `${hole} held by no shard after ${ev.type} ${g.metadata.name} (state ${states})`;
        }
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })();
  await open;
  await change();
  await eventually('the watched shards to reach the final set', async () =>
    JSON.stringify(ordered()) === JSON.stringify(finalPrefixes) ? true : undefined,
  );
  abort.abort();
  await watching;
  return { ...(gap === undefined ? {} : { gap }), states, final: ordered() };
}

/** `10.0.<4i>.0/24` for i in [from, to): /24s four apart, which never merge. */
function spaced(from: number, to: number): string[] {
  const out: string[] = [];
  for (let i = from; i < to; i++) out.push(`10.0.${4 * i}.0/24`);
  return out;
}

/** Where each prefix sits, shard by shard, for a shard size. */
function shardOfEach(prefixes: readonly string[], size: number): Map<string, number> {
  return new Map(prefixes.map((p, i) => [p, Math.floor(i / size)]));
}

describe('the write order while shards are replaced, watched on the apiserver', () => {
  /**
   * Before: 24 /24s four apart, 6 shards of 4. After: the three /24s between the first two
   * fill the gap (10.0.0.0/24 to 10.0.7.0/24 merge into one /21, so every later prefix
   * moves one place down, and those at a shard's start into the shard below), and 10 new
   * /24s (10.1.x) come after them: 33 prefixes, 9 shards. A list that only gains addresses.
   */
  const BEFORE = `${spaced(0, 24).join('\n')}\n`;
  const FILLED = ['10.0.1.0/24', '10.0.2.0/24', '10.0.3.0/24', '10.0.5.0/24', '10.0.6.0/24', '10.0.7.0/24'];
  const NEW = Array.from({ length: 10 }, (_, i) => `10.1.${2 * i}.0/24`);
  const AFTER = `${[...spaced(0, 24), ...FILLED, ...NEW].join('\n')}\n`;

  it('a list that grows never leaves an address it held before without a shard, even as prefixes merge and move', async () => {
    const name = h.uniqueName('nogap-grow');
    await h.createSource(name, BEFORE, { enforce: true, podSelector: {}, shardSize: 4 });
    await h.ready(name);
    await h.settled();
    const before = expectedSet(BEFORE).prefixes;
    const after = expectedSet(AFTER).prefixes;
    assert.deepEqual(await h.publishedPrefixes(name), before);
    assert.equal(after.length, 24 - 1 + 10);
    assert.equal(after[0], '10.0.0.0/21');
    // Prefixes change shard: 10.0.16.0/24 was the first of shard 1 and is the last of shard 0.
    assert.equal(shardOfEach(before, 4).get('10.0.16.0/24'), 1);
    assert.equal(shardOfEach(after, 4).get('10.0.16.0/24'), 0);
    assert.equal(uncovered(mergeBlocks(parseList(BEFORE)), mergeBlocks(parseList(AFTER))), undefined);

    const result = await watchCoverage(name, mergeBlocks(parseList(BEFORE)), after, async () => {
      h.serve(name, AFTER);
      const since = await h.later(name, 3 * HOUR);
      await h.reportAfter(name, since, (r) => r.read?.result === 'Read');
    });
    assert.ok(result.states >= 2, `the watch saw the shards written one by one (${result.states} events)`);
    assert.equal(result.gap, undefined);
    assert.deepEqual(result.final, after);
    const status = (await h.ready(name)).status;
    assert.equal(status?.shards, 9);
    assert.equal(status?.fingerprint, expectedSet(AFTER).fingerprint);
  });

  it('a list that shrinks never leaves an address it still holds without a shard, even as prefixes split and move', async () => {
    const name = h.uniqueName('nogap-shrink');
    await h.createSource(name, AFTER, { enforce: true, podSelector: {}, shardSize: 4 });
    await h.ready(name);
    await h.settled();
    const before = expectedSet(AFTER).prefixes;
    const after = expectedSet(BEFORE).prefixes;
    assert.deepEqual(await h.publishedPrefixes(name), before);
    // 10.0.16.0/24 goes back from shard 0 to shard 1; 10.0.0.0/21 splits into two /24s.
    assert.equal(shardOfEach(before, 4).get('10.0.16.0/24'), 0);
    assert.equal(shardOfEach(after, 4).get('10.0.16.0/24'), 1);

    const result = await watchCoverage(name, mergeBlocks(parseList(BEFORE)), after, async () => {
      h.serve(name, BEFORE);
      const since = await h.later(name, 3 * HOUR);
      await h.reportAfter(name, since, (r) => r.read?.result === 'Read');
    });
    assert.ok(result.states >= 2, `the watch saw the shards written one by one (${result.states} events)`);
    assert.equal(result.gap, undefined);
    assert.deepEqual(result.final, after);
    const status = (await h.ready(name)).status;
    assert.equal(status?.shards, 6);
    assert.equal(status?.fingerprint, expectedSet(BEFORE).fingerprint);
  });
});
