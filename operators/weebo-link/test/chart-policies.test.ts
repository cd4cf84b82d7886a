/**
 * The chart, rendered by helm and applied to a real apiserver: its RBAC is exactly the
 * one derived from the rules and enough for weebo-link to run as its service account,
 * and its admission policies give RFC 0002's verification matrix (12 rows, 18 scenarios
 * of link-targets; 7 cases of link-headers; test/support/policy-matrix.ts), played by
 * impersonation as weebo-link, the target operator, a human and the importer.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import { startWeeboLink } from '../src/app.ts';
import { renderChart } from '../src/chart.ts';
import { derivePolicyRules, grantsOf, loadRules } from '../src/domain/index.ts';
import { exampleRules } from '../src/example-rules.ts';
import { authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import { quiet, waitState } from './harness.ts';
import { playMatrix } from './support/policy-matrix.ts';

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

    // RBAC: the rendered Roles (one per namespace a rule names, no ClusterRole for these
    // rules) are the derivation; no Secret anywhere.
    assert.deepEqual(
      grantsOf(objects, `${system}-weebo-link`),
      derivePolicyRules(loadRules(rulesYaml).rules),
    );
    assert.deepEqual(Object.keys(grantsOf(objects, `${system}-weebo-link`)).sort(), [auth, mail].sort());
    assert.ok(!JSON.stringify(objects.filter((o) => /Role/.test(o.kind ?? ''))).includes('secrets'));

    // The matrix (test/support/policy-matrix.ts), played as weebo-link, the target operator,
    // a human and the importer.
    const results = (await playMatrix({ env, t, auth, mail, system })).map(
      (c) => [c.name, c.expected, c.got] as const,
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
