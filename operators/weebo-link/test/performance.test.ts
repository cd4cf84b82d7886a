/**
 * What a creation burst costs on a real apiserver (issue 10, Performance): one reconcile
 * and one write per target. The watch event of weebo-link's own write is not decided
 * again (the apply's answer was that very object), and the names cache does not receive
 * the targets weebo-link writes (it holds unlabelled objects only), while an unlabelled
 * object in the way is still refused.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { KubeClient, type KubeObject, ReconcileOutcome } from '@operators/kit';
import type { WeeboLink } from '../src/app.ts';
import { targetInformer, targetNamesInformer } from '../src/controllers/link.ts';
import { loadRules } from '../src/domain/index.ts';
import { exampleRules } from '../src/example-rules.ts';
import { authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import { eventReasons, linkNamespaces, metricValue, startLink } from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

const N = 20;

/** A client for weebo-link that records every target write it sends. */
async function countingClient(t: TestContext): Promise<{ client: KubeClient; writes: string[] }> {
  const client = await KubeClient.load(env.kubeconfigPath);
  t.after(() => client.transport.close());
  const writes: string[] = [];
  const request = client.transport.request.bind(client.transport);
  client.transport.request = (<T>(o: Parameters<typeof request>[0]): Promise<T> => {
    if (o.method !== 'GET' && o.path.includes('/stalwartaccounts')) writes.push(`${o.method} ${o.path}`);
    return request<T>(o);
  }) as typeof request;
  return { client, writes };
}

async function reconciles(app: WeeboLink, rule: string): Promise<number> {
  let n = 0;
  for (const result of Object.values(ReconcileOutcome))
    n += await metricValue(app.manager, 'controller_runtime_reconcile_total', {
      controller: `link-${rule}`,
      result,
    });
  return n;
}

describe('the cost of a creation burst', () => {
  it(`${N} new targets: one reconcile and one write each, and the names cache never holds them`, async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const users = Array.from({ length: N }, (_, i) => `user-${i}`);
    for (const u of users) await env.admin.create(authentikUser(u, auth));
    const { client, writes } = await countingClient(t);
    const app = await startLink(env, t, system, { client });

    const linked = await eventually(`${N} targets Linked`, async () => {
      const { items } = await env.admin.listAll(STALWART_ACCOUNT, {
        namespace: mail,
        labelSelector: 'link.weebo.io/state=Linked',
      });
      return items.length === N ? items : undefined;
    });
    // The deterministic point: weebo-link's labelled cache holds every target at the
    // version the apiserver has (so each write's event has been handled, and any key it
    // queued is queued), and its queue has nothing left, waiting or in flight.
    const parsed = loadRules(exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: rule }));
    const ruleOf = parsed.rules[0];
    assert.ok(ruleOf);
    const cache = targetInformer(app.manager, ruleOf).store;
    const versions = new Map(linked.map((o: KubeObject) => [o.metadata.name, o.metadata.resourceVersion]));
    const runtime = app.rules.rules.get(rule);
    assert.ok(runtime);
    await eventually('the labelled cache at the written versions, the queue idle', async () => {
      const caught = users.every(
        (u) => cache.get(`${mail}/${u}`)?.metadata.resourceVersion === versions.get(u),
      );
      const q = runtime.controller.queue;
      return caught && q.len === 0 && q.inFlight === 0 ? true : undefined;
    });

    assert.equal(writes.length, N, `one write per target: ${writes.length}`);
    assert.equal(
      await reconciles(app, rule),
      N,
      'one reconcile per target: its own write is not decided again',
    );
    // Unlabelled objects only: none of the targets weebo-link wrote.
    assert.equal(targetNamesInformer(app.manager, ruleOf).store.size, 0);
  });

  it('an unlabelled object holding a target name is still refused, never adopted', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    await env.admin.create({
      ...STALWART_ACCOUNT,
      metadata: { name: 'carol', namespace: mail },
      spec: { domainRef: { name: 'other.example' }, name: 'carol', state: 'Locked' },
    });
    await startLink(env, t, system);
    await env.admin.create(authentikUser('carol', auth));
    await eventually('TargetExists on the source', async () =>
      (await eventReasons(env.admin, auth, 'carol')).includes('TargetExists') ? true : undefined,
    );
    const kept = await env.admin.find<KubeObject & { spec?: { domainRef?: { name?: string } } }>(
      STALWART_ACCOUNT,
      'carol',
      mail,
    );
    assert.equal(kept?.metadata.labels?.['link.weebo.io/link'], undefined);
    assert.equal(kept?.spec?.domainRef?.name, 'other.example');
  });
});
