/**
 * Hot reload of the rules (RFC 0002, Architecture: "rechargement de la ConfigMap"): an
 * edit of the rules ConfigMap is picked up by the running process, with no restart. The
 * chart keeps it so: its pod template carries nothing derived from the rules
 * (chart.test.ts), so a rules edit rolls no pod.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  account,
  linkNamespaces,
  metricSample,
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

const ORIGINAL_SAFE = `target.spec.state == "Locked" && has(target.status) &&
          target.status.observedGeneration == target.metadata.generation &&
          target.status.conditions.exists(c, c.type == "Ready" && c.status == "True")`;

describe('a rules edit on a running weebo-link', () => {
  it('a new mapping value, a new source namespace and a new safe apply without a restart', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    const auth2 = await env.namespace(t, 'auth');
    await startStalwart(env, t, mail);
    const link = await startLink(env, t, system);
    const manager = link.manager;
    const runningRule = (): string => JSON.stringify(link.rules.rules.get(rule)?.rule.raw ?? null);
    const base = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    assert.ok(base.includes('domainRef: { name: weebo.poc }') && base.includes(ORIGINAL_SAFE));

    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked', (a) => a.spec?.domainRef?.name === 'weebo.poc');
    // bob asks for a box from a namespace no rule names yet: nothing happens.
    await env.admin.create(authentikUser('bob', auth2));

    // A mapping value changed: the linked target is re-applied with it.
    const mapping = base.replace('domainRef: { name: weebo.poc }', 'domainRef: { name: weebo.example }');
    await writeRules(env.admin, system, mapping);
    await waitState(env, mail, 'alice', 'Linked', (a) => a.spec?.domainRef?.name === 'weebo.example');
    assert.equal(await account(env, mail, 'bob'), undefined, `${auth2} is not a source namespace yet`);

    // The rule's namespaces changed: bob, waiting in the new namespace, gets his target.
    const namespaces = mapping.replace(`namespaces: [${auth}]`, `namespaces: [${auth}, ${auth2}]`);
    await writeRules(env.admin, system, namespaces);
    const bob = await waitState(env, mail, 'bob', 'Linked');
    assert.equal(bob.spec?.domainRef?.name, 'weebo.example');
    assert.equal(
      bob.metadata.annotations?.['link.weebo.io/source'],
      `authentik.weebo.io/AuthentikUser/${auth2}/bob`,
    );

    // safe changed to a condition no target meets: alice's departure stops at Detaching...
    const never = namespaces.replace(
      ORIGINAL_SAFE,
      'target.spec.state == "Locked" && has(target.spec.quota)',
    );
    await writeRules(env.admin, system, never);
    await waitState(env, mail, 'alice', 'Linked', () => runningRule().includes('has(target.spec.quota)'));
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await waitState(env, mail, 'alice', 'Detaching', (a) => a.spec?.state === 'Locked');
    await waitState(
      env,
      mail,
      'alice',
      'Detaching',
      (a) => a.status?.observedGeneration === a.metadata.generation,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(stateOf(await account(env, mail, 'alice')), 'Detaching', 'the new safe is not met');

    // ...and safe changed back to one it meets: Detached, with no change to source or target.
    await writeRules(env.admin, system, namespaces.replace(ORIGINAL_SAFE, 'target.spec.state == "Locked"'));
    await waitState(env, mail, 'alice', 'Detached');

    // One process all along: the same manager, now running the last rule, never refused.
    assert.equal(link.manager, manager);
    assert.ok(runningRule().includes('"safe":{"cel":"target.spec.state == \\"Locked\\""}'), runningRule());
    assert.equal(await metricSample(manager, 'weebo_link_links_rule_errors', { link: rule }), 0);
  });

  it('namespaces dropped from the rules are no longer listed or watched, and the process stays ready', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    const auth2 = await env.namespace(t, 'auth');
    const mail2 = await env.namespace(t, 'mail');
    const link = await startLink(env, t, system);
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    const watched = (ns: string): string[] =>
      link.manager.cache
        .health()
        .map((h) => h.name)
        .filter((n) => n.includes(ns));
    // The informers' names carry their namespace: the check below can see one left behind.
    assert.ok(
      watched(mail).length > 0 && watched(auth).length > 0,
      JSON.stringify(link.manager.cache.health()),
    );

    // The rule moves to other namespaces (as the chart's RBAC would, its Roles for the old ones gone).
    await writeRules(env.admin, system, exampleRules({ sourceNamespace: auth2, targetNamespace: mail2 }));
    await env.admin.create(authentikUser('bob', auth2));
    await waitState(env, mail2, 'bob', 'Linked');
    await eventually(`no informer left in ${auth} or ${mail}`, async () =>
      watched(mail).length === 0 && watched(auth).length === 0 ? true : undefined,
    );
    assert.deepEqual(link.manager.readiness(), { ready: true, detail: [] });
  });
});
