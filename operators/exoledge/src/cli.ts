/**
 * `exoledge aggregate`: the blocklist pipeline from the command line, to preview what a
 * BlocklistSource would publish under a given budget, and what the benchmark measures.
 * The result goes to standard output, one canonical prefix per line, so it can be piped
 * or hashed (`sha256sum` of it is the fingerprint); everything said about it goes to
 * standard error.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  type AggregateOptions,
  type AggregateResult,
  aggregateParsed,
} from './domain/blocklist/aggregate.ts';
import { type DropGroup, DropReason } from './domain/blocklist/budget.ts';
import { Fingerprinter } from './domain/blocklist/fingerprint.ts';
import { canonicalTextPieces } from './domain/blocklist/format.ts';
import {
  BlocklistParser,
  DEFAULT_SHORTEST_PREFIX,
  type ParseOptions,
  type ParseResult,
  type ShortestPrefix,
} from './domain/blocklist/parse.ts';

export const USAGE = `usage: exoledge aggregate [--max-entries N] [--min-prefix-length N] [--shortest-prefix-ipv4 N] [--shortest-prefix-ipv6 N] [FILE|-]

Reads a blocklist (one IPv4 or IPv6 address or prefix per line, # and ; comments),
merges it into the fewest prefixes covering exactly the same addresses, applies the
budget, and prints the result, one prefix per line. A summary goes to standard error.
An IPv4-mapped IPv6 entry (::ffff:1.2.3.4) is read as the IPv4 address it maps.

  FILE                     the list to read; - or nothing reads standard input
  --max-entries N          keep at most N prefixes (N >= 1), dropping the most specific first
  --min-prefix-length N    drop IPv4 prefixes longer than /N (0-32), lone addresses included,
                           and IPv6 prefixes longer than /N+96
  --shortest-prefix-ipv4 N refuse IPv4 prefixes shorter than /N (0-32, default 8): a
                           0.0.0.0/0 in a list would block everyone; refused lines are
                           reported like malformed ones
  --shortest-prefix-ipv6 N the same for IPv6 (0-128, default 32)
  -h, --help               print this help
  --version                print exoledge's version

Exit status: 0 done (malformed lines are reported, not fatal), 1 the input could not
be read, 2 usage error.
`;

/** Exit statuses. */
export const ExitCode = {
  Ok: 0,
  /** The input file could not be read. */
  InputError: 1,
  /** The command line is wrong; nothing was read. */
  Usage: 2,
} as const;

/** How many malformed (and refused) lines the summary shows one by one; the counts are always exact. */
export const MALFORMED_SHOWN = 10;

/** A command line we refuse: the message says what to change. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The streams a run uses: the bin passes the process's own. */
export interface Io {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
}

function integerOption(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`--${name} takes an integer from ${min} to ${max}, not "${text}"`);
  }
  return Number(text);
}

interface AggregateCommand {
  readonly kind: 'aggregate';
  /** `-` for standard input. */
  readonly source: string;
  /** `shortestPrefix` always set: the defaults are the operator's. */
  readonly options: AggregateOptions & { readonly shortestPrefix: ShortestPrefix };
}
type Command = AggregateCommand | { readonly kind: 'help' } | { readonly kind: 'version' };

function parseCommandLine(argv: readonly string[]): Command {
  const [command, ...rest] = argv;
  if (command === '-h' || command === '--help' || command === 'help') return { kind: 'help' };
  if (command === '--version') return { kind: 'version' };
  if (command === undefined) throw new UsageError('no command given');
  if (command !== 'aggregate') throw new UsageError(`unknown command "${command}"`);
  let parsed: ReturnType<typeof parseAggregateArgs>;
  try {
    parsed = parseAggregateArgs(rest);
  } catch (e) {
    // parseArgs reports unknown options and missing values as TypeErrors with a code.
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (positionals.length > 1)
    throw new UsageError(`one input at most, got ${positionals.length}: ${positionals.join(' ')}`);
  const source = positionals[0] ?? '-';
  const maxEntries = integerOption('max-entries', values['max-entries'], 1, Number.MAX_SAFE_INTEGER);
  const minPrefixLength = integerOption('min-prefix-length', values['min-prefix-length'], 0, 32);
  const shortestPrefix: ShortestPrefix = {
    ipv4:
      integerOption('shortest-prefix-ipv4', values['shortest-prefix-ipv4'], 0, 32) ??
      DEFAULT_SHORTEST_PREFIX.ipv4,
    ipv6:
      integerOption('shortest-prefix-ipv6', values['shortest-prefix-ipv6'], 0, 128) ??
      DEFAULT_SHORTEST_PREFIX.ipv6,
  };
  return {
    kind: 'aggregate',
    source,
    options: {
      ...(maxEntries === undefined ? {} : { maxEntries }),
      ...(minPrefixLength === undefined ? {} : { minPrefixLength }),
      shortestPrefix,
    },
  };
}

function parseAggregateArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      'max-entries': { type: 'string' },
      'min-prefix-length': { type: 'string' },
      'shortest-prefix-ipv4': { type: 'string' },
      'shortest-prefix-ipv6': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean' },
    },
  });
}

/**
 * Bytes read from a file per call. The file is parsed as it is read, through one small
 * buffer that stays in cache, rather than read whole into fresh memory: on a 40 MB list
 * that saves ten thousand page faults and the time to take them.
 */
const READ_CHUNK = 256 * 1024;

function parseFile(path: string, options: ParseOptions): ParseResult {
  const fd = openSync(path, 'r');
  try {
    const parser = new BlocklistParser({ ...options, expectedBytes: fstatSync(fd).size });
    const buffer = Buffer.allocUnsafeSlow(READ_CHUNK);
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) parser.push(buffer.subarray(0, n));
    return parser.finish();
  } finally {
    closeSync(fd);
  }
}

async function parseStream(stream: NodeJS.ReadableStream, options: ParseOptions): Promise<ParseResult> {
  const parser = new BlocklistParser(options);
  for await (const chunk of stream) parser.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return parser.finish();
}

function familyName(family: 'ipv4' | 'ipv6'): string {
  return family === 'ipv4' ? 'IPv4' : 'IPv6';
}

function describeDrops(groups: readonly DropGroup[]): string {
  return groups
    .map(
      (g) =>
        `${familyName(g.family)} /${g.length}: ${g.dropped}${g.kept > 0 ? ` of ${g.dropped + g.kept}` : ''}`,
    )
    .join(', ');
}

/** The summary printed on standard error: what was read, refused, fixed, merged and dropped. */
function summarise(
  source: string,
  command: AggregateCommand,
  result: AggregateResult,
  digest: string,
): string {
  const { counts, malformed, normalised, tooShort } = result.parse;
  const { kept, drops } = result.budget;
  const lines: string[] = [];
  const name = source === '-' ? 'standard input' : source;
  lines.push(
    `${name}: ${counts.lines} lines: ${counts.ipv4 + counts.ipv6} entries (${counts.ipv4} IPv4, ${counts.ipv6} IPv6), ` +
      `${counts.comments} comments, ${counts.blank} blank, ${counts.malformed} malformed, ${counts.tooShort} refused`,
  );
  if (counts.malformed > 0) {
    lines.push(`malformed: ${counts.malformed} lines refused (never read as some other address):`);
    for (const m of malformed.slice(0, MALFORMED_SHOWN)) {
      lines.push(`  line ${m.line}: ${JSON.stringify(m.text)}: ${m.reason}: ${m.message}`);
    }
    const shown = Math.min(MALFORMED_SHOWN, malformed.length);
    if (counts.malformed > shown) lines.push(`  and ${counts.malformed - shown} more`);
  }
  if (counts.tooShort > 0) {
    const { ipv4, ipv6 } = command.options.shortestPrefix;
    lines.push(
      `refused: ${counts.tooShort} prefixes shorter than /${ipv4} (IPv4) or /${ipv6} (IPv6), ` +
        'never published (--shortest-prefix-ipv4, --shortest-prefix-ipv6):',
    );
    for (const t of tooShort.slice(0, MALFORMED_SHOWN)) {
      lines.push(`  line ${t.line}: ${JSON.stringify(t.text)}: read as ${t.prefix}`);
    }
    const shown = Math.min(MALFORMED_SHOWN, tooShort.length);
    if (counts.tooShort > shown) lines.push(`  and ${counts.tooShort - shown} more`);
  }
  if (counts.normalised > 0) {
    const first = normalised[0];
    const example =
      first === undefined ? '' : `, e.g. line ${first.line}: ${first.text} read as ${first.prefix}`;
    lines.push(`host bits normalised: ${counts.normalised} prefixes${example}`);
  }
  const merged = result.merged.ipv4.lengths.length + result.merged.ipv6.lengths.length;
  lines.push(`merged: ${counts.ipv4 + counts.ipv6} entries into ${merged} prefixes`);
  const published = kept.ipv4.lengths.length + kept.ipv6.lengths.length;
  if (merged === published) {
    lines.push('dropped: none');
  } else {
    lines.push(`dropped: ${merged - published} prefixes`);
    const byLength = drops.filter((d) => d.reason === DropReason.LongerThanMinPrefixLength);
    if (byLength.length > 0) {
      const n = byLength.reduce((sum, d) => sum + d.dropped, 0);
      lines.push(
        `  longer than --min-prefix-length ${command.options.minPrefixLength}: ${n} (${describeDrops(byLength)})`,
      );
    }
    const byBudget = drops.filter((d) => d.reason === DropReason.OverMaxEntries);
    if (byBudget.length > 0) {
      const n = byBudget.reduce((sum, d) => sum + d.dropped, 0);
      lines.push(
        `  over --max-entries ${command.options.maxEntries}, most specific first: ${n} (${describeDrops(byBudget)})`,
      );
    }
  }
  lines.push(
    `published: ${published} prefixes (${kept.ipv4.lengths.length} IPv4, ${kept.ipv6.lengths.length} IPv6), ` +
      `sha256 ${digest}`,
  );
  return lines.join('\n') + '\n';
}

/** This package's version, read at run time: package.json is the one place it is written. */
export function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  if (typeof pkg !== 'object' || pkg === null || !('version' in pkg) || typeof pkg.version !== 'string')
    throw new Error('package.json has no version');
  return pkg.version;
}

/** Runs one command line and returns the exit status. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let command: Command;
  try {
    command = parseCommandLine(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr.write(
      `exoledge: ${e.message}\n${USAGE.slice(0, USAGE.indexOf('\n'))}\n(exoledge --help for more)\n`,
    );
    return ExitCode.Usage;
  }
  switch (command.kind) {
    case 'help':
      io.stdout.write(USAGE);
      return ExitCode.Ok;
    case 'version':
      io.stdout.write(`${packageVersion()}\n`);
      return ExitCode.Ok;
    case 'aggregate':
      return runAggregate(command, io);
    default:
      return command satisfies never;
  }
}

async function runAggregate(command: AggregateCommand, io: Io): Promise<number> {
  if (command.source === '-' && io.stdin.isTTY === true) {
    // Nobody types a blocklist: waiting on the terminal would look like a hang.
    io.stderr.write('exoledge: no input: give a FILE, or pipe the list into standard input\n');
    return ExitCode.Usage;
  }
  let parsed: ParseResult;
  try {
    parsed =
      command.source === '-'
        ? await parseStream(io.stdin, command.options)
        : parseFile(command.source, command.options);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    io.stderr.write(`exoledge: cannot read ${command.source}: ${reason}\n`);
    return ExitCode.InputError;
  }
  const result = aggregateParsed(parsed, command.options);
  // Printed and hashed piece by piece through one reused buffer, rather than built
  // whole: 25 MB of fresh memory costs more than formatting it (a page fault per 4 KiB).
  const fingerprint = new Fingerprinter();
  for (const piece of canonicalTextPieces(result.budget.kept)) {
    fingerprint.update(piece);
    await written(io.stdout, piece);
  }
  io.stderr.write(summarise(command.source, command, result, fingerprint.digest()));
  return ExitCode.Ok;
}

/**
 * Writes `piece` and resolves once the stream is done with it, so that its buffer may be
 * reused: a stream may keep a reference to what it was given until then.
 */
function written(stream: NodeJS.WritableStream, piece: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(piece, (error) => (error ? reject(error) : resolve()));
  });
}
