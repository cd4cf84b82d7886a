/**
 * The `kube-cel` command as users run it (the installed bin, a child process): its help
 * says what each command and option does and what the exit statuses mean, `--version` is
 * the package's, and a wrong command line exits 2 with the reason on stderr.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, it } from 'node:test';

const packageDir = join(import.meta.dirname, '..');
const bin = join(packageDir, 'bin/kube-cel.js');
/** The shebang says `env node`: put the Node that runs the tests first, as npm and npx do. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };

function kubeCel(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(bin, args, { env, encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kube-cel', () => {
  it('evaluates an expression (the path the help describes)', () => {
    const r = kubeCel(['eval', 'x + 1', '--json-var', 'x=41']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '42\n');
  });

  it('--help names every command and option and the exit statuses, on stdout with status 0', () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = kubeCel(args);
      assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
      for (const word of [
        /\n {2}eval <expression> +\S/,
        /\n {2}check <expression> +\S/,
        /--var NAME=FILE +\S/,
        /--json-var NAME=JSON +\S/,
        /--declare NAME\[:TYPE\] +\S/,
        /--cost-limit N +\S/,
        /-h, --help +\S/,
        /--version +\S/,
      ])
        assert.match(r.stdout, word, `${args.join(' ')}: ${word}`);
      assert.match(r.stdout, /Exit status: 0 .*1 .*error.*2 usage error/s);
    }
  });

  it("--version prints the package's version, read from its package.json", () => {
    const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    const r = kubeCel(['--version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${pkg.version}\n`);
  });

  it('a wrong command line exits 2 with the reason on stderr', () => {
    const cases: [string[], RegExp][] = [
      [[], /no command given/],
      [['nope', '1'], /unknown command "nope"/],
      [['eval'], /eval needs an expression/],
      [['eval', '1', '--bogus', 'x'], /unknown option --bogus/],
      [['eval', '1', '--var'], /--var needs a value/],
    ];
    for (const [args, message] of cases) {
      const r = kubeCel(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /usage: /, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });
});
