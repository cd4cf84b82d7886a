/**
 * Branch allow-lists use Go's path.Match globs. The literal table is Go's own answer
 * (go1.26.8 `path.Match`, run over these pairs; `bad` is ErrBadPattern, which matches
 * nothing here), including where Go differs from a regular expression: classes may match
 * `/`, `[!a]` is not negated, and a `*` before a class that matches `/` takes the first
 * place the chunk fits. The property compares with a second, naive implementation in this
 * file (a translation to a regular expression) on patterns where the two must agree.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { branchAllowed, isValidGlob, matchGlob } from '../src/domain/mirror/branch-glob.ts';

/** [pattern, name, Go's answer]. */
const GO_PATH_MATCH: readonly (readonly [string, string, boolean | 'bad'])[] = [
  ['main', 'main', true],
  ['main', 'mainline', false],
  ['main', 'Main', false],
  ['', '', true],
  ['', 'main', false],
  ['*', 'main', true],
  ['*', 'feature/x', false],
  ['*', '', true],
  ['feature/*', 'feature/login', true],
  ['feature/*', 'feature/a/b', false],
  ['feature/*', 'feature/', true],
  ['feature/*', 'feature', false],
  ['*/*', 'feature/x', true],
  ['*/*', 'a/b/c', false],
  ['release-*', 'release-1.2', true],
  ['release-*', 'release-', true],
  ['release-*', 'hotfix-1', false],
  ['release/v?.?', 'release/v1.2', true],
  ['release/v?.?', 'release/v1.20', false],
  ['?', '/', false],
  ['?', 'a', true],
  ['?', 'é', true],
  ['??', 'é', false],
  ['a?c', 'a/c', false],
  ['[abc]', 'b', true],
  ['[abc]', 'd', false],
  ['[a-c]x', 'bx', true],
  ['[a-c]x', 'dx', false],
  ['[^a-c]x', 'dx', true],
  ['[^a-c]x', 'bx', false],
  ['[!a]', '!', true],
  ['[!a]', 'b', false],
  ['[!a]', 'a', true],
  ['[^a]', '/', true],
  ['a[/]b', 'a/b', true],
  ['*a[/b]*c', 'aba/c', false],
  ['*a[/b]*c', 'ab/c', false],
  ['[\\]]', ']', true],
  ['[\\-]', '-', true],
  ['[a\\-z]', '-', true],
  ['[a\\-z]', 'm', false],
  ['\\*', '*', true],
  ['\\*', 'a', false],
  ['\\?', '?', true],
  ['\\a', 'a', true],
  ['a\\', 'a', 'bad'],
  ['\\', '\\', 'bad'],
  ['[', '[', 'bad'],
  ['[a', 'a', 'bad'],
  ['[]', 'a', 'bad'],
  ['[]a]', ']', 'bad'],
  ['[^]', 'a', 'bad'],
  ['[a-]', 'a', 'bad'],
  ['[-a]', 'a', 'bad'],
  ['[a-b-c]', 'a', 'bad'],
  ['[z-a]', 'm', false],
  ['[z-a]', 'z', false],
  ['x[', 'y', 'bad'],
  ['*x[', 'abc', 'bad'],
  ['a*[', 'a', 'bad'],
  ['a*', 'abc[', true],
  ['[[]', '[', true],
  ['[*]', '*', true],
  ['[*]', 'a', false],
  ['a[*]*', 'a*b', true],
  ['*x*', 'axb', true],
  ['*x*', 'a/xb', false],
  ['**', 'abc', true],
  ['**', 'a/b', false],
  ['*?', 'a', true],
  ['*?', '', false],
  ['?*', 'a', true],
  ['*c', 'abcbc', true],
  ['a*b*c', 'abxbc', true],
  ['a*b*c', 'ab/c', false],
  ['feat-[0-9][0-9]*', 'feat-12-x', true],
  ['feat-[0-9][0-9]*', 'feat-1x', false],
  ['v[0-9].*', 'v1.x', true],
  ['é*', 'éa', true],
  ['[à-ü]', 'é', true],
  ['[à-ü]', 'z', false],
  ['*/[a-z]*', 'team/abc', true],
  ['*/*/*', 'a/b/c', true],
  ['*/*/*', 'a/b', false],
  ['a/**/b', 'a/x/b', true],
  ['a/**/b', 'a/x/y/b', false],
  ['\\[a]', '[a]', true],
  ['[a-c', '', 'bad'],
  ['a[', 'a', 'bad'],
  ['ab[c', 'ab', 'bad'],
  ['*[a-]', 'x', 'bad'],
  ['*\\', 'x', 'bad'],
];

/** A class in the naive parser: ranges of code points, maybe negated. */
interface NaiveClass {
  readonly negated: boolean;
  readonly ranges: readonly (readonly [number, number])[];
}

/**
 * The naive reading of Go's glob grammar: a regular expression for a well-formed pattern,
 * undefined for a malformed one, and whether some class can match `/` (where Go's
 * first-fit search and a backtracking regular expression part ways).
 */
function naiveGlob(pattern: string): { re: RegExp; classMatchesSlash: boolean } | undefined {
  const cs = Array.from(pattern);
  let src = '';
  let classMatchesSlash = false;
  const lit = (ch: string): string => `\\u{${ch.codePointAt(0)!.toString(16)}}`;
  let i = 0;
  // One class character: maybe escaped; never `-` or `]` unescaped; never the last character.
  const classChar = (): string | undefined => {
    let ch = cs[i];
    if (ch === undefined || ch === '-' || ch === ']') return undefined;
    if (ch === '\\') {
      i++;
      ch = cs[i];
      if (ch === undefined) return undefined;
    }
    i++;
    return i < cs.length ? ch : undefined;
  };
  while (i < cs.length) {
    const ch = cs[i]!;
    if (ch === '*') {
      src += '[^/]*';
      i++;
    } else if (ch === '?') {
      src += '[^/]';
      i++;
    } else if (ch === '\\') {
      if (i + 1 >= cs.length) return undefined;
      src += lit(cs[i + 1]!);
      i += 2;
    } else if (ch === '[') {
      i++;
      const cls: NaiveClass = { negated: cs[i] === '^', ranges: [] };
      if (cls.negated) i++;
      const ranges: [number, number][] = [];
      do {
        const lo = classChar();
        if (lo === undefined) return undefined;
        let hi = lo;
        if (cs[i] === '-') {
          i++;
          const h = classChar();
          if (h === undefined) return undefined;
          hi = h;
        }
        ranges.push([lo.codePointAt(0)!, hi.codePointAt(0)!]);
      } while (cs[i] !== ']');
      i++;
      const slash = '/'.codePointAt(0)!;
      const hasSlash = ranges.some(([lo, hi]) => lo <= slash && slash <= hi);
      if (hasSlash !== cls.negated) classMatchesSlash = true;
      const parts = ranges
        .filter(([lo, hi]) => lo <= hi)
        .map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`);
      if (parts.length === 0) src += cls.negated ? '[\\s\\S]' : '[^\\s\\S]';
      else src += `[${cls.negated ? '^' : ''}${parts.join('')}]`;
    } else {
      src += lit(ch);
      i++;
    }
  }
  return { re: new RegExp(`^${src}$`, 'u'), classMatchesSlash };
}

describe('branch globs (Go path.Match)', () => {
  it('answers as Go path.Match does, a malformed pattern matching nothing', () => {
    for (const [pattern, name, go] of GO_PATH_MATCH) {
      assert.equal(
        matchGlob(pattern, name),
        go === true,
        `path.Match(${JSON.stringify(pattern)}, ${JSON.stringify(name)})`,
      );
      assert.equal(isValidGlob(pattern), go !== 'bad', `pattern ${JSON.stringify(pattern)} well-formed`);
    }
  });

  it('allows a branch that matches any glob of the list, and none for an empty list', () => {
    assert.equal(branchAllowed('main', ['main', 'release/*']), true);
    assert.equal(branchAllowed('release/1.2', ['main', 'release/*']), true);
    assert.equal(branchAllowed('feature/x', ['main', 'release/*']), false);
    assert.equal(branchAllowed('main', []), false);
    assert.equal(branchAllowed('main', ['[', 'ma*']), true, 'a malformed glob does not spoil the others');
    assert.equal(branchAllowed('feature/a/b', ['*']), false, '* stops at /');
    assert.equal(branchAllowed('feature/a/b', ['*', '*/*', '*/*/*']), true);
  });

  it('agrees with a regular-expression translation wherever no class can match "/"', () => {
    const nameChar = fc.constantFrom('a', 'b', 'c', '-', '.', '/', 'é');
    const token = fc.oneof(
      { arbitrary: fc.constantFrom('a', 'b', 'c', '-', '.', '/', 'é'), weight: 10 },
      { arbitrary: fc.constantFrom('*', '**', '?'), weight: 5 },
      { arbitrary: fc.constantFrom('\\a', '\\*', '\\?', '\\[', '\\-'), weight: 1 },
      {
        arbitrary: fc
          .tuple(
            fc.boolean(),
            fc.array(fc.constantFrom('a', 'b-c', 'a-b', 'c', 'é', '\\]', 'c-a'), {
              minLength: 1,
              maxLength: 3,
            }),
          )
          .map(([neg, items]) => `[${neg ? '^/' : ''}${items.join('')}]`),
        weight: 3,
      },
      { arbitrary: fc.constantFrom('[', ']', '\\', '^', '!', '-'), weight: 1 },
    );
    const pattern = fc.array(token, { maxLength: 7 }).map((ts) => ts.join(''));
    const name = fc.array(nameChar, { maxLength: 8 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(pattern, name, (p, n) => {
        const naive = naiveGlob(p);
        assert.equal(isValidGlob(p), naive !== undefined, `well-formed ${JSON.stringify(p)}`);
        if (naive === undefined) {
          assert.equal(matchGlob(p, n), false);
          return;
        }
        fc.pre(!naive.classMatchesSlash);
        assert.equal(matchGlob(p, n), naive.re.test(n), `${JSON.stringify(p)} ~ ${JSON.stringify(n)}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('matches every name against itself when it has no glob characters', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9._/-]{0,20}$/), (branch) => {
        assert.equal(matchGlob(branch, branch), true);
        assert.equal(branchAllowed(branch, [branch]), true);
      }),
    );
  });
});
