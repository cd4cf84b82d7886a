/**
 * The repository layout: `{path}/{namespace or _cluster}/{group}/{resource}/{name}.yaml`.
 * Expected paths are written out here; the property generates coordinates the apiserver
 * could produce and reads every path back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ObjectCoordinates } from '../src/domain/mirror/change.ts';
import { objectFilePath, parseObjectFilePath, resourceDir } from '../src/domain/mirror/file-path.ts';

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?$/);
const group = fc.oneof(
  fc.constant(''),
  fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.')),
);
/** Names as the apiserver allows them for some resource: no `/` or `%`, not `.` or `..`. */
const objectName = fc
  .array(fc.constantFrom('a', 'z', '0', '-', '.', ':', '_', 'A', 'é', '@', ' '), {
    minLength: 1,
    maxLength: 20,
  })
  .map((cs) => cs.join(''))
  .filter((n) => n !== '.' && n !== '..');
const targetSegment = fc
  .array(fc.constantFrom('a', 'b', '0', '-', '_', '.', 'X'), { minLength: 1, maxLength: 8 })
  .map((cs) => cs.join(''))
  .filter((s) => s !== '.' && s !== '..' && s.toLowerCase() !== '.git');
const targetPath = fc.oneof(
  fc.constant('.'),
  fc.array(targetSegment, { minLength: 1, maxLength: 3 }).map((ss) => ss.join('/')),
);
const coordinates: fc.Arbitrary<ObjectCoordinates> = fc
  .record({ group, resource: dnsLabel, namespace: fc.option(dnsLabel, { nil: undefined }), name: objectName })
  .map(({ namespace, ...rest }) => (namespace === undefined ? rest : { ...rest, namespace }));

describe('object file paths', () => {
  it('lays out namespaced, core-group and cluster-scoped objects as documented', () => {
    const cases: [string, ObjectCoordinates, boolean, string][] = [
      [
        'clusters/prod',
        { group: 'apps', resource: 'deployments', namespace: 'web', name: 'api' },
        false,
        'clusters/prod/web/apps/deployments/api.yaml',
      ],
      [
        '.',
        { group: '', resource: 'configmaps', namespace: 'web', name: 'cfg' },
        false,
        'web/configmaps/cfg.yaml',
      ],
      [
        '.',
        { group: '', resource: 'secrets', namespace: 'web', name: 'db' },
        true,
        'web/secrets/db.sops.yaml',
      ],
      [
        'team-a',
        { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', name: 'system:aggregate-to-admin' },
        false,
        'team-a/_cluster/rbac.authorization.k8s.io/clusterroles/system:aggregate-to-admin.yaml',
      ],
      [
        '.',
        { group: '', resource: 'namespaces', namespace: '', name: 'web' },
        false,
        '_cluster/namespaces/web.yaml',
      ],
    ];
    for (const [target, o, encrypted, want] of cases)
      assert.equal(objectFilePath(target, o, encrypted), want);
  });

  it('names the folder a sweep covers', () => {
    assert.equal(
      resourceDir('clusters/prod', { group: 'apps', resource: 'deployments', namespace: 'web' }),
      'clusters/prod/web/apps/deployments',
    );
    assert.equal(resourceDir('.', { group: '', resource: 'nodes' }), '_cluster/nodes');
  });

  it('refuses coordinates that would leave the folder or are not API names', () => {
    const bad: [string, ObjectCoordinates][] = [
      ['.', { group: '', resource: 'configmaps', namespace: 'web', name: '..' }],
      ['.', { group: '', resource: 'configmaps', namespace: 'web', name: 'a/b' }],
      ['.', { group: '', resource: 'configmaps', namespace: 'web', name: '' }],
      ['.', { group: '', resource: 'configmaps', namespace: '../x', name: 'a' }],
      ['.', { group: 'Apps', resource: 'deployments', namespace: 'web', name: 'a' }],
      ['.', { group: '', resource: 'Pods', namespace: 'web', name: 'a' }],
      ['../up', { group: '', resource: 'pods', namespace: 'web', name: 'a' }],
      ['./x', { group: '', resource: 'pods', namespace: 'web', name: 'a' }],
    ];
    for (const [target, o] of bad)
      assert.throws(() => objectFilePath(target, o, false), Error, JSON.stringify([target, o]));
  });

  it('reads an object file back into its coordinates', () => {
    assert.deepEqual(parseObjectFilePath('clusters/prod', 'clusters/prod/web/apps/deployments/api.yaml'), {
      group: 'apps',
      resource: 'deployments',
      namespace: 'web',
      name: 'api',
      encrypted: false,
    });
    assert.deepEqual(parseObjectFilePath('.', '_cluster/namespaces/web.yaml'), {
      group: '',
      resource: 'namespaces',
      name: 'web',
      encrypted: false,
    });
    assert.deepEqual(parseObjectFilePath('.', 'web/secrets/db.sops.yaml'), {
      group: '',
      resource: 'secrets',
      namespace: 'web',
      name: 'db',
      encrypted: true,
    });
  });

  it('does not take foreign files for object files', () => {
    for (const [target, file] of [
      ['.', 'README.md'],
      ['.', 'web/configmaps/README.md'],
      ['.', 'web/configmaps/notes.yml'],
      ['.', 'web/configmaps/.yaml'],
      // (`web/configmaps/sub/x.yaml` is well-formed: group `configmaps`, resource `sub`. The
      // sweep tells it from a core sub-folder by the folder's coordinates.)
      ['.', 'web/configmaps/sub/deeper/x.yaml'],
      ['.', 'Web/configmaps/x.yaml'],
      ['.', 'web//configmaps/x.yaml'],
      ['.', 'web/configmaps'],
      ['.', 'a/b/c/d/e.yaml'],
      ['clusters/prod', 'clusters/prod2/web/configmaps/x.yaml'],
      ['clusters/prod', 'clusters/web/configmaps/x.yaml'],
      ['clusters/prod', 'web/configmaps/x.yaml'],
      ['../x', '../x/web/configmaps/x.yaml'],
    ] as const) {
      assert.equal(parseObjectFilePath(target, file), undefined, `${target} ${file}`);
    }
  });

  it('reads an unencrypted object named x.sops back only when told the file is not encrypted', () => {
    const o = { group: '', resource: 'configmaps', namespace: 'web', name: 'x.sops' };
    const path = objectFilePath('.', o, false);
    assert.equal(path, 'web/configmaps/x.sops.yaml');
    assert.deepEqual(parseObjectFilePath('.', path, false), { ...o, encrypted: false });
    assert.deepEqual(parseObjectFilePath('.', path), { ...o, name: 'x', encrypted: true });
    assert.equal(parseObjectFilePath('.', 'web/configmaps/x.yaml', true), undefined);
  });

  it('reads every path it writes back into the same coordinates', () => {
    fc.assert(
      fc.property(targetPath, coordinates, fc.boolean(), (target, o, encrypted) => {
        const path = objectFilePath(target, o, encrypted);
        assert.deepEqual(parseObjectFilePath(target, path, encrypted), { ...o, encrypted });
        if (!o.name.endsWith('.sops'))
          assert.deepEqual(parseObjectFilePath(target, path), { ...o, encrypted });
        assert.equal(path.startsWith(`${resourceDir(target, o)}/`), true);
        assert.equal(path.startsWith('./'), false);
        assert.equal(path.split('/').includes('..'), false);
      }),
      { numRuns: 2000 },
    );
  });
});
