/**
 * Tamper repair on a real apiserver with Cilium's real CRDs: what others do by hand to
 * the policy and shards a source publishes is undone, at once while the operator runs and
 * at start-up for what was done while it was stopped. The hand edits are made as other
 * field managers, the way `kubectl edit` or another controller would make them.
 *
 * A plane of its own: the restart test stops one operator and starts another, and no
 * operator of another test file may reconcile these sources meanwhile. Expected objects
 * are literals, or computed here from the list's own arithmetic (25 /24s that never
 * merge, in ascending order), never by exoledge's code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { KubeClient } from '@operators/kit';
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

const SOURCE_LABEL = 'edge.exoledge.io/source';

/** The i-th of the test's /24s: every other one, so that none merge. */
const prefix24 = (i: number) => `10.${(i * 2) >> 8}.${(i * 2) & 255}.0/24`;
const LIST = `${Array.from({ length: 25 }, (_, i) => prefix24(i)).join('\n')}\n`;
/** Shards of 10, in ascending order: shard k holds the /24s 10k to 10k+9. */
const shard = (k: number) =>
  Array.from({ length: Math.min(10, 25 - 10 * k) }, (_, j) => prefix24(10 * k + j));

let env: TestEnv;
let server: ListServer;
let deciderNamespace: string;
let operator: Operator;
const reports: ReconcileReport[] = [];
const cleanups: (() => Promise<void>)[] = [];

async function startOperator(): Promise<Operator> {
  const client = new KubeClient(env.admin.transport, env.admin.discovery);
  const op = createOperator({ client, deciderNamespace, onReconciled: (r) => reports.push(r) });
  op.manager.log.level = process.env.EXOLEDGE_TEST_LOG ?? 'silent';
  await op.manager.start();
  return op;
}

before(async () => {
  env = await privateTestEnv();
  await env.installThirdParty('cilium');
  await env.installCrds([blocklistSourceCrd()]);
  deciderNamespace = await env.namespace(
    { after: (fn: () => Promise<void>) => void cleanups.push(fn) },
    'exoledge-decider',
  );
  server = await startListServer();
  operator = await startOperator();
});

after(async () => {
  await operator.manager.stop();
  await server.close();
  for (const c of cleanups) await c();
  await env.close();
});

let counter = 0;
const uniqueName = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;

async function createSource(name: string, spec: Partial<BlocklistSourceSpec> = {}): Promise<void> {
  server.serve(`/${name}.txt`, { body: LIST });
  await env.admin.create<BlocklistSource>({
    ...BLOCKLIST_SOURCE,
    metadata: { name },
    spec: {
      url: server.url(`/${name}.txt`),
      kind: 'Certain',
      enforce: true,
      shardSize: 10,
      podSelector: { matchLabels: { istio: 'ingressgateway' } },
      ...spec,
    },
  });
}

function readyReason(name: string, reason: string): Promise<BlocklistSource> {
  return eventually(`${name} Ready=${reason}`, async () => {
    const s = await env.admin.get<BlocklistSource>(BLOCKLIST_SOURCE, name);
    const c = s.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.reason === reason && c.observedGeneration === s.metadata.generation ? s : undefined;
  });
}

const group = (name: string) => env.admin.get<CiliumCidrGroup>(CILIUM_CIDR_GROUP, name);
const policy = (name: string) =>
  env.admin.get<CiliumClusterwideNetworkPolicy>(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`);

/** The policy's spec as exoledge publishes it for `name`, written out. */
const expectedPolicySpec = (name: string) => ({
  description: `exoledge: ingress denied from the addresses of BlocklistSource ${name}`,
  endpointSelector: { matchLabels: { istio: 'ingressgateway' } },
  enableDefaultDeny: { ingress: false, egress: false },
  ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { [SOURCE_LABEL]: name } } }] }],
});

/** A hand edit, as `kubectl edit` makes it: an update by another field manager. */
function byHand(
  gvk: typeof CILIUM_CIDR_GROUP | typeof CILIUM_CLUSTERWIDE_NETWORK_POLICY,
  object: string,
  body: unknown,
) {
  return env.admin.patch(gvk, object, undefined, { type: 'merge', body }, { fieldManager: 'kubectl-edit' });
}

/** Waits until `get` answers what `expected` says (deep equality), and returns it. */
function restored<T>(what: string, get: () => Promise<T>, expected: unknown): Promise<T> {
  return eventually(
    what,
    async () => {
      const v = await get();
      try {
        assert.deepEqual(v, expected);
        return v;
      } catch {
        return undefined;
      }
    },
    30_000,
  );
}

describe('tamper repair on a real apiserver with Cilium CRDs', () => {
  it('restores a hand-narrowed selector and removes the rules others added, keeping their labels and Cilium status', async () => {
    const name = uniqueName('narrowed');
    await createSource(name);
    await readyReason(name, 'Published');
    await env.admin.patchStatus(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`, undefined, {
      type: 'merge',
      body: { status: { derivativePolicies: { 'node-1': { ok: true, localPolicyRevision: 7 } } } },
    });
    await byHand(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`, {
      metadata: { labels: { team: 'net' } },
      spec: {
        // Narrowed to one zone: the other gateways would stop being protected.
        endpointSelector: { matchLabels: { istio: 'ingressgateway', zone: 'b' } },
        ingressDeny: [
          ...expectedPolicySpec(name).ingressDeny,
          { fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { other: 'list' } } }] },
        ],
      },
    });
    // A rule another controller applies into our policy (its own field, no conflict).
    await env.admin.apply(
      {
        ...CILIUM_CLUSTERWIDE_NETWORK_POLICY,
        metadata: { name: `deny-${name}` },
        spec: { ingress: [{ fromEntities: ['world'] }] },
      },
      { fieldManager: 'platform-team' },
    );

    const repaired = await restored(
      'the policy repaired',
      async () => (await policy(name)).spec,
      expectedPolicySpec(name),
    );
    assert.equal((repaired as Record<string, unknown>).ingress, undefined);
    const now = await policy(name);
    assert.equal(now.metadata.labels?.team, 'net', "others' labels stay");
    assert.equal(now.metadata.labels?.[SOURCE_LABEL], name);
    assert.deepEqual(
      (now.status as { derivativePolicies?: Record<string, unknown> } | undefined)?.derivativePolicies?.[
        'node-1'
      ],
      { ok: true, localPolicyRevision: 7 },
      "Cilium's status stays",
    );
  });

  it('removes a CIDR another manager added to a shard', async () => {
    const name = uniqueName('extra-cidr');
    await createSource(name);
    await readyReason(name, 'Published');
    await byHand(CILIUM_CIDR_GROUP, `${name}-0`, { spec: { externalCIDRs: [...shard(0), '192.0.2.0/24'] } });
    await restored(`${name}-0 repaired`, async () => (await group(`${name}-0`)).spec.externalCIDRs, shard(0));
  });

  it('re-labels and restores its own shard whose source label was removed by hand, instead of a NameConflict', async () => {
    const name = uniqueName('unlabelled');
    await createSource(name);
    await readyReason(name, 'Published');
    await env.admin.patch(
      CILIUM_CIDR_GROUP,
      `${name}-1`,
      undefined,
      {
        type: 'json',
        body: [
          { op: 'remove', path: `/metadata/labels/${SOURCE_LABEL.replace('/', '~1')}` },
          { op: 'replace', path: '/spec/externalCIDRs', value: ['192.0.2.0/24'] },
        ],
      },
      { fieldManager: 'kubectl-edit' },
    );
    const back = await restored(
      `${name}-1 labelled and restored`,
      async () => {
        const g = await group(`${name}-1`);
        return { label: g.metadata.labels?.[SOURCE_LABEL], cidrs: g.spec.externalCIDRs };
      },
      { label: name, cidrs: shard(1) },
    );
    assert.deepEqual(back.cidrs, shard(1));
    const source = await readyReason(name, 'Published');
    assert.equal(
      source.status?.conditions?.find((c) => c.reason === 'NameConflict'),
      undefined,
    );
  });

  it('still never takes an object of one of its names that has neither its label nor its owner reference', async () => {
    const name = uniqueName('taken');
    await env.admin.create({
      ...CILIUM_CIDR_GROUP,
      metadata: { name: `${name}-2` },
      spec: { externalCIDRs: ['192.0.2.0/24'] },
    });
    await createSource(name);
    const source = await readyReason(name, 'NameConflict');
    assert.match(
      source.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '',
      new RegExp(`${name}-2`),
    );
    const theirs = await group(`${name}-2`);
    assert.deepEqual(theirs.spec.externalCIDRs, ['192.0.2.0/24']);
    assert.equal(theirs.metadata.labels?.[SOURCE_LABEL], undefined);
  });

  it('repairs at start-up what was edited while the operator was stopped, without waiting for the next read', async () => {
    const name = uniqueName('restart');
    await createSource(name);
    await readyReason(name, 'Published');
    const fetched = () => server.requests.filter((r) => r.path === `/${name}.txt`).length;
    const readsBefore = fetched();

    await operator.manager.stop();
    await byHand(CILIUM_CIDR_GROUP, `${name}-2`, { spec: { externalCIDRs: ['192.0.2.0/24', ...shard(2)] } });
    await byHand(CILIUM_CLUSTERWIDE_NETWORK_POLICY, `deny-${name}`, {
      spec: { endpointSelector: { matchLabels: { istio: 'ingressgateway', zone: 'b' } } },
    });

    // The clock is not moved: the next scheduled read is two hours away.
    const since = reports.length;
    operator = await startOperator();
    const repair = await eventually('a reconcile that reads', async () =>
      reports.slice(since).find((r) => r.source === name && r.read !== undefined),
    );
    assert.deepEqual([repair.read?.why, repair.read?.result], ['Repair', 'Read']);
    assert.equal(fetched(), readsBefore + 1);
    await restored(`${name}-2 repaired`, async () => (await group(`${name}-2`)).spec.externalCIDRs, shard(2));
    await restored('the policy repaired', async () => (await policy(name)).spec, expectedPolicySpec(name));
  });
});
