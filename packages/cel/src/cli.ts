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

const USAGE = `usage:
  kube-cel eval <expression> [--var name=file.json|file.yaml]... [--json-var name=<json>]... [--cost-limit n]
  kube-cel check <expression> [--declare name[:type]]... [--var ...]
`;

interface Options {
  readonly command: string;
  readonly expression: string;
  readonly values: Record<string, CelValue>;
  readonly types: Record<string, string>;
  readonly costLimit: number | undefined;
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function parseArgs(argv: readonly string[]): Options {
  const [command, expression, ...rest] = argv;
  if ((command !== 'eval' && command !== 'check') || expression === undefined) fail(USAGE);
  const values: Record<string, CelValue> = {};
  const types: Record<string, string> = {};
  let costLimit: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const arg = rest[++i];
    if (arg === undefined) fail(`${flag} needs a value\n${USAGE}`);
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
        fail(`unknown flag ${flag}\n${USAGE}`);
    }
  }
  return { command, expression, values, types, costLimit };
}

function main(argv: readonly string[]): number {
  const opts = parseArgs(argv);
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
