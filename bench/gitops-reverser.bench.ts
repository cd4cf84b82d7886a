/**
 * gitops-reverser at scale (the issue's Performance lines), on a private control plane
 * (real kube-apiserver and etcd) and real git, pushing over file:// to bare repositories
 * in a temp folder. Nothing here fails on a target: each is measured, printed, and said
 * to hold or not.
 *
 * 1. Initial mirror. N ConfigMaps (10,000; about 1.2 KB of JSON each) are created in one
 *    namespace BEFORE either side starts; creating them is not timed. Then, in the same
 *    process and against the same ConfigMaps, each into its own empty bare repository:
 *    - the operator (createOperator, in this process, a client without client-side rate
 *      limit as in its tests): its ClusterProvider (accessFrom the namespace), GitProvider
 *      (file://, every branch), GitTarget (branch main, path live, commit.window 5s) and
 *      WatchRule (configmaps) exist before it starts. Timed from `manager.start()` until
 *      the remote's main holds all N files under live/<ns>/configmaps (its ref is read
 *      every 50 ms; on each new tip the files are counted with `git ls-tree`).
 *    - a bare script: one paged LIST (KubeClient.listAll), a clone of the empty remote,
 *      each object written as YAML (the `yaml` package's `stringify`, after dropping
 *      status, managedFields, resourceVersion, uid and creationTimestamp), then one
 *      `git add -A`, one `git commit`, one `git push`, with the operator's clone setting
 *      gc.autoDetach=false (git's automatic repack after a commit of more than 6,700 loose
 *      objects then runs in the timed commit on both sides). Timed from the LIST to the end
 *      of the push.
 *    The two alternate, the operator first in even rounds, so that round 1's memory
 *    reading is taken before any baseline ran in this process. An uncounted warm-up of
 *    both sides (200 ConfigMaps of another namespace, window 1s) comes first. The verdict
 *    is the median of the rounds' ratios (operator / bare script), target ≤ 1.5.
 * 2. Update burst (last round, the operator still running once its mirror is complete):
 *    U updates (1,000), one merge patch of `data.updated` on U different ConfigMaps, sent
 *    evenly over 10 s. Reported: how long after the burst's end (the last patch answered)
 *    the last new value was on the remote (each file read back with `git cat-file` at each
 *    new tip), target ≤ 10 s; and each update's own delay (patch answered → on the remote).
 * 3. Memory, per operator run: process.memoryUsage() after a full GC just before
 *    `manager.start()`, again after a full GC once the mirror is complete (the operator
 *    still running, its cache holding every object), and the peaks sampled every 100 ms in
 *    between. Against the objects' JSON size (sum of JSON.stringify of the listed
 *    ConfigMaps, managedFields included; without them in brackets, which is what the
 *    operator's cache keeps). Target: growth under 3× the JSON. The process re-runs itself
 *    with --expose-gc --no-flush-bytecode when started without them.
 *
 * Diagnostics printed with each run, to see where the time goes: when the operator's
 * writer was handed its first and N-th change (its `submit` wrapped to record the time),
 * each new tip of the remote, the bare script's phases, the CPU of this process, of the
 * git processes it ran, of the apiserver and etcd, and what other processes on the
 * machine took meanwhile (on a shared machine that is what moves wall times); and, once,
 * the cost of rendering the N objects the operator's way (sanitize, toYaml) against the
 * bare script's (`stringify`).
 *
 *   npm run bench:gitops-reverser          (-- --rounds 1 --objects 10000 --updates 1000 --burst-seconds 10 --window 5s --warm-up 200)
 *   npm run bench:gitops-reverser -- --objects 1000
 *   BENCH_CPU_PROFILE=/tmp/prof npm run bench:gitops-reverser
 *       one .cpuprofile of this process per timed run (the apiserver, etcd and git are other processes)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ControlPlane } from '@operators/controlplane';
import { privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { KubeClient, type KubeObject, Reflector } from '@operators/kit';
import { pino } from 'pino';
import { parse, stringify } from 'yaml';
import { CLUSTER_PROVIDER } from '../operators/gitops-reverser/src/api/cluster-provider.ts';
import { gitopsReverserCrds } from '../operators/gitops-reverser/src/api/gen-crds.ts';
import { GIT_PROVIDER } from '../operators/gitops-reverser/src/api/git-provider.ts';
import { GIT_TARGET } from '../operators/gitops-reverser/src/api/git-target.ts';
import { WATCH_RULE } from '../operators/gitops-reverser/src/api/watch-rule.ts';
import { sanitize, toYaml } from '../operators/gitops-reverser/src/domain/mirror/sanitize.ts';
import type { BranchWriter } from '../operators/gitops-reverser/src/git/writer.ts';
import { createOperator, type Operator } from '../operators/gitops-reverser/src/operator.ts';
import { git, initBare } from '../operators/gitops-reverser/test/support/git-fixtures.ts';
import { median } from './support/median.ts';
import { pool } from './support/widget-baseline.ts';

/**
 * The V8 flags the memory readings need: a full GC before each reading, and no bytecode
 * flushing, which otherwise frees a few MB of the start-up code's bytecode during a long
 * run and hides that much of the operator's growth (seen: a 10,000-object cache
 * measured at 2 MB).
 */
const V8_FLAGS = ['--expose-gc', '--no-flush-bytecode'] as const;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !V8_FLAGS.every((f) => process.execArgv.includes(f))) {
  const r = spawnSync(process.execPath, [...V8_FLAGS, import.meta.filename, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}
const fullGc: () => void = gc;

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '1' },
    objects: { type: 'string', default: '10000' },
    updates: { type: 'string', default: '1000' },
    'burst-seconds': { type: 'string', default: '10' },
    window: { type: 'string', default: '5s' },
    'warm-up': { type: 'string', default: '200' },
  },
});
const ROUNDS = Number(flags.rounds);
const OBJECTS = Number(flags.objects);
const UPDATES = Number(flags.updates);
const BURST_MS = Number(flags['burst-seconds']) * 1000;
const WINDOW = flags.window;
const WARM_UP = Number(flags['warm-up']);
if (
  !(
    Number.isInteger(ROUNDS) &&
    ROUNDS >= 1 &&
    Number.isInteger(OBJECTS) &&
    OBJECTS >= 1 &&
    Number.isInteger(UPDATES) &&
    UPDATES >= 0 &&
    BURST_MS > 0 &&
    Number.isInteger(WARM_UP) &&
    WARM_UP >= 0 &&
    /^\d+(ms|s|m)$/.test(WINDOW)
  )
) {
  process.stderr.write(
    'usage: gitops-reverser.bench.ts [--rounds N ≥ 1] [--objects N ≥ 1] [--updates N ≥ 0] ' +
      '[--burst-seconds S > 0] [--window 5s] [--warm-up N ≥ 0]\n',
  );
  process.exit(2);
}

/** The issue's bound on the operator's initial-mirror time against the bare script's. */
const TARGET_RATIO = 1.5;
/** The issue's bound on how long after an update burst's end its last update reaches the remote. */
const TARGET_UPDATE_LAG_MS = 10_000;
/** The issue's bound on the operator's memory growth against the objects' JSON size. */
const TARGET_MEMORY_RATIO = 3;
/** How often the remote's ref is read while waiting for the operator's commits. */
const POLL_MS = 50;
/** How often memory is sampled for the peaks during an operator run. */
const MEMORY_SAMPLE_MS = 100;
/** The longest wait for a mirror or an update burst to reach the remote before the run is given up. */
const GIVE_UP_MS = 600_000;
/** Other processes' CPU during either side's run above which the round is said to be disturbed (a shared machine). */
const DISTURBED_MS = 1000;
/** ConfigMap creates in flight while setting up (not timed). */
const CREATE_CONCURRENCY = 32;
/** The warm-up's commit window: long enough to gather its objects into one commit, short enough not to wait. */
const WARM_UP_WINDOW = '1s';
/** Writes a .cpuprofile of this process per timed run. */
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
/** Where the operator writes in the repository (its GitTarget's spec.path), and the bare script too. */
const TARGET_PATH = 'live';
const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;

type ConfigMap = KubeObject & { data?: Record<string, string> };

const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MB`;

// ---------------------------------------------------------------------------------------
// The objects

const cmName = (i: number): string => `cm-${String(i).padStart(5, '0')}`;

/** One ConfigMap of about 1 KB of data: an index, a properties file (a block scalar in YAML) and a JSON document. */
function configMap(ns: string, i: number): ConfigMap {
  const properties = Array.from({ length: 20 }, (_, j) => `setting.${j}=value-${i}-${j}`).join('\n');
  return {
    ...CM,
    metadata: { name: cmName(i), namespace: ns, labels: { app: 'bench', index: String(i) } },
    data: {
      index: String(i),
      'app.properties': `${properties}\n`,
      'settings.json': JSON.stringify({
        replicas: i % 5,
        region: `region-${i % 7}`,
        features: ['a', 'b', 'c'],
      }),
    },
  };
}

async function createConfigMaps(admin: KubeClient, ns: string, n: number): Promise<void> {
  await admin.create({ ...NAMESPACE, metadata: { name: ns } });
  const indexes = Array.from({ length: n }, (_, i) => i);
  await pool(indexes, CREATE_CONCURRENCY, (i) => admin.create(configMap(ns, i)));
}

/** The objects' JSON as the apiserver lists them, with managedFields and without. */
async function jsonSize(
  admin: KubeClient,
  ns: string,
): Promise<{ count: number; full: number; stripped: number }> {
  const { items } = await admin.listAll(CM, { namespace: ns });
  let full = 0;
  let stripped = 0;
  for (const o of items) {
    full += Buffer.byteLength(JSON.stringify(o));
    stripped += Buffer.byteLength(
      JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: undefined } }),
    );
  }
  return { count: items.length, full, stripped };
}

// ---------------------------------------------------------------------------------------
// CPU: this process, the git processes it waited for, the apiserver, etcd

interface Cpu {
  readonly node: number;
  readonly git: number;
  readonly apiserver: number;
  readonly etcd: number;
  /** The whole machine's busy time (all CPUs, /proc/stat), of which the rest is other processes'. */
  readonly machine: number;
}

/** Fields after the command name of /proc/<pid>/stat. */
function statFields(pid: number | string): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
}

/** User and system CPU of a process so far, in ms (fields 14 and 15, 100 ticks a second). */
function cpuOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const f = statFields(pid);
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Busy CPU time of the machine so far, in ms: every field of /proc/stat's `cpu` line but idle and iowait. */
function machineBusy(): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) * 10;
}

/** User and system CPU of this process's children that have exited (git), in ms (fields 16 and 17). */
function childrenCpu(): number {
  const f = statFields('self');
  return (Number(f[13]) + Number(f[14])) * 10;
}

function cpuNow(env: PlaneEnv): Cpu {
  const { user, system } = process.cpuUsage();
  return {
    node: (user + system) / 1000,
    git: childrenCpu(),
    apiserver: cpuOf(env.plane.pids.apiserver),
    etcd: cpuOf(env.plane.pids.etcd),
    machine: machineBusy(),
  };
}

const cpuDiff = (a: Cpu, b: Cpu): Cpu => ({
  node: b.node - a.node,
  git: b.git - a.git,
  apiserver: b.apiserver - a.apiserver,
  etcd: b.etcd - a.etcd,
  machine: b.machine - a.machine,
});

/** CPU the run's own processes did not use: other processes on the machine (and steal), in ms. */
const otherCpu = (c: Cpu): number => Math.max(0, c.machine - c.node - c.git - c.apiserver - c.etcd);

const showCpu = (c: Cpu): string =>
  `cpu node ${secs(c.node)}, git ${secs(c.git)}, apiserver ${secs(c.apiserver)}, etcd ${secs(c.etcd)} ` +
  `(other processes on the machine: ${secs(otherCpu(c))})`;

/**
 * Waits until the apiserver and etcd are idle (under a tenth of a core over half a
 * second; 15 s at most): the creates, the previous run's watch fan-out and deletions must
 * not land in the next run's time.
 */
async function settle(env: PlaneEnv): Promise<void> {
  const busy = (): number => cpuOf(env.plane.pids.apiserver) + cpuOf(env.plane.pids.etcd);
  for (let i = 0; i < 30; i++) {
    const before = busy();
    await sleep(500);
    if (busy() - before < 50) return;
  }
}

/** A CPU profile of this process, from now until `stop`. */
async function startProfile(): Promise<{ stop(name: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop(name: string) {
      const { profile } = await session.post('Profiler.stop');
      const dir = PROFILE_DIR ?? '.';
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `gitops-reverser-${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

// ---------------------------------------------------------------------------------------
// Memory

interface MemoryReading {
  /** After a full GC, before the run. */
  readonly before: NodeJS.MemoryUsage;
  /** After a full GC, once the mirror is complete (the operator still running). */
  readonly after: NodeJS.MemoryUsage;
  /** Highest sampled during the run. */
  readonly peakRss: number;
  readonly peakHeap: number;
}

/** Samples RSS and heap every MEMORY_SAMPLE_MS; `stop` returns the peaks. */
function sampleMemory(): { stop(): { peakRss: number; peakHeap: number } } {
  let peakRss = 0;
  let peakHeap = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  };
  sample();
  const timer = setInterval(sample, MEMORY_SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakRss, peakHeap };
    },
  };
}

// ---------------------------------------------------------------------------------------
// Reading the remote

/** The tip of main in a bare repository, read from its ref file (no process): undefined while unborn. */
function tipOf(bare: string): string | undefined {
  try {
    return readFileSync(join(bare, 'refs', 'heads', 'main'), 'utf8').trim() || undefined;
  } catch {
    // Packed by a `gc --auto` after a push.
    try {
      const line = readFileSync(join(bare, 'packed-refs'), 'utf8')
        .split('\n')
        .find((l) => l.endsWith(' refs/heads/main'));
      return line?.split(' ')[0];
    } catch {
      return undefined;
    }
  }
}

const folderOf = (ns: string): string => `${TARGET_PATH}/${ns}/configmaps`;

/** How many files `sha` holds under the namespace's ConfigMap folder. */
async function filesAt(bare: string, sha: string, ns: string): Promise<number> {
  const listed = await git(bare, 'ls-tree', '-r', '-z', '--name-only', sha, '--', `${folderOf(ns)}/`);
  return listed.split('\0').filter(Boolean).length;
}

/** The content of each path at `sha` (undefined where missing), through one `git cat-file --batch`. */
function catFiles(
  bare: string,
  sha: string,
  paths: readonly string[],
): Promise<Map<string, string | undefined>> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['cat-file', '--batch'], {
      cwd: bare,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: '/nonexistent',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`git cat-file --batch exited ${code}`));
      const buf = Buffer.concat(chunks);
      const files = new Map<string, string | undefined>();
      let at = 0;
      for (const path of paths) {
        const eol = buf.indexOf(10, at);
        const header = buf.subarray(at, eol).toString('utf8');
        at = eol + 1;
        const [, type, size] = header.split(' ');
        if (type !== 'blob') {
          files.set(path, undefined);
          continue;
        }
        const n = Number(size);
        files.set(path, buf.subarray(at, at + n).toString('utf8'));
        at += n + 1;
      }
      resolve(files);
    });
    child.stdin.end(paths.map((p) => `${sha}:${p}\n`).join(''));
  });
}

/**
 * Reads the remote's tip every POLL_MS until `onTip` (called with each new tip and the
 * time it was first seen) says done; false when the deadline passed first.
 */
async function pollTips(
  bare: string,
  deadline: number,
  onTip: (sha: string, at: number) => Promise<boolean>,
  from: string | undefined = tipOf(bare),
): Promise<boolean> {
  let last = from;
  while (performance.now() < deadline) {
    const tip = tipOf(bare);
    if (tip !== undefined && tip !== last) {
      last = tip;
      if (await onTip(tip, performance.now())) return true;
    } else {
      await sleep(POLL_MS);
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------
// The bare script

/** What the bare script removes: the server's bookkeeping, nothing more. */
function minimalSanitize(o: KubeObject): Record<string, unknown> {
  const { status: _status, ...rest } = o as KubeObject & { status?: unknown };
  const { managedFields: _m, resourceVersion: _r, uid: _u, creationTimestamp: _c, ...metadata } = o.metadata;
  return { ...rest, metadata };
}

interface BareRun {
  readonly ms: number;
  readonly phases: readonly (readonly [string, number])[];
  readonly cpu: Cpu;
  readonly peakHeapGrowth: number;
}

async function bareRun(
  env: PlaneEnv,
  ns: string,
  bare: string,
  scratch: string,
  name: string,
): Promise<BareRun> {
  const client = await KubeClient.load(env.kubeconfigPath);
  const clone = await mkdtemp(join(scratch, 'bare-clone-'));
  try {
    await settle(env);
    fullGc();
    const memory = sampleMemory();
    const heap0 = process.memoryUsage().heapUsed;
    const profiler = PROFILE_DIR ? await startProfile() : undefined;
    const cpu0 = cpuNow(env);
    const phases: [string, number][] = [];
    const t0 = performance.now();
    let t = t0;
    const phase = (what: string): void => {
      const now = performance.now();
      phases.push([what, now - t]);
      t = now;
    };
    const { items } = await client.listAll<ConfigMap>(CM, { namespace: ns });
    phase('list');
    await git(clone, 'clone', '--quiet', `file://${bare}`, '.');
    // The operator's clone setting: git's automatic repack (past 6,700 loose objects, so
    // after the commit of a large first mirror) runs inside the timed commit on both sides,
    // not in the background of one (where it would also race the clone's removal).
    await git(clone, 'config', 'gc.autoDetach', 'false');
    phase('clone');
    const dir = join(clone, folderOf(ns));
    mkdirSync(dir, { recursive: true });
    const files = items.map(
      (o) => [join(dir, `${o.metadata.name}.yaml`), stringify(minimalSanitize(o))] as const,
    );
    phase('yaml');
    for (const [path, text] of files) writeFileSync(path, text);
    phase('write');
    await git(clone, 'add', '-A');
    phase('add');
    await git(clone, 'commit', '--quiet', '-m', `mirror ${items.length} ConfigMaps`);
    phase('commit');
    await git(clone, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
    phase('push');
    const ms = performance.now() - t0;
    const cpu = cpuDiff(cpu0, cpuNow(env));
    if (profiler) await profiler.stop(`bare-${name}`);
    const { peakHeap } = memory.stop();
    const tip = tipOf(bare);
    const pushed = tip ? await filesAt(bare, tip, ns) : 0;
    if (pushed !== items.length)
      throw new Error(`bare script: the remote holds ${pushed} of ${items.length} files`);
    return { ms, phases, cpu, peakHeapGrowth: peakHeap - heap0 };
  } finally {
    await client.transport.close();
    await rm(clone, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

// ---------------------------------------------------------------------------------------
// The operator

interface Tip {
  readonly at: number;
  readonly files: number;
}

interface OperatorRun {
  readonly objects: number;
  readonly ms: number;
  /** Each new tip of the remote during the run, since the start, with its file count. */
  readonly tips: readonly Tip[];
  /** When the writer was handed the first change and the N-th (since the start). */
  readonly firstHandedMs: number | undefined;
  readonly allHandedMs: number | undefined;
  readonly cpu: Cpu;
  readonly memory: MemoryReading;
  readonly updates?: UpdateReport;
  readonly warnings: readonly string[];
}

/**
 * Records when each change is handed to a writer (`BranchWriter.submit`) by wrapping the
 * submit of every writer the operator's pool makes. A diagnostic of where the time goes,
 * exact even while a snapshot keeps the event loop busy (a polled metric would see its
 * changes only at its end). The wrapper only records, then calls the original.
 */
function recordSubmits(operator: Operator): number[] {
  const times: number[] = [];
  const pool = operator.mirror.writers;
  const make = pool.writer.bind(pool);
  const wrapped = new WeakSet<BranchWriter>();
  pool.writer = async (spec) => {
    const w = await make(spec);
    if (!wrapped.has(w)) {
      wrapped.add(w);
      const submit = w.submit.bind(w);
      w.submit = (target, change, policy) => {
        times.push(performance.now());
        submit(target, change, policy);
      };
    }
    return w;
  };
  return times;
}

/** The objects a run needs, named after it: a ClusterProvider, GitProvider, GitTarget and WatchRule. */
async function declareTarget(
  admin: KubeClient,
  ns: string,
  name: string,
  bare: string,
  window: string,
): Promise<void> {
  await admin.create({
    ...CLUSTER_PROVIDER,
    metadata: { name: `gr-bench-${name}` },
    spec: { accessFrom: { names: [ns] } },
  } as KubeObject);
  await admin.create({
    ...GIT_PROVIDER,
    metadata: { name: `repo-${name}`, namespace: ns },
    spec: { url: `file://${bare}`, allowedBranches: ['*'] },
  } as KubeObject);
  await admin.create({
    ...GIT_TARGET,
    metadata: { name: `mirror-${name}`, namespace: ns },
    spec: {
      providerRef: { name: `repo-${name}` },
      clusterProviderRef: { name: `gr-bench-${name}` },
      branch: 'main',
      path: TARGET_PATH,
      commit: { window },
    },
  } as KubeObject);
  await admin.create({
    ...WATCH_RULE,
    metadata: { name: `configmaps-${name}`, namespace: ns },
    spec: { targetRef: { name: `mirror-${name}` }, rules: [{ apiGroups: [''], resources: ['configmaps'] }] },
  } as KubeObject);
}

/** Deletes what declareTarget made (no finalizers: the operator is stopped by then). */
async function forgetTarget(admin: KubeClient, ns: string, name: string): Promise<void> {
  await admin.delete(WATCH_RULE, `configmaps-${name}`, ns);
  await admin.delete(GIT_TARGET, `mirror-${name}`, ns);
  await admin.delete(GIT_PROVIDER, `repo-${name}`, ns);
  await admin.delete(CLUSTER_PROVIDER, `gr-bench-${name}`);
}

async function operatorRun(
  env: PlaneEnv,
  operatorNamespace: string,
  ns: string,
  bare: string,
  scratch: string,
  name: string,
  opts: { readonly objects: number; readonly window: string; readonly updates: boolean },
): Promise<OperatorRun> {
  await declareTarget(env.admin, ns, name, bare, opts.window);
  const client = await KubeClient.load(env.kubeconfigPath);
  const workDir = await mkdtemp(join(scratch, 'operator-work-'));
  const warnings: string[] = [];
  const operator = createOperator({
    client,
    operatorNamespace,
    workDir,
    allowedProtocols: ['file'],
    logger: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }),
  });
  try {
    await settle(env);
    fullGc();
    const before = process.memoryUsage();
    const memory = sampleMemory();
    const profiler = PROFILE_DIR ? await startProfile() : undefined;
    const submits = recordSubmits(operator);
    const cpu0 = cpuNow(env);
    const t0 = performance.now();
    await operator.manager.start();
    const tips: Tip[] = [];
    const done = await pollTips(bare, t0 + GIVE_UP_MS, async (sha, at) => {
      const files = await filesAt(bare, sha, ns);
      tips.push({ at: at - t0, files });
      return files >= opts.objects;
    });
    const end = tips.at(-1)?.at ?? Number.NaN;
    const cpu = cpuDiff(cpu0, cpuNow(env));
    if (profiler) await profiler.stop(`operator-${name}`);
    const peaks = memory.stop();
    if (!done) {
      throw new Error(
        `operator ${name}: the remote did not hold all ${opts.objects} files within ${secs(GIVE_UP_MS)}; ` +
          `tips ${JSON.stringify(tips)}; warnings: ${warnings.slice(0, 3).join(' | ')}`,
      );
    }
    fullGc();
    const after = process.memoryUsage();
    const handed = (i: number): number | undefined => {
      const at = submits[i];
      return at === undefined ? undefined : at - t0;
    };
    const firstHandedMs = handed(0);
    const allHandedMs = handed(opts.objects - 1);
    const updates = opts.updates ? await updateBurst(env.admin, ns, bare, name, submits) : undefined;
    return {
      objects: opts.objects,
      ms: end,
      tips,
      firstHandedMs,
      allHandedMs,
      cpu,
      memory: { before, after, ...peaks },
      ...(updates ? { updates } : {}),
      warnings,
    };
  } finally {
    await operator.manager.stop();
    await client.transport.close();
    await forgetTarget(env.admin, ns, name).catch(() => undefined);
    await rm(workDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

// ---------------------------------------------------------------------------------------
// The update burst

interface UpdateReport {
  readonly sent: number;
  /** From the first patch sent to the last one answered. */
  readonly burstMs: number;
  /** From the burst's end until the last new value was on the remote; undefined when some never arrived. */
  readonly lagMs: number | undefined;
  /** Per update, from its patch answered until its value was on the remote, sorted. */
  readonly delays: readonly number[];
  readonly missing: number;
  /** Each new tip of the remote from the first patch on (since the first patch), with how many new values it brought. */
  readonly tips: readonly { readonly at: number; readonly values: number }[];
  /** Changes handed to the writer from the first patch on (since the first patch). */
  readonly handed: readonly number[];
}

async function updateBurst(
  admin: KubeClient,
  ns: string,
  bare: string,
  name: string,
  submits: readonly number[],
): Promise<UpdateReport> {
  const n = Math.min(UPDATES, OBJECTS);
  const updates = Array.from({ length: n }, (_, j) => {
    const object = cmName(Math.floor((j * OBJECTS) / n));
    return { j, object, path: `${folderOf(ns)}/${object}.yaml`, value: `${name}-update-${j}` };
  });
  const answered: number[] = new Array(n).fill(Number.NaN);
  const seen: number[] = new Array(n).fill(Number.NaN);
  const tips: { at: number; values: number }[] = [];
  let unseen = n;
  const submitted = submits.length;
  const t0 = performance.now();
  // Watch the remote from the first patch on: commits land during the burst too.
  const watching = pollTips(bare, t0 + BURST_MS + GIVE_UP_MS, async (sha, at) => {
    const waiting = updates.filter((u) => Number.isNaN(seen[u.j]));
    const files = await catFiles(
      bare,
      sha,
      waiting.map((u) => u.path),
    );
    let values = 0;
    for (const u of waiting) {
      const text = files.get(u.path);
      const doc = text === undefined ? undefined : (parse(text) as { data?: Record<string, string> });
      if (doc?.data?.updated === u.value) {
        seen[u.j] = at;
        values++;
      }
    }
    unseen -= values;
    tips.push({ at: at - t0, values });
    return unseen === 0;
  });
  const interval = BURST_MS / n;
  const patches: Promise<void>[] = [];
  for (const u of updates) {
    const wait = t0 + u.j * interval - performance.now();
    if (wait > 1) await sleep(wait);
    patches.push(
      admin.patch(CM, u.object, ns, { type: 'merge', body: { data: { updated: u.value } } }).then(() => {
        answered[u.j] = performance.now();
      }),
    );
  }
  await Promise.all(patches);
  const burstEnd = Math.max(...answered);
  const complete = await watching;
  const delays = seen
    .map((s, j) => s - (answered[j] as number))
    .filter((d) => !Number.isNaN(d))
    .sort((a, b) => a - b);
  return {
    sent: n,
    burstMs: burstEnd - t0,
    lagMs: complete ? Math.max(...seen) - burstEnd : undefined,
    delays,
    missing: unseen,
    tips,
    handed: submits.slice(submitted).map((at) => at - t0),
  };
}

// ---------------------------------------------------------------------------------------
// Render cost: the operator's per-object YAML against the bare script's

/** ms to render every listed object the operator's way (sanitize, toYaml) and the bare script's way. */
async function renderCost(
  admin: KubeClient,
  ns: string,
): Promise<{ operator: number; bare: number; count: number }> {
  const { items } = await admin.listAll(CM, { namespace: ns });
  const stripped = items.map((o) => ({ ...o, metadata: { ...o.metadata, managedFields: undefined } }));
  let t = performance.now();
  for (const o of stripped) toYaml(sanitize(o as unknown as Record<string, unknown>));
  const operator = performance.now() - t;
  t = performance.now();
  for (const o of items) stringify(minimalSanitize(o));
  const bare = performance.now() - t;
  return { operator, bare, count: items.length };
}

/**
 * The heap a kit Reflector's cache of the namespace's ConfigMaps takes in this process
 * (after a full GC before and after its sync; as bench/support/kit-memory-case.ts): what
 * the operator's growth is read against.
 */
async function cacheCost(kubeconfig: string, ns: string): Promise<{ heapBytes: number; objects: number }> {
  const client = await KubeClient.load(kubeconfig);
  await client.resolve(CM);
  fullGc();
  const before = process.memoryUsage().heapUsed;
  const r = new Reflector({ client, gvk: CM, namespace: ns, log: pino({ level: 'silent' }) });
  r.start();
  await r.waitForSync();
  fullGc();
  const heapBytes = process.memoryUsage().heapUsed - before;
  const objects = r.store.size;
  await r.stop();
  await client.transport.close();
  return { heapBytes, objects };
}

// ---------------------------------------------------------------------------------------
// Main

/** A private plane: its processes are ours to measure. */
type PlaneEnv = TestEnv & { plane: ControlPlane };

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

function describeOperator(r: OperatorRun): string {
  const tips = r.tips.map((t) => `${secs(t.at)} (${t.files} files)`).join(', ');
  return (
    `  operator: ${secs(r.ms)}; changes handed to the writer: the first at ${r.firstHandedMs === undefined ? '?' : secs(r.firstHandedMs)}, ` +
    `the ${r.objects}th at ${r.allHandedMs === undefined ? '?' : secs(r.allHandedMs)}; new tips on the remote at ${tips}\n` +
    `    ${showCpu(r.cpu)}` +
    (r.updates ? `\n${describeUpdates(r.updates)}` : '')
  );
}

function describeUpdates(u: UpdateReport): string {
  const handed = u.handed.length
    ? `${u.handed.length} changes handed to the writer from ${secs(u.handed[0] ?? 0)} to ${secs(u.handed.at(-1) ?? 0)}`
    : 'no change handed to the writer';
  return (
    `  update burst: ${u.sent} patches answered by ${secs(u.burstMs)}; ${handed}; new tips on the remote at ` +
    `${u.tips.map((t) => `${secs(t.at)} (${t.values} new values)`).join(', ')} (times since the first patch)`
  );
}

function describeBare(r: BareRun): string {
  return `  bare script: ${secs(r.ms)} (${r.phases.map(([p, ms]) => `${p} ${secs(ms)}`).join(', ')})\n    ${showCpu(r.cpu)}`;
}

const started = performance.now();
const env: PlaneEnv = await privateTestEnv({ log: () => {} });
const scratch = await mkdtemp(join(tmpdir(), 'gitops-reverser-bench-'));
try {
  const admin = env.admin;
  await env.installCrds(gitopsReverserCrds());
  const operatorNamespace = 'gr-bench-operator';
  await admin.create({ ...NAMESPACE, metadata: { name: operatorNamespace } });
  const ns = 'gr-bench-src';
  const warmNs = 'gr-bench-warm';
  let t = performance.now();
  await createConfigMaps(admin, ns, OBJECTS);
  if (WARM_UP > 0) await createConfigMaps(admin, warmNs, WARM_UP);
  out(
    `created ${OBJECTS} ConfigMaps (+${WARM_UP} for the warm-up) in ${secs(performance.now() - t)} (not timed)`,
  );
  const json = await jsonSize(admin, ns);
  if (json.count !== OBJECTS) throw new Error(`listed ${json.count} ConfigMaps, created ${OBJECTS}`);
  out(
    `their JSON: ${mb(json.full)} (${(json.full / OBJECTS).toFixed(0)} bytes each), ` +
      `${mb(json.stripped)} without managedFields (${(json.stripped / OBJECTS).toFixed(0)} bytes each)`,
  );
  out(
    `gitops-reverser (commit window ${WINDOW}) against a bare script (LIST, YAML files, one add, commit, push), ` +
      `each into its own empty file:// repository; ${ROUNDS} round${ROUNDS === 1 ? '' : 's'}, sides alternating, operator first`,
  );
  const bareRepo = async (what: string): Promise<string> =>
    initBare(await mkdtemp(join(scratch, `${what}-`)));

  if (WARM_UP > 0) {
    t = performance.now();
    await operatorRun(env, operatorNamespace, warmNs, await bareRepo('warm-op'), scratch, 'warm-up', {
      objects: WARM_UP,
      window: WARM_UP_WINDOW,
      updates: false,
    });
    await bareRun(env, warmNs, await bareRepo('warm-bare'), scratch, 'warm-up');
    out(`warm-up of both sides over ${WARM_UP} ConfigMaps: ${secs(performance.now() - t)} (not counted)`);
  }

  const ratios: number[] = [];
  /** The rounds other processes left alone (under DISTURBED_MS of their CPU during either side). */
  const quietRatios: number[] = [];
  const opTimes: number[] = [];
  const bareTimes: number[] = [];
  const warnings: string[] = [];
  let firstMemory: MemoryReading | undefined;
  let bareHeapGrowth: number | undefined;
  let updates: UpdateReport | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const last = round === ROUNDS - 1;
    const runOp = async (): Promise<OperatorRun> =>
      operatorRun(env, operatorNamespace, ns, await bareRepo(`op-${round}`), scratch, `r${round}`, {
        objects: OBJECTS,
        window: WINDOW,
        updates: last && UPDATES > 0,
      });
    const runBare = async (): Promise<BareRun> =>
      bareRun(env, ns, await bareRepo(`bare-${round}`), scratch, `r${round}`);
    let op: OperatorRun;
    let bare: BareRun;
    if (round % 2 === 0) {
      op = await runOp();
      bare = await runBare();
    } else {
      bare = await runBare();
      op = await runOp();
    }
    firstMemory ??= op.memory;
    bareHeapGrowth ??= bare.peakHeapGrowth;
    if (op.updates) updates = op.updates;
    warnings.push(...op.warnings);
    const ratio = op.ms / bare.ms;
    ratios.push(ratio);
    opTimes.push(op.ms);
    bareTimes.push(bare.ms);
    const disturbed = Math.max(otherCpu(op.cpu), otherCpu(bare.cpu)) > DISTURBED_MS;
    if (!disturbed) quietRatios.push(ratio);
    out(
      `round ${round + 1}: operator ${secs(op.ms)}, bare script ${secs(bare.ms)}, ratio ${ratio.toFixed(2)}` +
        (disturbed ? ' (disturbed: other processes took CPU meanwhile, see below)' : ''),
    );
    out(describeOperator(op));
    out(describeBare(bare));
  }

  const render = await renderCost(admin, ns);
  out(
    `render cost of the ${render.count} objects in this process (diagnostic): the operator's sanitize+toYaml ` +
      `${secs(render.operator)}, the bare script's stringify ${secs(render.bare)} (${(render.operator / render.bare).toFixed(1)}×)`,
  );
  const cache = await cacheCost(env.kubeconfigPath, ns);
  out(
    `heap of a bare kit Reflector's cache of the same ${cache.objects} objects in this process (reference for the memory ` +
      `rows): ${mb(cache.heapBytes)} = ${(cache.heapBytes / json.full).toFixed(2)}× (${(cache.heapBytes / json.stripped).toFixed(2)}×) the JSON`,
  );
  if (warnings.length) {
    out(`operator warnings logged: ${warnings.length}; the first ones:`);
    for (const w of warnings.slice(0, 3)) out(`  ${w.trim().slice(0, 1000)}`);
  }

  // The summary.
  const m = median(ratios);
  const rows: [string, string, string, string][] = [
    [
      `initial mirror of ${OBJECTS} (median of ${ROUNDS})`,
      `operator ${secs(median(opTimes))} / bare ${secs(median(bareTimes))} = ${m.toFixed(2)}`,
      `≤ ${TARGET_RATIO}`,
      m <= TARGET_RATIO ? 'holds' : 'does not hold',
    ],
  ];
  if (quietRatios.length < ratios.length) {
    rows.push([
      `  rounds undisturbed by other processes`,
      `${quietRatios.length} of ${ratios.length}` +
        (quietRatios.length ? `, their median ratio ${median(quietRatios).toFixed(2)}` : ''),
      '',
      `(other processes' CPU over ${secs(DISTURBED_MS)} during a side: disturbed)`,
    ]);
  }
  if (updates) {
    const u = updates;
    rows.push([
      `${u.sent} updates over ${secs(BURST_MS)}: last on the remote after the burst`,
      u.lagMs === undefined ? `${u.missing} never arrived` : secs(u.lagMs),
      `≤ ${secs(TARGET_UPDATE_LAG_MS)}`,
      u.lagMs !== undefined && u.lagMs <= TARGET_UPDATE_LAG_MS ? 'holds' : 'does not hold',
    ]);
    rows.push([
      '  each update: patch answered → on the remote',
      `p50 ${secs(quantile(u.delays, 0.5))}, p95 ${secs(quantile(u.delays, 0.95))}, max ${secs(u.delays.at(-1) ?? Number.NaN)}`,
      '',
      `${u.tips.length} commits; burst took ${secs(u.burstMs)}`,
    ]);
  }
  if (firstMemory) {
    const f = firstMemory;
    const heapGrowth = f.after.heapUsed - f.before.heapUsed;
    const rssGrowth = f.after.rss - f.before.rss;
    const peakHeapGrowth = f.peakHeap - f.before.heapUsed;
    const peakRssGrowth = f.peakRss - f.before.rss;
    const x = (b: number): string => `${(b / json.full).toFixed(2)}× (${(b / json.stripped).toFixed(2)}×)`;
    const verdict = (b: number): string => (b / json.full < TARGET_MEMORY_RATIO ? 'holds' : 'does not hold');
    rows.push(
      [
        'memory, round 1: heap growth (after GC) / JSON',
        `${mb(heapGrowth)} = ${x(heapGrowth)}`,
        `< ${TARGET_MEMORY_RATIO}×`,
        `${verdict(heapGrowth)} (heap ${mb(f.before.heapUsed)} before, ${mb(f.after.heapUsed)} after)`,
      ],
      [
        '  RSS growth (after GC) / JSON',
        `${mb(rssGrowth)} = ${x(rssGrowth)}`,
        `< ${TARGET_MEMORY_RATIO}×`,
        `${verdict(rssGrowth)} (RSS ${mb(f.before.rss)} before, ${mb(f.after.rss)} after)`,
      ],
      [
        '  peak heap growth (sampled, garbage included) / JSON',
        `${mb(peakHeapGrowth)} = ${x(peakHeapGrowth)}`,
        '',
        bareHeapGrowth === undefined ? '' : `the bare script's peak heap growth: ${mb(bareHeapGrowth)}`,
      ],
      ['  peak RSS growth (sampled) / JSON', `${mb(peakRssGrowth)} = ${x(peakRssGrowth)}`, '', ''],
    );
  }
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]?.length ?? 0)));
  out('\nsummary (memory ratios against the JSON with managedFields; without them in brackets)');
  for (const r of rows) {
    out(
      `  ${r[0].padEnd(widths[0] ?? 0)}  ${r[1].padEnd(widths[1] ?? 0)}  ${r[2].padEnd(widths[2] ?? 0)}  ${r[3]}`,
    );
  }
  out(
    `\nrepeat: npm run bench:gitops-reverser -- --rounds ${ROUNDS} --objects ${OBJECTS} --updates ${UPDATES} ` +
      `--burst-seconds ${BURST_MS / 1000} --window ${WINDOW} --warm-up ${WARM_UP}`,
  );
} finally {
  await env.close();
  await rm(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
}
out(`total ${secs(performance.now() - started)}`);
