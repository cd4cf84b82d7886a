/**
 * Bad input: weebo-link keeps serving the valid rules, says precisely what is wrong
 * (Event, metric, log), and never deletes or rewrites a target on an error path.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  account,
  eventReasons,
  linkNamespaces,
  metricValue,
  startLink,
  startStalwart,
  waitState,
  writeRules,
} from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

describe('bad input', () => {
  it('an unknown kind or a CEL error refuses that rule alone; malformed YAML keeps the rules running', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    const good = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    const unknown = exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: 'unknown-kind' })
      .replace('links:\n', '')
      .replace('kind: StalwartAccount', 'kind: StalwartMailbox');
    const celError = exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: 'cel-error' })
      .replace('links:\n', '')
      .replace('source.spec.username', 'source.spec.username +');
    await writeRules(env.admin, system, good + unknown + celError);
    const link = await startLink(env, t, system);
    await eventually('both rules refused', async () =>
      (await metricValue(link.manager, 'weebo_link_links_rule_errors', { link: 'unknown-kind' })) === 1 &&
      (await metricValue(link.manager, 'weebo_link_links_rule_errors', { link: 'cel-error' })) === 1
        ? true
        : undefined,
    );
    assert.deepEqual([...link.rules.rules.keys()], ['authentik-user-stalwart-account']);
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    await eventually('the refusals are Events on the ConfigMap', async () => {
      const r = await eventReasons(env.admin, system, 'weebo-link-rules');
      return r.filter((x) => x === 'RuleRefused').length >= 2 ? true : undefined;
    });

    // Malformed YAML: reported, and the rule loaded before keeps running.
    await writeRules(env.admin, system, 'links:\n  - name: [oops\n');
    await eventually('document refused', async () =>
      (await metricValue(link.manager, 'weebo_link_links_rule_errors', { link: '(configmap)' })) === 1
        ? true
        : undefined,
    );
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { spec: { isActive: false } },
    });
    await waitState(env, mail, 'alice', 'Linked', (a) => a.spec?.state === 'Locked');
  });

  it('a header other than enabled, an immutable change, a target that exists: refused, reported, nothing written', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    const link = await startLink(env, t, system);
    await env.admin.create(authentikUser('alice', auth));
    const linked = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (a) => a.status?.conditions?.[0]?.status === 'True',
    );

    // A header value other than enabled: not a departure.
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { metadata: { annotations: { 'link.weebo.io/stalwart': 'true' } } },
    });
    await eventually('InvalidHeader reported', async () =>
      (await metricValue(link.manager, 'weebo_link_links_problems_total', {
        link: rule,
        reason: 'InvalidHeader',
      })) > 0
        ? true
        : undefined,
    );
    assert.equal(
      (await account(env, mail, 'alice'))?.metadata.resourceVersion,
      linked.metadata.resourceVersion,
      'not rewritten',
    );

    // An immutable field changed: Conflict on the source, nothing applied.
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: {
        metadata: { annotations: { 'link.weebo.io/stalwart': 'enabled' } },
        spec: { username: 'alice2', isActive: false },
      },
    });
    await eventually('Conflict on the source', async () =>
      (await eventReasons(env.admin, auth, 'alice')).includes('Conflict') ? true : undefined,
    );
    const after = await account(env, mail, 'alice');
    assert.equal(after?.spec?.name, 'alice');
    assert.equal(after?.spec?.state, 'Active', 'not even the other fields are applied');

    // A target of that name without the link label: never adopted.
    await env.admin.create({
      ...STALWART_ACCOUNT,
      metadata: { name: 'bob', namespace: mail },
      spec: { domainRef: { name: 'weebo.poc' }, name: 'bob', state: 'Active' },
    });
    await env.admin.create(authentikUser('bob', auth));
    await eventually('TargetExists on the source', async () =>
      (await eventReasons(env.admin, auth, 'bob')).includes('TargetExists') ? true : undefined,
    );
    assert.equal((await account(env, mail, 'bob'))?.metadata.labels?.['link.weebo.io/link'], undefined);
    // The name freed (the unlabelled target deleted by its author), the waiting source gets its target.
    await env.admin.delete(STALWART_ACCOUNT, 'bob', mail);
    await waitState(env, mail, 'bob', 'Linked');
  });

  it('a removed rule triggers nothing on its targets, which count as orphans where a rule still watches', async (t) => {
    const { auth, mail, system, rule } = await linkNamespaces(env, t);
    // A second rule on the same target kind and namespace: weebo-link keeps watching there
    // (and the chart keeps its Role) once the first rule is removed.
    const kept = exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: 'kept' })
      .replace('header: stalwart', 'header: other')
      .replace(/^links:\n/, '');
    await writeRules(
      env.admin,
      system,
      `${exampleRules({ sourceNamespace: auth, targetNamespace: mail, name: rule })}${kept}`,
    );
    await startStalwart(env, t, mail);
    const link = await startLink(env, t, system);
    await env.admin.create(authentikUser('alice', auth));
    const linked = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (a) => a.status?.conditions?.[0]?.status === 'True',
    );
    await writeRules(env.admin, system, `links:\n${kept}`);
    await eventually('the rule stopped', async () =>
      link.rules.rules.size === 1 && !link.rules.rules.has(rule) ? true : undefined,
    );
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await eventually('an orphan counted', async () =>
      (await metricValue(link.manager, 'weebo_link_links_orphan_targets')) >= 1 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 500));
    const a = await account(env, mail, 'alice');
    assert.equal(a?.metadata.labels?.['link.weebo.io/state'], 'Linked', 'no departure');
    assert.equal(a?.spec?.state, 'Active');
    assert.equal(
      a?.metadata.resourceVersion === linked.metadata.resourceVersion ||
        a?.metadata.generation === linked.metadata.generation,
      true,
    );
  });
});
