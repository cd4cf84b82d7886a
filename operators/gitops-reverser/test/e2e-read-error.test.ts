/**
 * A read the gate cannot make is not a decision: with the operator's identity denied
 * `get namespaces` (a real 403 from the apiserver's RBAC) the GitTarget's streams keep
 * running and its conditions keep their last verdict; restoring the right changes nothing
 * visible either. The operator runs as a user bound to a ClusterRole written here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { condition, Harness, KINDS, repoDocs, until } from './support/harness.ts';

const h = Harness.forFile();
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const CLUSTER_ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' } as const;
const BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' } as const;
const KINDS_PLURAL = [
  'clusterproviders',
  'gitproviders',
  'gittargets',
  'watchrules',
  'clusterwatchrules',
  'commitrequests',
];

function rules(namespaceVerbs: string[]) {
  return [
    { apiGroups: ['configbutler.ai'], resources: KINDS_PLURAL, verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['configbutler.ai'], resources: KINDS_PLURAL.map((k) => `${k}/status`), verbs: ['patch'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: namespaceVerbs },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ];
}

describe('a failed gate read (a real 403)', () => {
  it('keeps the streams running and the verdict unchanged; nothing is torn down', async (t) => {
    const user = `gr-limited-${Date.now()}`;
    await h.admin.create({
      ...CLUSTER_ROLE,
      metadata: { name: user },
      rules: rules(['get', 'list', 'watch']),
    });
    await h.admin.create({
      ...BINDING,
      metadata: { name: user },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    t.after(async () => {
      await h.admin.delete(BINDING, user).catch(() => undefined);
      await h.admin.delete(CLUSTER_ROLE, user).catch(() => undefined);
    });
    await h.stopOperator();
    await h.startOperator({ client: h.env.as(user) });

    const label = `gr-read-${Date.now()}`;
    const ns = await h.namespace(t, 'gr-read', { [label]: 'yes' });
    const cp = `cp-${ns}`;
    // A selector: the gate must GET the Namespace to decide.
    await h.clusterProvider(cp, { accessFrom: { selector: { matchLabels: { [label]: 'yes' } } } });
    const repo = await h.bareRepo('read');
    await h.mirrorConfigMaps(ns, { clusterProvider: cp, url: repo.url });
    await h.waitCondition(KINDS.gitTarget, ns, 'mirror', 'Ready', 'True');

    await h.admin.patch(CLUSTER_ROLE, user, undefined, {
      type: 'merge',
      body: { rules: rules(['list', 'watch']) },
    });
    await until('the apiserver refuses the operator a Namespace GET', async () => {
      try {
        await h.env.as(user).get({ apiVersion: 'v1', kind: 'Namespace' }, ns);
        return undefined;
      } catch (err) {
        return /403|[Ff]orbidden/.test(String(err)) ? true : undefined;
      }
    });
    const from = h.logs.length;
    // An event that makes the GitTarget reconcile (and read the Namespace) at once.
    await h.labelNamespace(ns, { touched: 'yes' });
    await until('the gate read failed', async () =>
      h.logs.slice(from).some((l) => l.includes('the gate could not read; streams keep running'))
        ? true
        : undefined,
    );
    await h.admin.create({ ...CM, metadata: { name: 'during-403', namespace: ns } });
    await until('a ConfigMap made during the 403 is still mirrored', async () =>
      (await repoDocs(repo.path, `live/${ns}/configmaps/during-403.yaml`)).size ? true : undefined,
    );
    const target = await h.get(KINDS.gitTarget, ns, 'mirror');
    assert.equal(condition(target, 'Validated')?.status, 'True', 'no denial was published for a read error');
    assert.deepEqual(
      h.operator.mirror.runtime(`${ns}/mirror`)?.streams.map((s) => s.key),
      [`/configmaps@${ns}`],
    );
    await h.stopOperator();
    await h.startOperator();
  });
});
