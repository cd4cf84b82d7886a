/**
 * The manager's standard command line, shared by every operator's `main.ts` as
 * controller-runtime projects share `ctrl.Options` and its flag set. The kit owns the
 * flags every operator has (kubeconfig, leader election, probe and metrics ports,
 * metrics security, client rate limit, log level, help, version), each with an
 * environment variable named with the operator's prefix, for a Deployment's env; an
 * operator declares only its own flags. One call parses both, prints the help (the
 * shared part worded once, here), refuses a bad flag with exit status 2 before any
 * cluster is contacted, and returns the operator's parsed flags with a ready client,
 * logger and the Manager's option pieces.
 *
 * Exit statuses, the same for every operator: {@link ExitCode}.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { parseDurationMs } from '../base/duration.ts';
import { KubeClient } from '../client/client.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import { DEFAULT_CLIENT_RATE_LIMIT, type RateLimit } from '../client/token-bucket.ts';
import type { GroupVersionKind } from '../client/types.ts';
import type { MetricsEndpointOptions, ProbeEndpointOptions } from './endpoint.ts';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  type LeaderElectionSettings,
  validateLeaderElectionTiming,
} from './leader-election.ts';
import type { Manager } from './manager.ts';

/** How an operator process ends; the help states the same. */
export const ExitCode = {
  /** SIGTERM or SIGINT, and a graceful stop (or --help, --version). */
  Stopped: 0,
  /** A lost lease (restart it as a candidate), or a failure. */
  Failed: 1,
  /** A flag or its variable is wrong: nothing was contacted. */
  BadFlag: 2,
  /** The cluster does not serve a kind the operator needs. */
  MissingCrd: 3,
} as const;

/** A flag's value refused by its parser: the message says why, the kit names the flag. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
}

type FlagKind = 'text' | 'switch' | 'list';
/** What a parser gets: the flag's text (or its variable's), the switch, or the repeated values. */
type Raw<K extends FlagKind> = K extends 'switch'
  ? boolean
  : K extends 'list'
    ? readonly string[]
    : string | undefined;

/** One flag of the command line: build it with {@link flag}, {@link switchFlag} or {@link listFlag}. */
export interface Flag<T, K extends FlagKind = FlagKind> {
  readonly kind: K;
  /** The value's placeholder in the help (`DURATION`); none for a switch. */
  readonly value?: string;
  /** Read, first set first, when the flag is not given. */
  readonly env: readonly string[];
  /** What the help says after the flag and its variables; `\n` starts an aligned line. */
  readonly help: string;
  /** The raw value → the operator's value; a {@link FlagError} is a bad flag (exit 2). */
  readonly parse: (raw: Raw<K>) => T;
}

interface FlagText {
  readonly value: string;
  readonly env?: string | readonly string[];
  readonly help: string;
}

const envList = (env: string | readonly string[] | undefined): readonly string[] =>
  env === undefined ? [] : typeof env === 'string' ? [env] : env;

/** A flag with a value (`--resync 5m`); its text, or `parse`'s value of it. */
export function flag(spec: FlagText): Flag<string | undefined, 'text'>;
export function flag<T>(
  spec: FlagText & { readonly parse: (text: string | undefined) => T },
): Flag<T, 'text'>;
export function flag<T>(
  spec: FlagText & { readonly parse?: (text: string | undefined) => T },
): Flag<T | string | undefined, 'text'> {
  return {
    kind: 'text',
    value: spec.value,
    env: envList(spec.env),
    help: spec.help,
    parse: spec.parse ?? ((t) => t),
  };
}

/** A flag without a value: true when given, or when its variable says `true`. */
export function switchFlag(spec: Omit<FlagText, 'value'>): Flag<boolean, 'switch'> {
  return { kind: 'switch', env: envList(spec.env), help: spec.help, parse: (on) => on };
}

/** A repeatable flag; its variable holds the values comma-separated. */
export function listFlag<T = readonly string[]>(
  spec: FlagText & { readonly parse?: (texts: readonly string[]) => T },
): Flag<T, 'list'> {
  const parse = spec.parse ?? ((texts: readonly string[]) => texts as T);
  return { kind: 'list', value: spec.value, env: envList(spec.env), help: spec.help, parse };
}

/** A parser: a duration such as `30s` or `5m` in milliseconds, `fallback` when not given. */
export function durationMs(fallback: number): (text: string | undefined) => number {
  return (text) => {
    if (text === undefined) return fallback;
    const ms = parseDurationMs(text);
    if (!ms) throw new FlagError(`not a duration such as 30s or 5m: ${text}`);
    return ms;
  };
}

/** A parser: a TCP port, 0 to 65535 (0 picks a free one), `fallback` when not given. */
export function port(fallback: number): (text: string | undefined) => number {
  return (text) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!/^\d+$/.test(text.trim()) || n > 65535) throw new FlagError(`not a port: ${text}`);
    return n;
  };
}

/** A parser: a value that must be given, by the flag or a variable. */
export function required(why: string): (text: string | undefined) => string {
  return (text) => {
    if (!text) throw new FlagError(`required (by the flag or its variable): ${why}`);
    return text;
  };
}

type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean; short?: string };

/** The flags every operator shares, as parseArgs reads them: declared once, so every help words them the same. */
const SHARED_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  kubeconfig: { type: 'string' },
  'leader-elect': { type: 'boolean' },
  'leader-election-namespace': { type: 'string' },
  'leader-elect-lease-duration': { type: 'string' },
  'leader-elect-renew-deadline': { type: 'string' },
  'leader-elect-retry-period': { type: 'string' },
  'health-port': { type: 'string' },
  'metrics-port': { type: 'string' },
  'insecure-metrics': { type: 'boolean' },
  'metrics-cert-dir': { type: 'string' },
  'kube-api-qps': { type: 'string' },
  'kube-api-burst': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
};

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** The help's column where descriptions start: fits the longest flag of any operator. */
const HELP_COLUMN = 42;

export interface CommandLineSpec<F extends Record<string, Flag<unknown>>> {
  /** In messages and logs: `terdut-operator`. */
  readonly name: string;
  /** The usage line's command: `node operators/terdut/src/main.ts`. */
  readonly command: string;
  /** Of the shared flags' variables: `TERDUT_` gives TERDUT_HEALTH_PORT; weebo-link's is ''. */
  readonly envPrefix: string;
  /** The Lease one replica holds while it leads, named in the help. */
  readonly lease: string;
  /** The operator's package.json: `--version` prints its version. */
  readonly packageJson: URL;
  /** The operator's own flags, by name (without `--`). */
  readonly flags: F;
  /** Said after the flags: settings read only from the environment. */
  readonly notes?: string;
  /** The own flag naming the operator's namespace: the Lease's, after POD_NAMESPACE. */
  readonly namespaceFlag?: Extract<keyof F, string>;
}

/** The operator's own flags, parsed. */
export type FlagValues<F extends Record<string, Flag<unknown>>> = {
  readonly [K in keyof F]: F[K] extends Flag<infer T> ? T : never;
};

/** The shared flags, parsed: what the Manager and the client are made with. */
export interface ManagerSettings {
  readonly kubeconfig: string | undefined;
  /** Set when a replica elects a leader: a namespace is known and election is not turned off. */
  readonly leaderElection: Required<LeaderElectionSettings> | undefined;
  readonly healthProbe: ProbeEndpointOptions;
  readonly metrics: MetricsEndpointOptions;
  readonly rateLimit: RateLimit;
  readonly logLevel: string;
}

export type ParsedCommandLine<F extends Record<string, Flag<unknown>>> =
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'version' }
  | { readonly kind: 'bad-flag'; readonly message: string }
  | { readonly kind: 'run'; readonly settings: ManagerSettings; readonly flags: FlagValues<F> };

/** The help: the shared flags (worded here, the operator's name and prefix put in), then the operator's. */
export function commandLineHelp<F extends Record<string, Flag<unknown>>>(spec: CommandLineSpec<F>): string {
  const p = spec.envPrefix;
  const shared: [string, string][] = [
    ['--kubeconfig PATH', "(KUBECONFIG) default: ~/.kube/config, or the pod's service account"],
    [
      '--leader-election-namespace NS',
      `(${p}LEADER_ELECTION_NAMESPACE, else POD_NAMESPACE, else the operator's\nnamespace if it has one) where the Lease ${spec.lease} lives;\nno election when no namespace is known`,
    ],
    [
      '--leader-elect',
      `(${p}LEADER_ELECTION=true|false) elect a leader whenever a namespace\nis known, unless false; given without a namespace, a bad flag`,
    ],
    [
      '--leader-elect-lease-duration DURATION',
      `(${p}LEADER_ELECTION_LEASE_DURATION) how long a standby waits, from the\nlast renewal it saw, before taking the Lease; default ${DEFAULT_LEASE_DURATION_MS / 1000}s`,
    ],
    [
      '--leader-elect-renew-deadline DURATION',
      `(${p}LEADER_ELECTION_RENEW_DEADLINE) how long the leader acts without a\nsuccessful renewal; below the lease duration; default ${DEFAULT_RENEW_DEADLINE_MS / 1000}s`,
    ],
    [
      '--leader-elect-retry-period DURATION',
      `(${p}LEADER_ELECTION_RETRY_PERIOD) the pause between two attempts to\nacquire or renew; below the renew deadline; default ${DEFAULT_RETRY_PERIOD_MS / 1000}s`,
    ],
    ['--health-port N', `(${p}HEALTH_PORT) /healthz and /readyz; default 8081`],
    [
      '--metrics-port N',
      `(${p}METRICS_PORT) /metrics; default 8443 (HTTPS, callers checked\nwith TokenReview + SubjectAccessReview), 8080 with --insecure-metrics`,
    ],
    ['--insecure-metrics', `(${p}METRICS_SECURE=false) plain HTTP /metrics on 127.0.0.1 only`],
    ['--metrics-cert-dir DIR', `(${p}METRICS_CERT_DIR) tls.crt and tls.key; self-signed when absent`],
    [
      '--kube-api-qps N',
      `(${p}KUBE_API_QPS) requests a second to the apiserver; default ${DEFAULT_CLIENT_RATE_LIMIT.qps}`,
    ],
    [
      '--kube-api-burst N',
      `(${p}KUBE_API_BURST) requests at once above that rate; default ${DEFAULT_CLIENT_RATE_LIMIT.burst}`,
    ],
    ['--log-level LEVEL', `(${p}LOG_LEVEL) ${LOG_LEVELS.join(', ')}; default info`],
    ['-h, --help', 'print this help'],
    ['--version', "print the operator's version"],
  ];
  const own = Object.entries(spec.flags).map(([name, f]): [string, string] => {
    const head = `--${name}${f.value ? ` ${f.value}` : ''}`;
    const vars = f.env.length ? `(${f.env.join(', else ')}) ` : '';
    return [head, `${vars}${f.help}`];
  });
  const lines = (rows: [string, string][]): string =>
    rows
      .map(([head, text]) => {
        const pad = ' '.repeat(Math.max(1, HELP_COLUMN - 2 - head.length));
        return `  ${head}${pad}${text.replaceAll('\n', `\n${' '.repeat(HELP_COLUMN)}`)}\n`;
      })
      .join('');
  return [
    `usage: ${spec.command} [flags]\n\n`,
    `The manager's flags, the same in every operator of this repository:\n`,
    lines(shared),
    own.length ? `\n${spec.name}'s flags:\n${lines(own)}` : '',
    spec.notes ? `\n${spec.notes.trimEnd()}\n` : '',
    '\nExit status: 0 after SIGTERM or SIGINT (a graceful stop), 1 after a lost lease (restart it\n',
    'as a candidate) or a failure, 2 bad flag, 3 the cluster lacks a CRD it needs.\n',
  ].join('');
}

/** The first set variable of `names`. */
function fromEnv(env: NodeJS.ProcessEnv, names: readonly string[]): string | undefined {
  for (const n of names) if (env[n] !== undefined) return env[n];
  return undefined;
}

function parseSwitch(text: string | undefined, name: string): boolean | undefined {
  if (text === undefined || text === '') return undefined;
  const t = text.toLowerCase();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  throw new FlagError(`--${name}: not true or false: ${text}`);
}

/**
 * The command line parsed, without effects: what to print or run. Variables stand in
 * for flags not given; a flag's parser's refusal is a bad flag naming the flag.
 */
export function parseCommandLine<F extends Record<string, Flag<unknown>>>(
  spec: CommandLineSpec<F>,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): ParsedCommandLine<F> {
  const clash = Object.keys(spec.flags).find((n) => n in SHARED_OPTIONS);
  if (clash) throw new Error(`--${clash} is one of the manager's flags: an operator cannot declare it`);
  const options: Record<string, OptionSpec> = { ...SHARED_OPTIONS };
  for (const [name, f] of Object.entries(spec.flags)) {
    options[name] = {
      type: f.kind === 'switch' ? 'boolean' : 'string',
      ...(f.kind === 'list' ? { multiple: true } : {}),
    };
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    // parseArgs refuses an unknown flag, a missing value or an argument with a TypeError.
    return {
      kind: 'bad-flag',
      message: `${e instanceof Error ? e.message : String(e)}\nusage: ${spec.command} [flags] (--help lists the flags)`,
    };
  }
  if (values.help) return { kind: 'help', text: commandLineHelp(spec) };
  if (values.version) return { kind: 'version' };
  const text = (name: string, ...vars: string[]): string | undefined => {
    const v = values[name];
    return typeof v === 'string'
      ? v
      : fromEnv(
          env,
          vars.map((s) => `${spec.envPrefix}${s}`),
        );
  };
  const p = spec.envPrefix;
  try {
    const flags: Record<string, unknown> = {};
    for (const [name, f] of Object.entries(spec.flags)) {
      try {
        flags[name] = parseOwn(f, values[name], fromEnv(env, f.env), name);
      } catch (e) {
        if (!(e instanceof FlagError) || e.message.startsWith('--')) throw e;
        throw new FlagError(`--${name}: ${e.message}`);
      }
    }
    const secure =
      !values['insecure-metrics'] && parseSwitch(env[`${p}METRICS_SECURE`], 'insecure-metrics') !== false;
    const electionAsked = values['leader-elect']
      ? true
      : parseSwitch(env[`${p}LEADER_ELECTION`], 'leader-elect');
    const own = spec.namespaceFlag === undefined ? undefined : flags[spec.namespaceFlag];
    const namespace =
      text('leader-election-namespace', 'LEADER_ELECTION_NAMESPACE') ??
      env.POD_NAMESPACE ??
      (typeof own === 'string' && own !== '' ? own : undefined);
    if (electionAsked && !namespace) {
      throw new FlagError(
        `--leader-elect needs POD_NAMESPACE or --leader-election-namespace (${p}LEADER_ELECTION_NAMESPACE): the Lease lives there`,
      );
    }
    const durationOf = (name: string, variable: string, fallback: number): number => {
      try {
        return durationMs(fallback)(text(name, variable));
      } catch (e) {
        throw new FlagError(`--${name}: ${(e as Error).message}`);
      }
    };
    const timing = {
      leaseDurationMs: durationOf(
        'leader-elect-lease-duration',
        'LEADER_ELECTION_LEASE_DURATION',
        DEFAULT_LEASE_DURATION_MS,
      ),
      renewDeadlineMs: durationOf(
        'leader-elect-renew-deadline',
        'LEADER_ELECTION_RENEW_DEADLINE',
        DEFAULT_RENEW_DEADLINE_MS,
      ),
      retryPeriodMs: durationOf(
        'leader-elect-retry-period',
        'LEADER_ELECTION_RETRY_PERIOD',
        DEFAULT_RETRY_PERIOD_MS,
      ),
    };
    try {
      validateLeaderElectionTiming(timing);
    } catch (e) {
      // The elector's own check, so that a bad order is a bad flag (exit 2), not a crash at start.
      throw new FlagError((e as Error).message.replace(/^leader election: /, '--leader-elect-*: '));
    }
    const numberOf = (name: string, raw: string | undefined, fallback: number): number => {
      if (raw === undefined) return fallback;
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || n <= 0)
        throw new FlagError(`--${name}: not a positive number: ${raw}`);
      return n;
    };
    const logLevel = text('log-level', 'LOG_LEVEL') ?? 'info';
    if (!LOG_LEVELS.includes(logLevel))
      throw new FlagError(`--log-level: not one of ${LOG_LEVELS.join(', ')}: ${logLevel}`);
    const portOf = (name: string, raw: string | undefined, fallback: number): number => {
      try {
        return port(fallback)(raw);
      } catch (e) {
        throw new FlagError(`--${name}: ${(e as Error).message}`);
      }
    };
    const certDir = text('metrics-cert-dir', 'METRICS_CERT_DIR');
    const metricsPort = portOf('metrics-port', text('metrics-port', 'METRICS_PORT'), secure ? 8443 : 8080);
    const settings: ManagerSettings = {
      kubeconfig: typeof values.kubeconfig === 'string' ? values.kubeconfig : env.KUBECONFIG,
      leaderElection: namespace && electionAsked !== false ? { namespace, ...timing } : undefined,
      healthProbe: { port: portOf('health-port', text('health-port', 'HEALTH_PORT'), 8081) },
      metrics: secure
        ? { port: metricsPort, secure: certDir ? { tls: { certDir } } : {} }
        : { port: metricsPort },
      rateLimit: {
        qps: numberOf('kube-api-qps', text('kube-api-qps', 'KUBE_API_QPS'), DEFAULT_CLIENT_RATE_LIMIT.qps),
        burst: numberOf(
          'kube-api-burst',
          text('kube-api-burst', 'KUBE_API_BURST'),
          DEFAULT_CLIENT_RATE_LIMIT.burst,
        ),
      },
      logLevel,
    };
    return { kind: 'run', settings, flags: flags as FlagValues<F> };
  } catch (e) {
    if (e instanceof FlagError) return { kind: 'bad-flag', message: e.message };
    throw e;
  }
}

/** One operator flag: the flag given, else its variable, through the flag's parser. */
function parseOwn(f: Flag<unknown>, given: unknown, fromVar: string | undefined, name: string): unknown {
  if (f.kind === 'switch') {
    const on = given === true || parseSwitch(fromVar, name) === true;
    return (f as Flag<unknown, 'switch'>).parse(on);
  }
  if (f.kind === 'list') {
    const texts = Array.isArray(given)
      ? given.map(String)
      : (fromVar ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
    return (f as Flag<unknown, 'list'>).parse(texts);
  }
  return (f as Flag<unknown, 'text'>).parse(typeof given === 'string' ? given : fromVar);
}

/** What an operator's main.ts wires its operator with. */
export interface CommandLine<F extends Record<string, Flag<unknown>>> extends ManagerSettings {
  /** The operator's own flags, parsed. */
  readonly flags: FlagValues<F>;
  /** Rate limited by --kube-api-qps and --kube-api-burst, counting its requests on `registry`. */
  readonly client: KubeClient;
  readonly registry: Registry;
  /** At --log-level, with the operator's name on each line. */
  readonly logger: Logger;
  /** Ends the process: `name: message` on standard error, then `code`. */
  fail(message: string, code: number): never;
  /** Exits 3 unless the cluster serves every kind; `install` says what to install for one. */
  requireKinds(
    kinds: readonly GroupVersionKind[],
    install: (kind: GroupVersionKind) => string,
  ): Promise<void>;
  /**
   * Starts the manager with SIGTERM/SIGINT handling (exit 0 stopped, 1 lost lease), then
   * logs `message` (default `<name> started`: what scripts wait for) with `fields`.
   */
  start(manager: Manager, fields: Record<string, unknown>, message?: string): Promise<void>;
}

/**
 * Parses the process's command line for the operator `spec`: prints the help or the
 * version and exits 0, or a bad flag's message and exits 2; else loads the client and
 * returns everything main.ts wires. A failure after this (a rejected start) is the
 * caller's: `start` exits 1 with its stack.
 */
export async function commandLine<F extends Record<string, Flag<unknown>>>(
  spec: CommandLineSpec<F>,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<CommandLine<F>> {
  const fail = (message: string, code: number): never => {
    process.stderr.write(`${spec.name}: ${message}\n`);
    process.exit(code);
  };
  const parsed = parseCommandLine(spec, argv, env);
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text);
    process.exit(ExitCode.Stopped);
  }
  if (parsed.kind === 'version') {
    const pkg = JSON.parse(readFileSync(spec.packageJson, 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    process.exit(ExitCode.Stopped);
  }
  if (parsed.kind === 'bad-flag') return fail(parsed.message, ExitCode.BadFlag);
  const { settings } = parsed;
  const registry = new Registry();
  const logger = pino({ base: { operator: spec.name }, level: settings.logLevel });
  let client: KubeClient;
  try {
    client = await KubeClient.load(settings.kubeconfig, { rateLimit: settings.rateLimit, registry });
  } catch (e) {
    return fail(e instanceof Error ? (e.stack ?? e.message) : String(e), ExitCode.Failed);
  }
  return {
    ...settings,
    flags: parsed.flags,
    client,
    registry,
    logger,
    fail,
    async requireKinds(kinds, install) {
      for (const kind of kinds) {
        try {
          await client.resolve(kind);
        } catch (err) {
          if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
          fail(
            `the cluster does not serve ${kind.kind} (${kind.apiVersion}): install ${install(kind)} first`,
            ExitCode.MissingCrd,
          );
        }
      }
    },
    async start(manager, fields, message = `${spec.name} started`) {
      manager.installSignalHandlers();
      try {
        await manager.start();
      } catch (e) {
        fail(e instanceof Error ? (e.stack ?? e.message) : String(e), ExitCode.Failed);
      }
      manager.log.info(
        {
          leaderElection: settings.leaderElection,
          healthProbe: settings.healthProbe,
          metricsPort: settings.metrics.port,
          ...fields,
        },
        message,
      );
    },
  };
}
