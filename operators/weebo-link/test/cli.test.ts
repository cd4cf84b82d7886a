/**
 * The `weebo-link` command as users run it: the installed bin (shebang, shim, TypeScript
 * behind it), as a child process. What a user relies on: the help names every command,
 * option and environment variable and says what the exit statuses mean; `--version` is
 * the package's; a wrong command line is refused with status 2 before anything runs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { RULES_CONFIGMAP, RULES_KEY } from '../src/controllers/rules.ts';

const packageDir = join(import.meta.dirname, '..');
const bin = join(packageDir, 'bin/weebo-link.js');
/** The shebang says `env node`: put the Node that runs the tests first, as npm and npx do. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };

interface Outcome {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function weeboLink(args: readonly string[]): Outcome {
  // A bounded run: a `run` that got past its argument check would otherwise wait on a cluster.
  const r = spawnSync(bin, args, { env, encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('weebo-link --help', () => {
  it('names every command and option, with what it does, on stdout with status 0', () => {
    for (const args of [['--help'], ['-h'], ['help'], ['check-rules', '--help']]) {
      const r = weeboLink(args);
      assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /^usage: weebo-link /, args.join(' '));
      for (const word of [
        /\n {2}run +\S/,
        /\n {2}check-rules FILE +\S/,
        /--kubeconfig PATH +\S/,
        /--in-cluster +\S/,
        /--policies RENDERED\.yaml +\S/,
        /--samples SAMPLES\.yaml +\S/,
        /-h, --help +\S/,
        /--version +\S/,
      ])
        assert.match(r.stdout, word, `${args.join(' ')}: ${word}`);
    }
  });

  it("`run --help` lists run's flags: the kit's manager flags and weebo-link's own, with their variables", () => {
    const r = weeboLink(['run', '--help']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: weebo-link run \[flags\]\n/);
    for (const word of [
      /--kubeconfig PATH +\(KUBECONFIG\)/,
      /--health-port N +\(HEALTH_PORT\) .*default 8081/,
      /--metrics-port N +\(METRICS_PORT\) .*default 8443/,
      /--insecure-metrics +\(METRICS_SECURE=false\)/,
      /--metrics-cert-dir DIR +\(METRICS_CERT_DIR\)/,
      /--leader-elect +\(LEADER_ELECTION=true\|false\)/,
      /--log-level LEVEL +\(LOG_LEVEL\)/,
      /--namespace NS +\(POD_NAMESPACE, else WEEBO_LINK_NAMESPACE\)/,
      /--rules-configmap NAME +\(RULES_CONFIGMAP\)/,
      /--resync-seconds N +\(RESYNC_SECONDS\) .*default 300/,
    ])
      assert.match(r.stdout, word, String(word));
  });

  it('says which environment `run` reads, with the defaults', () => {
    const { stdout } = weeboLink(['--help']);
    assert.match(stdout, /POD_NAMESPACE +\S/);
    // The help is written without loading the controllers (it is instant): held to their names here.
    assert.ok(
      stdout.includes(`default ${RULES_CONFIGMAP} (key ${RULES_KEY})`),
      'the rules ConfigMap and key',
    );
    assert.match(stdout, /HEALTH_PORT +.*8081/);
    assert.match(stdout, /METRICS_PORT +.*8443/);
    assert.match(stdout, /METRICS_SECURE +.*true/);
    assert.match(stdout, /METRICS_CERT_DIR +.*tls\.crt/);
    assert.match(stdout, /RESYNC_SECONDS +.*300/);
  });

  it('says what each exit status means', () => {
    const { stdout } = weeboLink(['--help']);
    const exit = stdout.slice(stdout.indexOf('Exit status'));
    assert.match(exit, /^Exit status/);
    assert.match(exit, /0 /);
    assert.match(exit, /1 [^,]*problem/);
    assert.match(exit, /2 usage error/);
  });
});

describe('weebo-link --version', () => {
  it("prints the package's version, read from its package.json", () => {
    const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    for (const args of [['--version'], ['check-rules', '--version']]) {
      const r = weeboLink(args);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `${pkg.version}\n`);
    }
  });
});

describe('weebo-link run', () => {
  it('exits 2 without its namespace, saying why on stderr, before any cluster', () => {
    const rest = Object.fromEntries(
      Object.entries(env).filter(([k]) => k !== 'POD_NAMESPACE' && k !== 'WEEBO_LINK_NAMESPACE'),
    );
    const r = spawnSync(bin, ['run'], { env: rest, encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^weebo-link: --namespace: required .*POD_NAMESPACE is not set/);
  });

  it('exits 1 when it cannot start, saying why on stderr', () => {
    const r = spawnSync(bin, ['run', '--namespace', 'ops', '--kubeconfig', '/nonexistent/kubeconfig'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^weebo-link: .*\/nonexistent\/kubeconfig/);
  });
});

describe('weebo-link on a wrong command line', () => {
  it('exits 2 with the reason and the usage on stderr, nothing on stdout, nothing run', () => {
    const cases: [string[], RegExp][] = [
      [[], /no command given/],
      [['nope'], /unknown command "nope"/],
      [['check-rules'], /check-rules needs a FILE/],
      [['check-rules', 'a.yaml', '--bogus'], /Unknown option '--bogus'/],
      [['check-rules', 'a.yaml', 'b.yaml'], /one FILE at most/],
      [['check-rules', 'a.yaml', '--kubeconfig'], /--kubeconfig/],
      [['check-rules', 'a.yaml', '--policies', 'p.yaml'], /--policies and --samples go together/],
      // Refused before any cluster is read: no POD_NAMESPACE is needed to say so.
      [['run', '--bogus'], /Unknown option '--bogus'/],
      [['run', 'extra'], /Unexpected argument 'extra'/],
    ];
    for (const [args, message] of cases) {
      const r = weeboLink(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /usage: weebo-link /, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });
});
