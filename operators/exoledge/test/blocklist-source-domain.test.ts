/**
 * The BlocklistSource's pure decisions, without a cluster: the spec's defaults and
 * durations, when a list is read, what is published and in which order, and what the
 * status says in every outcome.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import { type BlocklistSourceStatus, Channel } from '../src/api/blocklist-source.ts';
import { CILIUM_CIDR_GROUP, CILIUM_CLUSTERWIDE_NETWORK_POLICY, CONFIG_MAP } from '../src/api/cilium.ts';
import {
  DEFAULT_SHORTEST_PREFIX,
  fingerprint,
  merge,
  parseBlocklist,
} from '../src/domain/blocklist/index.ts';
import {
  channelOf,
  DECIDER_SHARD_SIZE,
  decideRead,
  formatDuration,
  type ListData,
  type LiveObjects,
  looksLikeBlocklist,
  nextStatus,
  type PublicationOutcome,
  parseDuration,
  planPublication,
  publicationEvents,
  publishedSet,
  type ReadFailure,
  ReadWhy,
  readFailedEvent,
  readSummary,
  remember,
  resolveSpec,
  type SourceMemory,
  sameJson,
  shardPrefixes,
} from '../src/domain/blocklist-source/index.ts';

const HOUR = 3_600_000;
const MIN = 60_000;
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const URL_A = 'https://lists.example/a.txt';
const URL_B = 'https://lists.example/b.txt';
const SOURCE = {
  apiVersion: 'edge.exoledge.io/v1alpha1',
  kind: 'BlocklistSource',
  name: 'cve',
  uid: 'uid-1',
};

/** `count` distinct /24s spread so that none merge (every other /24). */
function list24(count: number, start = 0): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = (start + i) * 2;
    lines.push(`10.${(n >> 8) & 255}.${n & 255}.0/24`);
  }
  return lines.join('\n');
}

function dataOf(text: string, url = URL_A, extra: Partial<ListData> = {}): ListData {
  const parse = parseBlocklist(text, { shortestPrefix: DEFAULT_SHORTEST_PREFIX });
  return {
    url,
    merged: merge(parse.entries),
    summary: readSummary(parse, DEFAULT_SHORTEST_PREFIX),
    validators: { etag: '"v1"' },
    readAt: NOW - HOUR,
    checkedAt: NOW - HOUR,
    ...extra,
  };
}

const certain = resolveSpec({
  url: URL_A,
  kind: 'Certain',
  enforce: true,
  shardSize: 3,
  podSelector: { matchLabels: { istio: 'ingressgateway' } },
});
const presumed = resolveSpec({ url: URL_A, kind: 'Presumed' });
const NO_LIVE: LiveObjects = { cidrGroups: [], policies: [], configMaps: [] };

describe('the spec', () => {
  it('reads durations as hours, minutes and seconds, in that order, and nothing else', () => {
    assert.equal(parseDuration('2h'), 2 * HOUR);
    assert.equal(parseDuration('90m'), 90 * MIN);
    assert.equal(parseDuration('1h30m'), 90 * MIN);
    assert.equal(parseDuration('1h0m45s'), HOUR + 45_000);
    for (const bad of ['', '2 h', '30m1h', '1.5h', '2d', 'h', '-1h', '1H']) {
      assert.equal(parseDuration(bad), undefined, bad);
    }
    for (const ms of [0, 45_000, 5 * MIN, 2 * HOUR, 90 * MIN, 168 * HOUR + 61_000]) {
      assert.equal(parseDuration(formatDuration(ms)), ms);
    }
    assert.equal(formatDuration(5 * MIN), '5m');
  });

  it('fills every default the CRD states', () => {
    const s = resolveSpec({ url: URL_A, kind: 'Presumed' });
    assert.equal(s.enforce, false);
    assert.equal(s.maxEntries, 4000);
    assert.equal(s.shardSize, 10_000);
    assert.equal(s.minPrefixLength, undefined);
    assert.equal(s.refreshIntervalMs, 2 * HOUR);
    assert.deepEqual(s.podSelector, {});
  });

  it('sends only Certain lists with enforce to Cilium; everything else to the decider', () => {
    assert.equal(channelOf('Certain', true), Channel.CiliumPolicy);
    assert.equal(channelOf('Certain', false), Channel.Decider);
    assert.equal(channelOf('Presumed', false), Channel.Decider);
    assert.equal(channelOf('Presumed', true), Channel.Decider);
  });
});

describe('when a list is read', () => {
  const base = {
    now: NOW,
    spec: certain,
    generation: 1,
    status: undefined,
    memory: undefined,
    publishedComplete: false,
  } as const;
  const memoryWith = (data?: ListData, failure?: ReadFailure): SourceMemory => ({
    uid: 'uid-1',
    ...(data ? { data } : {}),
    ...(failure ? { failure } : {}),
  });

  it('reads a source never read, unconditionally', () => {
    assert.deepEqual(decideRead(base), { read: true, why: ReadWhy.FirstRead, validators: undefined });
  });

  it('never reads faster than the refresh interval, then reads conditionally', () => {
    const data = dataOf(list24(3), URL_A, { checkedAt: NOW - HOUR });
    assert.deepEqual(decideRead({ ...base, memory: memoryWith(data) }), {
      read: false,
      nextReadAt: NOW + HOUR,
    });
    assert.deepEqual(decideRead({ ...base, now: NOW + HOUR, memory: memoryWith(data) }), {
      read: true,
      why: ReadWhy.Due,
      validators: { etag: '"v1"' },
    });
  });

  it('counts the interval from when a read started, so a slow read does not push the next one later', () => {
    // A read that started at NOW and took 10 minutes: the data is as old as the request.
    const read = dataOf(list24(3));
    const memory = remember(
      undefined,
      'uid-1',
      URL_A,
      { kind: 'Read', merged: read.merged, summary: read.summary, validators: { etag: '"v1"' } },
      NOW,
    );
    const after = decideRead({ ...base, now: NOW + 10 * MIN, memory });
    assert.deepEqual(after, { read: false, nextReadAt: NOW + 2 * HOUR });
    assert.equal(decideRead({ ...base, now: NOW + 2 * HOUR, memory }).read, true);
    // A failed read that started at NOW and timed out 2 minutes later is retried at NOW + 5m.
    const failed = remember(
      memory,
      'uid-1',
      URL_A,
      { kind: 'Failed', reason: 'Timeout', message: 'slow' },
      NOW,
    );
    assert.deepEqual(decideRead({ ...base, now: NOW + 2 * MIN, memory: failed }), {
      read: false,
      nextReadAt: NOW + 5 * MIN,
    });
  });

  it('reads unconditionally a list whose provider gave no validators', () => {
    const data = dataOf(list24(3), URL_A, { validators: {} });
    const d = decideRead({ ...base, now: NOW + 2 * HOUR, memory: memoryWith(data) });
    assert.deepEqual(d, { read: true, why: ReadWhy.Due, validators: undefined });
  });

  it('retries a failed read after 5 minutes, not at the next cycle, conditionally if a list is held', () => {
    const data = dataOf(list24(3));
    const failure: ReadFailure = { url: URL_A, at: NOW, reason: 'HttpStatus', message: '500' };
    assert.deepEqual(decideRead({ ...base, memory: memoryWith(data, failure) }), {
      read: false,
      nextReadAt: NOW + 5 * MIN,
    });
    assert.deepEqual(decideRead({ ...base, now: NOW + 5 * MIN, memory: memoryWith(data, failure) }), {
      read: true,
      why: ReadWhy.Retry,
      validators: { etag: '"v1"' },
    });
    assert.deepEqual(decideRead({ ...base, now: NOW + 5 * MIN, memory: memoryWith(undefined, failure) }), {
      read: true,
      why: ReadWhy.Retry,
      validators: undefined,
    });
  });

  it('retries after the refresh interval when it is shorter than 5 minutes', () => {
    const spec = resolveSpec({ url: URL_A, kind: 'Presumed', refreshInterval: '2m' });
    const failure: ReadFailure = { url: URL_A, at: NOW, reason: 'Timeout', message: 'slow' };
    assert.deepEqual(decideRead({ ...base, spec, memory: memoryWith(undefined, failure) }), {
      read: false,
      nextReadAt: NOW + 2 * MIN,
    });
  });

  it('reads a new URL at once, whatever is held for the old one', () => {
    const data = dataOf(list24(3), URL_B, { checkedAt: NOW });
    assert.deepEqual(decideRead({ ...base, memory: memoryWith(data) }), {
      read: true,
      why: ReadWhy.UrlChanged,
      validators: undefined,
    });
  });

  it('after a restart, waits out the interval the status shows, unless something must be republished', () => {
    const status: BlocklistSourceStatus = {
      observedGeneration: 1,
      lastRefreshTime: new Date(NOW - 30 * MIN).toISOString(),
    };
    const waiting = { ...base, status, publishedComplete: true };
    assert.deepEqual(decideRead(waiting), { read: false, nextReadAt: NOW + 90 * MIN });
    assert.equal(decideRead({ ...waiting, publishedComplete: false }).read, true, 'a shard is missing');
    assert.equal(decideRead({ ...waiting, generation: 2 }).read, true, 'the spec changed meanwhile');
    assert.deepEqual(decideRead({ ...waiting, now: NOW + 90 * MIN }), {
      read: true,
      why: ReadWhy.Due,
      validators: undefined,
    });
  });

  it('remembers a read, a 304 and a failure without losing the last good list', () => {
    const first = remember(
      undefined,
      'uid-1',
      URL_A,
      { kind: 'Read', merged: dataOf('1.2.3.4').merged, summary: dataOf('1.2.3.4').summary, validators: {} },
      NOW,
    );
    assert.equal(first.data?.readAt, NOW);
    const unchanged = remember(first, 'uid-1', URL_A, { kind: 'NotModified' }, NOW + HOUR);
    assert.equal(unchanged.data?.readAt, NOW, 'a 304 does not make the list newer');
    assert.equal(unchanged.data?.checkedAt, NOW + HOUR);
    const failed = remember(
      unchanged,
      'uid-1',
      URL_A,
      { kind: 'Failed', reason: 'Timeout', message: 'x' },
      NOW + 3 * HOUR,
    );
    assert.equal(failed.data, unchanged.data, 'the last good list is kept');
    assert.equal(failed.failure?.at, NOW + 3 * HOUR);
    const recovered = remember(failed, 'uid-1', URL_A, { kind: 'NotModified' }, NOW + 4 * HOUR);
    assert.equal(recovered.failure, undefined);
    const recreated = remember(failed, 'uid-2', URL_A, { kind: 'NotModified' }, NOW);
    assert.equal(recreated.data, undefined, 'a recreated source shares nothing with the old one');
  });

  it('refuses a body that is more garbage than list, but accepts an empty list', () => {
    assert.equal(
      looksLikeBlocklist(
        readSummary(parseBlocklist('<html>\n<body>oops</body>\n</html>\n'), DEFAULT_SHORTEST_PREFIX),
      ),
      false,
    );
    assert.equal(
      looksLikeBlocklist(readSummary(parseBlocklist('1.2.3.4\nbad line\n'), DEFAULT_SHORTEST_PREFIX)),
      true,
    );
    assert.equal(
      looksLikeBlocklist(readSummary(parseBlocklist('# nothing today\n\n'), DEFAULT_SHORTEST_PREFIX)),
      true,
    );
  });
});

describe('what is published', () => {
  it('budgets, fingerprints and shards the merged list', () => {
    const data = dataOf(`${list24(7)}\n10.200.0.2\n10.200.0.3\n`);
    const set = publishedSet(data.merged, { ...certain, maxEntries: 8 });
    assert.equal(set.merged, 8, 'the two neighbours merge into a /31');
    assert.equal(set.published, 8);
    assert.deepEqual(
      set.shards.map((s) => shardPrefixes(s).length),
      [3, 3, 2],
    );
    assert.equal(set.fingerprint, fingerprint(set.budget.kept));
    const small = publishedSet(data.merged, { ...certain, maxEntries: 7 });
    assert.equal(small.published, 7);
    assert.equal(small.shards.join('').includes('10.200.0.2/31\n'), false, 'the most specific goes first');
  });

  it('cuts decider shards at 5,000 prefixes, whatever shardSize says', () => {
    const set = publishedSet(dataOf(list24(12_000)).merged, { ...presumed, maxEntries: 12_000 });
    assert.deepEqual(
      set.shards.map((s) => shardPrefixes(s).length),
      [DECIDER_SHARD_SIZE, DECIDER_SHARD_SIZE, 2000],
    );
  });

  const set5 = publishedSet(dataOf(list24(7)).merged, certain);
  const plan = (spec = certain, live = NO_LIVE, set = set5) =>
    planPublication({ source: SOURCE, spec, set, deciderNamespace: 'decider', live });

  it('publishes CIDR groups labelled with the source, then one policy that selects them by that label', () => {
    const p = plan();
    assert.deepEqual(
      p.apply.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        'CiliumCIDRGroup/cve-0',
        'CiliumCIDRGroup/cve-1',
        'CiliumCIDRGroup/cve-2',
        'CiliumClusterwideNetworkPolicy/deny-cve',
      ],
    );
    const group = p.apply[0] as KubeObject & { spec: { externalCIDRs: string[] } };
    assert.deepEqual(group.spec.externalCIDRs, ['10.0.0.0/24', '10.0.2.0/24', '10.0.4.0/24']);
    assert.equal(group.metadata.labels?.['edge.exoledge.io/source'], 'cve');
    assert.equal(group.metadata.ownerReferences?.[0]?.uid, 'uid-1');
    const policy = p.apply[3] as KubeObject & { spec: Record<string, unknown> };
    assert.deepEqual(policy.spec.endpointSelector, { matchLabels: { istio: 'ingressgateway' } });
    assert.deepEqual(policy.spec.ingressDeny, [
      { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { 'edge.exoledge.io/source': 'cve' } } }] },
    ]);
    assert.deepEqual(p.delete, []);
  });

  it('writes nothing when live matches, even with labels and status others added', () => {
    const live: LiveObjects = {
      cidrGroups: plan()
        .desired.slice(0, 3)
        .map((o) => ({
          ...o,
          metadata: { ...o.metadata, labels: { ...o.metadata.labels, team: 'net' }, resourceVersion: '7' },
        })),
      policies: [{ ...plan().desired[3]!, status: { conditions: [{ type: 'Valid', status: 'True' }] } }],
      configMaps: [],
    };
    const p = plan(certain, live, set5);
    assert.deepEqual(p.apply, []);
    assert.deepEqual(p.delete, []);
  });

  it('writes a shard only once the shard that takes its prefixes holds them, then drops the surplus', () => {
    const live: LiveObjects = {
      ...NO_LIVE,
      cidrGroups: plan().desired.slice(0, 3),
      policies: [plan().desired[3]!],
    };
    // Two prefixes before all the others: every prefix moves up, and a fourth shard is needed.
    // cve-2 only gains; cve-1 loses 10.0.10.0/24 to cve-2, cve-0 loses 10.0.4.0/24 to cve-1;
    // cve-3 holds only a new address, so nothing waits for it.
    const grown = publishedSet(dataOf(`9.0.0.0/24\n9.0.2.0/24\n${list24(8)}`).merged, certain);
    assert.deepEqual(
      plan(certain, live, grown).apply.map((o) => o.metadata.name),
      ['cve-2', 'cve-1', 'cve-0', 'cve-3'],
      'the policy is unchanged: it selects the new shard by label',
    );
    const shrunk = publishedSet(dataOf(list24(2)).merged, certain);
    const p = plan(certain, live, shrunk);
    assert.deepEqual(
      p.apply.map((o) => o.metadata.name),
      ['cve-0'],
    );
    assert.deepEqual(
      p.delete.map((r) => r.name),
      ['cve-1', 'cve-2'],
    );
  });

  it('switching channel builds the new one, then deletes every object of the other', () => {
    const ciliumLive: LiveObjects = {
      ...NO_LIVE,
      cidrGroups: plan().desired.slice(0, 3),
      policies: [plan().desired[3]!],
    };
    const toDecider = plan(presumed, ciliumLive, publishedSet(dataOf(list24(7)).merged, presumed));
    assert.deepEqual(
      toDecider.apply.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`),
      ['ConfigMap/decider/blocklist-cve-0'],
    );
    assert.equal(
      (toDecider.apply[0] as KubeObject & { data: Record<string, string> }).data['prefixes.txt']?.split('\n')
        .length,
      8,
    );
    assert.deepEqual(
      toDecider.delete.map((r) => `${r.gvk.kind}/${r.name}`),
      [
        'CiliumClusterwideNetworkPolicy/deny-cve',
        'CiliumCIDRGroup/cve-0',
        'CiliumCIDRGroup/cve-1',
        'CiliumCIDRGroup/cve-2',
      ],
    );
    const deciderLive: LiveObjects = { ...NO_LIVE, configMaps: toDecider.desired };
    const back = plan(certain, deciderLive);
    assert.equal(back.apply.length, 4);
    assert.deepEqual(
      back.delete.map((r) => `${r.gvk.kind}/${r.namespace}/${r.name}`),
      ['ConfigMap/decider/blocklist-cve-0'],
    );
  });

  it('deletes what the other channel left, by its own kind and namespace, whatever its shard number', () => {
    const stale = plan(certain, {
      ...NO_LIVE,
      configMaps: [{ ...CONFIG_MAP, metadata: { name: 'blocklist-cve-9', namespace: 'decider' } }],
    });
    assert.deepEqual(stale.delete, [{ gvk: CONFIG_MAP, name: 'blocklist-cve-9', namespace: 'decider' }]);
    const strays = plan(
      presumed,
      {
        ...NO_LIVE,
        cidrGroups: [
          { ...CILIUM_CIDR_GROUP, metadata: { name: 'cve-7', labels: { 'edge.exoledge.io/shard': '7' } } },
        ],
        policies: [{ ...CILIUM_CLUSTERWIDE_NETWORK_POLICY, metadata: { name: 'deny-cve' } }],
      },
      publishedSet(dataOf(list24(3)).merged, presumed),
    );
    assert.deepEqual(
      strays.delete.map((r) => `${r.gvk.kind}/${r.name}`),
      ['CiliumClusterwideNetworkPolicy/deny-cve', 'CiliumCIDRGroup/cve-7'],
    );
  });
});

describe('what the status says', () => {
  const data = dataOf(`${list24(7)}\n1.2.3\n10.9.9.9/24\n`);
  const input = (
    publication: PublicationOutcome,
    failure?: ReadFailure,
    previous?: BlocklistSourceStatus,
  ) => ({
    now: new Date(NOW),
    generation: 4,
    spec: { ...certain, maxEntries: 6 },
    previous,
    data,
    failure,
    publication,
    deciderNamespace: 'decider',
    retryDelayMs: 5 * MIN,
  });
  const set = publishedSet(data.merged, { ...certain, maxEntries: 6 });
  const published = nextStatus('cve', input({ kind: 'Published', set, data }));
  const condition = (s: BlocklistSourceStatus, type: string) => s.conditions?.find((c) => c.type === type);

  it('counts every step, reports what was dropped and refused, and says Ready', () => {
    assert.deepEqual(published.entries, {
      read: 8,
      malformed: 1,
      normalised: 1,
      merged: 8,
      published: 6,
      dropped: 2,
      refused: 0,
    });
    assert.equal(published.refusedLines, undefined);
    assert.deepEqual(published.dropped, [
      { reason: 'OverMaxEntries', family: 'IPv4', prefixLength: 24, count: 2 },
    ]);
    assert.deepEqual(published.malformedLines, [{ line: 8, reason: 'Ipv4Syntax', text: '1.2.3' }]);
    assert.equal(published.shards, 2);
    assert.equal(published.fingerprint, set.fingerprint);
    assert.equal(published.observedGeneration, 4);
    assert.equal(published.lastRefreshTime, '2026-06-01T11:00:00Z');
    assert.equal(condition(published, 'Ready')?.reason, 'Published');
    assert.equal(condition(published, 'SourceRead')?.status, 'True');
    assert.equal(condition(published, 'AllEntriesPublished')?.reason, 'DroppedByBudget');
    assert.match(condition(published, 'AllEntriesPublished')?.message ?? '', /2 over maxEntries 6/);
  });

  it('is the same status when nothing changed, so nothing is written', () => {
    const again = nextStatus('cve', {
      ...input({ kind: 'Published', set, data }, undefined, published),
      now: new Date(NOW + HOUR),
    });
    assert.ok(sameJson(again, published));
  });

  it('on a failed read keeps every count, says the last set is kept, and when it retries', () => {
    const failure: ReadFailure = { url: URL_A, at: NOW, reason: 'HttpStatus', message: 'GET x answered 500' };
    const s = nextStatus('cve', { ...input({ kind: 'NotPublished' }, failure, published), generation: 5 });
    assert.deepEqual(s.entries, published.entries);
    assert.equal(s.fingerprint, published.fingerprint);
    assert.equal(s.observedGeneration, 4, 'generation 5 is not in force');
    assert.equal(condition(s, 'Ready')?.reason, 'LastSetKept');
    assert.equal(condition(s, 'SourceRead')?.reason, 'HttpStatus');
    assert.match(condition(s, 'SourceRead')?.message ?? '', /retrying every 5m/);
    const nothing = nextStatus('cve', input({ kind: 'NotPublished' }, failure, undefined));
    assert.equal(condition(nothing, 'Ready')?.reason, 'NothingPublished');
    assert.equal(nothing.entries, undefined);
  });

  it('republishing an older list during an outage still says the last set is kept', () => {
    const failure: ReadFailure = { url: URL_A, at: NOW, reason: 'Timeout', message: 'slow' };
    const s = nextStatus('cve', input({ kind: 'Published', set, data }, failure, published));
    assert.equal(condition(s, 'Ready')?.reason, 'LastSetKept');
  });

  it('on a failed write keeps the counts of the set last published in full', () => {
    const s = nextStatus('cve', {
      ...input(
        { kind: 'ApplyFailed', object: 'CiliumCIDRGroup cve-1', message: 'Invalid' },
        undefined,
        published,
      ),
      generation: 5,
    });
    assert.deepEqual(s.entries, published.entries);
    assert.equal(condition(s, 'Ready')?.reason, 'ApplyFailed');
    assert.match(condition(s, 'Ready')?.message ?? '', /CiliumCIDRGroup cve-1/);
    const conflict = nextStatus(
      'cve',
      input({ kind: 'NameConflict', object: 'CiliumClusterwideNetworkPolicy deny-cve' }),
    );
    assert.equal(condition(conflict, 'Ready')?.reason, 'NameConflict');
  });

  it('refuses prefixes under the floor, shows the first lines, and says so before what the budget dropped', () => {
    const risky = dataOf(`${list24(7)}\n0.0.0.0/0\n::/0\n1.0.0.0/7\n2001:db8::/31\n`);
    const riskySet = publishedSet(risky.merged, { ...certain, maxEntries: 6 });
    const s = nextStatus('cve', { ...input({ kind: 'Published', set: riskySet, data: risky }), data: risky });
    assert.deepEqual(s.entries, {
      read: 7,
      malformed: 0,
      normalised: 0,
      merged: 7,
      published: 6,
      dropped: 1,
      refused: 4,
    });
    assert.deepEqual(s.refusedLines, [
      { line: 8, text: '0.0.0.0/0' },
      { line: 9, text: '::/0' },
      { line: 10, text: '1.0.0.0/7' },
      { line: 11, text: '2001:db8::/31' },
    ]);
    const c = condition(s, 'AllEntriesPublished');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'PrefixesRefused');
    assert.equal(
      c?.message,
      'refused 4 prefixes shorter than /8 (IPv4) or /32 (IPv6), never published: they would block far more ' +
        'than a list means to (line 8 "0.0.0.0/0", line 9 "::/0", line 10 "1.0.0.0/7", line 11 "2001:db8::/31"; ' +
        'see status.refusedLines); the rest of the list is published, less 1 dropped by the budget (see status.dropped)',
    );
    assert.equal(condition(s, 'Ready')?.reason, 'Published', 'the rest of the list is in force');
    const clean = nextStatus('cve', input({ kind: 'Published', set, data }, undefined, s));
    assert.equal(clean.refusedLines, undefined, 'a list read clean again shows no refused lines');
  });

  it('refused its place in the policy map: says who holds it, and keeps everything published before', () => {
    const s = nextStatus('cve', {
      ...input(
        {
          kind: 'PolicyMapBudgetExceeded',
          planned: 30_000,
          decision: {
            admitted: false,
            older: [
              { name: 'scanners', createdAt: '2026-01-01T00:00:00Z', entries: 40_000 },
              { name: 'exploits', createdAt: '2026-02-01T00:00:00Z', entries: 10_000 },
            ],
            total: 80_000,
            limit: 65_536,
          },
        },
        undefined,
        published,
      ),
      generation: 5,
    });
    assert.deepEqual(s.entries, published.entries);
    assert.equal(s.fingerprint, published.fingerprint);
    assert.equal(s.observedGeneration, 4, 'generation 5 is not in force');
    const ready = condition(s, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'PolicyMapBudgetExceeded');
    assert.equal(
      ready?.message,
      "Cilium's policy map holds 65,536 entries per endpoint, shared by every enforced source with the same " +
        'podSelector: this source would publish 30,000 beside the 50,000 of the older ones (scanners: 40,000, ' +
        'exploits: 10,000), 80,000 in all. Nothing new is published; what was published before stays. Lower ' +
        'maxEntries here or on an older source, or remove one',
    );
  });

  it('keeps lastTransitionTime while a condition holds', () => {
    const later = nextStatus('cve', {
      ...input({ kind: 'Published', set, data }, undefined, published),
      now: new Date(NOW + HOUR),
    });
    assert.equal(
      condition(later, 'Ready')?.lastTransitionTime,
      condition(published, 'Ready')?.lastTransitionTime,
    );
  });
});

describe('what the events say', () => {
  const data = dataOf(`${list24(7)}\n`);
  const set = publishedSet(data.merged, { ...certain, maxEntries: 6 });
  const status = nextStatus('cve', {
    now: new Date(NOW),
    generation: 1,
    spec: { ...certain, maxEntries: 6 },
    previous: undefined,
    data,
    failure: undefined,
    publication: { kind: 'Published', set, data },
    deciderNamespace: 'decider',
    retryDelayMs: 5 * MIN,
  });

  it('announces a new set, and what the budget dropped from it; nothing when the set is the same', () => {
    assert.deepEqual(
      publicationEvents(undefined, status, { kind: 'Published', set, data }).map((e) => [e.type, e.reason]),
      [
        ['Normal', 'Published'],
        ['Warning', 'DroppedByBudget'],
      ],
    );
    assert.deepEqual(publicationEvents(status, status, { kind: 'Published', set, data }), []);
    assert.deepEqual(publicationEvents(status, status, { kind: 'NotPublished' }), []);
  });

  it('warns of prefixes refused under the floor in a new set, naming the lines', () => {
    const risky = dataOf(`${list24(3)}\n0.0.0.0/0\n`);
    const riskySet = publishedSet(risky.merged, certain);
    const after = nextStatus('cve', {
      now: new Date(NOW),
      generation: 1,
      spec: certain,
      previous: undefined,
      data: risky,
      failure: undefined,
      publication: { kind: 'Published', set: riskySet, data: risky },
      deciderNamespace: 'decider',
      retryDelayMs: 5 * MIN,
    });
    const events = publicationEvents(undefined, after, { kind: 'Published', set: riskySet, data: risky });
    assert.deepEqual(
      events.map((e) => [e.type, e.reason]),
      [
        ['Normal', 'Published'],
        ['Warning', 'PrefixesRefused'],
      ],
    );
    assert.match(
      events[1]?.note ?? '',
      /^1 prefixes shorter than the operator's floor refused.*line 4 "0\.0\.0\.0\/0"/,
    );
    assert.match(
      after.conditions?.find((c) => c.type === 'SourceRead')?.message ?? '',
      /, 1 refused as too short \(see status\.refusedLines\)$/,
    );
    // The same published set, read again with one more line refused: warned again, not announced.
    const worse = dataOf(`${list24(3)}\n0.0.0.0/0\n::/0\n`);
    const again = nextStatus('cve', {
      now: new Date(NOW),
      generation: 1,
      spec: certain,
      previous: after,
      data: worse,
      failure: undefined,
      publication: { kind: 'Published', set: publishedSet(worse.merged, certain), data: worse },
      deciderNamespace: 'decider',
      retryDelayMs: 5 * MIN,
    });
    assert.equal(again.fingerprint, after.fingerprint);
    assert.deepEqual(
      publicationEvents(after, again, { kind: 'Published', set: riskySet, data: worse }).map((e) => e.reason),
      ['PrefixesRefused'],
    );
    assert.deepEqual(publicationEvents(again, again, { kind: 'Published', set: riskySet, data: worse }), []);
  });

  it('warns when the policy map refuses the source, naming the older sources and their counts', () => {
    const events = publicationEvents(status, status, {
      kind: 'PolicyMapBudgetExceeded',
      planned: 30_000,
      decision: {
        admitted: false,
        older: [{ name: 'scanners', createdAt: '2026-01-01T00:00:00Z', entries: 40_000 }],
        total: 70_000,
        limit: 65_536,
      },
    });
    assert.deepEqual(
      events.map((e) => [e.type, e.reason]),
      [['Warning', 'PolicyMapBudgetExceeded']],
    );
    assert.match(events[0]?.note ?? '', /\(scanners: 40,000\), 70,000 in all/);
  });

  it('warns of failures, saying whether a set stays in force', () => {
    const failed = publicationEvents(status, status, {
      kind: 'ApplyFailed',
      object: 'CiliumCIDRGroup cve-0',
      message: 'x',
    });
    assert.deepEqual(
      failed.map((e) => [e.type, e.reason]),
      [['Warning', 'ApplyFailed']],
    );
    const kept = readFailedEvent({ reason: 'HttpStatus', message: 'GET x answered 500' }, status, 5 * MIN);
    assert.match(
      kept.note ?? '',
      /HttpStatus: GET x answered 500; the last published set stays in force; retrying in 5m/,
    );
    assert.match(
      readFailedEvent({ reason: 'Timeout', message: 'slow' }, undefined, 2 * MIN).note ?? '',
      /nothing is published yet; retrying in 2m/,
    );
  });
});
