/**
 * The operator process's floor for prefix lengths: `--shortest-prefix-ipv4/ipv6` and
 * their variables are read before any cluster, and a bad value is a usage error (2).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const run = (args: string[], extra: Record<string, string> = {}) =>
  spawnSync(process.execPath, [main, ...args], {
    // No kubeconfig anywhere: a flag error must come before the cluster is looked for.
    env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', KUBECONFIG: '/nonexistent/config', ...extra },
    encoding: 'utf8',
    timeout: 30_000,
  });

describe('the shortest-prefix flags', () => {
  it('are listed in --help with their variables and defaults', () => {
    const r = run(['--help']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /--shortest-prefix-ipv4 N +\(EXOLEDGE_SHORTEST_PREFIX_IPV4\).*\n.*default 8/);
    assert.match(r.stdout, /--shortest-prefix-ipv6 N +\(EXOLEDGE_SHORTEST_PREFIX_IPV6\).*default 32/);
  });

  it('refuse a length outside the family, or not a number, with status 2', () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--shortest-prefix-ipv4', '33'], {}, /--shortest-prefix-ipv4: not a prefix length from 0 to 32: 33/],
      [
        ['--shortest-prefix-ipv6', '129'],
        {},
        /--shortest-prefix-ipv6: not a prefix length from 0 to 128: 129/,
      ],
      [['--shortest-prefix-ipv4', '/8'], {}, /not a prefix length/],
      [['--shortest-prefix-ipv4=-1'], {}, /not a prefix length/],
      [[], { EXOLEDGE_SHORTEST_PREFIX_IPV6: 'x' }, /--shortest-prefix-ipv6: not a prefix length/],
    ];
    for (const [args, env, message] of cases) {
      const r = run(args, env);
      assert.equal(r.status, 2, `${args.join(' ')} ${JSON.stringify(env)}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
  });
});
