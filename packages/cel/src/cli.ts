/**
 * `kube-cel`: evaluate a CEL expression as the apiserver would, for people debugging rules.
 *
 *   kube-cel eval 'object.spec.replicas > 2' --var object=deploy.yaml
 *   kube-cel eval 'source.metadata.name' --var source=user.json --json-var n='{"a":1}'
 *   kube-cel check 'object.spec.x == 1' --declare object
 *
 * `eval` prints the value as JSON (or the CEL value when JSON cannot carry it) and exits
 * 0; a compile or evaluation error is printed with its line, column and a caret, and the
 * exit code is 1. `check` only compiles. Files ending in .json are read with the
 * apiserver's integer rule (`2` is an int, `2.0` a double); other files as YAML.
 */
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { CelEnvironment, type CelValue, formatCelError, parseJson, parseYaml, toJson } from './index.ts';

const USAGE = `usage: kube-cel eval|check <expression> [options] | --help | --version

Evaluates or checks a CEL expression as the apiserver would (Kubernetes value semantics,
the Kubernetes libraries, the cost bound).

Commands:
  eval <expression>        evaluate it; prints the value as JSON (or the CEL value when
                           JSON cannot carry it)
  check <expression>       compile and type-check it only; prints its output type
  help                     print this help

Options:
  --var NAME=FILE          bind NAME to the content of FILE: .json read with the
                           apiserver's integer rule (2 an int, 2.0 a double), else YAML
  --json-var NAME=JSON     bind NAME to a JSON value given inline
  --declare NAME[:TYPE]    declare a variable for check without a value (TYPE default dyn)
  --cost-limit N           the evaluation cost bound (the apiserver's per expression by
                           default)
  -h, --help               print this help
  --version                print kube-cel's version

Exit status: 0 done, 1 a compile or evaluation error (printed with its line, column and
a caret), 2 usage error (nothing was evaluated).
`;

interface Options {
  readonly command: string;
  readonly expression: string;
  readonly values: Record<string, CelValue>;
  readonly types: Record<string, string>;
  readonly costLimit: number | undefined;
}

/** A usage error: the reason, the usage line, and where the rest is; exit status 2. */
function fail(message: string): never {
  process.stderr.write(
    `kube-cel: ${message}\n${USAGE.slice(0, USAGE.indexOf('\n'))}\n(kube-cel --help for more)\n`,
  );
  process.exit(2);
}

/** This package's version, read at run time: package.json is the one place it is written. */
function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  if (typeof pkg !== 'object' || pkg === null || !('version' in pkg) || typeof pkg.version !== 'string')
    throw new Error('package.json has no version');
  return pkg.version;
}

/** The options, or undefined when the command line asks for the help or the version (printed here). */
function parseArgs(argv: readonly string[]): Options | undefined {
  // Only where a flag may stand, so that a value such as `--json-var x=-h` stays a value.
  const flags = [argv[0], argv[1], ...argv.slice(2).filter((_, i) => i % 2 === 0)];
  if (argv[0] === 'help' || flags.some((a) => a === '-h' || a === '--help')) {
    process.stdout.write(USAGE);
    return undefined;
  }
  if (flags.includes('--version')) {
    process.stdout.write(`${packageVersion()}\n`);
    return undefined;
  }
  const [command, expression, ...rest] = argv;
  if (command === undefined) fail('no command given');
  if (command !== 'eval' && command !== 'check') fail(`unknown command "${command}"`);
  if (expression === undefined) fail(`${command} needs an expression`);
  const values: Record<string, CelValue> = {};
  const types: Record<string, string> = {};
  let costLimit: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    if (flag !== '--var' && flag !== '--json-var' && flag !== '--declare' && flag !== '--cost-limit')
      fail(`unknown option ${flag}`);
    const arg = rest[++i];
    if (arg === undefined) fail(`${flag} needs a value`);
    switch (flag) {
      case '--var':
      case '--json-var': {
        const eq = arg.indexOf('=');
        if (eq <= 0) fail(`${flag} takes name=value, got ${arg}`);
        const name = arg.slice(0, eq);
        const src = arg.slice(eq + 1);
        const text = flag === '--var' ? readFileSync(src, 'utf8') : src;
        const parsed = flag === '--json-var' || src.endsWith('.json') ? parseJson(text) : parseYaml(text);
        if (!parsed.ok) fail(`${name}: ${parsed.error.message}`);
        values[name] = parsed.value;
        types[name] = 'dyn';
        break;
      }
      case '--declare': {
        const [name = '', type = 'dyn'] = arg.split(':');
        types[name] = type;
        break;
      }
      case '--cost-limit':
        costLimit = Number(arg);
        break;
      default:
        return flag satisfies never;
    }
  }
  return { command, expression, values, types, costLimit };
}

function main(argv: readonly string[]): number {
  const opts = parseArgs(argv);
  if (opts === undefined) return 0;
  const env = new CelEnvironment({
    variables: opts.types,
    ...(opts.costLimit ? { costLimit: opts.costLimit } : {}),
  });
  const program = env.compile(opts.expression);
  if (!program.ok) {
    process.stderr.write(`${program.error.kind} error at ${formatCelError(program.error)}\n`);
    return 1;
  }
  if (opts.command === 'check') {
    process.stdout.write(`ok: ${program.value.outputType}\n`);
    return 0;
  }
  const result = program.value.evaluate(opts.values);
  if (!result.ok) {
    process.stderr.write(`${result.error.kind} error at ${formatCelError(result.error)}\n`);
    return 1;
  }
  const asJson = toJson(result.value);
  process.stdout.write(
    asJson.ok ? `${JSON.stringify(asJson.value, null, 2)}\n` : `${inspect(result.value, { depth: 6 })}\n`,
  );
  return 0;
}

process.exitCode = main(process.argv.slice(2));
