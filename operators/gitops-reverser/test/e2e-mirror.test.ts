/**
 * The mirror end to end, on the real apiserver and real git (file:// bare repositories):
 * the repository's tree equals the cluster's objects after sanitizing (the oracle's own
 * sanitizer, and the apiserver's list), deletes remove files, a status-only update
 * writes nothing, and objects deleted while the operator was stopped are swept at restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import { logOf, tipOf } from './support/git-fixtures.ts';
import { Harness, KINDS, naiveSanitize, repoDocs, until } from './support/harness.ts';

const h = Harness.forFile();
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

/** Where a target path puts a namespace's folders (`.` is the repository root). */
const under = (path: string, ns: string): string => (path === '.' ? `${ns}/` : `${path}/${ns}/`);

async function expectedDocs(ns: string, path: string): Promise<Map<string, unknown>> {
  const list = await h.admin.list<KubeObject>(CM, { namespace: ns });
  return new Map(
    list.items.map((o) => [
      `${under(path, ns)}configmaps/${o.metadata.name}.yaml`,
      naiveSanitize({ ...CM, ...o }),
    ]),
  );
}

async function treeEqualsCluster(bare: string, ns: string, path: string): Promise<void> {
  let last = '';
  try {
    await until(
      `the repository's ${under(path, ns)} equals the cluster's ConfigMaps`,
      async () => {
        const [want, got] = await Promise.all([expectedDocs(ns, path), repoDocs(bare, under(path, ns))]);
        try {
          assert.deepEqual(got, want);
          return true;
        } catch (err) {
          last = (err as Error).message.slice(0, 2000);
          return undefined;
        }
      },
      60_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${last}`);
  }
}

describe('mirroring ConfigMaps into a file:// repository (real git, real apiserver)', () => {
  it('create, update and delete of 100 ConfigMaps leave the tree equal to the cluster', async (t) => {
    const ns = await h.namespace(t, 'gr-mirror');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const repo = await h.bareRepo('hundred');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, path: 'live', window: '1s' });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');

    for (let i = 0; i < 100; i++) {
      await h.admin.create({
        ...CM,
        metadata: { name: `cm-${i}`, namespace: ns, labels: { i: String(i) } },
        data: { v: `${i}` },
      });
    }
    for (let i = 0; i < 30; i++) {
      await h.admin.patch(CM, `cm-${i}`, ns, { type: 'merge', body: { data: { v: `updated-${i}` } } });
    }
    for (let i = 70; i < 100; i++) await h.admin.delete(CM, `cm-${i}`, ns);
    await treeEqualsCluster(repo.path, ns, 'live');

    const commits = await logOf(repo.path);
    assert.ok(
      commits.every((c) => c.author === 'gitops-reverser <noreply@gitops-reverser.invalid>'),
      'the default committer',
    );
    assert.match(commits[0]?.message ?? '', /^gitops-reverser: \d+ changes? to /);

    // Metrics: objects mirrored, commits, window sizes, as Prometheus scrapes them.
    const text = await h.operator.manager.registry.metrics();
    const sample = (name: string, labels: string): number =>
      Number(new RegExp(`^${name}\\{${labels}\\} (\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    const key = `target="${ns}/mirror"`;
    assert.ok(sample('gitops_reverser_objects_mirrored_total', `${key},op="CREATE"`) >= 100, text);
    assert.ok(sample('gitops_reverser_objects_mirrored_total', `${key},op="DELETE"`) >= 30, text);
    assert.ok(sample('gitops_reverser_commits_total', key) >= 1, text);
    assert.match(text, /^gitops_reverser_commit_window_files_count \d+/m);
    // An Event on the GitTarget for its commits.
    await until('a Committed Event on the GitTarget', async () => {
      const events = await h.admin.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(
        { apiVersion: 'events.k8s.io/v1', kind: 'Event' },
        { namespace: ns },
      );
      return events.items.some((e) => e.reason === 'Committed' && e.regarding?.name === 'mirror')
        ? true
        : undefined;
    });
  });

  it('a status-only or server-field-only change writes no commit', async (t) => {
    const ns = await h.namespace(t, 'gr-noop');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const repo = await h.bareRepo('noop');
    await h.admin.create({ ...CM, metadata: { name: 'x', namespace: ns }, data: { a: '1' } });
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, path: '.' });
    await treeEqualsCluster(repo.path, ns, '.');
    const tip = await tipOf(repo.path);
    // A change of managed fields only (a no-op apply by another manager) bumps resourceVersion.
    await h.admin.patch(CM, 'x', ns, {
      type: 'merge',
      body: { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } } },
    });
    await h.admin.create({ ...CM, metadata: { name: 'marker', namespace: ns } });
    await until('the marker is mirrored', async () =>
      (await repoDocs(repo.path, `${ns}/configmaps/marker.yaml`)).size ? true : undefined,
    );
    const commits = await logOf(repo.path);
    const after = commits.slice(
      0,
      commits.findIndex((c) => c.sha === tip),
    );
    assert.deepEqual(
      after.flatMap((c) => c.files),
      [`${ns}/configmaps/marker.yaml`],
    );
  });

  it('objects deleted while the operator is stopped are swept at restart (prune Always), kept and reported under OnEvent', async (t) => {
    const ns = await h.namespace(t, 'gr-sweep');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const always = await h.bareRepo('always');
    const onEvent = await h.bareRepo('onevent');
    for (const name of ['keep', 'gone']) await h.admin.create({ ...CM, metadata: { name, namespace: ns } });
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: always.url, target: 'always', prune: 'Always' });
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: onEvent.url, target: 'onevent' });
    await treeEqualsCluster(always.path, ns, 'live');
    await treeEqualsCluster(onEvent.path, ns, 'live');

    await h.stopOperator();
    await h.admin.delete(CM, 'gone', ns);
    await h.startOperator();

    await treeEqualsCluster(always.path, ns, 'live');
    const target = await until('OnEvent reports the file it kept', async () => {
      const o = await h.get(KINDS.gitTarget, ns, 'onevent');
      const r = o?.status?.retention as { inferredDeletes?: number; paths?: string[] } | undefined;
      return r?.inferredDeletes === 1 ? r : undefined;
    });
    assert.deepEqual(target.paths, [`live/${ns}/configmaps/gone.yaml`]);
    assert.ok((await repoDocs(onEvent.path, `live/${ns}/configmaps/gone.yaml`)).size === 1, 'the file stays');
  });
});
