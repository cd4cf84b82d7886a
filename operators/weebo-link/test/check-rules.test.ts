/**
 * `weebo-link check-rules`: offline validation of a values file or the ConfigMap, discovery
 * with a kubeconfig, and the chart's rendered policies evaluated on sample requests.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { renderChart } from '../src/chart.ts';
import { main } from '../src/cli.ts';
import { admit, desiredTarget, unmodelled } from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML, exampleRules } from '../src/example-rules.ts';
import { TEST_CRDS } from '../src/testkit/crds.ts';
import { ACCOUNTS, playMatrix, USERS } from './support/policy-matrix.ts';
import { exampleRule, user } from './support.ts';

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
  });
  return { code, out, err };
}

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'check-rules-'));
});

async function file(name: string, text: string): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, text);
  return p;
}

/** The chart's objects rendered by helm for these rules (and policies values), as a file. */
async function rendered(
  name: string,
  rulesYaml: string,
  policies: Record<string, unknown> = {},
): Promise<string> {
  const helm = (await resolveBinaries(() => {})).helm;
  const { objects } = await renderChart(helm, {
    namespace: 'weebo-link',
    values: { ...(parse(rulesYaml) as Record<string, unknown>), policies },
  });
  return file(name, objects.map((o) => `---\n${stringify(o)}`).join(''));
}

describe('weebo-link check-rules', () => {
  it('a valid values file: exit 0, each rule ok and the RBAC it needs', async () => {
    const r = await run('check-rules', await file('values.yaml', EXAMPLE_RULES_YAML));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /link authentik-user-stalwart-account: ok/);
    assert.match(r.out, /stalwart\.weebo\.io\/stalwartaccounts: create, get, list, patch, watch/);
  });

  it('the ConfigMap works as well; a CEL syntax error exits 1 naming the rule, the field and the position', async () => {
    const bad = EXAMPLE_RULES_YAML.replace('source.spec.username', 'source.spec.username +');
    const cm = stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'weebo-link-rules' },
      data: { 'links.yaml': bad },
    });
    const r = await run('check-rules', await file('cm.yaml', cm));
    assert.equal(r.code, 1);
    assert.match(r.err, /link authentik-user-stalwart-account: refused\n {2}- target\.spec\.name: 1:\d+/);
  });

  it('malformed YAML exits 1 with the parser message; bad usage exits 2', async () => {
    const r = await run('check-rules', await file('broken.yaml', 'links:\n  - name: [x\n'));
    assert.equal(r.code, 1);
    assert.match(r.err, /malformed YAML/);
    assert.equal((await run('check-rules')).code, 2);
    assert.equal((await run('nope')).code, 2);
  });

  it('with a kubeconfig, an unknown kind is refused by discovery', async () => {
    const env: TestEnv = await testEnv();
    await env.installCrds(TEST_CRDS);
    const ok = await run(
      'check-rules',
      await file('ok.yaml', EXAMPLE_RULES_YAML),
      '--kubeconfig',
      env.kubeconfigPath,
    );
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /served/);
    const unknown = await run(
      'check-rules',
      await file(
        'unknown.yaml',
        EXAMPLE_RULES_YAML.replace('kind: StalwartAccount', 'kind: StalwartMailbox'),
      ),
      '--kubeconfig',
      env.kubeconfigPath,
    );
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /StalwartMailbox is not served by the cluster/);
  });

  it('evaluates the rendered policies on sample requests, and fails on a wrong expectation', async () => {
    const policies = await rendered('rendered.yaml', EXAMPLE_RULES_YAML);
    const d = desiredTarget(exampleRule(), user('alice'));
    assert.ok(d.ok);
    const target = d.value;
    const changed = { ...target, spec: { ...(target.spec as object), state: 'Locked' } };
    const withStatus = { ...target, status: { observedGeneration: 1 } };
    const samples = [
      {
        name: 'weebo-link creates a linked target',
        resource: ACCOUNTS,
        operation: 'CREATE',
        username: 'system:serviceaccount:weebo-link:weebo-link',
        object: target,
        expect: 'allowed',
      },
      {
        name: 'a human creates a linked target',
        resource: ACCOUNTS,
        operation: 'CREATE',
        username: 'jane',
        object: target,
        expect: 'denied',
      },
      {
        name: 'a human changes spec.state',
        resource: ACCOUNTS,
        operation: 'UPDATE',
        username: 'jane',
        object: changed,
        oldObject: target,
        expect: 'denied',
      },
      {
        name: 'the operator adds status',
        resource: ACCOUNTS,
        operation: 'UPDATE',
        username: 'system:serviceaccount:stalwart:weebo-stalwart',
        object: withStatus,
        oldObject: target,
        expect: 'allowed',
      },
      {
        name: 'a source with header value true',
        resource: USERS,
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob', { header: 'true' }),
        expect: 'denied',
      },
      {
        name: 'a source with header enabled',
        resource: USERS,
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob'),
        expect: 'allowed',
      },
    ];
    const r = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('samples.yaml', stringify(samples)),
    );
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /sample a human changes spec.state: denied \(link-targets: ce CR appartient/);
    const wrong = [{ ...samples[1], expect: 'allowed' }];
    const w = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('wrong.yaml', stringify(wrong)),
    );
    assert.equal(w.code, 1);
    assert.match(w.err, /expected allowed, got denied/);
  });

  it('a sample is for the resource it declares, not a plural guessed from its kind', async () => {
    // The target CRD serves StalwartAccount as "mailaccounts": the rule says so, and the
    // rendered link-targets matches mailaccounts only.
    const values = EXAMPLE_RULES_YAML.replace(
      'kind: StalwartAccount\n',
      'kind: StalwartAccount\n      resource: mailaccounts\n',
    );
    assert.notEqual(values, EXAMPLE_RULES_YAML);
    const policies = await rendered('mailaccounts.yaml', values);
    const target = desiredTarget(exampleRule(), user('alice'));
    assert.ok(target.ok);
    const create = { operation: 'CREATE', username: 'jane', object: target.value };
    const samples = [
      {
        name: 'a human creates a linked mailaccount',
        resource: { ...ACCOUNTS, resource: 'mailaccounts' },
        ...create,
        expect: 'denied',
      },
      {
        name: 'the same kind under the guessed plural',
        resource: ACCOUNTS,
        ...create,
        expect: 'not-covered',
      },
    ];
    const r = await run(
      'check-rules',
      await file('mail-v.yaml', values),
      '--policies',
      policies,
      '--samples',
      await file('mail-samples.yaml', stringify(samples)),
    );
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /sample a human creates a linked mailaccount: denied \(link-targets: /);
    assert.match(r.out, /sample the same kind under the guessed plural: not covered/);
  });

  it('a sample without its resource is refused with the form to write, exit 1; the others are still checked', async () => {
    const policies = await rendered('rendered.yaml', EXAMPLE_RULES_YAML);
    const samples = [
      {
        name: 'no resource',
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob'),
        expect: 'allowed',
      },
      {
        name: 'no version',
        resource: { group: 'authentik.weebo.io', resource: 'authentikusers' },
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob'),
        expect: 'allowed',
      },
      {
        name: 'well formed',
        resource: USERS,
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob'),
        expect: 'allowed',
      },
    ];
    const r = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('no-resource.yaml', stringify(samples)),
    );
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /sample no resource: refused\n {2}- resource: required, .*\{group, version, resource, subresource\?\}/,
    );
    assert.match(r.err, /sample no version: refused\n {2}- resource: .*missing or wrong: version/);
    assert.match(r.out, /sample well formed: allowed/);
    assert.match(r.err, /2 problem\(s\)/);
  });

  it('samples or policies that cannot be evaluated exit 1 saying why, never a silent pass', async () => {
    const policies = await rendered('rendered.yaml', EXAMPLE_RULES_YAML);
    const values = await file('v.yaml', EXAMPLE_RULES_YAML);
    const sample = [
      {
        name: 's',
        resource: USERS,
        operation: 'CREATE',
        username: 'a',
        object: user('bob'),
        expect: 'allowed',
      },
    ];
    const samples = await file('one.yaml', stringify(sample));
    const broken = await run(
      'check-rules',
      values,
      '--policies',
      policies,
      '--samples',
      await file('broken-s.yaml', '- name: [x\n'),
    );
    assert.equal(broken.code, 1);
    assert.match(broken.err, /broken-s\.yaml: malformed YAML/);
    const empty = await run(
      'check-rules',
      values,
      '--policies',
      policies,
      '--samples',
      await file('empty-s.yaml', '[]\n'),
    );
    assert.equal(empty.code, 1);
    assert.match(empty.err, /empty-s\.yaml: the samples file must be a non-empty YAML list/);
    // Policies without their bindings are not enforced by the apiserver: nothing to evaluate.
    const onlyPolicies = parseAllDocuments(await readFile(policies, 'utf8'))
      .map((d) => d.toJS() as { kind?: string })
      .filter((o) => o?.kind === 'ValidatingAdmissionPolicy');
    assert.equal(onlyPolicies.length, 2);
    const unbound = await file('unbound.yaml', onlyPolicies.map((o) => `---\n${stringify(o)}`).join(''));
    const u = await run('check-rules', values, '--policies', unbound, '--samples', samples);
    assert.equal(u.code, 1);
    assert.match(u.err, /unbound\.yaml: no ValidatingAdmissionPolicyBinding/);
    assert.doesNotMatch(u.out, /sample s:/);
  });

  it('a request no policy matches is "not covered", never "allowed"', async () => {
    // Policies bound in namespace mail only; link-targets matches stalwartaccounts, not its
    // status subresource; no policy matches Deployments.
    const policies = await rendered('in-mail.yaml', EXAMPLE_RULES_YAML, { namespaces: ['mail'] });
    const target = desiredTarget(exampleRule(), user('alice'));
    assert.ok(target.ok);
    const t = target.value;
    const elsewhere = { ...t, metadata: { ...t.metadata, namespace: 'elsewhere' } };
    const withStatus = { ...t, status: { observedGeneration: 1 } };
    const human = { username: 'jane' };
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'x', namespace: 'mail', labels: { 'link.weebo.io/link': 'x' } },
    };
    const apps = { group: 'apps', version: 'v1', resource: 'deployments' };
    const samples = [
      { name: 'in mail', resource: ACCOUNTS, operation: 'CREATE', ...human, object: t, expect: 'denied' },
      {
        name: 'outside the bound namespaces',
        resource: ACCOUNTS,
        operation: 'CREATE',
        ...human,
        object: elsewhere,
        expect: 'not-covered',
      },
      {
        name: 'status',
        resource: { ...ACCOUNTS, subresource: 'status' },
        operation: 'UPDATE',
        ...human,
        object: withStatus,
        oldObject: t,
        expect: 'not-covered',
      },
      {
        name: 'a kind no rule names',
        resource: apps,
        operation: 'CREATE',
        ...human,
        object: deployment,
        expect: 'not-covered',
      },
    ];
    const ok = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('covered.yaml', stringify(samples)),
    );
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /sample in mail: denied/);
    for (const n of ['outside the bound namespaces', 'status', 'a kind no rule names'])
      assert.match(ok.out, new RegExp(`sample ${n}: not covered \\(no policy's matchConstraints`));

    // Expecting denied or allowed of a request the policies do not see is a failure, each said apart.
    const wrong = [
      { ...samples[1], name: 'expected denied', expect: 'denied' },
      { ...samples[3], name: 'expected allowed', expect: 'allowed' },
    ];
    const w = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('not-covered.yaml', stringify(wrong)),
    );
    assert.equal(w.code, 1);
    assert.match(
      w.err,
      /sample expected denied: expected denied, got not covered \(.*CREATE stalwart\.weebo\.io\/v1alpha1\/stalwartaccounts in namespace elsewhere/,
    );
    assert.match(
      w.err,
      /sample expected allowed: expected allowed, got not covered \(.*CREATE apps\/v1\/deployments/,
    );
    assert.match(w.err, /2 problem\(s\)/);
    assert.doesNotMatch(w.out, /: allowed/);
  });

  it('a failed validation under an Audit binding is allowed, and says which policy would deny', async () => {
    const policies = await rendered('audit.yaml', EXAMPLE_RULES_YAML, {
      linkTargets: { validationActions: ['Audit'] },
    });
    const target = desiredTarget(exampleRule(), user('alice'));
    assert.ok(target.ok);
    const samples = [
      {
        name: 'audited',
        resource: ACCOUNTS,
        operation: 'CREATE',
        username: 'jane',
        object: target.value,
        expect: 'allowed',
      },
    ];
    const r = await run(
      'check-rules',
      await file('v.yaml', EXAMPLE_RULES_YAML),
      '--policies',
      policies,
      '--samples',
      await file('audit-samples.yaml', stringify(samples)),
    );
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.out,
      /sample audited: allowed \(link-targets would deny but its binding link-targets is Audit: /,
    );
  });

  it("the offline evaluator gives the apiserver's verdict, and names the same policy, on the 25 cases of the verification matrix", async (t) => {
    const env: TestEnv = await testEnv();
    await env.installCrds(TEST_CRDS);
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    const helm = (await resolveBinaries(() => {})).helm;
    // The chart as it renders now: the same objects on the apiserver and offline.
    const { objects } = await renderChart(helm, {
      namespace: system,
      values: {
        ...(parse(exampleRules({ sourceNamespace: auth, targetNamespace: mail })) as object),
        policies: { enabled: true, namePrefix: `${system}-`, namespaces: [auth, mail] },
      },
    });
    for (const o of objects) await env.admin.apply(o, { fieldManager: 'helm', force: true });
    t.after(async () => {
      for (const o of objects.filter((x) => !x.metadata.namespace))
        await env.admin
          .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
          .catch(() => {});
    });
    assert.deepEqual(unmodelled(objects), []);

    const cases = await playMatrix({ env, t, auth, mail, system });
    assert.equal(cases.length, 18 + 7);
    const apiserver = cases.map((c) => ({
      case: c.name,
      verdict: c.got === 'refused' ? 'denied' : 'allowed',
      by: c.deniedBy ?? null,
    }));
    // Every refusal of the matrix comes from a policy (not RBAC), so the comparison is on policies.
    assert.deepEqual(
      apiserver.filter((c) => c.verdict === 'denied' && !c.by),
      [],
    );
    const offline = cases.map((c) => {
      const v = admit(objects, c.request);
      return {
        case: c.name,
        verdict: v.kind === 'denied' ? 'denied' : 'allowed',
        by: v.kind === 'denied' ? v.denials.map((d) => d.policy).join(', ') : null,
      };
    });
    assert.deepEqual(offline, apiserver);
    // Both policies deny somewhere in the matrix: the comparison is not on "allowed" alone.
    assert.deepEqual([...new Set(apiserver.map((c) => c.by).filter((b) => b !== null))].sort(), [
      `${system}-link-headers`,
      `${system}-link-targets`,
    ]);
  });
});
