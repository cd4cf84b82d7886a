/**
 * The error paths of RFC 0002's lifecycle on a real apiserver: « une erreur n'est jamais
 * vraie ». A `safe` that fails to evaluate keeps the target Detaching (never Detached,
 * never deleted) until the rule is fixed; a mapping that fails for one source writes
 * nothing for it, and only for it. Each says so with a Warning Event and a metric.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, type AuthentikUser, authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  account,
  eventsAbout,
  linkNamespaces,
  metricValue,
  startLink,
  startStalwart,
  stateOf,
  waitState,
  writeRules,
} from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

const PROBLEMS = 'weebo_link_links_problems_total';

/** The example rule's `safe`, as it is written in example-rules.ts. */
const EXAMPLE_SAFE = `target.spec.state == "Locked" && has(target.status) &&
          target.status.observedGeneration == target.metadata.generation &&
          target.status.conditions.exists(c, c.type == "Ready" && c.status == "True")`;

/** An AuthentikUser without `spec.isActive`, which the example mapping reads without has(). */
function withoutIsActive(name: string, namespace: string): AuthentikUser {
  const u = authentikUser(name, namespace);
  return { ...u, spec: { username: name, email: `${name}@weebo.poc` } };
}

async function waitWarning(namespace: string, name: string, reason: string): Promise<string> {
  return eventually(`${reason} on ${namespace}/${name}`, async () => {
    const e = (await eventsAbout(env.admin, namespace, name)).find(
      (x) => x.reason === reason && x.type === 'Warning',
    );
    return e?.note;
  });
}

describe('a safe that fails to evaluate', () => {
  it('keeps the target Detaching, never Detached, with a SafeFailed Event and metric; fixing the rule completes the departure', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const base = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    assert.ok(base.includes(EXAMPLE_SAFE));
    // spec.quota is never set on these targets: reading it without has() is an error.
    await writeRules(env.admin, system, base.replace(EXAMPLE_SAFE, 'target.spec.quota > 0'));
    await startStalwart(env, t, mail);
    // A short resync: the failing safe is evaluated again every second, not every 30 s.
    const link = await startLink(env, t, system, { resyncMs: 1_000 });

    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    const detaching = await waitState(env, mail, 'alice', 'Detaching', (a) => a.spec?.state === 'Locked');

    const note = await waitWarning(mail, 'alice', 'SafeFailed');
    assert.equal(
      note,
      `authentik-user-stalwart-account: onRemoval.safe: No such key: quota: an error is never true, ${mail}/alice stays Detaching`,
    );
    // Evaluated and failed at least three times (the resync brings it back): still Detaching.
    await eventually('safe failed three times', async () =>
      (await metricValue(link.manager, PROBLEMS, { link: rule, reason: 'SafeFailed' })) >= 3
        ? true
        : undefined,
    );
    const still = await account(env, mail, 'alice');
    assert.equal(stateOf(still), 'Detaching');
    assert.equal(still?.metadata.uid, detaching.metadata.uid);
    assert.equal(still?.metadata.deletionTimestamp, undefined);
    assert.equal(still?.spec?.state, 'Locked');

    // The rule fixed: the departure completes (then: Keep).
    await writeRules(env.admin, system, base);
    const detached = await waitState(env, mail, 'alice', 'Detached');
    assert.equal(detached.metadata.uid, detaching.metadata.uid);
    const reasons = await eventually('the Detached Event', async () => {
      const r = (await eventsAbout(env.admin, mail, 'alice')).map((e) => e.reason);
      return r.includes('Detached') ? r : undefined;
    });
    assert.deepEqual(
      reasons.filter((r) => r !== 'SafeFailed'),
      ['Detaching', 'Detached'],
    );
  });
});

describe('a mapping that fails for one source', () => {
  it('applies nothing for that source (no target created, a linked one untouched), with a MappingFailed Event and metric; the other sources link', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    const link = await startLink(env, t, system);

    await env.admin.create(authentikUser('alice', auth));
    const before = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (a) =>
        a.status?.observedGeneration === a.metadata.generation &&
        a.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    );

    // alice loses the field the mapping reads; bob never had it; carol is an ordinary opt-in.
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { spec: { isActive: null } },
    });
    await env.admin.create(withoutIsActive('bob', auth));
    await env.admin.create(authentikUser('carol', auth));

    const aliceNote = await waitWarning(auth, 'alice', 'MappingFailed');
    const bobNote = await waitWarning(auth, 'bob', 'MappingFailed');
    for (const note of [aliceNote, bobNote])
      assert.equal(
        note,
        'authentik-user-stalwart-account: target.spec.state (source.spec.isActive ? "Active" : "Locked"): No such key: isActive',
      );
    const carol = await waitState(env, mail, 'carol', 'Linked');
    assert.equal(carol.spec?.state, 'Active');

    assert.equal(await account(env, mail, 'bob'), undefined, 'no target for bob');
    const after = await account(env, mail, 'alice');
    assert.equal(after?.metadata.resourceVersion, before.metadata.resourceVersion, 'alice untouched');
    assert.deepEqual(after?.spec, before.spec);
    assert.equal(await metricValue(link.manager, PROBLEMS, { link: rule, reason: 'MappingFailed' }), 2);
  });
});
