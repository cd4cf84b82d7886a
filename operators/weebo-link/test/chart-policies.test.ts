/**
 * The chart, rendered by helm and applied to a real apiserver: its RBAC is exactly the
 * one derived from the rules and enough for weebo-link to run as its service account,
 * and its admission policies give RFC 0002's verification matrix (12 rows, 18 scenarios
 * of link-targets; 7 cases of link-headers), played by impersonation as weebo-link, the
 * target operator, a human and the importer.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import { startWeeboLink } from '../src/app.ts';
import { renderChart } from '../src/chart.ts';
import { canonicalPolicyRules, derivePolicyRules, loadRules, type PolicyRule } from '../src/domain/index.ts';
import { exampleRules } from '../src/example-rules.ts';
import {
  AUTHENTIK_USER,
  authentikUser,
  STALWART_ACCOUNT,
  type StalwartAccount,
  TEST_CRDS,
} from '../src/testkit/crds.ts';
import { account, quiet, startStalwart, waitState } from './harness.ts';

let env: TestEnv;
let helm: string;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
  helm = (await resolveBinaries(() => {})).helm;
});

async function outcome(p: Promise<unknown>): Promise<'OK' | 'refused'> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    if (isApiError(err, ApiErrorReason.Forbidden) || isApiError(err, ApiErrorReason.Invalid))
      return 'refused';
    throw err;
  }
}

const merge = (body: unknown) => ({ type: 'merge', body }) as const;

describe('the chart on a real apiserver', () => {
  it('RBAC from the rules, and the verification matrix of link-targets and link-headers', async (t) => {
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    const rulesYaml = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    const prefix = `${system}-`;
    const { objects, tests } = await renderChart(helm, {
      namespace: system,
      values: {
        ...(parse(rulesYaml) as object),
        policies: {
          enabled: true,
          namePrefix: prefix,
          namespaces: [auth, mail],
        },
      },
    });
    for (const o of objects) await env.admin.apply(o, { fieldManager: 'helm', force: true });
    t.after(async () => {
      for (const o of objects.filter((x) => !x.metadata.namespace))
        await env.admin
          .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
          .catch(() => {});
    });
    assert.equal(tests.length, 1, 'a helm test runs check-rules');
    assert.deepEqual(
      (tests[0]?.spec as { containers: { args: string[] }[] } | undefined)?.containers[0]?.args.slice(0, 1),
      ['check-rules'],
    );

    // RBAC: the rendered ClusterRole is the derivation, plus Events; no Secret anywhere.
    const role = objects.find((o) => o.kind === 'ClusterRole');
    const rendered = canonicalPolicyRules((role?.rules ?? []) as PolicyRule[]).filter(
      (r) => r.apiGroups[0] !== 'events.k8s.io',
    );
    assert.deepEqual(rendered, derivePolicyRules(loadRules(rulesYaml).rules));
    assert.ok(!JSON.stringify(objects.filter((o) => /Role/.test(o.kind ?? ''))).includes('secrets'));

    // The actors.
    const weeboLink = env.asServiceAccount(system, 'weebo-link');
    const operator = env.asServiceAccount('stalwart', 'weebo-stalwart');
    const human = env.as('jane', ['system:masters']);
    const importer = env.as('system:serviceaccount:mail:weebo-stalwart-importer', ['system:masters']);

    // The policies are enforced once the apiserver has loaded them.
    const fake = (
      name: string,
      labels: Record<string, string> = {},
      annotations: Record<string, string> = {},
    ) => ({
      ...STALWART_ACCOUNT,
      metadata: { name, namespace: mail, labels, annotations },
      spec: { domainRef: { name: 'weebo.poc' }, name, state: 'Active', deletionPolicy: 'Orphan' },
    });
    await eventually('link-targets enforced', async () => {
      const r = await outcome(human.create(fake('probe', { 'link.weebo.io/link': 'x' }), { dryRun: true }));
      return r === 'refused' ? true : undefined;
    });
    await eventually('link-headers enforced', async () => {
      const u = authentikUser('probe', auth, {
        links: [],
        annotations: { 'link.weebo.io/stalwart': 'true' },
      });
      return (await outcome(human.create(u, { dryRun: true }))) === 'refused' ? true : undefined;
    });

    // weebo-link runs as its service account, with only the chart's RBAC.
    await startStalwart(env, t, mail);
    const link = await startWeeboLink({ client: weeboLink, namespace: system, logger: quiet });
    t.after(() => link.stop());

    const results: [string, string, 'OK' | 'refused'][] = [];
    const play = async (scenario: string, expected: 'OK' | 'refused', p: Promise<unknown>): Promise<void> => {
      results.push([scenario, expected, await outcome(p)]);
    };

    // Row 1: weebo-link creates a linked target; changes spec.state.
    await env.admin.create(authentikUser('alice', auth));
    let a = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (x) => x.status?.conditions?.[0]?.status === 'True',
    );
    results.push(['weebo-link creates a linked target', 'OK', 'OK']);
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, merge({ spec: { isActive: false } }));
    a = await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Locked');
    results.push(['weebo-link changes spec.state', 'OK', 'OK']);
    // Row 2.
    await play(
      'a human creates a target with the link label',
      'refused',
      human.create(fake('bob', { 'link.weebo.io/link': 'authentik-user-stalwart-account' })),
    );
    // Row 3: the operator's finalizer (put by the fake operator already) and status.
    assert.ok(a.metadata.finalizers?.includes('stalwart.weebo.io/account'));
    await play(
      'the operator puts its finalizer',
      'OK',
      operator.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { finalizers: ['stalwart.weebo.io/account', 'stalwart.weebo.io/other'] } }),
      ),
    );
    await play(
      'the operator writes status',
      'OK',
      operator.patchStatus(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ status: { address: 'alice@weebo.poc' } }),
      ),
    );
    // Row 4.
    await play(
      'a human puts force-orphan',
      'OK',
      human.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { annotations: { 'stalwart.weebo.io/force-orphan': 'true' } } }),
      ),
    );
    await play(
      'a human puts rotate-secret',
      'OK',
      human.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { annotations: { 'stalwart.weebo.io/rotate-secret': 'now' } } }),
      ),
    );
    // Row 5.
    await play(
      'the importer puts import-pending',
      'OK',
      importer.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { annotations: { 'stalwart.weebo.io/import-pending': 'true' } } }),
      ),
    );
    await play(
      'the importer removes import-pending',
      'OK',
      importer.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { annotations: { 'stalwart.weebo.io/import-pending': null } } }),
      ),
    );
    // Row 6: a forced SSA with the identical spec.
    const live = (await account(env, mail, 'alice')) as StalwartAccount;
    await play(
      'the importer force-applies an identical spec',
      'OK',
      importer.apply(
        { ...STALWART_ACCOUNT, metadata: { name: 'alice', namespace: mail }, spec: live.spec },
        { fieldManager: 'weebo-stalwart-importer', force: true },
      ),
    );
    // Row 7.
    await play(
      'a human changes spec.state',
      'refused',
      human.patch(STALWART_ACCOUNT, 'alice', mail, merge({ spec: { state: 'Active' } })),
    );
    // Row 8.
    await play(
      'a human removes link.weebo.io/link',
      'refused',
      human.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { labels: { 'link.weebo.io/link': null } } }),
      ),
    );
    await play(
      'a human changes the state label',
      'refused',
      human.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({ metadata: { labels: { 'link.weebo.io/state': 'Detached' } } }),
      ),
    );
    await play(
      'a human changes the source annotation',
      'refused',
      human.patch(
        STALWART_ACCOUNT,
        'alice',
        mail,
        merge({
          metadata: { annotations: { 'link.weebo.io/source': 'authentik.weebo.io/AuthentikUser/auth/eve' } },
        }),
      ),
    );
    // Row 9.
    await play('a human creates a target without header', 'OK', human.create(fake('carol')));
    // Row 10.
    await play(
      'a human puts the link label on it',
      'refused',
      human.patch(
        STALWART_ACCOUNT,
        'carol',
        mail,
        merge({ metadata: { labels: { 'link.weebo.io/link': 'authentik-user-stalwart-account' } } }),
      ),
    );
    // Row 11.
    await play(
      'a human puts only link.weebo.io/source',
      'refused',
      human.patch(
        STALWART_ACCOUNT,
        'carol',
        mail,
        merge({
          metadata: {
            annotations: { 'link.weebo.io/source': `authentik.weebo.io/AuthentikUser/${auth}/carol` },
          },
        }),
      ),
    );
    // Row 12.
    await play('a human deletes a linked target', 'OK', human.delete(STALWART_ACCOUNT, 'alice', mail));

    // link-headers, 7 cases (as Argo CD would write the source).
    const h = (name: string, annotations: Record<string, string>) =>
      authentikUser(name, auth, { links: [], annotations });
    await play('headers: no annotation', 'OK', human.create(h('u1', {})));
    await play('headers: enabled', 'OK', human.create(h('u2', { 'link.weebo.io/stalwart': 'enabled' })));
    await play(
      'headers: value "true"',
      'refused',
      human.create(h('u3', { 'link.weebo.io/stalwart': 'true' })),
    );
    await play(
      'headers: unknown header',
      'refused',
      human.create(h('u4', { 'link.weebo.io/forgejo': 'enabled' })),
    );
    await play(
      'headers: other annotations',
      'OK',
      human.create(h('u5', { 'argocd.argoproj.io/sync-wave': '4' })),
    );
    await play(
      'headers: status written by weebo-authentik',
      'OK',
      env
        .as('system:serviceaccount:auth:weebo-authentik', ['system:masters'])
        .patchStatus(AUTHENTIK_USER, 'u2', auth, merge({ status: { observedGeneration: 1 } })),
    );
    await play(
      'headers: header removed',
      'OK',
      human.patch(
        AUTHENTIK_USER,
        'u2',
        auth,
        merge({ metadata: { annotations: { 'link.weebo.io/stalwart': null } } }),
      ),
    );

    const wrong = results.filter(([, e, got]) => e !== got);
    assert.deepEqual(wrong, [], 'every scenario gives its expected result');
    assert.equal(results.length, 18 + 7);
  });
  it('the import procedure: link-targets in Audit admits the importer, link-headers still denies, Deny again after', async (t) => {
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    const rules = parse(exampleRules({ sourceNamespace: auth, targetNamespace: mail })) as object;
    const install = async (policies: Record<string, unknown>): Promise<void> => {
      const { objects } = await renderChart(helm, {
        namespace: system,
        values: { ...rules, policies: { namePrefix: `${system}-`, namespaces: [auth, mail], ...policies } },
      });
      for (const o of objects) await env.admin.apply(o, { fieldManager: 'helm', force: true });
      t.after(async () => {
        for (const o of objects.filter((x) => !x.metadata.namespace))
          await env.admin
            .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
            .catch(() => {});
      });
    };
    const human = env.as('jane', ['system:masters']);
    const importer = env.as('system:serviceaccount:mail:weebo-stalwart-importer', ['system:masters']);
    // The importer takes over a JIT account: its spec differs from weebo-link's (a quota).
    const importWrite = () =>
      importer.apply(
        {
          ...STALWART_ACCOUNT,
          metadata: { name: 'alice', namespace: mail },
          spec: { domainRef: { name: 'weebo.poc' }, name: 'alice', quota: 2048 },
        },
        { fieldManager: 'weebo-stalwart-importer', force: true, dryRun: true },
      );
    const badHeader = () =>
      human.create(
        authentikUser('probe', auth, { links: [], annotations: { 'link.weebo.io/stalwart': 'true' } }),
        {
          dryRun: true,
        },
      );

    // Production: both bindings Deny; the importer's different spec is refused.
    await install({});
    const weeboLink = env.asServiceAccount(system, 'weebo-link');
    const link = await startWeeboLink({ client: weeboLink, namespace: system, logger: quiet });
    t.after(() => link.stop());
    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    await eventually('link-targets denies the import', async () =>
      (await outcome(importWrite())) === 'refused' ? true : undefined,
    );

    // Step 1: link-targets alone in Audit. The import passes; link-headers still denies.
    await install({ linkTargets: { validationActions: ['Audit'] } });
    await eventually('link-targets audits the import', async () =>
      (await outcome(importWrite())) === 'OK' ? true : undefined,
    );
    assert.equal(await outcome(badHeader()), 'refused', 'link-headers still denies');

    // Step 3: back to Deny.
    await install({});
    await eventually('link-targets denies again', async () =>
      (await outcome(importWrite())) === 'refused' ? true : undefined,
    );
    assert.equal(await outcome(badHeader()), 'refused');
  });
});

export type { KubeClient, KubeObject };
