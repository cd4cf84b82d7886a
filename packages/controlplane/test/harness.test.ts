/**
 * The harness is real: the apiserver semantics our operators depend on behave here as
 * in a cluster. If one of these fails, no other test in the project can be trusted.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiErrorReason, isApiError, type KubeObject, resourcePath, watch } from '@operators/kit';
import { KUBERNETES_VERSION } from '../src/index.ts';
import { type TestEnv, testEnv } from '../src/testing.ts';

const exec = promisify(execFile);

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.harness.test.io' },
  spec: {
    group: 'harness.test.io',
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  replicas: { type: 'integer' },
                  maxReplicas: { type: 'integer' },
                  color: { type: 'string' },
                },
                'x-kubernetes-validations': [
                  {
                    rule: 'self.replicas <= self.maxReplicas',
                    message: 'replicas must not exceed maxReplicas',
                  },
                ],
              },
              status: { type: 'object', properties: { phase: { type: 'string' } } },
            },
          },
        },
      },
    ],
  },
};
const WIDGET = { apiVersion: 'harness.test.io/v1', kind: 'Widget' } as const;

describe('the control plane is a real kube-apiserver', () => {
  before(async () => {
    await env.installCrds([WIDGET_CRD as unknown as KubeObject]);
  });

  it('reports the pinned Kubernetes version, to kubectl as well', async () => {
    const v = await env.admin.transport.request<{ gitVersion: string }>({ method: 'GET', path: '/version' });
    assert.equal(v.gitVersion, KUBERNETES_VERSION);
    const { resolvePlaneBinaries } = await import('../src/binaries.ts');
    const { kubectl } = await resolvePlaneBinaries();
    const { stdout } = await exec(kubectl, ['--kubeconfig', env.kubeconfigPath, 'version', '-o', 'json']);
    const out = JSON.parse(stdout) as {
      serverVersion: { gitVersion: string };
      clientVersion: { gitVersion: string };
    };
    assert.equal(out.serverVersion.gitVersion, KUBERNETES_VERSION);
    assert.equal(out.clientVersion.gitVersion, KUBERNETES_VERSION);
  });

  it('rejects an object that breaks a CRD x-kubernetes-validations rule, with the rule message', async (t) => {
    const ns = await env.namespace(t, 'cel-rule');
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'ok', namespace: ns },
      spec: { replicas: 1, maxReplicas: 3 },
    });
    await assert.rejects(
      env.admin.create({
        ...WIDGET,
        metadata: { name: 'bad', namespace: ns },
        spec: { replicas: 5, maxReplicas: 3 },
      }),
      (err: unknown) => {
        assert.ok(isApiError(err, ApiErrorReason.Invalid), String(err));
        assert.match(err.message, /replicas must not exceed maxReplicas/);
        return true;
      },
    );
  });

  it('tracks two field managers with server-side apply and reports a conflict between them', async (t) => {
    const ns = await env.namespace(t, 'ssa');
    const base = { ...WIDGET, metadata: { name: 'shared', namespace: ns } };
    await env.admin.apply({ ...base, spec: { replicas: 1, maxReplicas: 5 } }, { fieldManager: 'alpha' });
    const both = await env.admin.apply({ ...base, spec: { color: 'blue' } }, { fieldManager: 'beta' });
    const managers = (both.metadata.managedFields ?? []).map((m) => m.manager).sort();
    assert.deepEqual(managers, ['alpha', 'beta']);
    assert.deepEqual(both.spec, { replicas: 1, maxReplicas: 5, color: 'blue' });

    await assert.rejects(
      env.admin.apply({ ...base, spec: { color: 'red' } }, { fieldManager: 'alpha' }),
      (err: unknown) => isApiError(err, ApiErrorReason.Conflict) && /color/.test(err.message),
    );
    const forced = await env.admin.apply(
      { ...base, spec: { replicas: 1, maxReplicas: 5, color: 'red' } },
      {
        fieldManager: 'alpha',
        force: true,
      },
    );
    assert.equal((forced.spec as { color: string }).color, 'red');
  });

  it('ends the initial events of a streaming watch with a bookmark', async (t) => {
    const ns = await env.namespace(t, 'bookmark');
    await env.admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace: ns } });
    const info = await env.admin.resolve({ apiVersion: 'v1', kind: 'ConfigMap' });
    const seen: string[] = [];
    for await (const ev of watch(env.admin.transport, resourcePath(info, ns), {
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
      timeoutSeconds: 10,
    })) {
      seen.push(`${ev.type}:${ev.object.metadata.name ?? ''}`);
      if (ev.type === 'BOOKMARK') {
        assert.ok(ev.object.metadata.resourceVersion, 'a bookmark carries a resourceVersion');
        assert.equal(ev.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
        break;
      }
    }
    assert.deepEqual(seen, ['ADDED:one', 'BOOKMARK:']);
  });

  it('enforces a ValidatingAdmissionPolicy: denies an impersonated service account, admits the admin', async (t) => {
    const ns = await env.namespace(t, 'vap');
    const policyName = `harness-no-red-${ns}`;
    await env.admin.apply(
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: policyName },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['configmaps'],
              },
            ],
          },
          matchConditions: [
            { name: 'not-admin', expression: "!('system:masters' in request.userInfo.groups)" },
          ],
          validations: [
            {
              expression: "!has(object.data) || !('color' in object.data) || object.data.color != 'red'",
              message: 'red is reserved',
            },
          ],
        },
      },
      { fieldManager: 'harness' },
    );
    await env.admin.apply(
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: policyName },
        spec: {
          policyName,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
        },
      },
      { fieldManager: 'harness' },
    );
    t.after(async () => {
      await env.admin.delete(
        { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' },
        policyName,
      );
      await env.admin.delete(
        { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' },
        policyName,
      );
    });
    // The service account may write ConfigMaps (RBAC allows it); only the policy stands in the way.
    // (A Role of its own: the aggregated `edit` role is empty without kube-controller-manager.)
    await env.admin.apply(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'configmap-writer', namespace: ns },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get'] }],
      },
      { fieldManager: 'harness' },
    );
    await env.admin.apply(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'configmap-writer', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-writer' },
        subjects: [{ kind: 'ServiceAccount', name: 'importer', namespace: ns }],
      },
      { fieldManager: 'harness' },
    );
    const sa = env.asServiceAccount(ns, 'importer');
    const red = (name: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns },
      data: { color: 'red' },
    });
    // Policies are loaded asynchronously by the apiserver; wait until this one bites.
    const deadline = Date.now() + 20_000;
    let denied: unknown;
    for (let i = 0; !denied; i++) {
      try {
        await sa.create(red(`probe-${i}`));
      } catch (err) {
        denied = err;
      }
      if (!denied && Date.now() > deadline) assert.fail('the policy never denied the service account');
      if (!denied) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(
      isApiError(denied, ApiErrorReason.Invalid) || isApiError(denied, ApiErrorReason.Forbidden),
      String(denied),
    );
    assert.match((denied as Error).message, /red is reserved/);
    await sa.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'blue', namespace: ns },
      data: { color: 'blue' },
    });
    await env.admin.create(red('by-admin'));
  });

  it('refuses an impersonated service account what RBAC does not grant', async (t) => {
    const ns = await env.namespace(t, 'rbac');
    await assert.rejects(
      env.asServiceAccount(ns, 'nobody').list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: ns }),
      (err: unknown) =>
        isApiError(err, ApiErrorReason.Forbidden) && /system:serviceaccount:.*:nobody/.test(err.message),
    );
    await assert.rejects(
      env.as('jane', ['developers']).list({ apiVersion: 'v1', kind: 'Secret' }, { namespace: ns }),
      (err: unknown) => isApiError(err, ApiErrorReason.Forbidden) && /"jane"/.test(err.message),
    );
  });
});

after(async () => {
  await env?.close();
});
