/**
 * RoleStatus arithmetic: merged maps written out by hand; readiness against a naive walk
 * of the nested map written here; equality that ignores key order, checked by
 * rebuilding a status with its keys in reverse.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { PluginApplyStatus, PluginObject, RoleStatus } from '../src/api/role-status.ts';
import {
  clearUndefined,
  markUndefined,
  mergePluginResults,
  type RolePermissions,
  roleMessage,
  roleReady,
  sameRoleStatus,
  undefinedEntries,
} from '../src/domain/role-status.ts';

const applied: PluginObject = {
  status: 'Applied',
  objects: [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      name: 'shturval:team-a.alice.viewer',
    },
  ],
};

describe('mergePluginResults', () => {
  it('puts each result in its place and leaves the rest of the previous map as it was', () => {
    const previous: RolePermissions = {
      viewer: { 'capi/a': { rbac: applied }, platform: { argocd: { status: 'Applied' } } },
    };
    const merged = mergePluginResults(previous, [
      {
        permission: 'viewer',
        cluster: 'capi/b',
        plugin: 'rbac',
        object: { status: 'Failed', message: 'down' },
      },
      { permission: 'editor', cluster: 'capi/a', plugin: 'rbac', object: { status: 'Pending' } },
      { permission: 'viewer', cluster: 'platform', plugin: 'argocd', object: { status: 'Skipped' } },
    ]);
    assert.deepEqual(merged, {
      viewer: {
        'capi/a': { rbac: applied },
        'capi/b': { rbac: { status: 'Failed', message: 'down' } },
        platform: { argocd: { status: 'Skipped' } },
      },
      editor: { 'capi/a': { rbac: { status: 'Pending' } } },
    });
    assert.deepEqual(previous, {
      viewer: { 'capi/a': { rbac: applied }, platform: { argocd: { status: 'Applied' } } },
    });
  });
});

describe('markUndefined, undefinedEntries and clearUndefined', () => {
  it('resets every entry to Undefined keeping its objects, so what no plugin confirms again can be removed', () => {
    const previous: RolePermissions = {
      viewer: { 'capi/a': { rbac: applied, kubeflow: { status: 'Failed' } } },
    };
    const reset = markUndefined(previous);
    assert.deepEqual(reset, {
      viewer: { 'capi/a': { rbac: { ...applied, status: 'Undefined' }, kubeflow: { status: 'Undefined' } } },
    });
    const after = mergePluginResults(reset, [
      { permission: 'viewer', cluster: 'capi/a', plugin: 'rbac', object: applied },
    ]);
    assert.deepEqual(undefinedEntries(after), [
      { permission: 'viewer', cluster: 'capi/a', plugin: 'kubeflow', object: { status: 'Undefined' } },
    ]);
    assert.deepEqual(clearUndefined({ ready: true, permissions: after }), {
      ready: true,
      permissions: { viewer: { 'capi/a': { rbac: applied } } },
    });
  });

  it('prunes clusters and permissions left empty, and leaves a status without a map alone', () => {
    assert.deepEqual(
      clearUndefined({
        permissions: {
          gone: { 'capi/a': { rbac: { status: 'Undefined' } } },
          kept: { 'capi/a': { rbac: { status: 'Undefined' } }, 'capi/b': { rbac: { status: 'Applied' } } },
        },
      }),
      { permissions: { kept: { 'capi/b': { rbac: { status: 'Applied' } } } } },
    );
    assert.deepEqual(clearUndefined({ ready: false, message: 'x' }), { ready: false, message: 'x' });
  });
});

const statuses: PluginApplyStatus[] = ['Applied', 'Failed', 'Pending', 'Undefined', 'Deleting', 'Skipped'];
const pluginObject: fc.Arbitrary<PluginObject> = fc.record(
  { status: fc.constantFrom(...statuses), message: fc.constantFrom('down', 'CRD missing') },
  { requiredKeys: ['status'] },
);
const permissionsMap: fc.Arbitrary<RolePermissions> = fc.dictionary(
  fc.constantFrom('viewer', 'editor', 'admin'),
  fc.dictionary(
    fc.constantFrom('platform', 'capi/a', 'capi/b'),
    fc.dictionary(fc.constantFrom('rbac', 'argocd', 'kubeflow', 'tenant'), pluginObject, { maxKeys: 3 }),
    { maxKeys: 3 },
  ),
  { maxKeys: 3 },
);

describe('roleReady', () => {
  it('is ready with only Applied and Skipped entries, and with none at all', () => {
    assert.equal(
      roleReady({ permissions: { v: { 'capi/a': { rbac: applied, kubeflow: { status: 'Skipped' } } } } }),
      true,
    );
    assert.equal(roleReady({ permissions: {} }), true);
    assert.equal(roleReady({}), true);
    assert.equal(roleReady({ permissions: { v: { 'capi/a': { rbac: { status: 'Pending' } } } } }), false);
  });

  it('agrees with a naive walk of the map', () => {
    fc.assert(
      fc.property(permissionsMap, (permissions) => {
        let ok = true;
        for (const clusters of Object.values(permissions)) {
          for (const plugins of Object.values(clusters)) {
            for (const o of Object.values(plugins))
              if (o.status !== 'Applied' && o.status !== 'Skipped') ok = false;
          }
        }
        assert.equal(roleReady({ permissions }), ok);
        assert.equal(roleMessage({ permissions }) === '', ok);
      }),
    );
  });
});

describe('roleMessage', () => {
  it('names the first three unfinished entries in order and counts the rest', () => {
    const status: RoleStatus = {
      permissions: {
        viewer: {
          'capi/b': { rbac: { status: 'Failed', message: 'ClusterUnreachable: no answer' } },
          'capi/a': {
            rbac: applied,
            kubeflow: { status: 'Failed', message: 'CrdNotInstalled: no AuthorizationPolicy' },
          },
        },
        editor: { platform: { argocd: { status: 'Pending' } }, 'capi/a': { rbac: { status: 'Deleting' } } },
      },
    };
    assert.equal(
      roleMessage(status),
      'editor in capi/a (rbac): Deleting; editor in platform (argocd): Pending; ' +
        'viewer in capi/a (kubeflow): Failed: CrdNotInstalled: no AuthorizationPolicy; and 1 more',
    );
    assert.equal(roleMessage({ permissions: { viewer: { 'capi/a': { rbac: applied } } } }), '');
  });
});

describe('sameRoleStatus', () => {
  /** The same content with every object's keys in reverse order. */
  function reversed(value: unknown): unknown {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(reversed);
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .reverse()
        .map(([k, v]) => [k, reversed(v)]),
    );
  }

  it('ignores key order and undefined members', () => {
    fc.assert(
      fc.property(permissionsMap, fc.boolean(), (permissions, ready) => {
        const a: RoleStatus = { ready, permissions, observedGeneration: 2 };
        assert.equal(sameRoleStatus(a, reversed(a) as RoleStatus), true);
        assert.equal(sameRoleStatus(a, { ...a, message: undefined }), true);
      }),
    );
    assert.equal(sameRoleStatus(undefined, {}), true);
  });

  it('sees any change of ready, message, an entry or the generation', () => {
    const base: RoleStatus = {
      ready: true,
      permissions: { v: { 'capi/a': { rbac: applied } } },
      observedGeneration: 1,
    };
    assert.equal(sameRoleStatus(base, { ...base, ready: false }), false);
    assert.equal(sameRoleStatus(base, { ...base, message: '' }), false);
    assert.equal(sameRoleStatus(base, { ...base, observedGeneration: 2 }), false);
    assert.equal(
      sameRoleStatus(base, {
        ...base,
        permissions: { v: { 'capi/a': { rbac: { ...applied, status: 'Skipped' } } } },
      }),
      false,
    );
    assert.equal(
      sameRoleStatus(base, { ...base, permissions: { v: { 'capi/b': { rbac: applied } } } }),
      false,
    );
  });
});
