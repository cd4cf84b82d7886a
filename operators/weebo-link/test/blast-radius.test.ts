/**
 * RFC 0002's blast radius (Sécurité: "un weebo-link compromis peut créer, verrouiller ou
 * déverrouiller des comptes dans mail. Il ne peut ni lire de mail, ni toucher aux comptes
 * d'envoi des apps (autres namespaces, et label link absent), ni écrire dans auth"),
 * played on a real apiserver with the chart's RBAC and policies, acting as weebo-link's
 * service account: what it may write, what RBAC refuses, what link-targets refuses; and
 * weebo-link itself, with only those namespaced permissions, linking and Ready.
 */
import assert from 'node:assert/strict';
import { before, describe, it, type TestContext } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import { startWeeboLink } from '../src/app.ts';
import { renderChart } from '../src/chart.ts';
import { derivePolicyRules, loadRules } from '../src/domain/index.ts';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import { eventReasons, quiet, startStalwart, waitState } from './harness.ts';

const RULE = 'authentik-user-stalwart-account';

describe('rules: source.namespaces ["*"] is the only cluster-wide grant', () => {
  it('["*"] reads sources in every namespace: the source read and its Events go to the ClusterRole, the target write stays in its namespace', () => {
    const { rules, errors } = loadRules(exampleRules({ sourceNamespace: '"*"', targetNamespace: 'mail' }));
    assert.deepEqual(errors, []);
    assert.deepEqual(derivePolicyRules(rules), {
      '*': [
        { apiGroups: ['authentik.weebo.io'], resources: ['authentikusers'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
      mail: [
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
        {
          apiGroups: ['stalwart.weebo.io'],
          resources: ['stalwartaccounts'],
          verbs: ['create', 'get', 'list', 'patch', 'watch'],
        },
      ],
    });
  });

  it('"*" mixed with named namespaces is refused with a message that says it stands alone', () => {
    const { errors } = loadRules(exampleRules({ sourceNamespace: '"*", auth', targetNamespace: 'mail' }));
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]?.problems.join('\n') ?? '',
      /source\.namespaces: "\*" \(every namespace\) stands alone/,
    );
  });
});

let env: TestEnv;
let helm: string;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
  helm = (await resolveBinaries(() => {})).helm;
});

/** The chart's RBAC and admission policies for `rulesYaml`, applied (no Deployment), removed with the test. */
async function installChart(t: TestContext, system: string, rulesYaml: string, policyNamespaces: string[]) {
  const { objects } = await renderChart(helm, {
    namespace: system,
    values: {
      ...(parse(rulesYaml) as object),
      policies: { enabled: true, namePrefix: `${system}-`, namespaces: policyNamespaces },
    },
  });
  const installed = objects.filter((o) => o.kind !== 'Deployment');
  for (const o of installed) await env.admin.apply(o, { fieldManager: 'helm', force: true });
  t.after(async () => {
    for (const o of installed.filter((x) => !x.metadata.namespace))
      await env.admin
        .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
        .catch(() => undefined);
  });
}

/** The refusal's message: Forbidden (RBAC or link-targets) or Invalid; anything else fails the test. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isApiError(err, ApiErrorReason.Forbidden) || isApiError(err, ApiErrorReason.Invalid))
      return (err as Error).message;
    throw err;
  }
  assert.fail('the request was allowed');
}

const account = (
  name: string,
  namespace: string,
  labels: Record<string, string> = {},
): KubeObject & { spec: Record<string, unknown> } => ({
  ...STALWART_ACCOUNT,
  metadata: { name, namespace, labels },
  spec: { domainRef: { name: 'weebo.poc' }, name, state: 'Active', deletionPolicy: 'Orphan' },
});
const LINKED = { 'link.weebo.io/link': RULE };
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;

describe("weebo-link's blast radius on a real apiserver", () => {
  it("its service account writes linked targets in the rule's target namespace and nowhere else: other namespaces, sources, Secrets and unlabelled objects are refused", async (t) => {
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const apps = await env.namespace(t, 'apps');
    const system = await env.namespace(t, 'weebo-link');
    // then: Delete, the widest a rule grants: delete on the target kind in its namespace.
    await installChart(
      t,
      system,
      exampleRules({ sourceNamespace: auth, targetNamespace: mail }).replace('then: Keep', 'then: Delete'),
      [auth, mail, apps],
    );
    const weeboLink = env.asServiceAccount(system, 'weebo-link');
    const human = env.as('jane', ['system:masters']);
    // Policies and RBAC are in force once the apiserver has loaded them.
    await eventually('link-targets enforced', async () => {
      const m = await refusal(human.create(account('probe', mail, LINKED), { dryRun: true })).catch(() => '');
      return /ValidatingAdmissionPolicy/.test(m) ? true : undefined;
    });
    await eventually('the Role in the target namespace is in force', () =>
      weeboLink.create(account('probe', mail, LINKED), { dryRun: true }).then(
        () => true,
        () => undefined,
      ),
    );

    // Allowed: a linked target in the target namespace, created then changed.
    await weeboLink.create(account('alice', mail, LINKED));
    const locked = await weeboLink.patch(STALWART_ACCOUNT, 'alice', mail, {
      type: 'merge',
      body: { spec: { state: 'Locked' } },
    });
    assert.equal((locked.spec as { state?: string }).state, 'Locked');

    // RBAC: the target kind in a namespace no rule names (an app's sending account).
    const notInApps =
      /cannot (create|list|patch) resource "stalwartaccounts" in API group "stalwart\.weebo\.io" in the namespace "apps-/;
    assert.match(await refusal(weeboLink.create(account('app-sender', apps, LINKED))), notInApps);
    assert.match(await refusal(weeboLink.list(STALWART_ACCOUNT, { namespace: apps })), notInApps);
    await env.admin.create(account('app-sender', apps));
    assert.match(
      await refusal(
        weeboLink.patch(STALWART_ACCOUNT, 'app-sender', apps, {
          type: 'merge',
          body: { spec: { state: 'Locked' } },
        }),
      ),
      notInApps,
    );
    // Nor cluster-wide.
    assert.match(
      await refusal(weeboLink.list(STALWART_ACCOUNT)),
      /cannot list resource "stalwartaccounts" in API group "stalwart\.weebo\.io" at the cluster scope/,
    );

    // RBAC: nothing written in the source namespace, neither sources nor targets.
    await env.admin.create(authentikUser('bob', auth));
    assert.match(
      await refusal(weeboLink.create(authentikUser('mallory', auth))),
      /cannot create resource "authentikusers"/,
    );
    assert.match(
      await refusal(
        weeboLink.patch(AUTHENTIK_USER, 'bob', auth, { type: 'merge', body: { spec: { isActive: false } } }),
      ),
      /cannot patch resource "authentikusers"/,
    );
    assert.match(
      await refusal(weeboLink.create(account('bob', auth, LINKED))),
      /cannot create resource "stalwartaccounts" in API group "stalwart\.weebo\.io" in the namespace "auth-/,
    );

    // RBAC: no Secret, not even in the target namespace.
    assert.match(
      await refusal(weeboLink.list(SECRET, { namespace: mail })),
      /cannot list resource "secrets"/,
    );
    assert.match(
      await refusal(weeboLink.create({ ...SECRET, metadata: { name: 's', namespace: mail }, data: {} })),
      /cannot create resource "secrets"/,
    );

    // link-targets: in the target namespace, an object without the link label.
    const byPolicy = /ValidatingAdmissionPolicy .*link-targets.* denied request: .*link\.weebo\.io\/link/;
    assert.match(await refusal(weeboLink.create(account('app-in-mail', mail))), byPolicy);
    await env.admin.create(account('noreply', mail));
    assert.match(
      await refusal(
        weeboLink.patch(STALWART_ACCOUNT, 'noreply', mail, {
          type: 'merge',
          body: { spec: { state: 'Locked' } },
        }),
      ),
      byPolicy,
    );
    // Nor label it to make it a target (an apply over an unlabelled CR holding a target's name).
    assert.match(
      await refusal(
        weeboLink.apply(account('noreply', mail, LINKED), { fieldManager: 'weebo-link/x', force: true }),
      ),
      byPolicy,
    );
    // Nor may it strip its label to write a target as an unlabelled object.
    assert.match(
      await refusal(
        weeboLink.patch(STALWART_ACCOUNT, 'alice', mail, {
          type: 'merge',
          body: { metadata: { labels: { 'link.weebo.io/link': null } } },
        }),
      ),
      byPolicy,
    );
    const noreply = await env.admin.get(STALWART_ACCOUNT, 'noreply', mail);
    assert.equal((noreply.spec as { state?: string }).state, 'Active', 'the refused writes wrote nothing');
    assert.equal(noreply.metadata.labels?.['link.weebo.io/link'], undefined);

    // Deletion: an unlabelled CR in the target namespace is refused by link-targets, one in
    // another namespace by RBAC; its own linked target is deleted, and a human still may delete one.
    assert.match(await refusal(weeboLink.delete(STALWART_ACCOUNT, 'noreply', mail)), byPolicy);
    assert.match(
      await refusal(weeboLink.delete(STALWART_ACCOUNT, 'app-sender', apps)),
      /cannot delete resource "stalwartaccounts" in API group "stalwart\.weebo\.io" in the namespace "apps-/,
    );
    assert.ok(await env.admin.find(STALWART_ACCOUNT, 'noreply', mail), 'the refused delete deleted nothing');
    await weeboLink.delete(STALWART_ACCOUNT, 'alice', mail);
    await weeboLink.create(account('bob', mail, LINKED));
    await human.delete(STALWART_ACCOUNT, 'bob', mail);
  });

  it('weebo-link running as its service account, with only the namespaced RBAC, links a source to its target and is Ready', async (t) => {
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    const rulesYaml = exampleRules({ sourceNamespace: auth, targetNamespace: mail });
    await installChart(t, system, rulesYaml, [auth, mail]);
    await env.admin.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'weebo-link-rules', namespace: system },
        data: { 'links.yaml': rulesYaml },
      },
      { fieldManager: 'helm', force: true },
    );
    await startStalwart(env, t, mail);
    const link = await startWeeboLink({
      client: env.asServiceAccount(system, 'weebo-link'),
      namespace: system,
      logger: quiet,
      resyncMs: 60_000,
    });
    t.after(() => link.stop());

    await env.admin.create(authentikUser('alice', auth));
    const alice = await waitState(env, mail, 'alice', 'Linked');
    assert.deepEqual(alice.metadata.labels, {
      'app.kubernetes.io/managed-by': 'weebo-link',
      'link.weebo.io/link': RULE,
      'link.weebo.io/state': 'Linked',
    });
    assert.equal(alice.spec?.name, 'alice');

    // Every informer weebo-link made synced with namespaced permissions (a cluster-wide
    // list would be refused and never sync), and the process is Ready.
    const health = link.manager.cache.health();
    assert.ok(
      health.length >= 4,
      `the rules, sources, targets and names informers: ${health.map((h) => h.name)}`,
    );
    assert.deepEqual(
      health
        .filter((h) => !h.synced || /forbidden/i.test(h.lastError ?? ''))
        .map((h) => `${h.name}: ${h.lastError}`),
      [],
    );
    assert.deepEqual(link.manager.readiness(), { ready: true, detail: [] });

    // Events where it reports: the rules ConfigMap in its namespace, a departure on the target.
    await eventually('RuleLoaded reported on the rules ConfigMap', async () =>
      (await eventReasons(env.admin, system, 'weebo-link-rules')).includes('RuleLoaded') ? true : undefined,
    );
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await eventually('Detaching reported on the target', async () =>
      (await eventReasons(env.admin, mail, 'alice')).includes('Detaching') ? true : undefined,
    );
  });

  it('a rule with source.namespaces ["*"] links a source from any namespace, with the ClusterRole the chart derives for it', async (t) => {
    const somewhere = await env.namespace(t, 'anywhere');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    // Its own header: other tests' sources, in the shared apiserver, do not opt in to it.
    const rulesYaml = exampleRules({ sourceNamespace: '"*"', targetNamespace: mail }).replace(
      'header: stalwart',
      'header: blast-radius',
    );
    await installChart(t, system, rulesYaml, [somewhere, mail]);
    await env.admin.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'weebo-link-rules', namespace: system },
        data: { 'links.yaml': rulesYaml },
      },
      { fieldManager: 'helm', force: true },
    );
    const link = await startWeeboLink({
      client: env.asServiceAccount(system, 'weebo-link'),
      namespace: system,
      logger: quiet,
      resyncMs: 60_000,
    });
    t.after(() => link.stop());
    await env.admin.create(authentikUser('dora', somewhere, { links: ['blast-radius'] }));
    const dora = await waitState(env, mail, 'dora', 'Linked');
    assert.equal(
      dora.metadata.annotations?.['link.weebo.io/source'],
      `authentik.weebo.io/AuthentikUser/${somewhere}/dora`,
    );
    assert.deepEqual(link.manager.readiness(), { ready: true, detail: [] });
  });
});
