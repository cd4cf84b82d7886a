/**
 * Target paths, and which of two targets on one branch may write when their folders
 * overlap. Literal tables, a naive string-prefix reading of overlap, and a naive
 * all-pairs reading of the losers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  overlapLosers,
  pathsOverlap,
  type TargetPlacement,
  validateTargetPath,
} from '../src/domain/mirror/target-path.ts';

/** Overlap as plain string prefixes on whole segments. */
const naiveOverlap = (a: string, b: string): boolean =>
  a === b || a === '.' || b === '.' || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

const segment = fc.constantFrom('a', 'b', 'team-a', 'team-a2', 'x');
const path = fc.oneof(
  { arbitrary: fc.constant('.'), weight: 1 },
  { arbitrary: fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/')), weight: 6 },
);

describe('target paths', () => {
  it('accepts the root and plain relative folders', () => {
    for (const p of ['.', 'clusters', 'clusters/prod', 'a/b/c', 'team-a', '.hidden', 'a.b/c..d', 'a b']) {
      assert.deepEqual(validateTargetPath(p), { ok: true }, p);
    }
  });

  it('refuses paths that are empty, absolute, escaping, non-canonical or inside .git', () => {
    const cases: [string, string][] = [
      ['', 'path must not be empty (use "." for the repository root)'],
      ['/abs', 'path must be relative to the repository root (no leading "/")'],
      ['a/', 'path must not end with "/"'],
      ['a//b', 'path must not contain an empty segment ("//")'],
      ['../x', 'path must not contain ".." (it would leave the repository)'],
      ['a/../b', 'path must not contain ".." (it would leave the repository)'],
      ['./a', 'path must not contain a "." segment ("." alone means the root)'],
      ['a/./b', 'path must not contain a "." segment ("." alone means the root)'],
      ['.git', 'path must not be inside ".git"'],
      ['a/.GIT/hooks', 'path must not be inside ".git"'],
      ['a\\b', 'path must separate folders with "/", not "\\"'],
      ['a\nb', 'path must not contain control characters'],
    ];
    for (const [p, message] of cases)
      assert.deepEqual(validateTargetPath(p), { ok: false, message }, JSON.stringify(p));
  });

  it('overlaps equal folders, nested folders and the root, never siblings', () => {
    const cases: [string, string, boolean][] = [
      ['team-a', 'team-a', true],
      ['team-a', 'team-a/prod', true],
      ['team-a/prod', 'team-a', true],
      ['team-a', 'team-a2', false],
      ['team-a2', 'team-a', false],
      ['.', 'x/y', true],
      ['x', '.', true],
      ['.', '.', true],
      ['a/b', 'a/c', false],
      ['a/b/c', 'a', true],
    ];
    for (const [a, b, want] of cases) assert.equal(pathsOverlap(a, b), want, `${a} ~ ${b}`);
  });

  it('overlap is symmetric and agrees with whole-segment prefixes', () => {
    fc.assert(
      fc.property(path, path, (a, b) => {
        assert.equal(pathsOverlap(a, b), pathsOverlap(b, a));
        assert.equal(pathsOverlap(a, b), naiveOverlap(a, b));
      }),
    );
  });
});

const T0 = '2024-01-01T00:00:00Z';
const T1 = '2024-01-02T00:00:00Z';
const T2 = '2024-01-03T00:00:00Z';

const target = (key: string, path: string, createdAt: string, scope = 'repo@main'): TargetPlacement => ({
  key,
  scope,
  path,
  createdAt,
  name: key.split('/')[1] ?? key,
});

describe('overlapping targets', () => {
  it('lets the older target write and names it to the newer one', () => {
    const losers = overlapLosers([target('ns/new', 'apps', T1), target('ns/old', 'apps/web', T0)]);
    assert.deepEqual([...losers], [['ns/new', { with: 'ns/old' }]]);
  });

  it('compares names when two targets were created in the same second', () => {
    const losers = overlapLosers([target('ns/b', 'x', T0), target('ns/a', 'x', T0)]);
    assert.deepEqual([...losers], [['ns/b', { with: 'ns/a' }]]);
  });

  it('does not let targets on different branches or providers compete', () => {
    const losers = overlapLosers([target('ns/a', '.', T0, 'repo@main'), target('ns/b', '.', T1, 'repo@dev')]);
    assert.equal(losers.size, 0);
  });

  it('keeps siblings apart and lets both write', () => {
    assert.equal(overlapLosers([target('ns/a', 'team-a', T0), target('ns/b', 'team-a2', T1)]).size, 0);
  });

  it('makes a target lose to an older one that itself lost, so no writer is displaced later', () => {
    // a (x/y) is oldest; b (x) overlaps a; c (x/z) overlaps only b.
    const losers = overlapLosers([
      target('ns/c', 'x/z', T2),
      target('ns/b', 'x', T1),
      target('ns/a', 'x/y', T0),
    ]);
    assert.deepEqual([...losers].sort(), [
      ['ns/b', { with: 'ns/a' }],
      ['ns/c', { with: 'ns/b' }],
    ]);
  });

  it('names the oldest of the targets a loser overlaps', () => {
    const losers = overlapLosers([target('ns/c', '.', T2), target('ns/b', 'b', T1), target('ns/a', 'a', T0)]);
    assert.deepEqual([...losers], [['ns/c', { with: 'ns/a' }]]);
  });

  it('a target loses exactly when an older target of its scope overlaps it, in any input order', () => {
    const placement = fc.record({
      path,
      day: fc.integer({ min: 1, max: 3 }),
      name: fc.constantFrom('p', 'q', 'r'),
      scope: fc.constantFrom('repo@main', 'repo@dev'),
    });
    const targets = fc
      .uniqueArray(placement, { maxLength: 8, selector: (p) => `${p.scope}|${p.day}|${p.name}` })
      .map((ps) =>
        ps.map((p, i) => ({
          key: `ns${i}/${p.name}`,
          scope: p.scope,
          path: p.path,
          createdAt: `2024-01-0${p.day}T00:00:00Z`,
          name: p.name,
        })),
      );
    fc.assert(
      fc.property(targets, fc.func(fc.integer()), (ts, rank) => {
        const losers = overlapLosers(ts);
        const shuffled = [...ts].sort((x, y) => rank(x.key) - rank(y.key));
        assert.deepEqual(new Map([...overlapLosers(shuffled)].sort()), new Map([...losers].sort()));
        // Naive: older means an earlier day, or the same day and a smaller name.
        const older = (x: TargetPlacement, y: TargetPlacement): boolean =>
          x.createdAt < y.createdAt || (x.createdAt === y.createdAt && x.name < y.name);
        for (const t of ts) {
          const rivals = ts.filter((o) => o.scope === t.scope && older(o, t) && naiveOverlap(o.path, t.path));
          const loss = losers.get(t.key);
          assert.equal(loss !== undefined, rivals.length > 0, t.key);
          if (loss) {
            const oldest = rivals.reduce((a, b) => (older(b, a) ? b : a));
            assert.equal(loss.with, oldest.key);
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});
