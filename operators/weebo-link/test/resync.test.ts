/**
 * Catching up (RFC 0002, Exploitation: departures missed are found): on a control plane
 * of its own, since it restarts the apiserver and compacts etcd.
 *
 * Two mechanisms, each shown alone:
 * - a departure made while weebo-link's watches were cut reaches it through the
 *   reflector's relist when they come back (the kit hands the deletions a relist finds
 *   to the handlers), with no periodic resync in the test's time;
 * - the periodic resync (`resyncMs`, the chart's `resyncSeconds`) reconciles every
 *   target from the cache again, which is what brings back a target whose last
 *   reconcile failed for good (an apply refused) once the cause is gone: no object
 *   changes then, so no watch event would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, resolveBinaries } from '@operators/controlplane';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { KubeClient, KubeObject } from '@operators/kit';
import { sickProxy } from '../../../packages/kit/test/support/proxy.ts';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, type StalwartAccount, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  account,
  applyChartRbac,
  eventsAbout,
  linkNamespaces,
  metricValue,
  startLink,
  startStalwart,
  stateOf,
  waitState,
} from './harness.ts';

let env: TestEnv & { plane: ControlPlane };
let helm: string;
before(async () => {
  env = await privateTestEnv({ log: () => {} });
  await env.installCrds(TEST_CRDS);
  helm = (await resolveBinaries(() => {})).helm;
});
after(async () => {
  await env?.close();
});

/** Whether `client` may `verb` the target kind in `namespace`, as the apiserver answers now. */
async function may(client: KubeClient, verb: string, namespace: string): Promise<boolean> {
  const review = await client.create<KubeObject & { status?: { allowed?: boolean } }>({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: {},
    spec: {
      resourceAttributes: { namespace, verb, group: 'stalwart.weebo.io', resource: 'stalwartaccounts' },
    },
  });
  return review.status?.allowed === true;
}

/**
 * The departure has reached the target: `onRemoval.patch` applied, Detaching, or already
 * Detached (the fake Stalwart confirms Locked at once, so `safe` may hold right after).
 */
function departed(mail: string, name: string): Promise<StalwartAccount> {
  return eventually(`${mail}/${name} departed`, async () => {
    const a = await account(env, mail, name);
    const state = stateOf(a);
    return a?.spec?.state === 'Locked' && (state === 'Detaching' || state === 'Detached') ? a : undefined;
  });
}

describe('departures weebo-link did not see happen', () => {
  it('a source deleted while its watches were cut is found when they reconnect: the reflector relists and the target goes Detaching', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    const proxy = await sickProxy(env.kubeconfigPath, env.admin.transport.server);
    t.after(() => proxy.close());
    // An hour: no periodic resync within the test, only the watches and their relists.
    const link = await startLink(env, t, system, { client: await proxy.client(), resyncMs: 3_600_000 });
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    const sources = link.manager.cache.informer(AUTHENTIK_USER, { namespace: auth });
    assert.equal(sources.health().relists, 1, 'the initial state only');

    // Cut: no byte reaches weebo-link; the source is deleted meanwhile (by a client that
    // does not go through the proxy); its watch event waits in the proxy...
    proxy.freeze();
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await eventually('alice gone', async () =>
      (await env.admin.find(AUTHENTIK_USER, 'alice', auth)) === undefined ? true : undefined,
    );
    // ...and is lost: every resourceVersion up to the deletion is compacted away, and the
    // apiserver restart closes every connection, dropping what the proxy held.
    await env.compactEtcd();
    await env.plane.restartApiserver();
    assert.ok(proxy.dropped > 0, 'the held watch events were dropped');
    assert.equal(stateOf(await account(env, mail, 'alice')), 'Linked', 'nothing acted during the cut');
    proxy.unfreeze();

    // The watch cannot resume from its resourceVersion (410): the source informer
    // relists, the deletion is in the difference, the target goes Detaching.
    const target = await departed(mail, 'alice');
    await eventually('the Detaching Event', async () =>
      (await eventsAbout(env.admin, mail, 'alice'))[0]?.reason === 'Detaching' ? true : undefined,
    );
    assert.equal(
      target.metadata.annotations?.['link.weebo.io/source'],
      `authentik.weebo.io/AuthentikUser/${auth}/alice`,
    );
    assert.equal(sources.health().relists, 2, 'one relist after the cut');
  });

  it('the periodic resync retries a departure whose apply was refused, once weebo-link may write again', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const rulesYaml = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    const rbac = await applyChartRbac(env, t, helm, system, rulesYaml);
    await startStalwart(env, t, mail);
    const client = env.asServiceAccount(system, 'weebo-link');
    const link = await startLink(env, t, system, { client, resyncMs: 1_000 });
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');

    // The chart's RBAC without `patch` on the target kind (say, a hand edit gone wrong):
    // the Detach's apply is Forbidden, reported, and not retried (a terminal error).
    type PolicyRule = { resources?: string[]; verbs?: string[] };
    const withoutPatch = (o: KubeObject): KubeObject =>
      o.rules === undefined
        ? o
        : {
            ...o,
            rules: (o.rules as PolicyRule[]).map((r) =>
              r.resources?.includes('stalwartaccounts')
                ? { ...r, verbs: (r.verbs ?? []).filter((v) => v !== 'patch') }
                : r,
            ),
          };
    for (const o of rbac) await env.admin.apply(withoutPatch(o), { fieldManager: 'helm', force: true });
    await eventually('patch revoked', async () => ((await may(client, 'patch', mail)) ? undefined : true));
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await eventually('ApplyRefused on alice', async () =>
      (await eventsAbout(env.admin, mail, 'alice')).some(
        (e) => e.type === 'Warning' && e.reason === 'ApplyRefused',
      )
        ? true
        : undefined,
    );
    assert.ok(
      (await metricValue(link.manager, 'weebo_link_links_problems_total', {
        link: rule,
        reason: 'ApplyRefused',
      })) >= 1,
    );
    assert.equal(stateOf(await account(env, mail, 'alice')), 'Linked');

    // The RBAC restored changes no watched object: the resync brings the target back.
    for (const o of rbac) await env.admin.apply(o, { fieldManager: 'helm', force: true });
    await eventually('patch granted', async () => ((await may(client, 'patch', mail)) ? true : undefined));
    await departed(mail, 'alice');
    const reasons = await eventually('the Detaching Event', async () => {
      const r = (await eventsAbout(env.admin, mail, 'alice')).map((e) => e.reason);
      return r.includes('Detaching') ? r : undefined;
    });
    assert.deepEqual(
      reasons.filter((r) => r !== 'Detached'),
      ['ApplyRefused', 'Detaching'],
    );
  });
});
