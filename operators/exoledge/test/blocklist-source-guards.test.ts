/**
 * The operator's guards, on a real apiserver with Cilium's real CRDs: the policy map
 * shared by the enforced sources of one podSelector, prefixes too short to publish, the
 * deny policy that must not put the gateway in default-deny, and a slow read that must
 * not push the next one later.
 *
 * A plane of this file's own (`privateTestEnv`): the policy map is summed over every
 * BlocklistSource in the cluster, so another file's operator and sources on the shared
 * plane would change the sums, and two operators would reconcile the same sources.
 *
 * Expectations are literals or the generated list itself (distinct /24s that never
 * merge, written in canonical order): nothing is computed with the operator's code.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { GroupVersionKind, KubeObject } from '@operators/kit';
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
} from '../src/api/cilium.ts';
import type { ReconcileReport } from '../src/controllers/blocklist-source.ts';
import { createOperator, type Operator } from '../src/operator.ts';
import { type ListServer, startListServer } from '../src/sample/list-server.ts';
import { MIN, MovableClock } from './support/e2e.ts';

/** `count` distinct /24s from 11.0.0.0, every other one so that none merge, in canonical order. */
function distinct24(count: number, start = 0): string[] {
  const lines: string[] = [];
  for (let i = start; i < start + count; i++) {
    const n = i * 2;
    lines.push(`${11 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}.0/24`);
  }
  return lines;
}

let env: TestEnv;
let server: ListServer;
let operator: Operator;
const clock = new MovableClock();
const reports: ReconcileReport[] = [];
const servers: Server[] = [];

before(async () => {
  env = await privateTestEnv();
  await env.installThirdParty('cilium');
  await env.installCrds([blocklistSourceCrd()]);
  await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'exoledge-system' } });
  server = await startListServer();
  operator = createOperator({
    client: env.admin,
    deciderNamespace: 'exoledge-system',
    clock,
    onReconciled: (r) => reports.push(r),
  });
  operator.manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
  await operator.manager.start();
});

after(async () => {
  await operator?.manager.stop();
  await server?.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await env?.close();
});

const getSource = (name: string) => env.admin.get<BlocklistSource>(BLOCKLIST_SOURCE, name);

async function createSource(
  name: string,
  spec: Partial<BlocklistSourceSpec> & { url: string },
): Promise<void> {
  await env.admin.create<BlocklistSource>({
    ...BLOCKLIST_SOURCE,
    metadata: { name },
    spec: { kind: 'Certain', ...spec },
  });
}

/** Waits until the source's Ready condition has `reason` for its current generation. */
function ready(name: string, reason = 'Published'): Promise<BlocklistSource> {
  return eventually(
    `${name} Ready=${reason}`,
    async () => {
      const s = await getSource(name);
      const c = s.status?.conditions?.find((x) => x.type === 'Ready');
      return c?.reason === reason && c.observedGeneration === s.metadata.generation ? s : undefined;
    },
    60_000,
  );
}

function listed<T extends KubeObject>(gvk: GroupVersionKind, name: string): Promise<T[]> {
  return env.admin.listAll<T>(gvk, { labelSelector: `edge.exoledge.io/source=${name}` }).then((l) => l.items);
}

/** Every prefix in the source's CIDR groups, in shard order. */
async function publishedPrefixes(name: string): Promise<string[]> {
  const groups = await listed<CiliumCidrGroup>(CILIUM_CIDR_GROUP, name);
  groups.sort(
    (a, b) =>
      Number(a.metadata.labels?.['edge.exoledge.io/shard']) -
      Number(b.metadata.labels?.['edge.exoledge.io/shard']),
  );
  return groups.flatMap((g) => [...g.spec.externalCIDRs]);
}

type Event = KubeObject & { reason?: string; type?: string; note?: string; regarding?: { name?: string } };

function eventOf(name: string, reason: string): Promise<Event> {
  return eventually(`a ${reason} event about ${name}`, async () => {
    const events = await env.admin.listAll<Event>(
      { apiVersion: 'events.k8s.io/v1', kind: 'Event' },
      { namespace: 'default' },
    );
    return events.items.find((e) => e.regarding?.name === name && e.reason === reason);
  });
}

describe('the guards of BlocklistSource on a real apiserver', () => {
  it('refuses a younger enforced source its place in a full policy map, and lets it in once the older one shrinks', async () => {
    const older = 'pm-a-scanners';
    const younger = 'pm-b-exploits';
    const olderList = distinct24(40_000);
    const youngerList = distinct24(30_000, 40_000);
    server.serve('/pm-a.txt', { body: `${olderList.join('\n')}\n` });
    server.serve('/pm-b.txt', { body: `${youngerList.join('\n')}\n` });

    // One selector, written two ways: the same endpoints, the same policy map.
    await createSource(older, {
      url: server.url('/pm-a.txt'),
      enforce: true,
      maxEntries: 65_536,
      podSelector: { matchLabels: { istio: 'ingressgateway' } },
    });
    const a = await ready(older);
    assert.equal(a.status?.entries?.published, 40_000);
    const [policy] = await listed<CiliumClusterwideNetworkPolicy>(CILIUM_CLUSTERWIDE_NETWORK_POLICY, older);
    assert.deepEqual(policy?.spec.enableDefaultDeny, { ingress: false, egress: false });

    await createSource(younger, {
      url: server.url('/pm-b.txt'),
      enforce: true,
      maxEntries: 65_536,
      podSelector: { matchExpressions: [{ key: 'istio', operator: 'In', values: ['ingressgateway'] }] },
    });
    const refused = await eventually('the younger source refused', async () => {
      const s = await getSource(younger);
      const c = s.status?.conditions?.find((x) => x.type === 'Ready');
      return c?.reason === 'PolicyMapBudgetExceeded' ? { s, c } : undefined;
    });
    assert.equal(refused.c.status, 'False');
    assert.match(
      refused.c.message,
      /would publish 30,000 beside the 40,000 of the older ones \(pm-a-scanners: 40,000\), 70,000 in all/,
    );
    assert.equal(refused.s.status?.entries, undefined, 'nothing is published');
    assert.deepEqual(await listed(CILIUM_CIDR_GROUP, younger), []);
    assert.deepEqual(await listed(CILIUM_CLUSTERWIDE_NETWORK_POLICY, younger), []);
    const warning = await eventOf(younger, 'PolicyMapBudgetExceeded');
    assert.equal(warning.type, 'Warning');
    assert.match(warning.note ?? '', /pm-a-scanners: 40,000/);
    assert.equal(
      (await getSource(older)).status?.entries?.published,
      40_000,
      'the older one keeps its place',
    );

    // The older source shrinks: the younger one is decided again, without being touched.
    await env.admin.patch(BLOCKLIST_SOURCE, older, undefined, {
      type: 'merge',
      body: { spec: { maxEntries: 30_000 } },
    });
    const b = await ready(younger);
    assert.equal(b.status?.entries?.published, 30_000);
    assert.deepEqual(await publishedPrefixes(younger), youngerList);
    assert.equal((await getSource(older)).status?.entries?.published, 30_000);
    assert.deepEqual(
      await publishedPrefixes(older),
      olderList.slice(0, 30_000),
      'the highest addresses went first',
    );
  });

  it('refuses 0.0.0.0/0, ::/0 and a /7 in a list, reports them, and publishes the rest', async () => {
    const name = 'refuses-the-world';
    const good = ['192.0.2.0/24', '198.51.100.7/32', '2001:db8::/48'];
    server.serve('/world.txt', {
      body: `# a list with the world in it\n${good[0]}\n0.0.0.0/0\n${good[1]}\n::/0 ; oops\n1.0.0.0/7\n${good[2]}\n`,
    });
    await createSource(name, {
      url: server.url('/world.txt'),
      enforce: true,
      podSelector: { matchLabels: { app: 'other' } },
    });
    const s = await ready(name);
    assert.deepEqual(await publishedPrefixes(name), good);
    assert.deepEqual(s.status?.entries, {
      read: 3,
      malformed: 0,
      normalised: 0,
      merged: 3,
      published: 3,
      dropped: 0,
      refused: 3,
    });
    assert.deepEqual(s.status?.refusedLines, [
      { line: 3, text: '0.0.0.0/0' },
      { line: 5, text: '::/0 ; oops' },
      { line: 6, text: '1.0.0.0/7' },
    ]);
    const c = s.status?.conditions?.find((x) => x.type === 'AllEntriesPublished');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'PrefixesRefused');
    assert.match(
      c?.message ?? '',
      /^refused 3 prefixes shorter than \/8 \(IPv4\) or \/32 \(IPv6\), never published/,
    );
    assert.equal((await eventOf(name, 'PrefixesRefused')).type, 'Warning');
  });

  it('counts the refresh interval from when a slow read started, not from when it ended', async () => {
    const name = 'slow-provider';
    // A provider that takes "10 minutes" to answer: the clock moves while it serves.
    const slow = createServer((_req, res) => {
      clock.offset += 10 * MIN;
      res.writeHead(200).end('192.0.2.0/24\n');
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    servers.push(slow);
    const since = reports.length;
    await createSource(name, {
      url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/list.txt`,
      refreshInterval: '1h',
    });
    const report = await eventually('the first read of the slow list', async () =>
      reports.slice(since).find((r) => r.source === name && r.read?.result === 'Read'),
    );
    // Due one hour after the request: 50 minutes after the answer (less the reconcile's own time).
    assert.ok(report.requeueAfterMs !== undefined);
    assert.ok(report.requeueAfterMs <= 50 * MIN, `next read in ${report.requeueAfterMs} ms`);
    assert.ok(report.requeueAfterMs > 49 * MIN, `next read in ${report.requeueAfterMs} ms`);
  });
});
