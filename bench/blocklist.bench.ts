/**
 * Benchmark of exoledge's blocklist pipeline (parse + merge + print) through its CLI,
 * side by side with FireHOL's `iprange` (Debian package `iprange`, the usual tool for
 * the job; IPv4 only) and with `bench/c/aggregate.c`, the same algorithm in C (the
 * baseline of what the machine can do), on two shapes of list:
 *
 * - dense: the proxy/scanner list of `bench/gen-blocklist.ts`, where merging pays;
 * - sparse: lone addresses that barely merge (3M IPv4 lines give about 1.8M prefixes;
 *   200k IPv6 lines of distinct addresses), where sorting and writing cost the most.
 *
 * Run: `npm run bench:blocklist` or `node bench/blocklist.bench.ts [--runs N]`.
 *
 * - Inputs come from `bench/gen-blocklist.ts` (seeded), generated into `bench/out/` if absent.
 * - The C program is compiled with the system's `cc` into `bench/out/` when `cc` is there.
 *   GNU time (peak RSS) and iprange are installed with apt-get when missing and we are
 *   root (the bench says so); otherwise they are reported absent.
 * - Each tool runs as a child process, as a user runs it, its output to a file. Runs
 *   alternate between the tools, so that noise from other work on the machine falls on
 *   all alike; the first run of each is a warm-up (page cache, Node's compile cache) and
 *   not counted. We report the median and the best of the counted runs, and the load
 *   average: on a shared machine the medians move, the ratios much less.
 * - Correctness, checked in the same run: our parser refuses exactly the lines the
 *   generator wrote malformed; our output is byte for byte the C program's; our IPv4
 *   output is iprange's prefix set on the list without the malformed lines (iprange
 *   reads `1.2.3` as 1.2.0.3, which we refuse); no line of an IPv6 list reads as IPv4
 *   (an IPv4-mapped address would, and would no longer measure IPv6). A correctness
 *   failure exits 1; a missed performance target is reported, exit 0.
 */
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseBlocklist } from '../operators/exoledge/src/domain/blocklist/parse.ts';
import { DEFAULT_GENERATE, generate, type ListMeta, listName, type Shape } from './gen-blocklist.ts';

const root = join(import.meta.dirname, '..');
const outDir = join(import.meta.dirname, 'out');
const cli = join(root, 'operators/exoledge/bin/exoledge.js');
const cSource = join(import.meta.dirname, 'c/aggregate.c');
const cBinary = join(outDir, 'aggregate');
const GNU_TIME = '/usr/bin/time';

/** Targets on the sparse shape (issue 11). */
const SPARSE = { iprangeRatio: 3, cRatio: 1.5, ipv6Seconds: 0.4, rssMb: 200 };
/** Targets on the dense shape (issue 6): it must not regress. */
const DENSE = { iprangeRatio: 2.5, ipv6Seconds: 1, rssMb: 250 };

interface Run {
  readonly seconds: number;
  /** Peak resident set in MB, when GNU time is there to tell. */
  readonly rssMb: number | undefined;
  readonly stdout: string;
}

function which(command: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Installs Debian packages when we may (root), saying so; returns whether it worked. */
function aptInstall(packages: readonly string[]): boolean {
  if (process.getuid?.() !== 0) return false;
  process.stdout.write(`installing ${packages.join(', ')} with apt-get (missing, and we are root)...\n`);
  const r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0)
    process.stdout.write(`  apt-get failed (${r.status}): ${r.stderr.trim().split('\n').pop()}\n`);
  return r.status === 0;
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
  return { seconds, rssMb, stdout: readFileSync(stdoutFile, 'latin1') };
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

/** The C baseline, compiled when its source is newer than the binary; undefined without `cc`. */
function cBaseline(): string | undefined {
  if (which('cc') === undefined) return undefined;
  if (existsSync(cBinary) && statSync(cBinary).mtimeMs >= statSync(cSource).mtimeMs) return cBinary;
  const r = spawnSync('cc', ['-O2', '-o', cBinary, cSource], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stdout.write(`cc failed, no C baseline: ${r.stderr}\n`);
    return undefined;
  }
  return cBinary;
}

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(values.runs);
const shapes: readonly Shape[] = ['dense', 'sparse'];

for (const shape of shapes) {
  if (!existsSync(join(outDir, `${listName('ipv4', shape)}.meta.json`))) {
    process.stdout.write(`generating the ${shape} lists into ${outDir} (seed ${DEFAULT_GENERATE.seed})...\n`);
    generate({ outDir, shape, ...DEFAULT_GENERATE });
  }
}
const missing = [
  ...(existsSync(GNU_TIME) ? [] : ['time']),
  ...(which('iprange') === undefined ? ['iprange'] : []),
];
if (missing.length > 0 && !aptInstall(missing)) {
  process.stdout.write(`absent (not root, or apt-get failed): ${missing.join(', ')}\n`);
}
const iprange = which('iprange');
const c = cBaseline();
let failures = 0;

interface Row {
  readonly shape: Shape;
  readonly family: 'ipv4' | 'ipv6';
  readonly meta: ListMeta;
  readonly prefixes: number;
  readonly ours: Stats;
  readonly iprange: Stats | undefined;
  readonly c: Stats | undefined;
}

const cacheDir = mkdtempSync(join(tmpdir(), 'exoledge-bench-cache-'));
const rows: Row[] = [];
const loadBefore = loadavg();
try {
  const warmEnv = { ...process.env, NODE_COMPILE_CACHE: cacheDir };
  const ours = (file: string, env: NodeJS.ProcessEnv = warmEnv): Run =>
    run([process.execPath, cli, 'aggregate', file], env);

  process.stdout.write(
    `exoledge blocklist benchmark: parse + merge + print through the CLI, ${runs} counted runs each, alternating\n` +
      `  node ${process.version}; iprange ${iprange ?? 'absent'}; C baseline ${c ?? 'absent (no cc)'}; ` +
      `GNU time ${existsSync(GNU_TIME) ? GNU_TIME : 'absent (no peak RSS)'}\n` +
      `  load average at start ${loadBefore.map((l) => l.toFixed(2)).join(' ')} (2 cores; the machine may be shared)\n\n`,
  );
  const cold = ours(join(outDir, 'ipv4.txt'), {
    ...process.env,
    NODE_COMPILE_CACHE: mkdtempSync(join(cacheDir, 'cold-')),
  });

  for (const shape of shapes) {
    for (const family of ['ipv4', 'ipv6'] as const) {
      const meta = loadMeta(listName(family, shape));
      const withIprange = family === 'ipv4' ? iprange : undefined;
      // Warm-ups, not counted.
      const first = ours(meta.file);
      if (withIprange !== undefined) run([withIprange, meta.file]);
      const cFirst = c === undefined ? undefined : run([c, meta.file]);
      const ourRuns: Run[] = [];
      const theirRuns: Run[] = [];
      const cRuns: Run[] = [];
      for (let i = 0; i < runs; i++) {
        ourRuns.push(ours(meta.file));
        if (withIprange !== undefined) theirRuns.push(run([withIprange, meta.file]));
        if (c !== undefined) cRuns.push(run([c, meta.file]));
      }
      const lines = first.stdout.split('\n').filter((l) => l !== '');
      rows.push({
        shape,
        family,
        meta,
        prefixes: lines.length,
        ours: stats(ourRuns),
        iprange: withIprange === undefined ? undefined : stats(theirRuns),
        c: c === undefined ? undefined : stats(cRuns),
      });

      // Correctness: byte for byte the C program's output.
      if (cFirst !== undefined) {
        const problem = sameLines(
          lines,
          cFirst.stdout.split('\n').filter((l) => l !== ''),
        );
        if (problem === undefined && first.stdout === cFirst.stdout) {
          process.stdout.write(`check: ${meta.file}: output byte for byte the C baseline's: ok\n`);
        } else {
          failures++;
          process.stdout.write(`check: ${meta.file}: output differs from the C baseline's: ${problem}\n`);
        }
      }
      // Correctness: exactly the malformed lines written are refused; an IPv6 list stays IPv6.
      const parsed = parseBlocklist(readFileSync(meta.file), { detailLimit: Number.POSITIVE_INFINITY });
      const problem = sameLines(
        parsed.malformed.map((m) => String(m.line)),
        meta.malformedLines.map(String),
      );
      if (problem === undefined) {
        process.stdout.write(
          `check: ${meta.file}: refused exactly the ${meta.malformedLines.length} malformed lines written: ok\n`,
        );
      } else {
        failures++;
        process.stdout.write(
          `check: ${meta.file}: refused lines differ from those written malformed: ${problem}\n`,
        );
      }
      if (family === 'ipv6') {
        if (parsed.counts.ipv4 === 0) {
          process.stdout.write(`check: ${meta.file}: no line reads as IPv4 (no IPv4-mapped address): ok\n`);
        } else {
          failures++;
          process.stdout.write(`check: ${meta.file}: ${parsed.counts.ipv4} lines read as IPv4\n`);
        }
      }
      // Correctness: iprange's prefix set, on the list without its malformed lines.
      if (withIprange !== undefined) {
        const malformed = new Set(meta.malformedLines);
        const clean = readFileSync(meta.file, 'latin1')
          .split('\n')
          .filter((_, i) => !malformed.has(i + 1))
          .join('\n');
        const cleanFile = join(outDir, `${listName(family, shape)}.clean.txt`);
        writeFileSync(cleanFile, clean);
        const theirs = normaliseIprange(run([withIprange, cleanFile]).stdout);
        const differs = sameLines(lines, theirs);
        if (differs === undefined) {
          process.stdout.write(
            `check: ${meta.file}: output equals iprange's (${lines.length} prefixes): ok\n`,
          );
        } else {
          failures++;
          process.stdout.write(`check: ${meta.file}: output differs from iprange's: ${differs}\n`);
        }
      }
    }
  }

  const seconds = (s: Stats | undefined): string => (s === undefined ? '—' : `${s.median.toFixed(3)}`);
  const rss = (s: Stats | undefined): string => (s?.rssMb === undefined ? '—' : s.rssMb.toFixed(0));
  process.stdout.write(
    '\nmedian wall seconds (best in the JSON below), peak RSS MB; ratios of medians\n' +
      '| shape  | list | lines | prefixes out | exoledge | iprange | C | iprange/exoledge | exoledge/C | RSS exoledge | RSS iprange | RSS C |\n' +
      '|---|---|---|---|---|---|---|---|---|---|---|---|\n',
  );
  for (const r of rows) {
    const vsIprange = r.iprange === undefined ? '—' : `${(r.iprange.median / r.ours.median).toFixed(2)}x`;
    const vsC = r.c === undefined ? '—' : `${(r.ours.median / r.c.median).toFixed(2)}x`;
    process.stdout.write(
      `| ${r.shape} | ${r.family} | ${r.meta.lines} | ${r.prefixes} | ${seconds(r.ours)} | ${seconds(r.iprange)} | ${seconds(r.c)} | ` +
        `${vsIprange} | ${vsC} | ${rss(r.ours)} | ${rss(r.iprange)} | ${rss(r.c)} |\n`,
    );
  }
  process.stdout.write(
    `\nexoledge, first run ever (empty compile cache), dense IPv4: ${cold.seconds.toFixed(3)} s\n`,
  );
  process.stdout.write(
    `load average at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n\ntargets:\n`,
  );
  for (const r of rows) {
    const t = r.shape === 'sparse' ? SPARSE : DENSE;
    const name = `${r.shape} ${r.family}`;
    if (r.iprange !== undefined) {
      const ratio = r.iprange.median / r.ours.median;
      process.stdout.write(
        `  ${name}: >= ${t.iprangeRatio}x iprange: ${ratio.toFixed(2)}x ${verdict(ratio >= t.iprangeRatio)}\n`,
      );
    }
    if (r.shape === 'sparse' && r.c !== undefined) {
      const ratio = r.ours.median / r.c.median;
      process.stdout.write(
        `  ${name}: <= ${SPARSE.cRatio}x the C baseline: ${ratio.toFixed(2)}x ${verdict(ratio <= SPARSE.cRatio)}\n`,
      );
    }
    if (r.family === 'ipv6') {
      process.stdout.write(
        `  ${name}: < ${t.ipv6Seconds} s: ${r.ours.median.toFixed(3)} s ${verdict(r.ours.median < t.ipv6Seconds)}\n`,
      );
    }
    if (r.ours.rssMb !== undefined) {
      process.stdout.write(
        `  ${name}: peak RSS < ${t.rssMb} MB: ${r.ours.rssMb.toFixed(0)} MB ${verdict(r.ours.rssMb < t.rssMb)}\n`,
      );
    }
  }
  process.stdout.write(
    `\n${JSON.stringify(rows.map((r) => ({ shape: r.shape, family: r.family, ours: r.ours, iprange: r.iprange, c: r.c })))}\n`,
  );
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
process.exitCode = failures === 0 ? 0 : 1;
