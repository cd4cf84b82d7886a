/**
 * The gate on the real apiserver: every call site routes through it, a tightened policy
 * revokes at the event (not at a resync), a loosened one resumes, and the WatchRule and
 * ClusterWatchRule verdicts land on the right objects. "Streams stop" is observed from
 * outside: a ConfigMap created while revoked does not reach the bare repository.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Harness, KINDS, repoDocs, until } from './support/harness.ts';

const h = Harness.forFile({ resyncMs: 600_000 });
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

/** The stream keys of a target as the mirror runs them now. */
const streamsOf = (ns: string, target = 'mirror'): string[] =>
  (h.operator.mirror.runtime(`${ns}/${target}`)?.streams ?? []).map((s) => s.key);

async function mirrored(bare: string, path: string): Promise<boolean> {
  return (await repoDocs(bare, path)).size === 1;
}

describe('the ClusterProvider gate (real apiserver, file:// repositories)', () => {
  it('tightening accessFrom stops the streams at once with NamespaceNotAuthorized; loosening resumes them', async (t) => {
    const ns = await h.namespace(t, 'gr-gate');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const repo = await h.bareRepo('gate');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');
    assert.deepEqual(streamsOf(ns), [`/configmaps@${ns}`]);

    await h.patchSpec(KINDS.clusterProvider, undefined, cp, { accessFrom: { names: ['someone-else'] } });
    // The resync is 10 minutes here: only the ClusterProvider event can make this happen.
    const refused = await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'mirror',
      'Validated',
      'False',
      'NamespaceNotAuthorized',
      10_000,
    );
    assert.equal(
      refused.status?.conditions?.find((c) => c.type === 'Validated')?.message,
      `namespace "${ns}" is not permitted to reference ClusterProvider "${cp}" (spec.accessFrom)`,
      "upstream's message, verbatim",
    );
    assert.deepEqual(streamsOf(ns), []);
    await h.admin.create({ ...CM, metadata: { name: 'while-revoked', namespace: ns } });
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(
      await mirrored(repo.path, `live/${ns}/configmaps/while-revoked.yaml`),
      false,
      'a revoked target writes nothing',
    );

    await h.patchSpec(KINDS.clusterProvider, undefined, cp, { accessFrom: { names: [ns] } });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Validated', 'True', undefined, 10_000);
    await until('the ConfigMap made while revoked is mirrored once streams resume', async () =>
      (await mirrored(repo.path, `live/${ns}/configmaps/while-revoked.yaml`)) ? true : undefined,
    );
  });

  it('a Namespace losing its label under a selector revokes within seconds', async (t) => {
    const label = `gr-e2e-${Date.now()}`;
    const ns = await h.namespace(t, 'gr-label', { [label]: 'yes' });
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { selector: { matchLabels: { [label]: 'yes' } } } });
    const repo = await h.bareRepo('label');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');
    const start = Date.now();
    await h.labelNamespace(ns, { [label]: null });
    await h.waitCondition(
      KINDS.gitTarget,
      ns,
      'mirror',
      'Validated',
      'False',
      'NamespaceNotAuthorized',
      5_000,
    );
    assert.ok(Date.now() - start < 5_000);
    assert.deepEqual(streamsOf(ns), []);
  });

  it('a WatchRule asking for another namespace without allowAnySourceNamespace stalls with SourceNamespaceNotAllowed', async (t) => {
    const ns = await h.namespace(t, 'gr-src');
    const other = await h.namespace(t, 'gr-src-other');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const repo = await h.bareRepo('src');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, sourceNamespace: other });
    const rule = await h.waitCondition(
      KINDS.watchRule,
      ns,
      'mirror-configmaps',
      'SourceNamespaceAuthorized',
      'False',
      'SourceNamespaceNotAllowed',
    );
    const message =
      rule.status?.conditions?.find((c) => c.type === 'SourceNamespaceAuthorized')?.message ?? '';
    assert.equal(
      message,
      `spec.rules[0] (resources configmaps, sourceNamespace "${other}"): ClusterProvider "${cp}" does not set spec.allowAnySourceNamespace; a WatchRule may watch only its own namespace "${ns}" until a platform admin delegates that choice`,
      "upstream's message, verbatim",
    );
    await h.waitCondition(
      KINDS.watchRule,
      ns,
      'mirror-configmaps',
      'Stalled',
      'True',
      'SourceNamespaceNotAllowed',
    );
    assert.deepEqual(streamsOf(ns), [], 'the refused rule contributes no stream');
  });

  it('an allowed "*" opens exactly one cluster-wide watch; an edit that keeps the resolved scope restarts nothing', async (t) => {
    const ns = await h.namespace(t, 'gr-wild');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] }, allowAnySourceNamespace: true });
    const repo = await h.bareRepo('wild');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, sourceNamespace: '*' });
    const allowed = await h.waitCondition(
      KINDS.watchRule,
      ns,
      'mirror-configmaps',
      'SourceNamespaceAuthorized',
      'True',
      'SourceNamespaceAllowed',
    );
    assert.equal(
      allowed.status?.conditions?.find((c) => c.type === 'SourceNamespaceAuthorized')?.message,
      'all 1 rule item(s) are authorized; watching source namespace(s) every namespace (cluster-wide)',
      "upstream's summary, naming the namespaces watched",
    );
    await until('one cluster-wide stream', async () => (streamsOf(ns).length === 1 ? true : undefined));
    assert.deepEqual(streamsOf(ns), ['/configmaps@']);
    const changesBefore = h.logs.filter(
      (l) => l.includes('"streams changed"') && l.includes(`"${ns}/mirror"`),
    ).length;

    // Same resolved scope (operations spelled out instead of the default "*"): no restart.
    await h.patchSpec(KINDS.watchRule, ns, 'mirror-configmaps', {
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          sourceNamespace: '*',
          operations: ['CREATE', 'UPDATE', 'DELETE'],
        },
      ],
    });
    await until('the edit is compiled', async () => {
      const r = await h.get(KINDS.watchRule, ns, 'mirror-configmaps');
      return r?.status?.observedGeneration === r?.metadata.generation ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 1_000));
    const changesAfter = h.logs.filter(
      (l) => l.includes('"streams changed"') && l.includes(`"${ns}/mirror"`),
    ).length;
    assert.equal(changesAfter, changesBefore, 'no stream was stopped or started');
    assert.deepEqual(streamsOf(ns), ['/configmaps@']);
  });

  it('a ClusterWatchRule on a target in a non-admitted namespace opens no stream (GitTargetNamespaceNotAuthorized)', async (t) => {
    const ns = await h.namespace(t, 'gr-cwr');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: ['not-this-one'] } });
    const repo = await h.bareRepo('cwr');
    await h.create(KINDS.gitProvider, ns, 'repo', { url: repo.url, allowedBranches: ['main'] });
    await h.create(KINDS.gitTarget, ns, 'cluster', {
      providerRef: { name: 'repo' },
      clusterProviderRef: { name: cp },
      branch: 'main',
      path: 'cluster',
    });
    const cwr = `cwr-${ns}`;
    await h.create(KINDS.clusterWatchRule, undefined, cwr, {
      targetRef: { name: 'cluster', namespace: ns },
      rules: [{ apiGroups: [''], resources: ['namespaces'] }],
    });
    const rule = await h.waitCondition(
      KINDS.clusterWatchRule,
      undefined,
      cwr,
      'Ready',
      'False',
      'GitTargetNamespaceNotAuthorized',
    );
    assert.equal(
      rule.status?.conditions?.find((c) => c.type === 'Ready')?.message,
      `ClusterWatchRule may not compile against GitTarget '${ns}/cluster': namespace "${ns}" is not permitted to reference ClusterProvider "${cp}" (spec.accessFrom)`,
      "upstream's message, verbatim",
    );
    await h.waitCondition(KINDS.gitTarget, ns, 'cluster', 'Validated', 'False', 'NamespaceNotAuthorized');
    assert.deepEqual(streamsOf(ns, 'cluster'), []);
  });

  it('the mirror started fresh opens no stream the reconcilers would refuse, and the admitted ones at once', async (t) => {
    const ns = await h.namespace(t, 'gr-fresh');
    const cp = `cp-${ns}`;
    await h.clusterProvider(cp, { accessFrom: { names: [ns] } });
    const repo = await h.bareRepo('fresh');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url, target: 'admitted' });
    await h.mirrorConfigMaps(ns, {
      clusterProvider: 'cp-that-does-not-exist',
      url: repo.url,
      target: 'refused',
      path: 'other',
    });
    await h.waitCondition(KINDS.gitTarget, ns, 'refused', 'Validated', 'False', 'ClusterProviderNotFound');
    await h.waitCondition(KINDS.gitTarget, ns, 'admitted', 'Ready', 'True');

    await h.stopOperator();
    const from = h.logs.length;
    await h.startOperator();
    await until('the admitted target streams again', async () =>
      streamsOf(ns, 'admitted').length === 1 ? true : undefined,
    );
    const opened = h.logs.slice(from).filter((l) => l.includes('"streams changed"'));
    assert.ok(opened.some((l) => l.includes(`"${ns}/admitted"`)));
    assert.ok(!opened.some((l) => l.includes(`"${ns}/refused"`)), 'the refused target never opened a stream');
    assert.deepEqual(streamsOf(ns, 'refused'), []);
  });
});
