/** Commit messages, default and templated; every expected message is written out. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type CommitChange, commitMessage } from '../src/domain/mirror/commit-message.ts';

const CHANGES: CommitChange[] = [
  { op: 'UPDATE', path: 'prod/web/services/web.yaml' },
  { op: 'CREATE', path: 'prod/web/apps/deployments/web.yaml' },
  { op: 'DELETE', path: 'prod/web/configmaps/old.yaml' },
];

describe('commit messages', () => {
  it('says how many files changed for which target, one line per file sorted by path', () => {
    assert.equal(
      commitMessage(undefined, { target: 'team-a/prod', changes: CHANGES }),
      [
        'gitops-reverser: 3 changes to team-a/prod',
        '',
        'CREATE prod/web/apps/deployments/web.yaml',
        'DELETE prod/web/configmaps/old.yaml',
        'UPDATE prod/web/services/web.yaml',
      ].join('\n'),
    );
  });

  it('uses the singular for one change', () => {
    assert.equal(
      commitMessage(undefined, { target: 'ns/t', changes: [{ op: 'DELETE', path: 'a.yaml' }] }),
      'gitops-reverser: 1 change to ns/t\n\nDELETE a.yaml',
    );
  });

  it('lists at most 200 files and counts the rest', () => {
    const changes: CommitChange[] = Array.from({ length: 205 }, (_, i) => ({
      op: 'CREATE',
      path: `f/${String(i).padStart(3, '0')}.yaml`,
    }));
    const lines = commitMessage(undefined, { target: 'ns/t', changes }).split('\n');
    assert.equal(lines[0], 'gitops-reverser: 205 changes to ns/t');
    assert.equal(lines.length, 2 + 200 + 1);
    assert.equal(lines[2], 'CREATE f/000.yaml');
    assert.equal(lines[201], 'CREATE f/199.yaml');
    assert.equal(lines[202], '… and 5 more');
  });

  it('fills {{target}}, {{count}} and {{changes}} in a template and leaves unknown placeholders as written', () => {
    assert.equal(
      commitMessage('mirror {{target}} ({{ count }} files) by {{author}}\n\n{{changes}}', {
        target: 'team-a/prod',
        changes: CHANGES.slice(0, 2),
      }),
      [
        'mirror team-a/prod (2 files) by {{author}}',
        '',
        'CREATE prod/web/apps/deployments/web.yaml',
        'UPDATE prod/web/services/web.yaml',
      ].join('\n'),
    );
  });

  it('does not expand placeholders that arrive inside a filled-in value', () => {
    assert.equal(
      commitMessage('{{target}}: {{count}}', { target: 'ns/{{count}}', changes: [] }),
      'ns/{{count}}: 0',
    );
  });

  it('falls back to the default for an empty or blank template', () => {
    for (const t of ['', '  \n']) {
      assert.equal(commitMessage(t, { target: 'ns/t', changes: [] }), 'gitops-reverser: 0 changes to ns/t');
    }
  });

  it('lists every change exactly once, in path order, up to the limit', () => {
    const change = fc.record({
      op: fc.constantFrom<CommitChange['op']>('CREATE', 'UPDATE', 'DELETE'),
      path: fc.stringMatching(/^[a-z]{1,3}\/[a-z]{1,3}\.yaml$/),
    });
    fc.assert(
      fc.property(fc.uniqueArray(change, { maxLength: 30, selector: (c) => c.path }), (changes) => {
        const [subject, blank, ...body] = commitMessage(undefined, { target: 'ns/t', changes }).split('\n');
        assert.equal(
          subject,
          `gitops-reverser: ${changes.length} ${changes.length === 1 ? 'change' : 'changes'} to ns/t`,
        );
        if (changes.length === 0) {
          assert.equal(blank, undefined);
          return;
        }
        assert.equal(blank, '');
        const paths = changes.map((c) => c.path).sort();
        assert.deepEqual(
          body.map((l) => l.split(' ')[1]),
          paths,
        );
        for (const c of changes) assert.equal(body.includes(`${c.op} ${c.path}`), true);
      }),
    );
  });
});
