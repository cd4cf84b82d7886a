/**
 * The BlocklistSource operator on a real apiserver with Cilium's real CRDs (they
 * validate every object we write, field names included). Lists are served by a local
 * HTTP server, a contract-faithful stand-in for list providers: 200 with an ETag, 304 to
 * a matching If-None-Match, any status on demand.
 *
 * Time: the controller takes its refresh decisions on a clock the tests move forward
 * (an offset on the real clock), so that "two hours later" and "five minutes later"
 * cost nothing; a reconcile is then triggered by touching an annotation of the source.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  type ApplyOptions,
  type Clock,
  type DeleteOptions,
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  type Patch,
  realClock,
  type WriteOptions,
} from '@operators/kit';
import {
  BLOCKLIST_SOURCE,
  type BlocklistSource,
  type BlocklistSourceSpec,
  blocklistSourceCrd,
} from '../src/api/blocklist-source.ts';
import {
  CILIUM_CIDR_GROUP,
  CILIUM_CLUSTERWIDE_NETWORK_POLICY,
  type CiliumCidrGroup,
  type CiliumClusterwideNetworkPolicy,
  CONFIG_MAP,
  type ConfigMap,
} from '../src/api/cilium.ts';
import type { ReconcileReport } from '../src/controllers/blocklist-source.ts';
import { aggregate, canonicalStrings, fingerprint } from '../src/domain/blocklist/index.ts';
import { createOperator, type Operator } from '../src/operator.ts';
import { type ListServer, startListServer } from '../src/sample/list-server.ts';

const HOUR = 3_600_000;
const MIN = 60_000;

/** The real clock, plus an offset the tests move forward. */
class MovableClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  setTimeout = realClock.setTimeout;
  clearTimeout = realClock.clearTimeout;
}

/** Counts the operator's writes (events aside: they are the recorder's, not the reconcile's). */
class CountingClient extends KubeClient {
  readonly writes: string[] = [];
  private note(verb: string, kind: string | undefined, name: string | undefined): void {
    if (kind !== 'Event') this.writes.push(`${verb} ${kind}/${name}`);
  }
  override apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    this.note('apply', obj.kind, obj.metadata.name);
    return super.apply(obj, opts);
  }
  override applyStatus<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T & KubeObject> {
    this.note('applyStatus', obj.kind, obj.metadata.name);
    return super.applyStatus(obj, opts);
  }
  override create<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.note('create', obj.kind, obj.metadata.name);
    return super.create(obj, opts);
  }
  override patch<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts?: WriteOptions & { subresource?: string },
  ): Promise<T> {
    this.note('patch', gvk.kind, name);
    return super.patch<T>(gvk, name, namespace, patch, opts);
  }
  override delete(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts?: DeleteOptions,
  ): Promise<boolean> {
    this.note('delete', gvk.kind, name);
    return super.delete(gvk, name, namespace, opts);
  }
}

/** `count` /24s that never merge (every other one), from the `start`-th. */
function list24(count: number, start = 0): string {
  const lines: string[] = [];
  for (let i = start; i < start + count; i++) lines.push(`10.${(i * 2) >> 8}.${(i * 2) & 255}.0/24`);
  return `${lines.join('\n')}\n`;
}

let env: TestEnv;
let server: ListServer;
let deciderNamespace: string;
let operator: Operator;
let client: CountingClient;
const clock = new MovableClock();
const reports: ReconcileReport[] = [];
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  env = await testEnv();
  await env.installThirdParty('cilium');
  await env.installCrds([blocklistSourceCrd()]);
  deciderNamespace = await env.namespace(
    { after: (fn: () => Promise<void>) => cleanups.push(fn) },
    'exoledge-decider',
  );
  server = await startListServer();
  client = new CountingClient(env.admin.transport, env.admin.discovery);
  operator = createOperator({ client, deciderNamespace, clock, onReconciled: (r) => reports.push(r) });
  operator.manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
  await operator.manager.start();
});

after(async () => {
  await operator.manager.stop();
  await server.close();
  for (const c of cleanups) await c();
});

let counter = 0;
function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid % 10_000}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;
}

async function createSource(name: string, spec: Partial<BlocklistSourceSpec>): Promise<void> {
  server.serve(`/${name}.txt`, { body: list24(25) });
  await env.admin.create<BlocklistSource>({
    ...BLOCKLIST_SOURCE,
    metadata: { name },
    spec: { url: server.url(`/${name}.txt`), kind: 'Certain', ...spec },
  });
}

const getSource = (name: string) => env.admin.get<BlocklistSource>(BLOCKLIST_SOURCE, name);

/** Waits until the source's spec is in force with Ready at `reason`. */
function ready(name: string, reason = 'Published'): Promise<BlocklistSource> {
  return eventually(`${name} Ready=${reason}`, async () => {
    const s = await getSource(name);
    const c = s.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.reason === reason && c.observedGeneration === s.metadata.generation ? s : undefined;
  });
}

function listed<T extends KubeObject>(gvk: GroupVersionKind, name: string, namespace?: string): Promise<T[]> {
  return env.admin
    .listAll<T>(gvk, {
      labelSelector: `edge.exoledge.io/source=${name}`,
      ...(namespace ? { namespace } : {}),
    })
    .then((l) => l.items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '')));
}
const groupsOf = (name: string) => listed<CiliumCidrGroup>(CILIUM_CIDR_GROUP, name);
const policiesOf = (name: string) =>
  listed<CiliumClusterwideNetworkPolicy>(CILIUM_CLUSTERWIDE_NETWORK_POLICY, name);
const configMapsOf = (name: string) => listed<ConfigMap>(CONFIG_MAP, name, deciderNamespace);

/** The shards' prefixes in shard order. */
async function publishedPrefixes(name: string): Promise<string[]> {
  const groups = await groupsOf(name);
  groups.sort(
    (a, b) =>
      Number(a.metadata.labels?.['edge.exoledge.io/shard']) -
      Number(b.metadata.labels?.['edge.exoledge.io/shard']),
  );
  return groups.flatMap((g) => [...g.spec.externalCIDRs]);
}

/** Moves time forward by `ms`, then makes the controller look at the source. */
async function later(name: string, ms: number): Promise<number> {
  clock.offset += ms;
  const since = reports.length;
  await env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
    type: 'merge',
    body: { metadata: { annotations: { 'test.exoledge.io/touched': String(Date.now()) } } },
  });
  return since;
}

function reportAfter(
  name: string,
  since: number,
  what: (r: ReconcileReport) => boolean,
): Promise<ReconcileReport> {
  return eventually(`a reconcile of ${name}`, async () =>
    reports.slice(since).find((r) => r.source === name && what(r)),
  );
}

async function settled(): Promise<void> {
  const q = operator.blocklistSources.queue;
  await eventually('the queue to settle', async () => (q.len === 0 && q.inFlight === 0 ? true : undefined));
}

describe('a BlocklistSource on a real apiserver with Cilium CRDs', () => {
  it('turns a list served over HTTP into N CIDR-group shards and one deny policy selecting them by label', async () => {
    const name = uniqueName('scanners');
    await createSource(name, {
      enforce: true,
      shardSize: 10,
      podSelector: { matchLabels: { istio: 'ingressgateway' } },
    });
    server.serve(`/${name}.txt`, { body: `# scanners\n${list24(25)}1.2.3\n10.0.0.77/24 ; dup, host bits\n` });
    const source = await ready(name);

    const expected = aggregate(list24(25));
    assert.deepEqual(await publishedPrefixes(name), canonicalStrings(expected.budget.kept));
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
    });
    assert.deepEqual(source.status?.malformedLines, [{ line: 27, reason: 'Ipv4Syntax', text: '1.2.3' }]);
    assert.equal(source.status?.shards, 3);
    assert.equal(source.status?.channel, 'CiliumPolicy');
    assert.equal(source.status?.fingerprint, fingerprint(expected.budget.kept));
    assert.equal(source.status?.conditions?.find((c) => c.type === 'AllEntriesPublished')?.status, 'True');
    assert.ok(source.metadata.finalizers?.includes('edge.exoledge.io/finalizer'));
  });

  it('follows the list as it grows and shrinks: shards added and deleted, the policy never rewritten', async () => {
    const name = uniqueName('grow');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {}, refreshInterval: '1h' });
    await ready(name);
    const policyVersion = (await policiesOf(name))[0]?.metadata.resourceVersion;

    server.serve(`/${name}.txt`, { body: list24(45) });
    let since = await later(name, HOUR);
    await reportAfter(name, since, (r) => r.read?.result === 'Read');
    let status = (await ready(name)).status;
    assert.equal(status?.shards, 5);
    assert.equal((await groupsOf(name)).length, 5);
    assert.deepEqual(await publishedPrefixes(name), canonicalStrings(aggregate(list24(45)).budget.kept));

    server.serve(`/${name}.txt`, { body: list24(12, 30) });
    since = await later(name, HOUR);
    await reportAfter(name, since, (r) => r.read?.result === 'Read');
    status = (await ready(name)).status;
    assert.equal(status?.shards, 2);
    assert.deepEqual(
      (await groupsOf(name)).map((g) => g.metadata.name),
      [`${name}-0`, `${name}-1`],
    );
    assert.deepEqual(await publishedPrefixes(name), canonicalStrings(aggregate(list24(12, 30)).budget.kept));
    assert.equal((await policiesOf(name))[0]?.metadata.resourceVersion, policyVersion);
  });

  it('puts back a shard deleted by hand at once, from memory, without reading the list again', async () => {
    const name = uniqueName('repair');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    const since = reports.length;
    await env.admin.delete(CILIUM_CIDR_GROUP, `${name}-1`);
    await eventually('the shard back', async () =>
      (await env.admin.find(CILIUM_CIDR_GROUP, `${name}-1`)) ? true : undefined,
    );
    assert.ok(reports.slice(since).every((r) => r.source !== name || r.read === undefined));
    assert.deepEqual(await publishedPrefixes(name), canonicalStrings(aggregate(list24(25)).budget.kept));
  });

  it('never takes over an object of the same name that is not ours', async () => {
    const name = uniqueName('taken');
    await env.admin.create({
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
    const theirs = await env.admin.get<CiliumCidrGroup>(CILIUM_CIDR_GROUP, `${name}-2`);
    assert.deepEqual(theirs.spec.externalCIDRs, ['192.0.2.0/24']);
    assert.equal(theirs.metadata.labels?.['edge.exoledge.io/source'], undefined);
  });

  it('switching channel builds the other one and cleans up the first; deleting the source removes everything', async () => {
    const name = uniqueName('switch');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    assert.equal((await groupsOf(name)).length, 3);

    await env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
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
    assert.deepEqual(
      maps[0]?.data?.['prefixes.txt'],
      `${canonicalStrings(aggregate(list24(25)).budget.kept).join('\n')}\n`,
    );
    assert.deepEqual(await groupsOf(name), []);
    assert.deepEqual(await policiesOf(name), []);

    await env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { enforce: true } },
    });
    await ready(name);
    assert.equal((await groupsOf(name)).length, 3);
    assert.equal((await policiesOf(name)).length, 1);
    assert.deepEqual(await configMapsOf(name), []);

    await env.admin.delete(BLOCKLIST_SOURCE, name);
    await eventually('the source gone', async () =>
      (await env.admin.find(BLOCKLIST_SOURCE, name)) ? undefined : true,
    );
    assert.deepEqual(await groupsOf(name), []);
    assert.deepEqual(await policiesOf(name), []);
  });

  it('a read answered 500 keeps the last set, says so, and is retried after 5 minutes, not 2 hours', async () => {
    const name = uniqueName('outage');
    await createSource(name, { enforce: true, shardSize: 10, podSelector: {} });
    await ready(name);
    const versions = (await groupsOf(name)).map((g) => g.metadata.resourceVersion);

    server.serve(`/${name}.txt`, { status: 500 });
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
    const events = await env.admin.listAll<KubeObject & { reason?: string; regarding?: { name?: string } }>(
      { apiVersion: 'events.k8s.io/v1', kind: 'Event' },
      { namespace: 'default' },
    );
    assert.ok(events.items.some((e) => e.regarding?.name === name && e.reason === 'ReadFailed'));

    // Before the 5 minutes are up nothing is read, whatever wakes the controller.
    since = await later(name, 2 * MIN);
    const early = await reportAfter(name, since, () => true);
    assert.equal(early.read, undefined);

    server.serve(`/${name}.txt`, { body: list24(30) });
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
    await env.admin.patchStatus(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`, undefined, {
      type: 'merge',
      body: {
        status: { derivativePolicies: { 'node-1': { ok: true, enforcing: true, localPolicyRevision: 7 } } },
      },
    });
    for (const [gvk, object] of [
      [CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`],
      [CILIUM_CIDR_GROUP, `${name}-0`],
    ] as const) {
      await env.admin.patch(
        gvk,
        object,
        undefined,
        { type: 'merge', body: { metadata: { labels: { team: 'net' } } } },
        { fieldManager: 'platform-team' },
      );
    }

    // A new selector rewrites the policy; a list with a new first prefix rewrites shard 0.
    await env.admin.patch(BLOCKLIST_SOURCE, name, undefined, {
      type: 'merge',
      body: { spec: { podSelector: { matchLabels: { app: 'gw-v2' } } } },
    });
    server.serve(`/${name}.txt`, { body: `9.9.9.0/24\n${list24(25)}` });
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
    const writes = client.writes.length;

    const since = await later(name, 2 * HOUR);
    const touched = (await getSource(name)).metadata.resourceVersion;
    const report = await reportAfter(name, since, (r) => r.read !== undefined);
    await settled();
    assert.deepEqual([report.read?.why, report.read?.result], ['Due', 'NotModified']);
    assert.equal(report.applied, 0);
    assert.equal(report.deleted, 0);
    assert.equal(report.statusWritten, false);
    assert.deepEqual(client.writes.slice(writes), []);
    assert.deepEqual(await objects(), before);
    assert.equal((await getSource(name)).metadata.resourceVersion, touched);
    const last = server.requests.filter((r) => r.path === `/${name}.txt`).at(-1);
    assert.equal(last?.status, 304);
    assert.ok(last?.headers['if-none-match']);
  });
});
