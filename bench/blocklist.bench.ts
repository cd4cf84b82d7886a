/**
 * Benchmark of exoledge's blocklist pipeline (parse + merge) through its CLI, side by side
 * with FireHOL's `iprange` (Debian package `iprange`, the usual tool for the job; IPv4
 * only) when it is installed. Run: `node bench/blocklist.bench.ts [--runs N]`.
 *
 * - Inputs come from `bench/gen-blocklist.ts` (seeded), generated into `bench/out/` if absent.
 * - Each tool runs as a child process, as a user runs it, alternating ours and iprange so
 *   that noise from other work on the machine falls on both alike; the first run of each
 *   is a warm-up (page cache, Node's compile cache) and not counted. We report the median
 *   and the best of the counted runs. One extra run of ours with an empty compile cache
 *   shows the first-ever run.
 * - Wall time is measured here around the child; peak RSS comes from GNU time
 *   (`/usr/bin/time -f %M`) when present.
 * - Correctness, checked in the same run: our parser refuses exactly the lines the
 *   generator wrote malformed; our IPv4 output is the same prefix set as iprange's on the
 *   list without those lines (iprange would read `1.2.3` as 1.2.0.3, which we refuse).
 *   A correctness failure exits 1; a missed performance target is reported, exit 0.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseBlocklist } from '../operators/exoledge/src/domain/blocklist/parse.ts';
import { DEFAULT_GENERATE, generate, type ListMeta } from './gen-blocklist.ts';

const root = join(import.meta.dirname, '..');
const outDir = join(import.meta.dirname, 'out');
const cli = join(root, 'operators/exoledge/bin/exoledge.js');
const GNU_TIME = '/usr/bin/time';

/** Targets from issue 6. */
const TARGET_RATIO = 2.5;
const TARGET_RSS_MB = 250;
const TARGET_IPV6_SECONDS = 1;

interface Run {
  readonly seconds: number;
  /** Peak resident set in MB, when GNU time is there to tell. */
  readonly rssMb: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

function which(command: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * Runs a command to completion, timing it. Its output goes to a file, as with
 * `> list.txt`: a pipe to this process would add our reading to its time.
 */
function run(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Run {
  const timed = existsSync(GNU_TIME);
  const rssFile = join(outDir, '.rss');
  const stdoutFile = join(outDir, '.stdout');
  const [command, ...args] = timed ? [GNU_TIME, '-f', '%M', '-o', rssFile, ...argv] : argv;
  const stdout = openSync(stdoutFile, 'w');
  const started = performance.now();
  const r = spawnSync(command!, args, { env, encoding: 'utf8', stdio: ['ignore', stdout, 'pipe'] });
  const seconds = (performance.now() - started) / 1000;
  closeSync(stdout);
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  const rssMb = timed ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()) / 1024 : undefined;
  return { seconds, rssMb, stdout: readFileSync(stdoutFile, 'utf8'), stderr: r.stderr };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

interface Stats {
  readonly median: number;
  readonly best: number;
  readonly rssMb: number | undefined;
}

function stats(runs: readonly Run[]): Stats {
  const rss = runs.map((r) => r.rssMb).filter((x) => x !== undefined);
  return {
    median: median(runs.map((r) => r.seconds)),
    best: Math.min(...runs.map((r) => r.seconds)),
    rssMb: rss.length > 0 ? Math.max(...rss) : undefined,
  };
}

function describe(s: Stats): string {
  const rss = s.rssMb === undefined ? 'peak RSS unknown (no GNU time)' : `peak RSS ${s.rssMb.toFixed(0)} MB`;
  return `${s.median.toFixed(3)} s median, ${s.best.toFixed(3)} s best, ${rss}`;
}

function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}

/** iprange prints a lone address without `/32`; ours always has the length. */
function normaliseIprange(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (l.includes('/') ? l : `${l}/32`));
}

function sameLines(a: readonly string[], b: readonly string[]): string | undefined {
  if (a.length !== b.length) return `${a.length} prefixes against ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `line ${i + 1}: ${a[i]} against ${b[i]}`;
  return undefined;
}

function loadMeta(name: string): ListMeta {
  return JSON.parse(readFileSync(join(outDir, `${name}.meta.json`), 'utf8')) as ListMeta;
}

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(values.runs);

if (!existsSync(join(outDir, 'ipv4.meta.json')) || !existsSync(join(outDir, 'ipv6.meta.json'))) {
  process.stdout.write(`generating inputs into ${outDir} (seed ${DEFAULT_GENERATE.seed})...\n`);
  generate({ outDir, ...DEFAULT_GENERATE });
}
const ipv4 = loadMeta('ipv4');
const ipv6 = loadMeta('ipv6');
const iprange = which('iprange');
let failures = 0;

const cacheDir = mkdtempSync(join(tmpdir(), 'exoledge-bench-cache-'));
try {
  const warmEnv = { ...process.env, NODE_COMPILE_CACHE: cacheDir };
  const ours = (file: string, env: NodeJS.ProcessEnv = warmEnv): Run =>
    run([process.execPath, cli, 'aggregate', file], env);

  process.stdout.write(
    `exoledge blocklist benchmark: parse + merge through the CLI, ${runs} counted runs each, alternating\n` +
      `  IPv4: ${ipv4.file} (${ipv4.lines} lines)\n  IPv6: ${ipv6.file} (${ipv6.lines} lines)\n` +
      `  node ${process.version}, iprange ${iprange ?? 'not installed'}\n\n`,
  );

  const cold = ours(ipv4.file, { ...process.env, NODE_COMPILE_CACHE: mkdtempSync(join(cacheDir, 'cold-')) });
  ours(ipv4.file);
  if (iprange !== undefined) run([iprange, ipv4.file]);
  const ourRuns: Run[] = [];
  const theirRuns: Run[] = [];
  for (let i = 0; i < runs; i++) {
    ourRuns.push(ours(ipv4.file));
    if (iprange !== undefined) theirRuns.push(run([iprange, ipv4.file]));
  }
  const our4 = stats(ourRuns);
  process.stdout.write(`IPv4  exoledge: ${describe(our4)}\n`);
  process.stdout.write(
    `      exoledge, first run ever (empty compile cache): ${cold.seconds.toFixed(3)} s\n`,
  );
  if (iprange === undefined) {
    process.stdout.write('      iprange not installed (apt-get install iprange): no comparison\n');
  } else {
    const their4 = stats(theirRuns);
    const ratio = their4.median / our4.median;
    process.stdout.write(`      iprange:  ${describe(their4)}\n`);
    process.stdout.write(
      `      ratio: exoledge ${ratio.toFixed(2)}x faster (median; best ${(their4.best / our4.best).toFixed(2)}x); ` +
        `target >= ${TARGET_RATIO}x: ${verdict(ratio >= TARGET_RATIO)}\n`,
    );
  }
  if (our4.rssMb !== undefined) {
    process.stdout.write(
      `      peak RSS target < ${TARGET_RSS_MB} MB: ${verdict(our4.rssMb < TARGET_RSS_MB)}\n`,
    );
  }

  const ourRuns6: Run[] = [];
  ours(ipv6.file);
  for (let i = 0; i < runs; i++) ourRuns6.push(ours(ipv6.file));
  const our6 = stats(ourRuns6);
  process.stdout.write(
    `IPv6  exoledge: ${describe(our6)}; target < ${TARGET_IPV6_SECONDS} s: ${verdict(our6.median < TARGET_IPV6_SECONDS)}\n\n`,
  );

  // Correctness 1: exactly the malformed lines the generator wrote are refused, no more.
  for (const meta of [ipv4, ipv6]) {
    const parsed = parseBlocklist(readFileSync(meta.file), { detailLimit: Number.POSITIVE_INFINITY });
    const refused = parsed.malformed.map((m) => m.line);
    const problem = sameLines(refused.map(String), meta.malformedLines.map(String));
    if (problem === undefined) {
      process.stdout.write(
        `check: ${meta.file}: refused exactly the ${refused.length} malformed lines written: ok\n`,
      );
    } else {
      failures++;
      process.stdout.write(
        `check: ${meta.file}: refused lines differ from those written malformed: ${problem}\n`,
      );
    }
  }

  // Correctness 2: the same prefix set as iprange, on the list without its malformed lines.
  if (iprange !== undefined) {
    const malformed = new Set(ipv4.malformedLines);
    const clean = readFileSync(ipv4.file, 'latin1')
      .split('\n')
      .filter((_, i) => !malformed.has(i + 1))
      .join('\n');
    const cleanFile = join(outDir, 'ipv4.clean.txt');
    writeFileSync(cleanFile, clean);
    const theirs = normaliseIprange(run([iprange, cleanFile]).stdout);
    const mine = ourRuns[0]!.stdout.split('\n').filter((l) => l !== '');
    const problem = sameLines(mine, theirs);
    if (problem === undefined) {
      process.stdout.write(`check: IPv4 output equals iprange's (${mine.length} prefixes): ok\n`);
    } else {
      failures++;
      process.stdout.write(`check: IPv4 output differs from iprange's: ${problem}\n`);
    }
  }
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
process.exitCode = failures === 0 ? 0 : 1;
