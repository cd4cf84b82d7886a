/**
 * The BlocklistSource operator on a real apiserver with Cilium's real CRDs, its main
 * paths: publish, follow a list, repair, switch channel, survive a failed read. Every
 * expectation comes from the test's own oracle (`support/oracle.ts`) or from literals,
 * never from the operator's code. The harness (`support/e2e.ts`) says how time moves.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eventually } from '@operators/controlplane/testing';
import { BLOCKLIST_SOURCE } from '../src/api/blocklist-source.ts';
import {
  CILIUM_CIDR_GROUP,
  CILIUM_CLUSTERWIDE_NETWORK_POLICY,
  type CiliumCidrGroup,
} from '../src/api/cilium.ts';
import { Harness, HOUR, MIN } from './support/e2e.ts';
import { expectedSet } from './support/oracle.ts';

/** `count` /24s that never merge (every other one), from the `start`-th. */
function list24(count: number, start = 0): string {
  const lines: string[] = [];
  for (let i = start; i < start + count; i++) lines.push(`10.${(i * 2) >> 8}.${(i * 2) & 255}.0/24`);
  return `${lines.join('\n')}\n`;
}

let h: Harness;

before(async () => {
  h = await Harness.start();
  await h.startOperator();
});

after(() => h.close());

const uniqueName = (prefix: string) => h.uniqueName(prefix);
const createSource = (name: string, spec: Parameters<Harness['createSource']>[2]) =>
  h.createSource(name, list24(25), spec);
const getSource = (name: string) => h.getSource(name);
const ready = (name: string, reason?: string) => h.ready(name, reason);
const groupsOf = (name: string) => h.groupsOf(name);
const policiesOf = (name: string) => h.policiesOf(name);
const configMapsOf = (name: string) => h.configMapsOf(name);
const publishedPrefixes = (name: string) => h.publishedPrefixes(name);
const later = (name: string, ms: number) => h.later(name, ms);
const reportAfter: Harness['reportAfter'] = (name, since, what) => h.reportAfter(name, since, what);
const settled = () => h.settled();

describe('a BlocklistSource on a real apiserver with Cilium CRDs', () => {
  it('turns a list served over HTTP into N CIDR-group shards and one deny policy selecting them by label', async () => {
    const name = uniqueName('scanners');
    await createSource(name, {
      enforce: true,
      shardSize: 10,
      podSelector: { matchLabels: { istio: 'ingressgateway' } },
    });
    const list = `# scanners\n${list24(25)}1.2.3\n10.0.0.77/24 ; dup, host bits\n`;
    h.serve(name, list);
    const source = await ready(name);

    const expected = expectedSet(list);
    assert.deepEqual(await publishedPrefixes(name), expected.prefixes);
    // The first and last, by hand: 10.0.0.0/24 and the 25th /24 two apart, 10.0.48.0/24.
    assert.equal(expected.prefixes[0], '10.0.0.0/24');
    assert.equal(expected.prefixes[24], '10.0.48.0/24');
    const groups = await groupsOf(name);
    assert.deepEqual(
      groups.map((g) => [g.metadata.name, g.spec.externalCIDRs.length]),
      [
        [`${name}-0`, 10],
        [`${name}-1`, 10],
        [`${name}-2`, 5],
      ],
    );
    const [policy, ...others] = await policiesOf(name);
    assert.equal(others.length, 0);
    assert.equal(policy?.metadata.name, `deny-${name}`);
    assert.deepEqual(policy?.spec.endpointSelector, { matchLabels: { istio: 'ingressgateway' } });
    assert.deepEqual(policy?.spec.ingressDeny, [
      { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { 'edge.exoledge.io/source': name } } }] },
    ]);

    assert.deepEqual(source.status?.entries, {
      read: 26,
      malformed: 1,
      normalised: 1,
      merged: 25,
      published: 25,
      dropped: 0,
      refused: 0,
    });
    assert.deepEqual(source.status?.malformedLines, [{ line: 27, reason: 'Ipv4Syntax', text: '1.2.3' }]);
    assert.equal(source.status?.shards, 3);
    assert.equal(source.status?.channel, 'CiliumPolicy');
    assert.equal(source.status?.fingerprint, expected.fingerprint);
    assert.equal(source.status?.conditions?.find((c) => c.type === 'AllEntriesPublished')?.status, 'True');
    assert.ok(source.metadata.finalizers?.includes('edge.exoledge.io/finalizer'));
  });

  it('follows the list as it grows and shrinks: shards added and deleted, the policy never rewritten', async () => {
    const name = uniqueName('grow');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {}, refreshInterval: '1h' });
    await ready(name);
    const policyVersion = (await policiesOf(name))[0]?.metadata.resourceVersion;

    h.serve(name, list24(45));
    let since = await later(name, HOUR);
    await reportAfter(name, since, (r) => r.read?.result === 'Read');
    let status = (await ready(name)).status;
    assert.equal(status?.shards, 5);
    assert.equal((await groupsOf(name)).length, 5);
    assert.deepEqual(await publishedPrefixes(name), expectedSet(list24(45)).prefixes);

    h.serve(name, list24(12, 30));
    since = await later(name, HOUR);
    await reportAfter(name, since, (r) => r.read?.result === 'Read');
    status = (await ready(name)).status;
    assert.equal(status?.shards, 2);
    assert.deepEqual(
      (await groupsOf(name)).map((g) => g.metadata.name),
      [`${name}-0`, `${name}-1`],
    );
    assert.deepEqual(await publishedPrefixes(name), expectedSet(list24(12, 30)).prefixes);
    assert.equal((await policiesOf(name))[0]?.metadata.resourceVersion, policyVersion);
  });

  it('puts back a shard deleted by hand at once, from memory, without reading the list again', async () => {
    const name = uniqueName('repair');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    const since = h.op.reports.length;
    await h.env.admin.delete(CILIUM_CIDR_GROUP, `${name}-1`);
    await eventually('the shard back', async () =>
      (await h.env.admin.find(CILIUM_CIDR_GROUP, `${name}-1`)) ? true : undefined,
    );
    assert.ok(h.op.reports.slice(since).every((r) => r.source !== name || r.read === undefined));
    assert.deepEqual(await publishedPrefixes(name), expectedSet(list24(25)).prefixes);
  });

  it('never takes over an object of the same name that is not ours', async () => {
    const name = uniqueName('taken');
    await h.env.admin.create({
      ...CILIUM_CIDR_GROUP,
      metadata: { name: `${name}-2` },
      spec: { externalCIDRs: ['192.0.2.0/24'] },
    });
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    const source = await eventually('NameConflict', async () => {
      const s = await getSource(name);
      return s.status?.conditions?.find((c) => c.reason === 'NameConflict') ? s : undefined;
    });
    assert.match(
      source.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '',
      new RegExp(`${name}-2`),
    );
    const theirs = await h.env.admin.get<CiliumCidrGroup>(CILIUM_CIDR_GROUP, `${name}-2`);
    assert.deepEqual(theirs.spec.externalCIDRs, ['192.0.2.0/24']);
    assert.equal(theirs.metadata.labels?.['edge.exoledge.io/source'], undefined);
  });

  it('switching channel builds the other one and cleans up the first; deleting the source removes everything', async () => {
    const name = uniqueName('switch');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    assert.equal((await groupsOf(name)).length, 3);

    await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { enforce: false } },
    });
    const decider = await ready(name);
    assert.equal(decider.status?.channel, 'Decider');
    const maps = await configMapsOf(name);
    assert.deepEqual(
      maps.map((m) => [m.metadata.name, m.metadata.labels?.['edge.exoledge.io/kind']]),
      [[`blocklist-${name}-0`, 'Certain']],
    );
    const text = `${expectedSet(list24(25)).prefixes.join('\n')}\n`;
    assert.deepEqual(maps[0]?.data?.['prefixes.txt'], text);
    assert.equal(
      maps[0]?.data?.fingerprint,
      createHash('sha256').update(text).digest('hex'),
      'the shard names its version, so the decider serves only complete ones',
    );
    assert.equal(maps[0]?.data?.total, '1');
    assert.deepEqual(await groupsOf(name), []);
    assert.deepEqual(await policiesOf(name), []);

    await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { enforce: true } },
    });
    await ready(name);
    assert.equal((await groupsOf(name)).length, 3);
    assert.equal((await policiesOf(name)).length, 1);
    assert.deepEqual(await configMapsOf(name), []);

    await h.env.admin.delete(BLOCKLIST_SOURCE, name);
    await eventually('the source gone', async () =>
      (await h.env.admin.find(BLOCKLIST_SOURCE, name)) ? undefined : true,
    );
    assert.deepEqual(await groupsOf(name), []);
    assert.deepEqual(await policiesOf(name), []);
  });

  it('a read answered 500 keeps the last set, says so, and is retried after 5 minutes, not 2 hours', async () => {
    const name = uniqueName('outage');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    const versions = (await groupsOf(name)).map((g) => g.metadata.resourceVersion);

    h.server.serve(`/${name}.txt`, { status: 500 });
    let since = await later(name, 2 * HOUR);
    const failed = await reportAfter(name, since, (r) => r.read !== undefined);
    assert.deepEqual(
      { ...failed.read, durationMs: 0 },
      { why: 'Due', result: 'Failed', reason: 'HttpStatus', durationMs: 0 },
    );
    assert.ok(
      failed.requeueAfterMs !== undefined &&
        failed.requeueAfterMs > 5 * MIN - 5000 &&
        failed.requeueAfterMs <= 5 * MIN,
      `retried after ${failed.requeueAfterMs} ms`,
    );
    const kept = await ready(name, 'LastSetKept');
    const read = kept.status?.conditions?.find((c) => c.type === 'SourceRead');
    assert.equal(read?.reason, 'HttpStatus');
    assert.match(read?.message ?? '', /answered 500.*retrying every 5m/);
    assert.deepEqual(
      (await groupsOf(name)).map((g) => g.metadata.resourceVersion),
      versions,
      'the last set stays in force',
    );
    const event = await h.eventOf(kept.metadata.uid ?? '', 'ReadFailed');
    assert.equal(event.type, 'Warning');
    assert.match(event.message ?? '', /the last published set stays in force/);

    // Before the 5 minutes are up nothing is read, whatever wakes the controller.
    since = await later(name, 2 * MIN);
    const early = await reportAfter(name, since, () => true);
    assert.equal(early.read, undefined);

    h.serve(name, list24(30));
    since = await later(name, 3 * MIN);
    const retried = await reportAfter(name, since, (r) => r.read !== undefined);
    assert.deepEqual([retried.read?.why, retried.read?.result], ['Retry', 'Read']);
    const back = await ready(name);
    assert.equal(back.status?.entries?.published, 30);
    assert.equal(back.status?.conditions?.find((c) => c.type === 'SourceRead')?.status, 'True');
  });

  it('keeps the status Cilium writes on the policy and labels others set on our objects', async () => {
    const name = uniqueName('shared');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: { matchLabels: { app: 'gw' } } });
    await ready(name);
    // Cilium reports on its policies; another team labels the objects.
    await h.env.admin.patchStatus(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`, undefined, {
      type: 'merge',
      body: {
        status: { derivativePolicies: { 'node-1': { ok: true, enforcing: true, localPolicyRevision: 7 } } },
      },
    });
    for (const [gvk, object] of [
      [CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`],
      [CILIUM_CIDR_GROUP, `${name}-0`],
    ] as const) {
      await h.env.admin.patch(
        gvk,
        object,
        undefined,
        { type: 'merge', body: { metadata: { labels: { team: 'net' } } } },
        { fieldManager: 'platform-team' },
      );
    }

    // A new selector rewrites the policy; a list with a new first prefix rewrites shard 0.
    await h.env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { podSelector: { matchLabels: { app: 'gw-v2' } } } },
    });
    h.serve(name, `9.9.9.0/24\n${list24(25)}`);
    const since = await later(name, 2 * HOUR);
    await reportAfter(name, since, (r) => r.read?.result === 'Read');
    await ready(name);

    const [policy] = await policiesOf(name);
    assert.deepEqual(policy?.spec.endpointSelector, { matchLabels: { app: 'gw-v2' } });
    assert.deepEqual(
      (policy?.status as { derivativePolicies?: Record<string, { localPolicyRevision?: number }> })
        ?.derivativePolicies?.['node-1']?.localPolicyRevision,
      7,
    );
    assert.equal(policy?.metadata.labels?.team, 'net');
    const [group0] = await groupsOf(name);
    assert.equal(group0?.spec.externalCIDRs[0], '9.9.9.0/24');
    assert.equal(group0?.metadata.labels?.team, 'net');
  });

  it('reads an unchanged list with a conditional GET, gets a 304 and writes nothing at all', async () => {
    const name = uniqueName('unchanged');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    await settled();
    const objects = async () =>
      [...(await groupsOf(name)), ...(await policiesOf(name))].map(
        (o) => `${o.metadata.name}@${o.metadata.resourceVersion}`,
      );
    const before = await objects();
    const writes = h.op.client.writes.length;

    const since = await later(name, 2 * HOUR);
    const touched = (await getSource(name)).metadata.resourceVersion;
    const report = await reportAfter(name, since, (r) => r.read !== undefined);
    await settled();
    assert.deepEqual([report.read?.why, report.read?.result], ['Due', 'NotModified']);
    assert.equal(report.applied, 0);
    assert.equal(report.deleted, 0);
    assert.equal(report.statusWritten, false);
    assert.deepEqual(h.op.client.writes.slice(writes), []);
    assert.deepEqual(await objects(), before);
    assert.equal((await getSource(name)).metadata.resourceVersion, touched);
    const last = h.server.requests.filter((r) => r.path === `/${name}.txt`).at(-1);
    assert.equal(last?.status, 304);
    assert.ok(last?.headers['if-none-match']);
  });
});
