/**
 * terdut-operator at scale (the issue's Performance line): "200 teams with one of each
 * child: time from apply to all Ready, against a bare loop making the same HTTP and
 * Kubernetes calls; ratio at most 1.5. A resync of all of them makes zero writes to
 * Kubernetes and zero non-GET calls to the server."
 *
 * Both sides talk to a terdut-server STAND-IN (operators/terdut/src/server/stand-in.ts:
 * ours, contract-faithful, in memory, in this process; not the real server, which is not
 * public), a fresh one per run, and to a private control plane (real kube-apiserver and
 * etcd). The operator runs in this process as its tests run it (createOperator, a client
 * without client-side rate limit, as the bare loop's).
 *
 * - Operator run: a fresh namespace; one TerdutServer (BYO dsn) Ready first, bootstrap
 *   included, not timed; then T TerdutTeams (200) and, per team, one TerdutEscalationRule
 *   (one level, 5m, target oncall), one TerdutDeadmanSwitch and one TerdutAlertSource are
 *   created (8 creates in flight, teams first). Timed from the first create until an
 *   independent watcher (one watch per kind, no polling) has seen all 4·T+1 objects (801)
 *   Ready=True with observedGeneration == generation.
 * - Bare loop, same run, same machine: a fresh namespace and stand-in (bootstrapped, its
 *   key minted, its TerdutServer marked Ready: not timed), no kit controller. The same
 *   creates, by the same code, in the same order; each object is worked on as soon as its
 *   create returns (`--baseline sequential`: only once every create has returned), with
 *   the operator's concurrency: 4 workers for teams and 4 per child kind. Per object the
 *   finalizer add (the kit's guarded JSON patch) first, then — team: POST /api/teams;
 *   escalation: GET /api/users, GET /api/teams/{id}/escalation, PUT; switch: POST;
 *   alert source: POST, then its Secret (server-side apply) — then its status
 *   (server-side apply, the operator's content). A child starts its server calls once its
 *   team's status is written (the operator's children read the team ID from the team's
 *   status). No Events. Ended by the same watcher.
 * - The two sides alternate in each round (bare first in even rounds), after an uncounted
 *   warm-up of each; before each clock starts, the apiserver and etcd are let go idle.
 *   The verdict is the median of the rounds' ratios (operator / bare), target ≤ 1.5.
 *   Each side's CPU (this process, apiserver, etcd) is printed too, and the CPU other
 *   processes took meanwhile: on a shared machine that is what moves wall times.
 * - Resync: in the last round, once all are Ready, the counters are reset and the operator
 *   is left for 1.2 resync periods (resync 15 s); every object must be reconciled again,
 *   with no Kubernetes write (Events apart, and there are none) and no non-GET call to the
 *   server.
 *
 * Between runs everything a run made is deleted (finalizers lifted by hand, the operator
 * stopped), so that no run's operator lists, watches or resyncs another run's objects.
 *
 *   npm run bench:terdut            (-- --runs 3 --teams 200 --resync-seconds 15 --baseline pipelined)
 *   npm run bench:terdut -- --runs 1 --teams 50
 *   BENCH_CPU_PROFILE=/tmp/prof npm run bench:terdut
 *       one .cpuprofile of this process per timed run (the apiserver and etcd are other processes)
 *   BENCH_TERDUT_NO_EVENTS=1 npm run bench:terdut
 *       diagnostics, no verdict: the operator's Event recorder made a no-op, to see what Events cost
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ControlPlane } from '@operators/controlplane';
import { eventually, installCrds } from '@operators/controlplane/testing';
import {
  addFinalizer,
  type Condition,
  controllerReference,
  type DeleteOptions,
  type GroupVersionKind,
  KubeClient,
  type KubeObject,
  type Patch,
  Reflector,
  realClock,
  resourcePath,
  setCondition,
  type WriteOptions,
} from '@operators/kit';
import { pino } from 'pino';
import {
  TERDUT_ALERT_SOURCE,
  terdutAlertSourceCrd,
} from '../operators/terdut/src/api/terdut-alert-source.ts';
import {
  TERDUT_DEADMAN_SWITCH,
  type TerdutDeadmanSwitchStatus,
  terdutDeadmanSwitchCrd,
} from '../operators/terdut/src/api/terdut-deadman-switch.ts';
import {
  TERDUT_ESCALATION_RULE,
  terdutEscalationRuleCrd,
} from '../operators/terdut/src/api/terdut-escalation-rule.ts';
import {
  TERDUT_SERVER,
  type TerdutServer,
  terdutServerCrd,
} from '../operators/terdut/src/api/terdut-server.ts';
import {
  TERDUT_TEAM,
  type TerdutTeamStatus,
  terdutTeamCrd,
} from '../operators/terdut/src/api/terdut-team.ts';
import type {
  CallRecord,
  DeadmanSwitch,
  NewIntegration,
  Team,
} from '../operators/terdut/src/client/terdut-api.ts';
import { childStatus } from '../operators/terdut/src/controllers/child.ts';
import { valuesOf } from '../operators/terdut/src/domain/deadman.ts';
import {
  BOT_USERNAME,
  FIELD_MANAGER,
  FINALIZER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MANAGED_SELECTOR,
  WEBHOOK_KEYS,
  webhookSecretName,
} from '../operators/terdut/src/domain/names.ts';
import { Reason } from '../operators/terdut/src/domain/reasons.ts';
import { createOperator, type Operator } from '../operators/terdut/src/operator.ts';
import { type StandIn, startStandIn } from '../operators/terdut/src/server/stand-in.ts';
import { median } from './support/median.ts';
import { pool } from './support/widget-baseline.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    teams: { type: 'string', default: '200' },
    'resync-seconds': { type: 'string', default: '15' },
    baseline: { type: 'string', default: 'pipelined' },
  },
});
/**
 * `pipelined`: the bare loop works on each object as soon as its create returns (as the
 * operator can). `sequential`: all creates first, then the work.
 */
const BASELINE = flags.baseline;
const RUNS = Number(flags.runs);
const TEAMS = Number(flags.teams);
const RESYNC_MS = Number(flags['resync-seconds']) * 1000;
if (
  !(RUNS >= 1 && TEAMS >= 1 && RESYNC_MS >= 1000) ||
  (BASELINE !== 'pipelined' && BASELINE !== 'sequential')
) {
  process.stderr.write(
    'usage: terdut.bench.ts [--runs N ≥ 1] [--teams N ≥ 1] [--resync-seconds S ≥ 1] [--baseline pipelined|sequential]\n',
  );
  process.exit(2);
}
const TARGET_RATIO = 1.5;
/** Other processes' CPU during a run above which the round is said to be disturbed (a shared machine). */
const DISTURBED_MS = 1000;
/** Diagnostics, not a measurement: the operator's Events dropped (its recorder a no-op), to see what they cost. */
const NO_EVENTS = process.env.BENCH_TERDUT_NO_EVENTS === '1';
/** Writes a .cpuprofile of this process per timed run (the operator or bare loop, the stand-in, the watcher). */
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
/** Teams of the uncounted warm-up run of each side. */
const WARM_UP_TEAMS = 20;
/** The operator's: `withConcurrency(opts.concurrency ?? 4)` on the team and each child controller. */
const CONCURRENCY = 4;
/** Creates in flight, the same on both sides (the "user" applying the manifests). */
const CREATE_CONCURRENCY = 8;
const SERVER_NAME = 'terdut';
/** Bring-your-own database, no password. */
const SERVER_SPEC = { database: { dsn: 'postgres://terdut@db:5432/terdut' } };
const CHILD_KINDS = [TERDUT_ESCALATION_RULE, TERDUT_DEADMAN_SWITCH, TERDUT_ALERT_SOURCE] as const;
const CR_KINDS = [TERDUT_TEAM, ...CHILD_KINDS] as const;
const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;
const EVENT = { apiVersion: 'v1', kind: 'Event' } as const;
/** What the operator makes for a TerdutServer and an alert source, labelled as its own. */
const MANAGED_KINDS: readonly GroupVersionKind[] = [
  SECRET,
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Service' },
];
const silent = pino({ level: 'silent' });
const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

type Obj = KubeObject & {
  spec?: Record<string, unknown>;
  status?: { conditions?: readonly Condition[]; observedGeneration?: number } & Record<string, unknown>;
};

// ---------------------------------------------------------------------------------------
// Counting

/** What one side sent: Kubernetes writes by `verb kind` (Events apart), server calls by `METHOD route`. */
class Tally {
  k8sWrites = new Map<string, number>();
  /** Each write with its time since the last reset, for the resync report. */
  writeLog: string[] = [];
  events = 0;
  /** Events created, by `reason`. */
  eventReasons = new Map<string, number>();
  /** Requests on the wire (the transport), as a cross-check of the client-method count. */
  wireGets = 0;
  wireNonGets = 0;
  /** Summed latency of those writes on the wire, ms: how fast the apiserver answered this side. */
  wireWriteMs = 0;
  server = new Map<string, number>();
  /** Server calls answered other than 2xx, by `METHOD route outcome`. */
  failed = new Map<string, number>();
  since = performance.now();

  clone(): Tally {
    return Object.assign(new Tally(), {
      k8sWrites: new Map(this.k8sWrites),
      writeLog: [...this.writeLog],
      events: this.events,
      eventReasons: new Map(this.eventReasons),
      wireGets: this.wireGets,
      wireNonGets: this.wireNonGets,
      wireWriteMs: this.wireWriteMs,
      server: new Map(this.server),
      failed: new Map(this.failed),
      since: this.since,
    });
  }

  reset(): void {
    this.k8sWrites.clear();
    this.writeLog = [];
    this.events = 0;
    this.eventReasons.clear();
    this.wireGets = 0;
    this.wireNonGets = 0;
    this.wireWriteMs = 0;
    this.server.clear();
    this.failed.clear();
    this.since = performance.now();
  }

  write(verb: string, kind: string | undefined, name: string | undefined, reason?: string): void {
    if (kind === 'Event') {
      this.events++;
      if (reason) bump(this.eventReasons, reason);
      return;
    }
    bump(this.k8sWrites, `${verb} ${kind}`);
    this.writeLog.push(`${verb} ${kind}/${name} at +${(performance.now() - this.since).toFixed(0)} ms`);
  }

  call(c: CallRecord & { readonly controller?: string }): void {
    bump(this.server, `${c.method} ${c.route}`);
    if (!/^2\d\d$/.test(c.outcome)) bump(this.failed, `${c.method} ${c.route} ${c.outcome}`);
  }

  get writes(): number {
    return sum(this.k8sWrites);
  }

  serverCalls(get: boolean): number {
    return [...this.server].filter(([k]) => k.startsWith('GET ') === get).reduce((a, [, v]) => a + v, 0);
  }
}

function bump(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}
const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
const show = (m: Map<string, number>): string =>
  [...m]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

/**
 * Counts writes by client method, as operators/exoledge/test/support/e2e.ts's
 * CountingClient does — plus `withSignal`, since every reconcile writes through
 * `manager.client.withSignal(…)`, which on a plain KubeClient would drop the subclass.
 */
class CountingClient extends KubeClient {
  readonly tally: Tally;
  constructor(base: KubeClient, tally: Tally, signal?: AbortSignal) {
    super(base.transport, base.discovery, signal);
    this.tally = tally;
  }
  override withSignal(signal: AbortSignal): KubeClient {
    return new CountingClient(
      this,
      this.tally,
      this.signal ? AbortSignal.any([this.signal, signal]) : signal,
    );
  }
  override apply<T extends KubeObject>(
    obj: T,
    opts: Parameters<KubeClient['apply']>[1],
  ): Promise<T & KubeObject> {
    this.tally.write('apply', obj.kind, obj.metadata.name);
    return super.apply(obj, opts);
  }
  override applyStatus<T extends KubeObject>(
    obj: T,
    opts: Parameters<KubeClient['applyStatus']>[1],
  ): Promise<T & KubeObject> {
    this.tally.write('applyStatus', obj.kind, obj.metadata.name);
    return super.applyStatus(obj, opts);
  }
  override create<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.tally.write('create', obj.kind, obj.metadata.name, (obj as { reason?: string }).reason);
    return super.create(obj, opts);
  }
  override replace<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    this.tally.write('replace', obj.kind, obj.metadata.name);
    return super.replace(obj, opts);
  }
  override patch<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    name: string,
    namespace: string | undefined,
    patch: Patch,
    opts?: WriteOptions & { subresource?: string },
  ): Promise<T> {
    this.tally.write(opts?.subresource ? `patch/${opts.subresource}` : 'patch', gvk.kind, name);
    return super.patch<T>(gvk, name, namespace, patch, opts);
  }
  override delete(
    gvk: GroupVersionKind,
    name: string,
    namespace?: string,
    opts?: DeleteOptions,
  ): Promise<boolean> {
    this.tally.write('delete', gvk.kind, name);
    return super.delete(gvk, name, namespace, opts);
  }
}

/** A fresh client (own connections, own discovery) whose writes and requests are counted. */
async function countingClient(plane: ControlPlane, tally: Tally): Promise<CountingClient> {
  const base = await KubeClient.load(plane.kubeconfigPath);
  const request = base.transport.request.bind(base.transport);
  base.transport.request = (async <T>(o: Parameters<typeof request>[0]): Promise<T> => {
    if (o.method === 'GET') {
      tally.wireGets++;
      return request<T>(o);
    }
    if (o.path.startsWith('/apis/events.k8s.io/')) return request<T>(o);
    tally.wireNonGets++;
    const t = performance.now();
    try {
      return await request<T>(o);
    } finally {
      tally.wireWriteMs += performance.now() - t;
    }
  }) as typeof request;
  return new CountingClient(base, tally);
}

// ---------------------------------------------------------------------------------------
// The objects (the same on both sides)

interface Spec {
  readonly gvk: GroupVersionKind;
  readonly name: string;
  readonly team: number;
  readonly spec: Record<string, unknown>;
}

const teamName = (i: number): string => `team-${String(i).padStart(3, '0')}`;

/** The teams first, then per team its rule, switch and alert source: the order both sides create them in. */
function manifests(n: number): Spec[] {
  const teams: Spec[] = [];
  const children: Spec[] = [];
  for (let i = 0; i < n; i++) {
    const team = teamName(i);
    teams.push({
      gvk: TERDUT_TEAM,
      name: team,
      team: i,
      spec: { serverRef: { name: SERVER_NAME }, displayName: `Team ${i}` },
    });
    children.push(
      {
        gvk: TERDUT_ESCALATION_RULE,
        name: `${team}-escalation`,
        team: i,
        spec: { teamRef: { name: team }, levels: [{ timeout: '5m', targets: [{ kind: 'oncall' }] }] },
      },
      {
        gvk: TERDUT_DEADMAN_SWITCH,
        name: `${team}-watchdog`,
        team: i,
        spec: { teamRef: { name: team }, name: 'watchdog', matcher: 'alertname=Watchdog', timeout: '15m' },
      },
      {
        gvk: TERDUT_ALERT_SOURCE,
        name: `${team}-alertmanager`,
        team: i,
        spec: { teamRef: { name: team }, kind: 'alertmanager', name: 'alertmanager' },
      },
    );
  }
  return [...teams, ...children];
}

/** One run's objects: `teams` teams and their children. */
interface Batch {
  readonly teams: number;
  readonly manifests: readonly Spec[];
}
const batch = (teams: number): Batch => ({ teams, manifests: manifests(teams) });
/** The CRs of a full run; with the TerdutServer, the issue's 801 objects. */
const TOTAL = 4 * TEAMS;

/** Creates every manifest, CREATE_CONCURRENCY at a time; each object's promise settles when its create returns. */
function createAll(
  client: KubeClient,
  ns: string,
  b: Batch,
): { created: Map<string, Promise<Obj>>; all: Promise<void> } {
  const created = new Map<string, Promise<Obj>>();
  const resolvers = new Map<string, (o: Obj) => void>();
  for (const m of b.manifests) {
    created.set(m.name, new Promise<Obj>((r) => resolvers.set(m.name, r)));
  }
  const all = pool(b.manifests, CREATE_CONCURRENCY, async (m) => {
    const o = await client.create<Obj>({ ...m.gvk, metadata: { name: m.name, namespace: ns }, spec: m.spec });
    resolvers.get(m.name)?.(o);
  });
  return { created, all };
}

// ---------------------------------------------------------------------------------------
// The watcher: one watch per kind, the same for both sides

const isReady = (o: Obj): boolean =>
  o.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
  o.status?.observedGeneration === o.metadata.generation;

/** When the last object of each kind became Ready, and of all (performance.now()). */
interface Reached {
  readonly at: number;
  readonly kindsAt: ReadonlyMap<string, number>;
}

interface Watcher {
  /** Rejects after 5 minutes. */
  reached(): Promise<Reached>;
  stop(): Promise<void>;
}

async function watchReady(admin: KubeClient, ns: string, b: Batch): Promise<Watcher> {
  // The 4·T CRs and the TerdutServer (Ready before the clock starts, on both sides).
  const total = b.manifests.length + 1;
  const ready = new Set<string>();
  const perKind = new Map<string, number>();
  const kindsAt = new Map<string, number>();
  let resolve: (at: number) => void = () => {};
  const done = new Promise<number>((r) => {
    resolve = r;
  });
  const reflectors = [...CR_KINDS, TERDUT_SERVER].map((gvk) => {
    const r = new Reflector<Obj>({ client: admin, gvk, namespace: ns, log: silent });
    r.onDelta((d) => {
      const key = `${gvk.kind}/${d.object.metadata.name}`;
      const was = ready.has(key);
      const now = d.type !== 'deleted' && isReady(d.object as Obj);
      if (now === was) return;
      const n = (perKind.get(gvk.kind) ?? 0) + (now ? 1 : -1);
      perKind.set(gvk.kind, n);
      if (now) {
        ready.add(key);
        if (n === b.teams) kindsAt.set(gvk.kind, performance.now());
        if (ready.size === total) resolve(performance.now());
      } else {
        ready.delete(key);
      }
    });
    r.start();
    return r;
  });
  await Promise.all(reflectors.map((r) => r.ready()));
  return {
    async reached() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${ns}: ${ready.size} of ${total} objects Ready after 5 minutes`)),
          300_000,
        );
      });
      try {
        const at = await Promise.race([done, timeout]);
        return { at, kindsAt };
      } finally {
        clearTimeout(timer);
      }
    },
    async stop() {
      await Promise.all(reflectors.map((r) => r.stop()));
    },
  };
}

// ---------------------------------------------------------------------------------------
// CPU: this process (the operator or the bare loop, the stand-in, the watcher), the apiserver, etcd

interface Cpu {
  readonly node: number;
  readonly apiserver: number;
  readonly etcd: number;
  /** The whole machine's busy time (all CPUs, /proc/stat), of which the rest is other processes'. */
  readonly machine: number;
}

/** User and system CPU of a process so far, in ms (fields 14 and 15 of /proc/<pid>/stat, 100 ticks a second). */
function cpuOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
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

function cpuNow(plane: ControlPlane): Cpu {
  const { user, system } = process.cpuUsage();
  return {
    node: (user + system) / 1000,
    apiserver: cpuOf(plane.pids.apiserver),
    etcd: cpuOf(plane.pids.etcd),
    machine: machineBusy(),
  };
}

function cpuSince(plane: ControlPlane, start: Cpu): Cpu {
  const now = cpuNow(plane);
  return {
    node: now.node - start.node,
    apiserver: now.apiserver - start.apiserver,
    etcd: now.etcd - start.etcd,
    machine: now.machine - start.machine,
  };
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
      writeFileSync(join(dir, `terdut-${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** CPU the run's own processes did not use: other processes on the machine (and steal), in ms. */
const ownCpu = (c: Cpu): number => c.node + c.apiserver + c.etcd;
const otherCpu = (c: Cpu): number => Math.max(0, c.machine - c.node - c.apiserver - c.etcd);

// ---------------------------------------------------------------------------------------
// Setup and teardown

async function namespace(admin: KubeClient, name: string): Promise<void> {
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** Lifts every finalizer and deletes what a run made: nothing of it is left for the next run's operator. */
async function clean(admin: KubeClient, ns: string): Promise<void> {
  for (const gvk of [...CR_KINDS, TERDUT_SERVER, ...MANAGED_KINDS]) {
    const managed = MANAGED_KINDS.includes(gvk);
    const { items } = await admin.listAll(gvk, {
      namespace: ns,
      ...(managed ? { labelSelector: MANAGED_SELECTOR } : {}),
    });
    await pool(
      items.filter((o) => o.metadata.finalizers?.length),
      32,
      (o) =>
        admin
          .patch(gvk, o.metadata.name ?? '', ns, { type: 'merge', body: { metadata: { finalizers: null } } })
          .catch(() => undefined),
    );
    const info = await admin.resolve(gvk);
    await admin.transport.request({
      method: 'DELETE',
      path: resourcePath(info, ns),
      ...(managed ? { query: { labelSelector: MANAGED_SELECTOR } } : {}),
      timeoutMs: 120_000,
    });
  }
  // The operator's Events too: nothing of a run is left to weigh on the next.
  const events = await admin.resolve(EVENT);
  await admin.transport.request({ method: 'DELETE', path: resourcePath(events, ns), timeoutMs: 120_000 });
}

/**
 * Waits until the apiserver and etcd are idle (under a tenth of a core over half a
 * second; 15 s at most): the previous run's deletions and watch fan-out must not land
 * in the next run's time.
 */
async function settle(plane: ControlPlane): Promise<void> {
  const busy = (): number => cpuOf(plane.pids.apiserver) + cpuOf(plane.pids.etcd);
  for (let i = 0; i < 30; i++) {
    const before = busy();
    await sleep(500);
    if (busy() - before < 50) return;
  }
}

// ---------------------------------------------------------------------------------------
// The operator run

interface Run {
  readonly ms: number;
  /** Since the first create, when the last of each kind was Ready. */
  readonly kindsMs: ReadonlyMap<string, number>;
  readonly createsMs: number;
  readonly cpu: Cpu;
  /** The operator's reconciles during the run, per controller. */
  readonly reconciles?: ReadonlyMap<string, ControllerStats>;
  readonly tally: Tally;
  /** Requests the stand-in recorded: a cross-check of the counted server calls. */
  readonly standInRequests: number;
}

const since = (r: Reached, t: number): ReadonlyMap<string, number> =>
  new Map([...r.kindsAt].map(([k, v]) => [k, v - t]));

interface ResyncReport {
  readonly waitedMs: number;
  readonly tally: Tally;
  readonly reconciles: ReadonlyMap<string, ControllerStats>;
  readonly standInNonGets: number;
}

/** Per controller: reconciles, seconds spent reconciling, seconds keys waited in its queue. */
interface ControllerStats {
  readonly reconciles: number;
  readonly workSec: number;
  readonly queueSec: number;
}

async function controllerStats(manager: Operator['manager']): Promise<Map<string, ControllerStats>> {
  const values = async (
    name: string,
  ): Promise<readonly { value: number; labels: Record<string, unknown>; metricName?: string }[]> =>
    (await manager.registry.getSingleMetric(name)?.get())?.values ?? [];
  const out = new Map<string, { reconciles: number; workSec: number; queueSec: number }>();
  const at = (c: string) => {
    let e = out.get(c);
    if (!e) {
      e = { reconciles: 0, workSec: 0, queueSec: 0 };
      out.set(c, e);
    }
    return e;
  };
  for (const v of await values('controller_runtime_reconcile_total'))
    at(String(v.labels.controller)).reconciles += v.value;
  for (const v of await values('controller_runtime_reconcile_time_seconds'))
    if (v.metricName?.endsWith('_sum')) at(String(v.labels.controller)).workSec += v.value;
  for (const v of await values('workqueue_queue_duration_seconds'))
    if (v.metricName?.endsWith('_sum')) at(String(v.labels.name)).queueSec += v.value;
  return out;
}

function statsSince(
  after: ReadonlyMap<string, ControllerStats>,
  before: ReadonlyMap<string, ControllerStats>,
): Map<string, ControllerStats> {
  return new Map(
    [...after].map(([k, a]) => {
      const b = before.get(k);
      return [
        k,
        {
          reconciles: a.reconciles - (b?.reconciles ?? 0),
          workSec: a.workSec - (b?.workSec ?? 0),
          queueSec: a.queueSec - (b?.queueSec ?? 0),
        },
      ];
    }),
  );
}

const showStats = (m: ReadonlyMap<string, ControllerStats>): string =>
  [...m]
    .filter(([, s]) => s.reconciles > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([k, s]) =>
        `${k.replace('terdut', '')} ${s.reconciles} (${((1000 * s.workSec) / s.reconciles).toFixed(0)} ms each, ` +
        `${((1000 * s.queueSec) / s.reconciles).toFixed(0)} ms queued)`,
    )
    .join(', ');

async function operatorRun(
  plane: ControlPlane,
  admin: KubeClient,
  round: string,
  b: Batch,
  resync: boolean,
): Promise<{ run: Run; resync?: ResyncReport; warnings: string[] }> {
  const ns = `terdut-op-${round}`;
  await namespace(admin, ns);
  const standIn = await startStandIn();
  const tally = new Tally();
  const client = await countingClient(plane, tally);
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    {
      write(line: string) {
        warnings.push(line);
      },
    },
  );
  const operator = createOperator({
    client,
    logger,
    resyncMs: RESYNC_MS,
    serverUrl: (server: TerdutServer, inCluster: string) =>
      server.metadata.namespace === ns ? standIn.url : inCluster,
    onApiCall: (c) => tally.call(c),
  });
  if (NO_EVENTS) operator.manager.recorder.event = () => {};
  await operator.manager.start();
  try {
    // The server, Ready first: bootstrap and the operator's key, not timed.
    await admin.create({
      ...TERDUT_SERVER,
      metadata: { name: SERVER_NAME, namespace: ns },
      spec: SERVER_SPEC,
    });
    await eventually(
      `TerdutServer ${ns}/${SERVER_NAME} Ready`,
      async () => {
        const s = await admin.get<Obj>(TERDUT_SERVER, SERVER_NAME, ns);
        return isReady(s) ? s : undefined;
      },
      60_000,
    );
    const watcher = await watchReady(admin, ns, b);
    await settle(plane);
    tally.reset();
    standIn.clearRequests();
    const stats0 = await controllerStats(operator.manager);
    const profiler = PROFILE_DIR ? await startProfile() : undefined;
    const cpu0 = cpuNow(plane);
    const t = performance.now();
    const { all } = createAll(admin, ns, b);
    await all;
    const createsMs = performance.now() - t;
    const reached = await watcher.reached();
    const cpu = cpuSince(plane, cpu0);
    if (profiler) await profiler.stop(`operator-${round}`);
    const stats1 = await controllerStats(operator.manager);
    const run: Run = {
      ms: reached.at - t,
      kindsMs: since(reached, t),
      createsMs,
      cpu,
      reconciles: statsSince(stats1, stats0),
      tally: tally.clone(),
      standInRequests: standIn.requests.length,
    };
    let report: ResyncReport | undefined;
    if (resync) {
      // Reset at the moment all are Ready, then wait 1.2 resync periods: every object's
      // requeue-after-resync comes due in that window.
      const before = await controllerStats(operator.manager);
      tally.reset();
      standIn.clearRequests();
      const waitedMs = RESYNC_MS * 1.2;
      await sleep(waitedMs);
      const after = await controllerStats(operator.manager);
      const reqs = standIn.requests;
      report = {
        waitedMs,
        tally: tally.clone(),
        reconciles: statsSince(after, before),
        standInNonGets: reqs.filter((r) => r.method !== 'GET').length,
      };
    }
    await watcher.stop();
    return { run, ...(report ? { resync: report } : {}), warnings };
  } finally {
    await operator.manager.stop();
    await client.transport.close();
    await standIn.close();
    await clean(admin, ns);
  }
}

// ---------------------------------------------------------------------------------------
// The bare loop

async function serverCall<T>(
  standIn: StandIn,
  tally: Tally,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${standIn.url}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  tally.call({ method, route: path.replace(/\/\d+(?=\/|$)/g, '/{id}'), outcome: String(res.status) });
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The operator's key on a fresh stand-in, as the operator gets it (bootstrap, its user, its key); not timed. */
async function operatorKey(standIn: StandIn): Promise<string> {
  const t = new Tally();
  const boot = await serverCall<{ api_key: { key: string } }>(
    standIn,
    t,
    'POST',
    '/api/bootstrap',
    undefined,
    {
      username: 'admin',
    },
  );
  const admin = boot.api_key.key;
  const user = await serverCall<{ id: number }>(standIn, t, 'POST', '/api/users', admin, {
    username: BOT_USERNAME,
    email: `${BOT_USERNAME}@invalid`,
  });
  const key = await serverCall<{ key: string }>(standIn, t, 'POST', `/api/users/${user.id}/api-keys`, admin, {
    name: 'bench',
  });
  return key.key;
}

const synced = (message: string) => ({ ok: true, reason: Reason.Synced, message });

async function bareRun(plane: ControlPlane, admin: KubeClient, round: string, b: Batch): Promise<Run> {
  const ns = `terdut-bare-${round}`;
  await namespace(admin, ns);
  const standIn = await startStandIn();
  const key = await operatorKey(standIn);
  const tally = new Tally();
  const client = await countingClient(plane, tally);
  // The operator's client has resolved every kind before its first reconcile: so does this one.
  for (const gvk of [...CR_KINDS, SECRET, NAMESPACE]) await client.resolve(gvk);
  const serverKey = `${ns}/${SERVER_NAME}`;
  const api = <T>(method: string, path: string, body?: unknown): Promise<T> =>
    serverCall<T>(standIn, tally, method, path, key, body);
  try {
    // The TerdutServer, Ready before the clock as on the operator's side (its bootstrap and
    // key were made above): the 801st object.
    const server = await admin.create<Obj>({
      ...TERDUT_SERVER,
      metadata: { name: SERVER_NAME, namespace: ns },
      spec: SERVER_SPEC,
    });
    await admin.applyStatus(
      {
        ...TERDUT_SERVER,
        metadata: { name: SERVER_NAME, namespace: ns },
        status: {
          serviceName: SERVER_NAME,
          conditions: setCondition(
            undefined,
            {
              type: 'Ready',
              status: 'True',
              reason: Reason.Synced,
              message: `serving at ${standIn.url}`,
              observedGeneration: server.metadata.generation,
            },
            new Date(),
          ),
          observedGeneration: server.metadata.generation,
        },
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
    const watcher = await watchReady(admin, ns, b);
    await settle(plane);
    tally.reset();
    standIn.clearRequests();
    const profiler = PROFILE_DIR ? await startProfile() : undefined;
    const cpu0 = cpuNow(plane);
    const t = performance.now();
    const { created, all } = createAll(admin, ns, b);
    // Sequential: every create first, then the work (the brief's literal order).
    if (BASELINE === 'sequential') await all;
    const teamIds = new Map<number, Promise<number>>();
    const teamResolvers = new Map<number, (id: number) => void>();
    for (let i = 0; i < b.teams; i++) teamIds.set(i, new Promise((r) => teamResolvers.set(i, r)));

    /** The object as created, with the finalizer added: the first write, as the operator's. */
    const withFinalizer = async (m: Spec): Promise<Obj> => {
      const o = (await created.get(m.name)) as Obj;
      const added = await addFinalizer(client, o, FINALIZER);
      if (added.kind !== 'patched') throw new Error(`finalizer on ${m.name}: ${added.kind}`);
      return added.object;
    };
    const writeStatus = (o: Obj, status: object): Promise<unknown> =>
      client.applyStatus(
        {
          apiVersion: o.apiVersion,
          kind: o.kind,
          metadata: { name: o.metadata.name, namespace: ns },
          status: JSON.parse(JSON.stringify(status)) as object,
        },
        { fieldManager: FIELD_MANAGER, force: true },
      );
    const of = (gvk: GroupVersionKind): Spec[] => b.manifests.filter((m) => m.gvk.kind === gvk.kind);

    const teams = pool(of(TERDUT_TEAM), CONCURRENCY, async (m) => {
      const o = await withFinalizer(m);
      const team = await api<Team>('POST', '/api/teams', {
        name: (m.spec as { displayName: string }).displayName,
      });
      const status: TerdutTeamStatus = {
        teamID: team.id,
        server: serverKey,
        applied: { name: team.name },
        conditions: setCondition(
          undefined,
          {
            type: 'Ready',
            status: 'True',
            reason: Reason.Synced,
            message: `team ${team.id} on ${serverKey}`,
            observedGeneration: o.metadata.generation,
          },
          new Date(),
        ),
        observedGeneration: o.metadata.generation,
      };
      await writeStatus(o, status);
      teamResolvers.get(m.team)?.(team.id);
    });
    const rules = pool(of(TERDUT_ESCALATION_RULE), CONCURRENCY, async (m) => {
      const o = await withFinalizer(m);
      const teamID = (await teamIds.get(m.team)) as number;
      await api('GET', '/api/users');
      await api('GET', `/api/teams/${teamID}/escalation`);
      await api('PUT', `/api/teams/${teamID}/escalation`, {
        repeat_count: 0,
        levels: [{ timeout_seconds: 300, targets: [{ kind: 'oncall' }] }],
      });
      await writeStatus(
        o,
        childStatus(o, { teamID }, synced(`policy of team ${teamID} on ${serverKey}`), realClock),
      );
    });
    const switches = pool(of(TERDUT_DEADMAN_SWITCH), CONCURRENCY, async (m) => {
      const o = await withFinalizer(m);
      const teamID = (await teamIds.get(m.team)) as number;
      const made = await api<DeadmanSwitch>('POST', `/api/teams/${teamID}/deadman-switches`, {
        name: 'watchdog',
        matcher: 'alertname=Watchdog',
        timeout_seconds: 900,
        severity: 'critical',
      });
      const patch: Partial<TerdutDeadmanSwitchStatus> = {
        switchID: made.id,
        applied: valuesOf(made),
        teamID,
      };
      await writeStatus(o, childStatus(o, patch, synced(`switch ${made.id} on team ${teamID}`), realClock));
    });
    const sources = pool(of(TERDUT_ALERT_SOURCE), CONCURRENCY, async (m) => {
      const o = await withFinalizer(m);
      const teamID = (await teamIds.get(m.team)) as number;
      const made = await api<NewIntegration>('POST', `/api/teams/${teamID}/integrations`, {
        name: 'alertmanager',
        kind: 'alertmanager',
      });
      const secretName = webhookSecretName(m.name);
      await client.apply(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: secretName,
            namespace: ns,
            labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
            ownerReferences: [controllerReference(o)],
          },
          type: 'Opaque',
          data: {
            [WEBHOOK_KEYS.url]: Buffer.from(made.url).toString('base64'),
            [WEBHOOK_KEYS.key]: Buffer.from(made.key).toString('base64'),
            [WEBHOOK_KEYS.integrationID]: Buffer.from(String(made.id)).toString('base64'),
          },
        } as KubeObject,
        { fieldManager: FIELD_MANAGER, force: true },
      );
      const patch = {
        teamID,
        integrationID: made.id,
        applied: { kind: 'alertmanager', name: 'alertmanager' },
        webhookURLSecretRef: { name: secretName },
      };
      await writeStatus(
        o,
        childStatus(
          o,
          patch,
          synced(`integration ${made.id} on team ${teamID}; URL and key in Secret ${secretName}`),
          realClock,
        ),
      );
    });
    await all;
    const createsMs = performance.now() - t;
    await Promise.all([teams, rules, switches, sources]);
    const reached = await watcher.reached();
    const cpu = cpuSince(plane, cpu0);
    if (profiler) await profiler.stop(`bare-${round}`);
    await watcher.stop();
    return {
      ms: reached.at - t,
      kindsMs: since(reached, t),
      createsMs,
      cpu,
      tally,
      standInRequests: standIn.requests.length,
    };
  } finally {
    await client.transport.close();
    await standIn.close();
    await clean(admin, ns);
  }
}

// ---------------------------------------------------------------------------------------
// Main

function describeRun(side: string, r: Run): string {
  const t = r.tally;
  return (
    `  ${side}: ${secs(r.ms)}; creates done at ${secs(r.createsMs)}, last Ready of each kind at ` +
    `${CR_KINDS.map((k) => `${k.kind.replace('Terdut', '')} ${secs(r.kindsMs.get(k.kind) ?? Number.NaN)}`).join(', ')}; ` +
    `cpu node ${r.cpu.node.toFixed(0)}, apiserver ${r.cpu.apiserver.toFixed(0)}, etcd ${r.cpu.etcd.toFixed(0)} ms ` +
    `(other processes ${otherCpu(r.cpu).toFixed(0)} ms)\n` +
    `    k8s writes ${t.writes} [${show(t.k8sWrites)}] (${t.wireNonGets} on the wire, ` +
    `${(t.wireWriteMs / Math.max(1, t.wireNonGets)).toFixed(1)} ms each on average), Events ${t.events}${t.events ? ` [${show(t.eventReasons)}]` : ''}, ` +
    `k8s GETs ${t.wireGets}; server calls ${sum(t.server)} (the stand-in saw ${r.standInRequests}) [${show(t.server)}]` +
    (t.failed.size ? `; not 2xx: ${show(t.failed)}` : '') +
    (r.reconciles ? `\n    reconciles ${showStats(r.reconciles)}` : '')
  );
}

const started = performance.now();
const plane = await ControlPlane.start({ log: () => {} });
let failed = false;
try {
  const admin = await KubeClient.load(plane.kubeconfigPath);
  await installCrds(admin, [
    terdutServerCrd(),
    terdutTeamCrd(),
    terdutEscalationRuleCrd(),
    terdutDeadmanSwitchCrd(),
    terdutAlertSourceCrd(),
  ]);
  // A CRD just installed is listed from the apiserver's watch cache a moment later.
  for (const gvk of [...CR_KINDS, TERDUT_SERVER])
    await eventually(`${gvk.kind} listed`, async () => (await admin.list(gvk)) && true);

  out(
    'terdut-operator against a bare loop, both talking to the terdut-server STAND-IN ' +
      '(operators/terdut/src/server/stand-in.ts: ours, contract-faithful, in memory, in this process; not the real server)',
  );
  out(
    `${TEAMS} teams × (team, escalation rule, dead man's switch, alert source) + the TerdutServer = ${TOTAL + 1} objects; ` +
      `concurrency ${CONCURRENCY} per kind on both sides, ${CREATE_CONCURRENCY} creates in flight, ${BASELINE} bare loop; ` +
      `Ready seen by a watch per kind; ${RUNS} rounds, sides alternating; resync ${RESYNC_MS / 1000} s`,
  );
  if (NO_EVENTS) out('DIAGNOSTIC RUN (BENCH_TERDUT_NO_EVENTS=1): the operator records no Events; no verdict');
  const ratios: number[] = [];
  /** The rounds other processes left alone (under DISTURBED_MS of their CPU during either side). */
  const quietRatios: number[] = [];
  const opTimes: number[] = [];
  const bareTimes: number[] = [];
  const opCpu: number[] = [];
  const bareCpu: number[] = [];
  const others: number[] = [];
  let resync: ResyncReport | undefined;
  const warnings: string[] = [];
  // A warm-up of both sides, not counted: the apiserver's first writes of each kind are
  // slow (schemas, CEL programs, SSA type converters are built on first use).
  const warmUp = batch(WARM_UP_TEAMS);
  await bareRun(plane, admin, 'warm-up', warmUp);
  await operatorRun(plane, admin, 'warm-up', warmUp, false);
  const full = batch(TEAMS);
  for (let round = 0; round < RUNS; round++) {
    const last = round === RUNS - 1;
    let op: Awaited<ReturnType<typeof operatorRun>>;
    let bare: Run;
    if (round % 2 === 0) {
      bare = await bareRun(plane, admin, String(round), full);
      op = await operatorRun(plane, admin, String(round), full, last);
    } else {
      op = await operatorRun(plane, admin, String(round), full, last);
      bare = await bareRun(plane, admin, String(round), full);
    }
    warnings.push(...op.warnings);
    if (op.resync) resync = op.resync;
    const ratio = op.run.ms / bare.ms;
    ratios.push(ratio);
    opTimes.push(op.run.ms);
    bareTimes.push(bare.ms);
    opCpu.push(ownCpu(op.run.cpu));
    bareCpu.push(ownCpu(bare.cpu));
    others.push(otherCpu(op.run.cpu), otherCpu(bare.cpu));
    const disturbed = Math.max(otherCpu(op.run.cpu), otherCpu(bare.cpu)) > DISTURBED_MS;
    if (!disturbed) quietRatios.push(ratio);
    out(
      `round ${round + 1}: operator ${secs(op.run.ms)}, bare loop ${secs(bare.ms)}, ratio ${ratio.toFixed(2)}` +
        (disturbed ? ' (disturbed: other processes took CPU meanwhile, see below)' : ''),
    );
    out(describeRun('operator', op.run));
    out(describeRun('bare loop', bare));
  }
  const m = median(ratios);
  const ok = m <= TARGET_RATIO;
  out(
    `median: operator ${secs(median(opTimes))}, bare loop ${secs(median(bareTimes))}; ` +
      `ratio ${m.toFixed(2)} (median of rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}) ` +
      `${ok ? '≤' : '>'} ${TARGET_RATIO}: ${NO_EVENTS ? 'no verdict (diagnostic run)' : ok ? 'PASS' : 'FAIL'}`,
  );
  out(
    `CPU used per run (this process, apiserver, etcd; median): operator ${secs(median(opCpu))}, ` +
      `bare loop ${secs(median(bareCpu))}, ratio ${(median(opCpu) / median(bareCpu)).toFixed(2)}; ` +
      `other processes on the machine took ${secs(median(others))} per run (median; max ${secs(Math.max(...others))})` +
      (quietRatios.length < ratios.length
        ? `; rounds undisturbed (under ${secs(DISTURBED_MS)} of other CPU): ${quietRatios.length}` +
          (quietRatios.length ? `, their median ratio ${median(quietRatios).toFixed(2)}` : '')
        : ''),
  );
  if (warnings.length) {
    out(`operator warnings logged: ${warnings.length}; the first ones:`);
    for (const w of warnings.slice(0, 3)) out(`  ${w.trim().slice(0, 1500)}`);
  }
  if (resync) {
    const r = resync.tally;
    const nonGets = r.serverCalls(false);
    // Every object was compared again (at least one reconcile per object of each kind), for nothing.
    const resynced = ['terdutteam', ...CHILD_KINDS.map((k) => k.kind.toLowerCase())].every(
      (c) => (resync?.reconciles.get(c)?.reconciles ?? 0) >= TEAMS,
    );
    const clean = resynced && r.writes === 0 && nonGets === 0 && resync.standInNonGets === 0;
    if (!resynced) out(`resync: fewer reconciles than objects of some kind in the window`);
    out(
      `resync (last round, counters reset once all were Ready, ${secs(resync.waitedMs)} waited): ` +
        `reconciles ${showStats(resync.reconciles)}; ` +
        `k8s writes ${r.writes} (must be 0), Events ${r.events}, k8s GETs ${r.wireGets}; ` +
        `server non-GET calls ${nonGets} (must be 0; the stand-in saw ${resync.standInNonGets}), ` +
        `server GETs ${r.serverCalls(true)} [${show(r.server)}]: ${clean ? 'PASS' : 'FAIL'}`,
    );
    if (r.writes) out(`  writes: ${r.writeLog.slice(0, 20).join('; ')}`);
    if (!clean) failed = true;
  }
  if (!ok && !NO_EVENTS) failed = true;
  await admin.transport.close();
} finally {
  await plane.stop();
}
out(`total ${secs(performance.now() - started)}`);
if (failed) process.exitCode = 1;
