/**
 * The `exoledge` command as users run it: the installed bin (shebang, shim, TypeScript
 * behind it), run as a child process, and through `npx` from the repository root.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const packageDir = join(import.meta.dirname, '..');
const repoRoot = join(packageDir, '../..');
const bin = join(packageDir, 'bin/exoledge.js');
/** The shebang says `env node`: put the Node that runs the tests first, as npm and npx do. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };

interface Outcome {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function exoledge(args: readonly string[], input?: string): Outcome {
  const r = spawnSync(bin, args, { env, input, encoding: 'utf8' });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

let dir: string;
let listFile: string;
const LIST = [
  '# proxies',
  '10.0.2.0/24',
  '10.0.0.0/24',
  '10.0.3.0/24 ; SBL1',
  '10.0.1.0/24',
  '1.2.3',
  '192.0.2.77/28',
  '198.51.100.7',
  '2001:DB8::1',
  '',
  '010.0.0.1',
].join('\r\n');

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'exoledge-cli-'));
  listFile = join(dir, 'list.txt');
  writeFileSync(listFile, LIST);
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('exoledge aggregate', () => {
  it('prints the merged prefixes on stdout, one canonical prefix per line, and a summary on stderr', () => {
    const r = exoledge(['aggregate', listFile]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '10.0.0.0/22\n192.0.2.64/28\n198.51.100.7/32\n2001:db8::1/128\n');
    assert.match(r.stderr, /11 lines: 7 entries \(6 IPv4, 1 IPv6\), 1 comments, 1 blank, 2 malformed/);
    assert.match(r.stderr, /line 6: "1\.2\.3": Ipv4Syntax/);
    assert.match(r.stderr, /line 11: "010\.0\.0\.1": LeadingZero/);
    assert.match(
      r.stderr,
      /host bits normalised: 1 prefixes, e\.g\. line 7: 192\.0\.2\.77\/28 read as 192\.0\.2\.64\/28/,
    );
    assert.match(r.stderr, /merged: 7 entries into 4 prefixes/);
    assert.match(r.stderr, /dropped: none/);
    const digest = createHash('sha256').update(r.stdout).digest('hex');
    assert.match(r.stderr, new RegExp(`published: 4 prefixes \\(3 IPv4, 1 IPv6\\), sha256 ${digest}`));
  });

  it('applies --max-entries and --min-prefix-length and says exactly what was dropped', () => {
    const r = exoledge(['aggregate', '--max-entries', '1', '--min-prefix-length=30', listFile]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '10.0.0.0/22\n');
    assert.match(r.stderr, /dropped: 3 prefixes/);
    assert.match(r.stderr, /longer than --min-prefix-length 30: 2 \(IPv4 \/32: 1, IPv6 \/128: 1\)/);
    assert.match(r.stderr, /over --max-entries 1, most specific first: 1 \(IPv4 \/28: 1\)/);
  });

  it('refuses prefixes shorter than /8 (IPv4) and /32 (IPv6) by default, reports each line, publishes the rest', () => {
    const r = exoledge(['aggregate', '-'], '0.0.0.0/0\n1.2.3.4\n::/0 # all\n10.0.0.0/7\n2001:db8::/32\n');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '1.2.3.4/32\n2001:db8::/32\n');
    assert.match(
      r.stderr,
      /5 lines: 2 entries \(1 IPv4, 1 IPv6\), 0 comments, 0 blank, 0 malformed, 3 refused/,
    );
    assert.match(r.stderr, /refused: 3 prefixes shorter than \/8 \(IPv4\) or \/32 \(IPv6\)/);
    assert.match(r.stderr, /line 1: "0\.0\.0\.0\/0": read as 0\.0\.0\.0\/0/);
    assert.match(r.stderr, /line 3: "::\/0 # all": read as ::\/0/);
    assert.match(r.stderr, /line 4: "10\.0\.0\.0\/7": read as 10\.0\.0\.0\/7/);
  });

  it('takes other floors from --shortest-prefix-ipv4 and --shortest-prefix-ipv6, 0 refusing nothing', () => {
    const input = '0.0.0.0/0\n10.0.0.0/12\n2001:db8::/40\n';
    const none = exoledge(
      ['aggregate', '--shortest-prefix-ipv4', '0', '--shortest-prefix-ipv6=0', '-'],
      input,
    );
    assert.equal(none.stdout, '0.0.0.0/0\n2001:db8::/40\n');
    assert.match(none.stderr, /0 refused/);
    const strict = exoledge(
      ['aggregate', '--shortest-prefix-ipv4', '16', '--shortest-prefix-ipv6', '48', '-'],
      input,
    );
    assert.equal(strict.stdout, '');
    assert.match(strict.stderr, /refused: 3 prefixes shorter than \/16 \(IPv4\) or \/48 \(IPv6\)/);
  });

  it('shows the first refused lines and says how many more there are', () => {
    const r = exoledge(['aggregate', '-'], '0.0.0.0/0\n'.repeat(12));
    assert.equal((r.stderr.match(/read as 0\.0\.0\.0\/0/g) ?? []).length, 10);
    assert.match(r.stderr, /and 2 more/);
  });

  it('reads standard input given -, or no FILE', () => {
    for (const args of [['aggregate', '-'], ['aggregate']]) {
      const r = exoledge(args, '1.2.3.4\n1.2.3.5\n');
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, '1.2.3.4/31\n');
      assert.match(r.stderr, /standard input: 2 lines/);
    }
  });

  it('shows the first malformed lines and says how many more there are', () => {
    const r = exoledge(['aggregate', '-'], 'nope\n'.repeat(25));
    assert.equal(r.status, 0);
    assert.equal(r.stdout, '');
    assert.equal((r.stderr.match(/NotAnAddress/g) ?? []).length, 10);
    assert.match(r.stderr, /and 15 more/);
  });

  it('refuses a wrong command line with exit status 2, a message saying what is wrong, and no output', () => {
    const cases: [string[], RegExp][] = [
      [[], /no command given/],
      [['merge', listFile], /unknown command "merge"/],
      [['aggregate', '--max', '3', listFile], /Unknown option '--max'/],
      [['aggregate', '--max-entries', '0', listFile], /--max-entries takes an integer from 1/],
      [['aggregate', '--max-entries', 'ten', listFile], /--max-entries takes an integer from 1/],
      [['aggregate', '--max-entries', '-5', listFile], /--max-entries/],
      [
        ['aggregate', '--min-prefix-length', '33', listFile],
        /--min-prefix-length takes an integer from 0 to 32, not "33"/,
      ],
      [['aggregate', listFile, listFile], /one input at most, got 2/],
      [
        ['aggregate', '--shortest-prefix-ipv4', '33', listFile],
        /--shortest-prefix-ipv4 takes an integer from 0 to 32, not "33"/,
      ],
      [
        ['aggregate', '--shortest-prefix-ipv6=129', listFile],
        /--shortest-prefix-ipv6 takes an integer from 0 to 128, not "129"/,
      ],
      [['aggregate', listFile, '--max-entries'], /--max-entries/],
    ];
    for (const [args, message] of cases) {
      const r = exoledge(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /usage: exoledge aggregate/);
      assert.equal(r.stdout, '');
    }
  });

  it('exits 1 when the input cannot be read, naming it', () => {
    const r = exoledge(['aggregate', join(dir, 'missing.txt')]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cannot read .*missing\.txt/);
  });

  it('prints its help on --help, with exit status 0', () => {
    for (const args of [['--help'], ['aggregate', '--help'], ['-h']]) {
      const r = exoledge(args);
      assert.equal(r.status, 0);
      assert.match(
        r.stdout,
        /^usage: exoledge aggregate \[--max-entries N\] \[--min-prefix-length N\] \[--shortest-prefix-ipv4 N\] \[--shortest-prefix-ipv6 N\] \[FILE\|-\]/,
      );
    }
  });

  it('prints the exit statuses in its help', () => {
    const { stdout } = exoledge(['--help']);
    assert.match(stdout, /--version +\S/);
    assert.match(stdout, /Exit status: 0 done.*1 the input could not\s+be read, 2 usage error/s);
  });

  it("prints the package's version on --version, read from its package.json", () => {
    const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    for (const args of [['--version'], ['aggregate', '--version']]) {
      const r = exoledge(args);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `${pkg.version}\n`);
    }
    // The operator process too, before it reads any kubeconfig.
    const r = spawnSync(process.execPath, [join(packageDir, 'src/main.ts'), '--version'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${pkg.version}\n`);
  });

  it('the operator process refuses an unknown flag with status 2, as its help says, before any cluster', () => {
    const help = spawnSync(process.execPath, [join(packageDir, 'src/main.ts'), '--help'], {
      env,
      encoding: 'utf8',
    });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /--version +\S/);
    assert.match(help.stdout, /Exit status: .*2 bad flag/s);
    const r = spawnSync(process.execPath, [join(packageDir, 'src/main.ts'), '--bogus'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^exoledge: Unknown option '--bogus'/);
  });

  it('stops quietly, with status 0, when its reader stops early (`| head`)', () => {
    // Far more output than a pipe buffer holds, so the write meets the closed pipe.
    const big = join(dir, 'big.txt');
    writeFileSync(
      big,
      Array.from({ length: 40_000 }, (_, i) => `10.${i >> 8}.${i & 255}.${i % 2 === 0 ? 1 : 3}`).join('\n'),
    );
    const r = spawnSync('bash', ['-c', 'set -o pipefail; "$0" aggregate "$1" | head -n 1', bin, big], {
      env,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '10.0.0.1/32\n');
    assert.doesNotMatch(r.stderr, /EPIPE|Error/);
  });

  it('runs as `npx exoledge aggregate FILE` from the repository root', () => {
    // --no: never fetch a package of that name from the registry; ours must be found locally.
    const r = spawnSync('npx', ['--no', 'exoledge', 'aggregate', listFile], {
      cwd: repoRoot,
      encoding: 'utf8',
      env,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '10.0.0.0/22\n192.0.2.64/28\n198.51.100.7/32\n2001:db8::1/128\n');
  });
});
