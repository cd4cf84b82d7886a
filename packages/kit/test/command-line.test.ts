/**
 * The manager's standard command line (`commandLine`), parsed without effects
 * (`parseCommandLine`): the shared flags and their prefixed variables, an operator's own
 * flags with their variables and parsers, bad flags as messages naming the flag, and the
 * help worded once with the operator's name, prefix and Lease put in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  commandLineHelp,
  DEFAULT_CLIENT_RATE_LIMIT,
  durationMs,
  ExitCode,
  FlagError,
  flag,
  listFlag,
  type ParsedCommandLine,
  parseCommandLine,
  port,
  required,
  switchFlag,
} from '../src/index.ts';

const spec = {
  name: 'demo-operator',
  command: 'node operators/demo/src/main.ts',
  envPrefix: 'DEMO_',
  lease: 'demo.example.com',
  packageJson: new URL('../package.json', import.meta.url),
  flags: {
    resync: flag({
      value: 'DURATION',
      env: 'DEMO_RESYNC',
      help: 'how often; default 5m',
      parse: durationMs(300_000),
    }),
    'work-dir': flag({ value: 'DIR', env: ['DEMO_WORK_DIR', 'DEMO_OLD_WORK_DIR'], help: 'where' }),
    namespace: flag({
      value: 'NS',
      env: 'POD_NAMESPACE',
      help: 'required',
      parse: required('it reads there'),
    }),
    'webhook-port': flag({ value: 'N', help: 'the webhooks', parse: port(9443) }),
    url: listFlag({ value: 'URL', env: 'DEMO_URLS', help: 'repeatable' }),
    dry: switchFlag({ env: 'DEMO_DRY', help: 'change nothing' }),
  },
};

type Parsed = ParsedCommandLine<typeof spec.flags>;

function run(parsed: Parsed) {
  assert.equal(parsed.kind, 'run', parsed.kind === 'bad-flag' ? parsed.message : parsed.kind);
  return parsed as Extract<Parsed, { kind: 'run' }>;
}

function badFlag(parsed: { readonly kind: string; readonly message?: string }): string {
  assert.equal(parsed.kind, 'bad-flag');
  return parsed.message ?? '';
}

const env = { POD_NAMESPACE: 'ops' };

describe('parseCommandLine', () => {
  it('gives the defaults: secure metrics on 8443, probes on 8081, the client rate limit, info, election in POD_NAMESPACE', () => {
    const { settings, flags } = run(parseCommandLine(spec, [], env));
    assert.deepEqual(settings, {
      kubeconfig: undefined,
      leaderElection: {
        namespace: 'ops',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
      healthProbe: { port: 8081 },
      metrics: { port: 8443, secure: {} },
      rateLimit: DEFAULT_CLIENT_RATE_LIMIT,
      logLevel: 'info',
    });
    assert.deepEqual(flags, {
      resync: 300_000,
      'work-dir': undefined,
      namespace: 'ops',
      'webhook-port': 9443,
      url: [],
      dry: false,
    });
  });

  it('reads each shared flag, and its variable with the prefix when the flag is absent; the flag wins', () => {
    const viaEnv = run(
      parseCommandLine(spec, [], {
        ...env,
        KUBECONFIG: '/k',
        DEMO_HEALTH_PORT: '9081',
        DEMO_METRICS_PORT: '9443',
        DEMO_METRICS_CERT_DIR: '/certs',
        DEMO_KUBE_API_QPS: '50',
        DEMO_KUBE_API_BURST: '100',
        DEMO_LOG_LEVEL: 'debug',
        DEMO_LEADER_ELECTION_NAMESPACE: 'elect',
      }),
    ).settings;
    assert.deepEqual(viaEnv, {
      kubeconfig: '/k',
      leaderElection: {
        namespace: 'elect',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
      healthProbe: { port: 9081 },
      metrics: { port: 9443, secure: { tls: { certDir: '/certs' } } },
      rateLimit: { qps: 50, burst: 100 },
      logLevel: 'debug',
    });
    const viaFlags = run(
      parseCommandLine(
        spec,
        [
          '--kubeconfig=/f',
          '--health-port',
          '1',
          '--metrics-port',
          '2',
          '--kube-api-qps',
          '3',
          '--log-level',
          'warn',
        ],
        {
          ...env,
          KUBECONFIG: '/k',
          DEMO_HEALTH_PORT: '9081',
          DEMO_METRICS_PORT: '9443',
          DEMO_LOG_LEVEL: 'debug',
        },
      ),
    ).settings;
    assert.equal(viaFlags.kubeconfig, '/f');
    assert.deepEqual(viaFlags.healthProbe, { port: 1 });
    assert.equal(viaFlags.metrics.port, 2);
    assert.deepEqual(viaFlags.rateLimit, { qps: 3, burst: DEFAULT_CLIENT_RATE_LIMIT.burst });
    assert.equal(viaFlags.logLevel, 'warn');
  });

  it('serves plain HTTP metrics on 8080 with --insecure-metrics or PREFIX_METRICS_SECURE=false', () => {
    for (const [argv, e] of [
      [['--insecure-metrics'], env],
      [[], { ...env, DEMO_METRICS_SECURE: 'false' }],
    ] as const) {
      assert.deepEqual(run(parseCommandLine(spec, argv, e)).settings.metrics, { port: 8080 });
    }
  });

  it('elects only with a namespace; PREFIX_LEADER_ELECTION=false turns it off; --leader-elect without one is a bad flag', () => {
    assert.equal(run(parseCommandLine(spec, ['--namespace', 'x'], {})).settings.leaderElection, undefined);
    assert.equal(
      run(parseCommandLine(spec, [], { ...env, DEMO_LEADER_ELECTION: 'false' })).settings.leaderElection,
      undefined,
    );
    assert.deepEqual(run(parseCommandLine(spec, ['--leader-elect'], env)).settings.leaderElection, {
      namespace: 'ops',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    assert.match(
      badFlag(parseCommandLine(spec, ['--leader-elect', '--namespace', 'x'], {})),
      /^--leader-elect needs POD_NAMESPACE/,
    );
  });

  it("takes client-go's three lease timings from flags or prefixed variables, and refuses an order that would let two leaders act", () => {
    const flags = run(
      parseCommandLine(
        spec,
        [
          '--leader-elect-lease-duration',
          '30s',
          '--leader-elect-renew-deadline',
          '20s',
          '--leader-elect-retry-period',
          '4s',
        ],
        env,
      ),
    );
    assert.deepEqual(flags.settings.leaderElection, {
      namespace: 'ops',
      leaseDurationMs: 30_000,
      renewDeadlineMs: 20_000,
      retryPeriodMs: 4_000,
    });
    const vars = run(
      parseCommandLine(spec, [], {
        ...env,
        DEMO_LEADER_ELECTION_LEASE_DURATION: '1m',
        DEMO_LEADER_ELECTION_RENEW_DEADLINE: '40s',
        DEMO_LEADER_ELECTION_RETRY_PERIOD: '5s',
      }),
    );
    assert.deepEqual(vars.settings.leaderElection, {
      namespace: 'ops',
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
      retryPeriodMs: 5_000,
    });
    // A renew deadline at or past the lease: a leader that cannot renew would still act
    // when a standby takes over.
    assert.match(
      badFlag(parseCommandLine(spec, ['--leader-elect-renew-deadline', '15s'], env)),
      /^--leader-elect-\*: renewDeadlineMs \(15000\) must exceed|leaseDurationMs \(15000\) must exceed renewDeadlineMs \(15000\)/,
    );
    assert.match(
      badFlag(parseCommandLine(spec, ['--leader-elect-retry-period', 'soon'], env)),
      /^--leader-elect-retry-period: not a duration/,
    );
  });

  it("elects in the operator's own namespace flag (namespaceFlag) when no other namespace is known", () => {
    const withOwn = { ...spec, namespaceFlag: 'namespace' as const };
    assert.deepEqual(run(parseCommandLine(withOwn, ['--namespace', 'mine'], {})).settings.leaderElection, {
      namespace: 'mine',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    assert.deepEqual(run(parseCommandLine(withOwn, ['--namespace', 'mine'], env)).settings.leaderElection, {
      namespace: 'ops',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    assert.equal(run(parseCommandLine(spec, ['--namespace', 'mine'], {})).settings.leaderElection, undefined);
  });

  it("reads the operator's flags, their variables in order, lists and switches, through their parsers", () => {
    const { flags } = run(
      parseCommandLine(spec, ['--resync', '1m', '--url', 'a', '--url', 'b,c', '--dry'], {
        ...env,
        DEMO_OLD_WORK_DIR: '/old',
        DEMO_URLS: 'x,y',
      }),
    );
    assert.equal(flags.resync, 60_000);
    assert.equal(flags['work-dir'], '/old');
    assert.deepEqual(flags.url, ['a', 'b,c']);
    assert.equal(flags.dry, true);
    const fromEnv = run(
      parseCommandLine(spec, [], { ...env, DEMO_WORK_DIR: '/new', DEMO_URLS: 'x, y,', DEMO_DRY: 'true' }),
    ).flags;
    assert.equal(fromEnv['work-dir'], '/new');
    assert.deepEqual(fromEnv.url, ['x', 'y']);
    assert.equal(fromEnv.dry, true);
  });

  it('refuses bad flags and bad variables with a message naming the flag', () => {
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [['--no-such-flag'], env, /Unknown option '--no-such-flag'[\s\S]*\(--help lists the flags\)/],
      [['--resync'], env, /argument missing/],
      [['extra'], env, /positional/],
      [['--health-port', '70000'], env, /^--health-port: not a port: 70000$/],
      [['--metrics-port', 'https'], env, /^--metrics-port: not a port: https$/],
      [[], { ...env, DEMO_HEALTH_PORT: '-1' }, /^--health-port: not a port: -1$/],
      [['--webhook-port', '8.5'], env, /^--webhook-port: not a port: 8\.5$/],
      [['--kube-api-qps', '0'], env, /^--kube-api-qps: not a positive number: 0$/],
      [[], { ...env, DEMO_KUBE_API_BURST: 'many' }, /^--kube-api-burst: not a positive number: many$/],
      [['--log-level', 'loud'], env, /^--log-level: not one of fatal, error/],
      [[], { ...env, DEMO_METRICS_SECURE: 'maybe' }, /^--insecure-metrics: not true or false: maybe$/],
      [['--resync', 'soon'], env, /^--resync: not a duration such as 30s or 5m: soon$/],
      [[], { ...env, DEMO_RESYNC: '5 minutes' }, /^--resync: not a duration/],
      [[], {}, /^--namespace: required \(by the flag or its variable\): it reads there$/],
      [[], { ...env, DEMO_DRY: 'yes please' }, /^--dry: not true or false/],
    ];
    for (const [argv, e, says] of cases)
      assert.match(badFlag(parseCommandLine(spec, argv, e)), says, argv.join(' '));
  });

  it('answers --help and -h with the help, --version with the version, before reading anything else', () => {
    for (const argv of [['--help'], ['-h'], ['--health-port', 'x', '--help']]) {
      const parsed = parseCommandLine(spec, argv, {});
      assert.equal(parsed.kind, 'help', argv.join(' '));
      assert.equal(parsed.kind === 'help' && parsed.text, commandLineHelp(spec));
    }
    assert.equal(parseCommandLine(spec, ['--version'], {}).kind, 'version');
  });

  it('refuses an operator flag that redeclares one of the manager flags', () => {
    const clash = { ...spec, flags: { 'health-port': flag({ value: 'N', help: 'mine' }) } };
    assert.throws(() => parseCommandLine(clash, [], env), /--health-port is one of the manager's flags/);
  });

  it("a parser's FlagError names the flag even when the value came from a variable", () => {
    const strict = {
      ...spec,
      flags: {
        mode: flag({
          value: 'M',
          env: 'DEMO_MODE',
          help: 'a or b',
          parse: (t: string | undefined) => {
            if (t !== undefined && t !== 'a' && t !== 'b') throw new FlagError(`not a or b: ${t}`);
            return t ?? 'a';
          },
        }),
      },
    };
    assert.equal(badFlag(parseCommandLine(strict, [], { DEMO_MODE: 'c' })), '--mode: not a or b: c');
  });
});

describe('commandLineHelp', () => {
  it("lists the shared flags with the prefixed variables, then the operator's own, then the exit statuses", () => {
    const help = commandLineHelp(spec);
    assert.ok(help.startsWith('usage: node operators/demo/src/main.ts [flags]\n'), help);
    for (const line of [
      /^ {2}--kubeconfig PATH +\(KUBECONFIG\)/m,
      /^ {2}--health-port N +\(DEMO_HEALTH_PORT\) .*default 8081$/m,
      /^ {2}--metrics-port N +\(DEMO_METRICS_PORT\)/m,
      /^ {2}--insecure-metrics +\(DEMO_METRICS_SECURE=false\)/m,
      /^ {2}--leader-election-namespace NS +\(DEMO_LEADER_ELECTION_NAMESPACE, else POD_NAMESPACE, else/m,
      /Lease demo\.example\.com/,
      /^ {2}--kube-api-qps N +\(DEMO_KUBE_API_QPS\)/m,
      /^ {2}--log-level LEVEL +\(DEMO_LOG_LEVEL\)/m,
      /^demo-operator's flags:\n {2}--resync DURATION +\(DEMO_RESYNC\) how often; default 5m$/m,
      /^ {2}--work-dir DIR +\(DEMO_WORK_DIR, else DEMO_OLD_WORK_DIR\) where$/m,
      /^ {2}--dry +\(DEMO_DRY\) change nothing$/m,
      /^Exit status: 0 .*\n.* 2 bad flag, 3 the cluster lacks a CRD it needs\.\n$/m,
    ]) {
      assert.match(help, line);
    }
  });

  it('states the exit codes ExitCode gives', () => {
    assert.deepEqual(ExitCode, { Stopped: 0, Failed: 1, BadFlag: 2, MissingCrd: 3 });
  });
});
