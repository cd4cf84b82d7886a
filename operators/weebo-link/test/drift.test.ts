/**
 * Drift is judged on the fields weebo-link owns (its field manager's managedFields entry
 * on the target), not only on the fields the mapping states: a field dropped from a rule's
 * mapping is released from every linked target by the next apply, with no change to the
 * source. And a target whose mapping did not change is not written at all, resyncs
 * included.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { KubeClient, type Manager, ReconcileOutcome } from '@operators/kit';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import { account, linkNamespaces, metricValue, startLink, waitState, writeRules } from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

const DELETION_POLICY = '        deletionPolicy: Orphan\n';

/** A client for weebo-link that records the path of every write it sends (Events apart). */
async function countingClient(t: TestContext): Promise<{ client: KubeClient; writes: string[] }> {
  const client = await KubeClient.load(env.kubeconfigPath);
  t.after(() => client.transport.close());
  const writes: string[] = [];
  const request = client.transport.request.bind(client.transport);
  client.transport.request = (<T>(o: Parameters<typeof request>[0]): Promise<T> => {
    if (o.method !== 'GET' && !o.path.startsWith('/apis/events.k8s.io/'))
      writes.push(`${o.method} ${o.path}`);
    return request<T>(o);
  }) as typeof request;
  return { client, writes };
}

/** Reconciles done by a rule's controller so far (every result). */
async function reconciles(manager: Manager, rule: string): Promise<number> {
  let n = 0;
  for (const result of Object.values(ReconcileOutcome))
    n += await metricValue(manager, 'controller_runtime_reconcile_total', {
      controller: `link-${rule}`,
      result,
    });
  return n;
}

/** Waits until a rule's controller has reconciled `count` more keys: a resync has passed over its targets. */
async function afterReconciles(manager: Manager, rule: string, count: number): Promise<void> {
  const from = await reconciles(manager, rule);
  await eventually(
    `${count} more reconciles of link-${rule}`,
    async () => ((await reconciles(manager, rule)) >= from + count ? true : undefined),
    20_000,
  );
}

describe('drift by the fields weebo-link owns', () => {
  it('a field dropped from a mapping leaves its targets at the rule change; an unchanged mapping writes nothing', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const auth2 = await env.namespace(t, 'auth');
    const mail2 = await env.namespace(t, 'mail');
    const other = 'unchanged-mapping';
    const first = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    const second = exampleRules({ sourceNamespace: auth2, targetNamespace: mail2, name: other }).replace(
      'links:\n',
      '',
    );
    assert.ok(first.includes(DELETION_POLICY) && second.includes(DELETION_POLICY));
    await writeRules(env.admin, system, first + second);
    const { client, writes } = await countingClient(t);
    const link = await startLink(env, t, system, { client, resyncMs: 1_000 });

    const source = await env.admin.create(authentikUser('alice', auth));
    await env.admin.create(authentikUser('bob', auth2));
    await waitState(env, mail, 'alice', 'Linked', (a) => a.spec?.deletionPolicy === 'Orphan');
    await waitState(env, mail2, 'bob', 'Linked', (a) => a.spec?.deletionPolicy === 'Orphan');

    // The first rule stops mapping deletionPolicy; the second is left as it is.
    const edit = writes.length;
    await writeRules(env.admin, system, first.replace(DELETION_POLICY, '') + second);
    const released = await eventually(
      'deletionPolicy released from alice',
      async () => {
        const a = await account(env, mail, 'alice');
        return a && a.spec?.deletionPolicy === undefined ? a : undefined;
      },
      20_000,
    );
    // The mapping's other fields, written literally: only the dropped one left.
    assert.deepEqual(released.spec, { domainRef: { name: 'weebo.poc' }, name: 'alice', state: 'Active' });
    assert.equal(released.metadata.labels?.['link.weebo.io/state'], 'Linked');

    // Resyncs pass over both rules' targets (1 s period): released is in sync, bob's
    // mapping never changed; neither is written again, and no source ever is.
    const releasedAt = writes.length;
    await afterReconciles(link.manager, rule, 2);
    await afterReconciles(link.manager, other, 2);
    const bobPath = `/namespaces/${mail2}/stalwartaccounts/bob`;
    const alicePath = `/namespaces/${mail}/stalwartaccounts/alice`;
    assert.deepEqual(
      writes.slice(edit).filter((w) => w.includes(bobPath)),
      [],
      'a target whose mapping did not change is not written',
    );
    assert.deepEqual(
      writes.slice(releasedAt).filter((w) => w.includes(alicePath)),
      [],
      'a released field is not re-applied at every resync',
    );
    assert.deepEqual(
      writes.filter((w) => w.includes('authentikusers')),
      [],
      'sources are never written',
    );
    const after = await env.admin.find(AUTHENTIK_USER, 'alice', auth);
    assert.equal(after?.metadata.resourceVersion, source.metadata.resourceVersion);
  });

  it('a field dropped from a mapping while weebo-link was down is released at its start and stays released', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const rules = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    const first = await startLink(env, t, system);
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked', (a) => a.spec?.deletionPolicy === 'Orphan');
    await first.stop();

    await writeRules(env.admin, system, rules.replace(DELETION_POLICY, ''));
    const { client, writes } = await countingClient(t);
    const second = await startLink(env, t, system, { client, resyncMs: 1_000 });
    const released = await eventually(
      'deletionPolicy released from alice',
      async () => {
        const a = await account(env, mail, 'alice');
        return a && a.spec?.deletionPolicy === undefined ? a : undefined;
      },
      20_000,
    );
    assert.deepEqual(released.spec, { domainRef: { name: 'weebo.poc' }, name: 'alice', state: 'Active' });
    const releasedAt = writes.length;
    await afterReconciles(second.manager, rule, 2);
    assert.deepEqual(
      writes.slice(releasedAt).filter((w) => w.includes('/stalwartaccounts/')),
      [],
      'in sync once released: resyncs write nothing',
    );
  });
});
