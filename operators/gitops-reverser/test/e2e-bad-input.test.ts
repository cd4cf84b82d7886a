/**
 * Bad input gets a precise condition on the right object, no partial commit, and nothing
 * deleted from the repository (real apiserver, real git).
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { seedBranch, tipOf, treeOf } from './support/git-fixtures.ts';
import { condition, Harness, KINDS, until } from './support/harness.ts';

const h = Harness.forFile();
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

const admitted = (t: { after: (fn: () => Promise<void>) => void }, prefix: string) =>
  h.admittedNamespace(t, prefix);

const messageOf = (o: Awaited<ReturnType<typeof h.get>>, type: string): string =>
  condition(o, type)?.message ?? '';

describe('bad input (real apiserver, real git)', () => {
  it('an unreachable remote: Ready=False Unreachable on the GitTarget, retried, nothing lost', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-unreach');
    await h.create(KINDS.gitProvider, ns, 'down', {
      url: 'http://127.0.0.1:9/nothing.git',
      allowedBranches: ['main'],
    });
    await h.create(KINDS.gitTarget, ns, 'mirror', {
      providerRef: { name: 'down' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'live',
    });
    await h.create(KINDS.watchRule, ns, 'cms', {
      targetRef: { name: 'mirror' },
      rules: [{ apiGroups: [''], resources: ['configmaps'] }],
    });
    const o = await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'False', 'Unreachable');
    assert.match(messageOf(o, 'Ready'), /127\.0\.0\.1:9/);
    assert.equal(condition(o, 'Stalled')?.status, 'False', 'an unreachable remote is retried, not stalled');
  });

  it('a branch outside allowedBranches is BranchNotAllowed and writes nothing to an existing repository', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-branch');
    const repo = await h.bareRepo('branch');
    const scratch = await mkdtemp(join(tmpdir(), 'gr-seed-'));
    await seedBranch(scratch, repo.path, 'main', { [`live/${ns}/configmaps/orphan.yaml`]: 'kept: true\n' });
    const tip = await tipOf(repo.path);
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['release/*'] });
    await h.create(KINDS.gitTarget, ns, 'mirror', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'live',
      prune: { mode: 'Always' },
    });
    await h.create(KINDS.watchRule, ns, 'cms', {
      targetRef: { name: 'mirror' },
      rules: [{ apiGroups: [''], resources: ['configmaps'] }],
    });
    const o = await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Validated', 'False', 'BranchNotAllowed');
    assert.match(
      messageOf(o, 'Validated'),
      /branch "main" matches none of GitProvider "repo" spec\.allowedBranches \[release\/\*\]/,
    );
    assert.equal(condition(o, 'Stalled')?.status, 'True');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await tipOf(repo.path), tip, 'nothing pushed, nothing swept');
  });

  it('two GitTargets claiming overlapping paths: the later gets GitPathAccepted=False; a sibling path is fine', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-overlap');
    const repo = await h.bareRepo('overlap');
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['main'] });
    const target = (name: string, path: string) =>
      h.create(KINDS.gitTarget, ns, name, {
        providerRef: { name: 'repo' },
        clusterProviderRef: { name: cp },
        branch: 'main',
        path,
      });
    await target('apps', 'apps');
    await h.waitCondition(KINDS.gitTarget, ns, 'apps', 'Ready', 'True');
    await new Promise((r) => setTimeout(r, 1_100)); // creationTimestamp has whole seconds
    await target('nested', 'apps/team-a');
    await target('sibling', 'apps2');
    const nested = await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'nested',
      'GitPathAccepted',
      'False',
      'PathOverlap',
    );
    assert.match(messageOf(nested, 'GitPathAccepted'), new RegExp(`overlaps GitTarget ${ns}/apps's`));
    await h.waitCondition(KINDS.gitTarget, ns, 'sibling', 'Ready', 'True');
    assert.equal(
      condition(await h.get(KINDS.gitTarget, ns, 'apps'), 'Ready')?.status,
      'True',
      'the earlier target keeps its path',
    );
    await h.admin.delete(KINDS.gitTarget, 'apps', ns);
    await h.waitCondition(KINDS.gitTarget, ns, 'nested', 'GitPathAccepted', 'True');
  });

  it('a kubeconfig Secret that does not parse, or runs a program: KubeConfigInvalid on the ClusterProvider, ClusterProviderNotReady on the GitTarget', async (t) => {
    const ns = await h.namespace(t, 'gr-kubeconfig');
    const secret = (name: string, value: string) =>
      h.admin.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace: h.operatorNamespace },
        stringData: { value },
      });
    await secret(`broken-${ns}`, 'clusters: [unclosed');
    await secret(
      `exec-${ns}`,
      'apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: "https://10.0.0.1"}}]\nusers: [{name: u, user: {exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}}}]\n',
    );
    for (const kind of ['broken', 'exec']) {
      await h.clusterProvider(`${kind}-${ns}`, {
        kubeConfig: { secretRef: { name: `${kind}-${ns}` } },
        accessFrom: { names: [ns] },
      });
    }
    const broken = await h.waitCondition(
      KINDS.clusterProvider,
      undefined,
      `broken-${ns}`,
      'Ready',
      'False',
      'KubeConfigInvalid',
    );
    assert.match(messageOf(broken, 'Ready'), /does not parse/);
    const exec = await h.waitCondition(
      KINDS.clusterProvider,
      undefined,
      `exec-${ns}`,
      'Ready',
      'False',
      'KubeConfigInvalid',
    );
    assert.match(messageOf(exec, 'Ready'), /user\.exec would run a program/);
    const repo = await h.bareRepo('kubeconfig');
    await h.mirrorConfigMaps(ns, { clusterProvider: `broken-${ns}`, url: repo.url });
    const target = await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'mirror',
      'Validated',
      'False',
      'ClusterProviderNotReady',
    );
    assert.match(messageOf(target, 'Validated'), /does not parse/);
  });

  it('a resource name that does not exist: ResourceNotFound on the WatchRule (and the GitTarget), naming it', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-resource');
    const repo = await h.bareRepo('resource');
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['main'] });
    await h.create(KINDS.gitTarget, ns, 'mirror', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'live',
    });
    await h.create(KINDS.watchRule, ns, 'typo', {
      targetRef: { name: 'mirror' },
      rules: [{ apiGroups: [''], resources: ['configmapz'] }],
    });
    const rule = await h.waitCondition(KINDS.watchRule, ns, 'typo', 'Ready', 'False', 'ResourceNotFound');
    assert.match(messageOf(rule, 'Ready'), /resource "configmapz" in apiGroups \[""\] is not served/);
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'False', 'ResourceNotFound');
    await h.admin.create({ ...CM, metadata: { name: 'x', namespace: ns } });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await treeOf(repo.path)).size, 0, 'nothing written');
  });

  it('a GitTarget whose GitProvider stores a superseded field writes nothing (GitProviderNotReady)', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-superseded');
    const repo = await h.bareRepo('superseded');
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['main'] });
    await h.create(KINDS.gitTarget, ns, 'mirror', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'live',
    });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Validated', 'True');
    // The CEL rule refuses writing `push`; an older version could have stored it.
    await storeAsAnOlderVersion(t, 'gitproviders', () =>
      h.patchSpec(KINDS.gitProvider, ns, 'repo', { push: { interval: '1m' } }),
    );
    const target = await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'mirror',
      'Validated',
      'False',
      'GitProviderNotReady',
    );
    assert.equal(
      messageOf(target, 'Validated'),
      `GitProvider ${ns}/repo still sets spec.push, which moved to GitTarget.spec.commit.window in this release. Writes through this provider are STOPPED rather than made at the default cadence and wording, because a folder committing on settings nobody chose is worse than one that is not committing. Set the values on each GitTarget that needs them, then remove them here`,
      "upstream's message, verbatim",
    );
    await h.waitCondition(KINDS.gitProvider, ns, 'repo', 'Ready', 'False', 'SupersededFieldStored');
  });

  it('a GitTarget storing a superseded field: its WatchRule and ClusterWatchRule say SupersededFieldStored, never Ready', async (t) => {
    const { ns, cp } = await admitted(t, 'gr-superseded-target');
    const repo = await h.bareRepo('superseded-target');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url });
    const cwr = `cwr-${ns}`;
    await h.create(KINDS.clusterWatchRule, undefined, cwr, {
      targetRef: { name: 'mirror', namespace: ns },
      rules: [{ apiGroups: [''], resources: ['namespaces'] }],
    });
    t.after(() => h.admin.delete(KINDS.clusterWatchRule, cwr).catch(() => undefined));
    await h.waitCondition(KINDS.watchRule, ns, 'mirror-configmaps', 'Ready', 'True');
    await h.waitCondition(KINDS.clusterWatchRule, undefined, cwr, 'Ready', 'True');
    await storeAsAnOlderVersion(t, 'gittargets', () =>
      h.patchSpec(KINDS.gitTarget, ns, 'mirror', { allowedSourceNamespaces: { names: [ns] } }),
    );
    const upstream = `GitTarget ${ns}/mirror still sets spec.allowedSourceNamespaces, which this release removed.`;
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Validated', 'False', 'SupersededFieldStored');
    const rule = await h.waitCondition(
      KINDS.watchRule,
      ns,
      'mirror-configmaps',
      'Ready',
      'False',
      'SupersededFieldStored',
    );
    for (const type of ['GitTargetReady', 'SourceNamespaceAuthorized']) {
      assert.equal(condition(rule, type)?.status, 'False', `WatchRule ${type}`);
      assert.equal(condition(rule, type)?.reason, 'SupersededFieldStored', `WatchRule ${type}`);
      assert.ok(messageOf(rule, type).startsWith(upstream), messageOf(rule, type));
    }
    const cluster = await h.waitCondition(
      KINDS.clusterWatchRule,
      undefined,
      cwr,
      'Ready',
      'False',
      'SupersededFieldStored',
    );
    assert.equal(condition(cluster, 'GitTargetReady')?.status, 'False');
    assert.ok(messageOf(cluster, 'Ready').startsWith(upstream), messageOf(cluster, 'Ready'));
  });
});

/**
 * Stores, through `write`, a field the CRD's CEL rules now refuse, as an older version
 * could have: the rules of `plural` are stripped for the write and restored after it.
 */
async function storeAsAnOlderVersion(
  t: { after: (fn: () => Promise<void>) => void },
  plural: string,
  write: () => Promise<unknown>,
): Promise<void> {
  const { gitopsReverserCrds } = await import('../src/api/gen-crds.ts');
  t.after(() => h.env.installCrds(gitopsReverserCrds()));
  const crd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;
  await h.admin.patch(crd, `${plural}.configbutler.ai`, undefined, {
    type: 'json',
    body: [
      {
        op: 'remove',
        path: '/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations',
      },
    ],
  });
  // The apiserver takes a moment to serve the relaxed schema.
  await until(`the relaxed ${plural} schema admits the write`, async () =>
    write().then(
      () => true,
      () => undefined,
    ),
  );
  await h.env.installCrds(gitopsReverserCrds());
}
