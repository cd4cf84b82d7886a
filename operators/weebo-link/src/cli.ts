/**
 * The `weebo-link` command: `run` is the controller (the chart's Deployment), configured
 * by its environment; `check-rules` checks rules before they ship (CI, the chart's helm
 * test). The help below is the reference a user reads: every command, option and
 * environment variable, and what the exit statuses mean; docs/weebo-link.md says the same.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
// Types only from the kit and the domain: they take a second to load (the kit, CEL), which
// `--help`, `--version` and a usage error should not wait for; the commands load them (see
// `loadCommandModules`).
import type { KubeClient, KubeObject } from '@operators/kit';
import { parse, parseAllDocuments } from 'yaml';

interface Io {
  readonly stdout: { write(s: string): unknown };
  readonly stderr: { write(s: string): unknown };
}

export const USAGE = `usage: weebo-link run | check-rules FILE [options] | --help | --version

Links between other operators' custom resources (RFC 0002): a source annotated
link.weebo.io/<header>: enabled gets a target made by its rule's CEL mapping; when the
source leaves, the target is patched to its safe state and kept (or deleted, if the rule
says then: Delete).

Commands:
  run [flags]                run the controller, as the chart's Deployment does: reads the
                             rules ConfigMap, keeps every target in step with its source,
                             until SIGTERM or SIGINT. Configured by the environment (below)
                             or the same settings as flags: weebo-link run --help
  check-rules FILE           check rules before they ship: structure, CEL compile and type
                             check, immutable paths; prints each rule's verdict and the RBAC
                             the valid rules need. FILE is a values file or the rules
                             ConfigMap (a links: document)
  help                       print this help

check-rules options:
  --kubeconfig PATH          also check each rule against that cluster's discovery (both
                             kinds served and namespaced, under the plural the RBAC names)
  --in-cluster               the same with the pod's service account (the chart's helm test)
  --policies RENDERED.yaml   evaluate the admission policies and bindings rendered by
                             helm template ...
  --samples SAMPLES.yaml     ... on these sample requests, offline: a YAML list of
                             {name, resource: {group, version, resource, subresource?},
                             operation, username, groups?, namespace?, object?, oldObject?,
                             expect: allowed|denied|not-covered}; resource is required
                             (never guessed from the kind); a sample no binding applies to
                             is "not covered", a problem unless it expects not-covered.
                             The two options go together

Options of every command:
  -h, --help                 print this help
  --version                  print weebo-link's version

Environment read by run:
  POD_NAMESPACE              required (or WEEBO_LINK_NAMESPACE): the release namespace, where
                             the rules ConfigMap and the Lease live
  RULES_CONFIGMAP            the rules ConfigMap; default weebo-link-rules (key links.yaml)
  KUBECONFIG                 default: ~/.kube/config, else the pod's service account
  LEADER_ELECTION            default true: two replicas, one acts (Lease weebo-link);
                             false only for a single replica
  HEALTH_PORT                /healthz and /readyz for the kubelet; default 8081
  METRICS_PORT               /metrics; default 8443 (8080 with METRICS_SECURE=false)
  METRICS_SECURE             default true: HTTPS, each scrape authenticated (TokenReview)
                             and authorized (SubjectAccessReview) by the apiserver;
                             false: plain HTTP on 127.0.0.1 only
  METRICS_CERT_DIR           tls.crt and tls.key for /metrics (a cert-manager Secret);
                             a self-signed certificate when unset
  RESYNC_SECONDS             full resync of every target; default 300 (it finds the
                             departures missed while weebo-link was down)
  LOG_LEVEL                  pino level; default info

Exit status: 0 all is well (check-rules: every rule valid and every sample as expected;
run: stopped by SIGTERM or SIGINT), 1 check-rules found a problem (each one is printed on
standard error), or run could not start or lost its Lease (to be restarted as a
candidate), 2 usage error (nothing was read or run).
`;

/** Exit statuses, as the help states them. */
export const ExitCode = {
  Ok: 0,
  /** check-rules found a problem; run could not start, or lost its Lease. */
  Problem: 1,
  /** The command line is wrong; nothing was read or run. */
  Usage: 2,
} as const;

/** A command line we refuse: the message says what to change. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface CheckRulesOptions {
  readonly file: string;
  readonly kubeconfig?: string;
  readonly inCluster?: boolean;
  readonly policies?: string;
  readonly samples?: string;
}

type Command =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'run'; readonly argv: readonly string[] }
  | { readonly kind: 'check-rules'; readonly options: CheckRulesOptions };

const COMMON_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

const CHECK_RULES_OPTIONS = {
  ...COMMON_OPTIONS,
  kubeconfig: { type: 'string' },
  'in-cluster': { type: 'boolean' },
  policies: { type: 'string' },
  samples: { type: 'string' },
} as const;

/** parseArgs, with its refusals (unknown option, missing value) as usage errors. */
function parseOptions<O extends typeof COMMON_OPTIONS | typeof CHECK_RULES_OPTIONS>(
  args: string[],
  options: O,
) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

function parseCommandLine(argv: readonly string[]): Command {
  const [command, ...rest] = argv;
  if (command === '-h' || command === '--help' || command === 'help') return { kind: 'help' };
  if (command === '--version') return { kind: 'version' };
  if (command === undefined) throw new UsageError('no command given');
  // run's flags are the kit's manager flags and weebo-link's own: main.ts parses them
  // (and prints run's help, `weebo-link run --help`).
  if (command === 'run') return { kind: 'run', argv: rest };
  if (command !== 'check-rules') throw new UsageError(`unknown command "${command}"`);
  const { values, positionals } = parseOptions(rest, CHECK_RULES_OPTIONS);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [file, ...more] = positionals;
  if (file === undefined)
    throw new UsageError('check-rules needs a FILE (a values file or the rules ConfigMap)');
  if (more.length)
    throw new UsageError(`one FILE at most, got ${positionals.length}: ${positionals.join(' ')}`);
  if (values.kubeconfig !== undefined && values['in-cluster'])
    throw new UsageError('--kubeconfig or --in-cluster, not both');
  if ((values.policies === undefined) !== (values.samples === undefined))
    throw new UsageError('--policies and --samples go together');
  return {
    kind: 'check-rules',
    options: {
      file,
      ...(values.kubeconfig === undefined ? {} : { kubeconfig: values.kubeconfig }),
      ...(values['in-cluster'] ? { inCluster: true } : {}),
      ...(values.policies === undefined ? {} : { policies: values.policies }),
      ...(values.samples === undefined ? {} : { samples: values.samples }),
    },
  };
}

/** What check-rules runs on, loaded when a command needs it. */
async function loadCommandModules() {
  const [kit, rules, domain] = await Promise.all([
    import('@operators/kit'),
    import('./controllers/rules.ts'),
    import('./domain/index.ts'),
  ]);
  return { ...kit, ...rules, ...domain };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** This package's version, read at run time: package.json is the one place it is written. */
export async function packageVersion(): Promise<string> {
  const pkg: unknown = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
  if (!isObject(pkg) || typeof pkg.version !== 'string') throw new Error('package.json has no version');
  return pkg.version;
}

/** Runs one command line and returns the exit status (`run` returns only if it cannot start). */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let command: Command;
  try {
    command = parseCommandLine(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr.write(
      `weebo-link: ${e.message}\n${USAGE.slice(0, USAGE.indexOf('\n'))}\n(weebo-link --help for more)\n`,
    );
    return ExitCode.Usage;
  }
  switch (command.kind) {
    case 'help':
      io.stdout.write(USAGE);
      return ExitCode.Ok;
    case 'version':
      io.stdout.write(`${await packageVersion()}\n`);
      return ExitCode.Ok;
    case 'run': {
      const { run } = await import('./main.ts');
      try {
        await run(command.argv);
      } catch (e) {
        // A setting missing or a kubeconfig unreadable: the message says which.
        io.stderr.write(`weebo-link: cannot start: ${e instanceof Error ? e.message : String(e)}\n`);
        return ExitCode.Problem;
      }
      // Running: the manager's signal handlers end the process (0 when stopped, 1 on a lost Lease).
      return await new Promise<number>(() => {});
    }
    case 'check-rules':
      return checkRules(command.options, io);
    default:
      return command satisfies never;
  }
}

/** The `links:` document of a values file or of the rules ConfigMap (whose data key is `key`). */
export function rulesText(text: string, key: string): string {
  const doc: unknown = (() => {
    try {
      return parse(text);
    } catch {
      return undefined;
    }
  })();
  if (isObject(doc) && doc.kind === 'ConfigMap' && isObject(doc.data)) return String(doc.data[key] ?? '');
  return text;
}

async function checkRules(opts: CheckRulesOptions, io: Io): Promise<number> {
  const { checkDiscovery, derivePolicyRules, KubeClient, loadRules, RULES_KEY } = await loadCommandModules();
  let failures = 0;
  const text = rulesText(await readFile(opts.file, 'utf8'), RULES_KEY);
  const { rules, errors, documentError } = loadRules(text);
  if (documentError) {
    io.stderr.write(`${opts.file}: ${documentError}\n`);
    return 1;
  }
  for (const e of errors) {
    failures++;
    io.stderr.write(`link ${e.link}: refused\n${e.problems.map((p) => `  - ${p}`).join('\n')}\n`);
  }
  let client: KubeClient | undefined;
  if (opts.kubeconfig || opts.inCluster) client = await KubeClient.load(opts.kubeconfig);
  for (const rule of rules) {
    const problems = client ? await checkDiscovery({ client }, rule) : [];
    if (problems.length) {
      failures++;
      io.stderr.write(
        `link ${rule.name}: refused by discovery\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
      );
    } else {
      io.stdout.write(
        `link ${rule.name}: ok (${rule.source.kind} in ${rule.source.namespaces.join(', ')} → ${rule.target.kind} in ${rule.target.namespace}${client ? ', served' : ''})\n`,
      );
    }
  }
  if (client) await client.transport.close();
  if (rules.length) {
    // By namespace, as the chart renders it: a Role in each, a ClusterRole for `*`.
    io.stdout.write('RBAC derived from the valid rules:\n');
    for (const [ns, grants] of Object.entries(derivePolicyRules(rules))) {
      io.stdout.write(ns === '*' ? '  every namespace (ClusterRole):\n' : `  namespace ${ns} (Role):\n`);
      for (const r of grants)
        io.stdout.write(`    ${r.apiGroups[0] || 'core'}/${r.resources[0]}: ${r.verbs.join(', ')}\n`);
    }
  }
  if (opts.policies && opts.samples) failures += await checkPolicies(opts.policies, opts.samples, io);
  if (failures) io.stderr.write(`${failures} problem(s)\n`);
  return failures ? ExitCode.Problem : ExitCode.Ok;
}

/** A YAML file's documents, or the parser's message. */
async function readYaml(path: string): Promise<{ ok: true; docs: unknown[] } | { ok: false; error: string }> {
  const docs = parseAllDocuments(await readFile(path, 'utf8'));
  const bad = docs.flatMap((d) => d.errors);
  if (bad.length) return { ok: false, error: `malformed YAML: ${bad[0]?.message}` };
  return { ok: true, docs: docs.map((d) => d.toJS()) };
}

/**
 * The rendered policies and their bindings evaluated on each sample, offline. A sample
 * says which resource it is for; one that does not is refused, not guessed. The verdict is
 * `allowed`, `denied` or `not covered` (no binding applies), judged against `expect`.
 * Returns the number of problems.
 */
async function checkPolicies(policiesFile: string, samplesFile: string, io: Io): Promise<number> {
  const { admit, unmodelled } = await loadCommandModules();
  const { readSamples, judgeSample } = await import('./domain/samples.ts');
  const rendered = await readYaml(policiesFile);
  if (!rendered.ok) {
    io.stderr.write(`${policiesFile}: ${rendered.error}\n`);
    return 1;
  }
  const objects = rendered.docs.filter(
    (o): o is KubeObject =>
      isObject(o) &&
      (o.kind === 'ValidatingAdmissionPolicy' || o.kind === 'ValidatingAdmissionPolicyBinding'),
  );
  let failures = 0;
  if (!objects.some((o) => o.kind === 'ValidatingAdmissionPolicyBinding')) {
    io.stderr.write(
      `${policiesFile}: no ValidatingAdmissionPolicyBinding (a policy without a binding is not enforced): give the output of helm template with policies.enabled\n`,
    );
    return 1;
  }
  for (const u of unmodelled(objects)) {
    failures++;
    io.stderr.write(
      `${policiesFile}: ${u}: not evaluated offline, the verdicts could differ from the apiserver's\n`,
    );
  }
  const file = await readYaml(samplesFile);
  const { samples, problems, documentError } = file.ok
    ? file.docs.length === 1
      ? readSamples(file.docs[0])
      : { samples: [], problems: [], documentError: 'one YAML document expected: the list of samples' }
    : { samples: [], problems: [], documentError: file.error };
  if (documentError) {
    io.stderr.write(`${samplesFile}: ${documentError}\n`);
    return failures + 1;
  }
  for (const p of problems) {
    failures++;
    io.stderr.write(`sample ${p.sample}: refused\n${p.problems.map((m) => `  - ${m}`).join('\n')}\n`);
  }
  const label = (v: string): string => (v === 'not-covered' ? 'not covered' : v);
  for (const s of samples) {
    const o = judgeSample(s, admit(objects, s.request));
    const detail = o.detail ? ` (${o.detail})` : '';
    if (o.ok) io.stdout.write(`sample ${s.name}: ${label(o.got)}${detail}\n`);
    else {
      failures++;
      io.stderr.write(`sample ${s.name}: expected ${label(s.expect)}, got ${label(o.got)}${detail}\n`);
    }
  }
  return failures;
}
