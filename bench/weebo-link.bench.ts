/**
 * weebo-link at scale (issue 10, Performance): N annotated AuthentikUsers (2,000) → time
 * until N StalwartAccounts are Linked, against a bare loop server-side applying the same
 * N targets with the same concurrency (8). Target: the median ratio ≤ 1.2. Then a restart
 * of weebo-link over the N linked pairs (every target reconciled, as a resync does) must
 * write nothing.
 *
 * weebo-link's time runs from its start (the sources exist already) to the last target
 * seen Linked: it includes loading the rules, discovery, the initial lists of sources and
 * targets and the cache sync, then one decision and one apply per target.
 *
 * On a shared two-core machine the load of the moment moves absolute times by tens of
 * percent, so the two sides are measured side by side, alternating, in ROUNDS rounds
 * (3 by default): each round runs the bare loop and weebo-link once (bare first in even
 * rounds, weebo-link first in odd ones), in namespaces of their own, and the round's
 * ratio compares the two. The verdict is the median of the rounds' ratios. Each run
 * starts with a fresh client (its own connections and discovery), ends when an
 * independent watcher (the same for both sides) has seen N targets labelled Linked, and
 * its targets are deleted afterwards, so that no run lists or watches another's objects.
 *
 *   npm run bench:weebo-link                 (N=500 or ROUNDS=1 to try it smaller)
 *   BENCH_CPU_PROFILE=/tmp/prof npm run bench:weebo-link
 *       writes one .cpuprofile of this process per weebo-link run (weebo-link and the
 *       watcher; the apiserver and etcd are other processes)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { ControlPlane } from '@operators/controlplane';
import { eventually, installCrds } from '@operators/controlplane/testing';
import { type GroupVersionKind, KubeClient, type KubeObject, Reflector, resourcePath } from '@operators/kit';
import { pino } from 'pino';
import { startWeeboLink, type WeeboLink } from '../operators/weebo-link/src/app.ts';
import { RULES_CONFIGMAP, RULES_KEY } from '../operators/weebo-link/src/controllers/rules.ts';
import { desiredTarget, loadRules } from '../operators/weebo-link/src/domain/index.ts';
import { exampleRules } from '../operators/weebo-link/src/example-rules.ts';
import {
  AUTHENTIK_USER,
  authentikUser,
  STALWART_ACCOUNT,
  TEST_CRDS,
} from '../operators/weebo-link/src/testkit/crds.ts';
import { pool } from './support/widget-baseline.ts';

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = 8;
const TARGET_RATIO = 1.2;
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
const quiet = pino({ level: process.env.BENCH_LOG ?? 'silent' });
const silentLog = pino({ level: 'silent' });

const APISERVER_PROFILE_SECONDS = Number(process.env.BENCH_APISERVER_PROFILE_SECONDS ?? 0);

const plane = await ControlPlane.start({
  log: () => {},
  apiserverFlags: APISERVER_PROFILE_SECONDS ? ['--profiling=true'] : [],
});

/**
 * With BENCH_CPU_PROFILE and BENCH_APISERVER_PROFILE_SECONDS, the apiserver's CPU profile
 * of the first seconds of each run (`go tool pprof -top FILE` reads it).
 */
function apiserverProfile(admin: KubeClient, name: string): Promise<void> {
  if (!APISERVER_PROFILE_SECONDS || !PROFILE_DIR) return Promise.resolve();
  const dir = PROFILE_DIR;
  return (async () => {
    const res = await admin.transport.raw({
      method: 'GET',
      path: '/debug/pprof/profile',
      query: { seconds: APISERVER_PROFILE_SECONDS },
      accept: '*/*',
      timeoutMs: (APISERVER_PROFILE_SECONDS + 30) * 1000,
      headersTimeoutMs: (APISERVER_PROFILE_SECONDS + 30) * 1000,
    });
    const chunks: Uint8Array[] = [];
    for await (const c of res.body) chunks.push(c);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `apiserver-${name}.pprof`), Buffer.concat(chunks));
  })();
}

/** CPU time spent so far, in ms: this process (weebo-link and the watcher), the apiserver, etcd. */
interface Cpu {
  readonly node: number;
  readonly apiserver: number;
  readonly etcd: number;
}

function cpuOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  // Fields 14 and 15 of /proc/<pid>/stat: user and system time in clock ticks (100 per second).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function cpuNow(): Cpu {
  const { user, system } = process.cpuUsage();
  const { apiserver, etcd } = plane.pids;
  return { node: (user + system) / 1000, apiserver: cpuOf(apiserver), etcd: cpuOf(etcd) };
}

function cpuSince(start: Cpu): Cpu {
  const now = cpuNow();
  return {
    node: now.node - start.node,
    apiserver: now.apiserver - start.apiserver,
    etcd: now.etcd - start.etcd,
  };
}

function cpuText(c: Cpu): string {
  return `cpu node ${c.node.toFixed(0)}, apiserver ${c.apiserver.toFixed(0)}, etcd ${c.etcd.toFixed(0)} ms`;
}

/** What one weebo-link run sent, Events apart from the other writes; GETs are reads (lists, discovery). */
interface Requests {
  writes: number;
  events: number;
  gets: number;
  /** Since the run's start, when weebo-link's first target write was sent. */
  firstApplyMs: number | undefined;
  /** Target writes in flight, integrated over time, for the average concurrency achieved. */
  inFlight: number;
  inFlightMsSum: number;
  lastChangeAt: number;
  applyStartAt: number | undefined;
  applyEndAt: number | undefined;
}

/** A client for weebo-link whose requests are counted (watches are not: they go through `dedicated`). */
async function countedClient(startedAt: () => number): Promise<{ client: KubeClient; counts: Requests }> {
  const client = await KubeClient.load(plane.kubeconfigPath);
  const counts: Requests = {
    writes: 0,
    events: 0,
    gets: 0,
    firstApplyMs: undefined,
    inFlight: 0,
    inFlightMsSum: 0,
    lastChangeAt: 0,
    applyStartAt: undefined,
    applyEndAt: undefined,
  };
  const step = (delta: number): void => {
    const now = performance.now();
    counts.inFlightMsSum += counts.inFlight * (now - counts.lastChangeAt);
    counts.lastChangeAt = now;
    counts.inFlight += delta;
  };
  const request = client.transport.request.bind(client.transport);
  client.transport.request = (async <T>(o: Parameters<typeof request>[0]): Promise<T> => {
    if (o.method === 'GET') {
      counts.gets++;
      return request<T>(o);
    }
    if (o.path.startsWith('/apis/events.k8s.io/')) {
      counts.events++;
      return request<T>(o);
    }
    counts.writes++;
    const isTarget = o.path.includes('/stalwartaccounts/');
    if (!isTarget) return request<T>(o);
    const now = performance.now();
    counts.firstApplyMs ??= now - startedAt();
    counts.applyStartAt ??= now;
    step(1);
    try {
      return await request<T>(o);
    } finally {
      step(-1);
      counts.applyEndAt = performance.now();
    }
  }) as typeof request;
  return { client, counts };
}

/**
 * Resolves once `n` targets labelled Linked are in `namespace`: one metadata-only
 * watch, the same for both sides (not weebo-link's own caches, whose scope is theirs to
 * choose), counting changes as they come rather than polling lists the bare loop would
 * not pay for.
 */
async function watchLinked(admin: KubeClient, namespace: string, n: number) {
  const r = new Reflector<KubeObject>({
    client: admin,
    gvk: STALWART_ACCOUNT,
    namespace,
    labelSelector: 'link.weebo.io/state=Linked',
    metadataOnly: true,
    log: silentLog,
  });
  let resolve: () => void = () => {};
  const done = new Promise<void>((r) => {
    resolve = r;
  });
  let at = 0;
  r.onDelta(() => {
    if (r.store.size >= n && at === 0) {
      at = performance.now();
      resolve();
    }
  });
  r.start();
  await r.ready();
  return {
    /** When the n-th Linked target was seen. */
    async reached(): Promise<number> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${namespace}: ${r.store.size} of ${n} targets Linked after 10 minutes`)),
          600_000,
        );
      });
      try {
        await Promise.race([done, timeout]);
      } finally {
        clearTimeout(timer);
      }
      return at;
    },
    stop: () => r.stop(),
  };
}

async function namespace(admin: KubeClient, name: string): Promise<void> {
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** Deletes every object of a kind in a namespace (no finalizers here: gone when this returns). */
async function deleteAll(admin: KubeClient, gvk: GroupVersionKind, ns: string): Promise<void> {
  const info = await admin.resolve(gvk);
  await admin.transport.request({ method: 'DELETE', path: resourcePath(info, ns), timeoutMs: 120_000 });
}

async function countLinked(admin: KubeClient, ns: string): Promise<number> {
  const { items } = await admin.listAll(STALWART_ACCOUNT, {
    namespace: ns,
    labelSelector: 'link.weebo.io/state=Linked',
  });
  return items.length;
}

const users = Array.from({ length: N }, (_, i) => `user-${String(i).padStart(5, '0')}`);

/** The bare loop: the same N targets, server-side applied with concurrency 8 by a fresh client. */
async function bareRun(admin: KubeClient, round: number): Promise<{ ms: number; cpu: Cpu }> {
  const ns = `bare-mail-${round}`;
  await namespace(admin, ns);
  const rule = loadRules(
    exampleRules({ sourceNamespace: `bare-auth-${round}`, targetNamespace: ns, name: `bare-${round}` }),
  ).rules[0];
  if (!rule) throw new Error('the example rule did not load');
  const desired: KubeObject[] = users.map((u) => {
    const d = desiredTarget(rule, {
      ...authentikUser(u, `bare-auth-${round}`),
      metadata: { name: u, namespace: `bare-auth-${round}`, uid: `uid-${u}` },
    });
    if (!d.ok) throw new Error(d.message);
    return d.value;
  });
  const watcher = await watchLinked(admin, ns, N);
  const client = await KubeClient.load(plane.kubeconfigPath);
  const cpu0 = cpuNow();
  const profiled = apiserverProfile(admin, `bare-${round}`);
  const t = performance.now();
  await pool(desired, CONCURRENCY, (o) => client.apply(o, { fieldManager: 'bench', force: true }));
  const ms = (await watcher.reached()) - t;
  const cpu = cpuSince(cpu0);
  await profiled;
  await watcher.stop();
  await client.transport.close();
  await deleteAll(admin, STALWART_ACCOUNT, ns);
  return { ms, cpu };
}

interface LinkRun {
  readonly ms: number;
  readonly cpu: Cpu;
  readonly counts: Requests;
  /** The last round keeps its pairs for the restart check. */
  readonly ns: { auth: string; mail: string; home: string };
}

/** weebo-link from its start over N existing sources, until the watcher sees N Linked targets. */
async function linkRun(admin: KubeClient, round: number): Promise<LinkRun> {
  const ns = { auth: `auth-${round}`, mail: `mail-${round}`, home: `weebo-link-${round}` };
  for (const n of Object.values(ns)) await namespace(admin, n);
  await admin.apply(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: RULES_CONFIGMAP, namespace: ns.home },
      data: {
        [RULES_KEY]: exampleRules({
          sourceNamespace: ns.auth,
          targetNamespace: ns.mail,
          name: `bench-${round}`,
        }),
      },
    },
    { fieldManager: 'bench', force: true },
  );
  await pool(users, 32, (u) => admin.create(authentikUser(u, ns.auth)));
  const watcher = await watchLinked(admin, ns.mail, N);
  let t = 0;
  const { client, counts } = await countedClient(() => t);
  const profiler = PROFILE_DIR ? new Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 200 });
    await profiler.post('Profiler.start');
  }
  const cpu0 = cpuNow();
  const profiled = apiserverProfile(admin, `weebo-link-${round}`);
  t = performance.now();
  const link = await startWeeboLink({ client, namespace: ns.home, logger: quiet, concurrency: CONCURRENCY });
  const ms = (await watcher.reached()) - t;
  const cpu = cpuSince(cpu0);
  if (profiler && PROFILE_DIR) {
    const { profile } = await profiler.post('Profiler.stop');
    mkdirSync(PROFILE_DIR, { recursive: true });
    writeFileSync(join(PROFILE_DIR, `weebo-link-${round}.cpuprofile`), JSON.stringify(profile));
    profiler.disconnect();
  }
  await profiled;
  await watcher.stop();
  if ((await countLinked(admin, ns.mail)) !== N) throw new Error('not every target is Linked');
  await link.stop();
  await client.transport.close();
  return { ms, cpu, counts, ns };
}

/** A restart over linked pairs reconciles every target (as a resync does) and must write nothing. */
async function restartWrites(ns: LinkRun['ns']): Promise<{ ms: number; counts: Requests }> {
  let t = 0;
  const { client, counts } = await countedClient(() => t);
  t = performance.now();
  const link: WeeboLink = await startWeeboLink({
    client,
    namespace: ns.home,
    logger: quiet,
    concurrency: CONCURRENCY,
  });
  const reconciled = async (): Promise<number> => {
    const m = await link.manager.registry.getSingleMetric('controller_runtime_reconcile_total')?.get();
    return (m?.values ?? [])
      .filter((v) => String(v.labels.controller).startsWith('link-'))
      .reduce((a, v) => a + v.value, 0);
  };
  while ((await reconciled()) < N) await new Promise((r) => setTimeout(r, 100));
  const ms = performance.now() - t;
  // Writes a reconcile sent would be counted by now; a little more time for stragglers.
  await new Promise((r) => setTimeout(r, 500));
  await link.stop();
  await client.transport.close();
  return { ms, counts };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

try {
  const admin = await KubeClient.load(plane.kubeconfigPath);
  await installCrds(admin, TEST_CRDS);
  // A CRD just installed has its apiserver watch cache still initialising (lists answer 429
  // for about a second): wait until both kinds are served from it, as on a live cluster.
  for (const kind of [STALWART_ACCOUNT, AUTHENTIK_USER])
    await eventually(`${kind.kind} listed`, async () => (await admin.list(kind)) && true);

  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(`N = ${N}, concurrency ${CONCURRENCY}, ${ROUNDS} rounds (bare and weebo-link alternating)`);
  const ratios: number[] = [];
  let last: LinkRun | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    let bare: { ms: number; cpu: Cpu };
    let run: LinkRun;
    if (round % 2 === 0) {
      bare = await bareRun(admin, round);
      run = await linkRun(admin, round);
    } else {
      run = await linkRun(admin, round);
      bare = await bareRun(admin, round);
    }
    const bareMs = bare.ms;
    const c = run.counts;
    const applyMs = (c.applyEndAt ?? 0) - (c.applyStartAt ?? 0);
    const ratio = run.ms / bareMs;
    ratios.push(ratio);
    out(
      `round ${round + 1}: bare ${bareMs.toFixed(0)} ms, weebo-link ${run.ms.toFixed(0)} ms, ratio ${ratio.toFixed(2)}` +
        ` | weebo-link: first apply at ${c.firstApplyMs?.toFixed(0)} ms, applies over ${applyMs.toFixed(0)} ms, ${c.writes} writes, ${c.events} Events, ${c.gets} GETs,` +
        ` applies in flight ${(c.inFlightMsSum / Math.max(1, applyMs)).toFixed(1)} on average`,
    );
    out(`  bare: ${cpuText(bare.cpu)}; weebo-link: ${cpuText(run.cpu)}`);
    if (round < ROUNDS - 1) {
      await deleteAll(admin, STALWART_ACCOUNT, run.ns.mail);
      await deleteAll(admin, AUTHENTIK_USER, run.ns.auth);
    }
    last = run;
  }
  const m = median(ratios);
  out(
    `ratio median: ${m.toFixed(2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}; target ≤ ${TARGET_RATIO})`,
  );

  const restart = last ? await restartWrites(last.ns) : undefined;
  if (restart)
    out(
      `restart over ${N} linked pairs: every target reconciled in ${restart.ms.toFixed(0)} ms, ${restart.counts.writes} writes (target 0), ${restart.counts.events} Events (the restart's RuleLoaded)`,
    );
  await admin.transport.close();
  if (m > TARGET_RATIO || (restart?.counts.writes ?? 0) !== 0) process.exitCode = 1;
} finally {
  await plane.stop();
}
