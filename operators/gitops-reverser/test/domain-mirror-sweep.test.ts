/**
 * The sweep after a complete snapshot. Expected plans are written out; the properties build
 * folders from object files and foreign files whose kind the generator knows, so the
 * expectation never comes from the parser under test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type DeletionMode, eventDeleteAllowed, sweepPlan } from '../src/domain/mirror/sweep.ts';

const FOLDER = { group: 'apps', resource: 'deployments', namespace: 'web' };
const DIR = 'clusters/prod/web/apps/deployments';

/** What the folder holds: objects still there, objects gone, and files that are not objects. */
const FILES = [
  `${DIR}/api.yaml`,
  `${DIR}/gone.yaml`,
  `${DIR}/old-plain.yaml`,
  `${DIR}/README.md`,
  `${DIR}/notes.txt`,
  `${DIR}/sub/x.yaml`,
  `${DIR}/zz-gone.sops.yaml`,
  'clusters/prod/web/apps/statefulsets/db.yaml',
  'clusters/prod/other/apps/deployments/api.yaml',
];
const SNAPSHOT = new Set([`${DIR}/api.yaml`, `${DIR}/old-plain.sops.yaml`]);

describe('sweep after a complete snapshot', () => {
  it('deletes object files without an object under Always, and nothing else', () => {
    assert.deepEqual(
      sweepPlan({
        targetPath: 'clusters/prod',
        folder: FOLDER,
        filesInDir: FILES,
        snapshotPaths: SNAPSHOT,
        mode: 'Always',
      }),
      { delete: [`${DIR}/gone.yaml`, `${DIR}/old-plain.yaml`, `${DIR}/zz-gone.sops.yaml`], retained: [] },
    );
  });

  it('keeps and reports them under OnEvent and Never', () => {
    for (const mode of ['OnEvent', 'Never'] as const) {
      assert.deepEqual(
        sweepPlan({
          targetPath: 'clusters/prod',
          folder: FOLDER,
          filesInDir: FILES,
          snapshotPaths: SNAPSHOT,
          mode,
        }),
        { delete: [], retained: [`${DIR}/gone.yaml`, `${DIR}/old-plain.yaml`, `${DIR}/zz-gone.sops.yaml`] },
      );
    }
  });

  it('sweeps a cluster-scoped core folder at the repository root', () => {
    assert.deepEqual(
      sweepPlan({
        targetPath: '.',
        folder: { group: '', resource: 'namespaces' },
        filesInDir: [
          '_cluster/namespaces/a.yaml',
          '_cluster/namespaces/b.yaml',
          '_cluster/namespaces/kustomization.txt',
        ],
        snapshotPaths: new Set(['_cluster/namespaces/a.yaml']),
        mode: 'Always',
      }),
      { delete: ['_cluster/namespaces/b.yaml'], retained: [] },
    );
  });

  it('deletes a file on a delete event under OnEvent and Always only', () => {
    assert.equal(eventDeleteAllowed('Always'), true);
    assert.equal(eventDeleteAllowed('OnEvent'), true);
    assert.equal(eventDeleteAllowed('Never'), false);
  });

  it('never touches a file whose object is in the snapshot, nor a foreign file', () => {
    const name = fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,6}[a-z0-9])?$/);
    const foreign = fc.oneof(
      fc
        .constantFrom('README.md', 'kustomization.yml', '.gitkeep', 'notes.txt', 'x.yaml.bak')
        .map((f) => `${DIR}/${f}`),
      name.map((n) => `${DIR}/sub/${n}.yaml`),
      name.map((n) => `clusters/prod/web/apps/statefulsets/${n}.yaml`),
      name.map((n) => `clusters/prod/other/apps/deployments/${n}.yaml`),
      name.map((n) => `clusters/prod2/web/apps/deployments/${n}.yaml`),
    );
    const input = fc.record({
      live: fc.uniqueArray(name, { maxLength: 6 }),
      gone: fc.uniqueArray(name, { maxLength: 6 }),
      foreign: fc.array(foreign, { maxLength: 5 }),
      encrypted: fc.boolean(),
      mode: fc.constantFrom<DeletionMode>('Never', 'OnEvent', 'Always'),
    });
    fc.assert(
      fc.property(input, ({ live, gone, foreign: others, encrypted, mode }) => {
        const suffix = encrypted ? '.sops.yaml' : '.yaml';
        const goneOnly = gone.filter((g) => !live.includes(g));
        const liveFiles = live.map((n) => `${DIR}/${n}${suffix}`);
        const goneFiles = goneOnly.map((n) => `${DIR}/${n}${suffix}`);
        const plan = sweepPlan({
          targetPath: 'clusters/prod',
          folder: FOLDER,
          filesInDir: [...others, ...goneFiles, ...liveFiles],
          snapshotPaths: new Set(liveFiles),
          mode,
        });
        const touched = [...plan.delete, ...plan.retained];
        for (const f of [...liveFiles, ...others]) assert.equal(touched.includes(f), false, f);
        assert.deepEqual([...touched].sort(), [...new Set(goneFiles)].sort());
        if (mode !== 'Always') assert.deepEqual(plan.delete, []);
        else assert.deepEqual(plan.retained, []);
      }),
      { numRuns: 500 },
    );
  });
});
