/**
 * The chart as `helm template` renders it (the real helm binary, no apiserver): what a
 * rules edit changes in the release, which admission actions each binding gets, and the
 * order of installation (RFC 0002, Ce qui est installé: wave 0, then the Deployment).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import type { KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import { renderChart } from '../src/chart.ts';
import { derivePolicyRules, grantsOf, loadRules } from '../src/domain/index.ts';
import { exampleRules } from '../src/example-rules.ts';

let helm: string;
before(async () => {
  helm = (await resolveBinaries(() => {})).helm;
});

const rules = (targetNamespace = 'mail'): Record<string, unknown> =>
  parse(exampleRules({ sourceNamespace: 'auth', targetNamespace })) as Record<string, unknown>;

async function render(values: Record<string, unknown>): Promise<KubeObject[]> {
  return (await renderChart(helm, { namespace: 'weebo-link', values })).objects;
}

function find(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind}/${name} is rendered`);
  return o;
}

type PodTemplate = { metadata?: { annotations?: Record<string, string> } };
const podTemplate = (objects: readonly KubeObject[]): PodTemplate =>
  (find(objects, 'Deployment', 'weebo-link').spec as { template: PodTemplate }).template;

const bindingActions = (objects: readonly KubeObject[], name: string): unknown =>
  (find(objects, 'ValidatingAdmissionPolicyBinding', name).spec as { validationActions?: unknown })
    .validationActions;

const EVENTS = { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] };
const READ_USERS = {
  apiGroups: ['authentik.weebo.io'],
  resources: ['authentikusers'],
  verbs: ['get', 'list', 'watch'],
};
const WRITE_ACCOUNTS = {
  apiGroups: ['stalwart.weebo.io'],
  resources: ['stalwartaccounts'],
  verbs: ['create', 'get', 'list', 'patch', 'watch'],
};
const rbacOf = (objects: readonly KubeObject[]): string[] =>
  objects
    .filter((o) => /Role/.test(o.kind ?? ''))
    .map((o) => `${o.kind} ${o.metadata.namespace ?? '(cluster)'}/${o.metadata.name}`)
    .sort();

describe('the rendered chart', () => {
  it('RBAC by namespace: a Role where sources are read, a Role where targets are written, named for the release namespace', async () => {
    const objects = (await renderChart(helm, { namespace: 'ops', values: rules() })).objects;
    assert.deepEqual(rbacOf(objects), [
      'ClusterRole (cluster)/ops-weebo-link-metrics-auth',
      'ClusterRole (cluster)/ops-weebo-link-metrics-reader',
      'ClusterRoleBinding (cluster)/ops-weebo-link-metrics-auth',
      'Role auth/ops-weebo-link',
      'Role mail/ops-weebo-link',
      'Role ops/weebo-link',
      'RoleBinding auth/ops-weebo-link',
      'RoleBinding mail/ops-weebo-link',
      'RoleBinding ops/weebo-link',
    ]);
    const role = (ns: string): unknown =>
      objects.find((o) => o.kind === 'Role' && o.metadata.namespace === ns)?.rules;
    assert.deepEqual(role('auth'), [READ_USERS, EVENTS]);
    assert.deepEqual(role('mail'), [EVENTS, WRITE_ACCOUNTS]);
    const binding = objects.find((o) => o.kind === 'RoleBinding' && o.metadata.namespace === 'mail');
    assert.deepEqual(binding?.subjects, [{ kind: 'ServiceAccount', name: 'weebo-link', namespace: 'ops' }]);
    assert.deepEqual(binding?.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'ops-weebo-link',
    });
  });

  it('a rule reading every namespace (source.namespaces: ["*"]) is the only cluster-wide grant: its source read and Events', async () => {
    const yaml = exampleRules({ sourceNamespace: '"*"', targetNamespace: 'mail' });
    const objects = await render(parse(yaml) as Record<string, unknown>);
    assert.deepEqual(
      rbacOf(objects).filter((r) => !/metrics/.test(r)),
      [
        'ClusterRole (cluster)/weebo-link-weebo-link',
        'ClusterRoleBinding (cluster)/weebo-link-weebo-link',
        'Role mail/weebo-link-weebo-link',
        'Role weebo-link/weebo-link',
        'RoleBinding mail/weebo-link-weebo-link',
        'RoleBinding weebo-link/weebo-link',
      ],
    );
    assert.deepEqual(find(objects, 'ClusterRole', 'weebo-link-weebo-link').rules, [READ_USERS, EVENTS]);
    assert.deepEqual(find(objects, 'ClusterRoleBinding', 'weebo-link-weebo-link').subjects, [
      { kind: 'ServiceAccount', name: 'weebo-link', namespace: 'weebo-link' },
    ]);
    // The chart renders what check-rules prints (the derivation), "*" included.
    assert.deepEqual(grantsOf(objects, 'weebo-link-weebo-link'), derivePolicyRules(loadRules(yaml).rules));
  });

  it('a rules edit leaves the pod template unchanged: no pod restarts, the running process reloads', async () => {
    const before = await render(rules('mail'));
    const edited = rules('mailboxes');
    const after = await render(edited);
    assert.notDeepEqual(
      find(before, 'ConfigMap', 'weebo-link-rules').data,
      find(after, 'ConfigMap', 'weebo-link-rules').data,
      'the edit reaches the ConfigMap',
    );
    assert.equal(podTemplate(before).metadata?.annotations, undefined, 'no annotation on the pod template');
    assert.deepEqual(podTemplate(after), podTemplate(before));
  });

  it('each admission binding has its own validationActions, Deny by default', async () => {
    const defaults = await render(rules());
    assert.deepEqual(bindingActions(defaults, 'link-headers'), ['Deny']);
    assert.deepEqual(bindingActions(defaults, 'link-targets'), ['Deny']);

    // The import procedure (RFC 0002, Exploitation): only link-targets in Audit.
    const importing = await render({
      ...rules(),
      policies: { linkTargets: { validationActions: ['Audit'] } },
    });
    assert.deepEqual(bindingActions(importing, 'link-headers'), ['Deny']);
    assert.deepEqual(bindingActions(importing, 'link-targets'), ['Audit']);

    const rollout = await render({
      ...rules(),
      policies: {
        linkHeaders: { validationActions: ['Warn', 'Audit'] },
        linkTargets: { validationActions: ['Audit'] },
      },
    });
    assert.deepEqual(bindingActions(rollout, 'link-headers'), ['Warn', 'Audit']);
    assert.deepEqual(bindingActions(rollout, 'link-targets'), ['Audit']);
  });

  it('the former single policies.validationActions is refused with the keys that replace it', async () => {
    await assert.rejects(
      render({ ...rules(), policies: { validationActions: ['Audit'] } }),
      /policies\.validationActions was split: set policies\.linkHeaders\.validationActions and policies\.linkTargets\.validationActions/,
    );
  });

  it('install order: rules, RBAC and policies in wave 0, the Deployment in wave 1, the helm test after', async () => {
    const wave = (o: KubeObject): string | undefined =>
      o.metadata.annotations?.['argocd.argoproj.io/sync-wave'];
    const objects = await render(rules());
    const waves = Object.fromEntries(
      objects.map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, wave(o)]),
    );
    assert.deepEqual(waves, {
      'ConfigMap/weebo-link/weebo-link-rules': '0',
      'ServiceAccount/weebo-link/weebo-link': '0',
      'Role/auth/weebo-link-weebo-link': '0',
      'RoleBinding/auth/weebo-link-weebo-link': '0',
      'Role/mail/weebo-link-weebo-link': '0',
      'RoleBinding/mail/weebo-link-weebo-link': '0',
      'Role/weebo-link/weebo-link': '0',
      'RoleBinding/weebo-link/weebo-link': '0',
      'ClusterRole//weebo-link-weebo-link-metrics-auth': '0',
      'ClusterRoleBinding//weebo-link-weebo-link-metrics-auth': '0',
      'ClusterRole//weebo-link-weebo-link-metrics-reader': '0',
      'ValidatingAdmissionPolicy//link-headers': '0',
      'ValidatingAdmissionPolicyBinding//link-headers': '0',
      'ValidatingAdmissionPolicy//link-targets': '0',
      'ValidatingAdmissionPolicyBinding//link-targets': '0',
      'Deployment/weebo-link/weebo-link': '1',
    });
    // Ordinary resources stay ordinary: Helm installs them in its kind order (ConfigMap,
    // ServiceAccount and RBAC before the Deployment); only the test pod is a hook.
    assert.deepEqual(
      objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] !== undefined),
      [],
    );
    const { tests } = await renderChart(helm, { namespace: 'weebo-link', values: rules() });
    assert.deepEqual(
      tests.map((o) => [o.metadata.name, o.metadata.annotations?.['helm.sh/hook-weight']]),
      [['weebo-link-check-rules', '2']],
    );
  });
});
