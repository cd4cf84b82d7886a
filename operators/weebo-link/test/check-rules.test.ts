/**
 * `weebo-link check-rules`: offline validation of a values file or the ConfigMap, discovery
 * with a kubeconfig, and the chart's rendered policies evaluated on sample requests.
 */
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { parse, stringify } from 'yaml';
import { renderChart } from '../src/chart.ts';
import { main } from '../src/cli.ts';
import { desiredTarget } from '../src/domain/index.ts';
import { EXAMPLE_RULES_YAML } from '../src/example-rules.ts';
import { TEST_CRDS } from '../src/testkit/crds.ts';
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
    const helm = (await resolveBinaries(() => {})).helm;
    const { objects } = await renderChart(helm, {
      namespace: 'weebo-link',
      values: parse(EXAMPLE_RULES_YAML) as Record<string, unknown>,
    });
    const policies = await file('rendered.yaml', objects.map((o) => `---\n${stringify(o)}`).join(''));
    const d = desiredTarget(exampleRule(), user('alice'));
    assert.ok(d.ok);
    const target = d.value;
    const changed = { ...target, spec: { ...(target.spec as object), state: 'Locked' } };
    const withStatus = { ...target, status: { observedGeneration: 1 } };
    const samples = [
      {
        name: 'weebo-link creates a linked target',
        operation: 'CREATE',
        username: 'system:serviceaccount:weebo-link:weebo-link',
        object: target,
        expect: 'allowed',
      },
      {
        name: 'a human creates a linked target',
        operation: 'CREATE',
        username: 'jane',
        object: target,
        expect: 'denied',
      },
      {
        name: 'a human changes spec.state',
        operation: 'UPDATE',
        username: 'jane',
        object: changed,
        oldObject: target,
        expect: 'denied',
      },
      {
        name: 'the operator adds status',
        operation: 'UPDATE',
        username: 'system:serviceaccount:stalwart:weebo-stalwart',
        object: withStatus,
        oldObject: target,
        expect: 'allowed',
      },
      {
        name: 'a source with header value true',
        operation: 'CREATE',
        username: 'argocd',
        object: user('bob', { header: 'true' }),
        expect: 'denied',
      },
      {
        name: 'a source with header enabled',
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
});
