/**
 * The `controlplane` command explains itself: its help names the commands and the exit
 * statuses, `--version` is the package's, and a wrong command line is a usage error.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const cli = join(import.meta.dirname, '..', 'src', 'cli.ts');
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

describe('the controlplane command', () => {
  it('--help names every command and the exit statuses', () => {
    const r = run('--help');
    assert.equal(r.status, 0);
    for (const word of ['build', 'checksums', 'version', '--version', 'exit status', '2 usage error']) {
      assert.ok(r.stdout.includes(word), `help lacks ${word}`);
    }
  });

  it("--version prints package.json's version", () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    const r = run('--version');
    assert.equal(r.status, 0);
    assert.equal(r.stdout.trim(), pkg.version);
  });

  it('an unknown command, no command or an extra argument exits 2 with the reason on stderr', () => {
    for (const [args, reason] of [
      [['frobnicate'], /unknown command frobnicate/],
      [[], /no command/],
      [['build', 'now'], /unexpected argument now/],
    ] as const) {
      const r = run(...args);
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, reason);
      assert.match(r.stderr, /usage: controlplane COMMAND/);
      assert.equal(r.stdout, '');
    }
  });
});
