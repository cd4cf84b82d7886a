/**
 * `npm run bench:exoledge-decider`: the exoledge decider answering Envoy's ext_authz
 * requests with three million Presumed prefixes loaded, against a bare node:http server
 * (`res.writeHead(200); res.end()`, no logic at all): the most any verdict service on
 * Node answers on this machine. The decider is the real process (`runDecider`: its HTTP
 * server, engine, lookup table and reload), fed from memory (`MemoryShardFeed`) instead
 * of a watch on the API; both servers are in `support/exoledge-decider-server.ts`.
 *
 * Targets (the issue's), each reported; a missed one exits 1 once everything is printed:
 * 1. throughput: verdicts per second against the bare server's, at least 0.7: `--rounds`
 *    pairs of `--duration` s runs, one of each server back to back (which goes first
 *    alternating), the ratio taken within each pair and its median reported. Paired,
 *    because this machine's speed drifts between runs (the same server measured 24.6 and
 *    41 µs of CPU a request from one run to the next, neighbours on the host): a drift
 *    that lasts through a pair moves both of its rates and not their ratio;
 * 2. latency: p99 under 2 ms with the load at half the decider's measured maximum;
 * 3. memory: the decider's resident set (RSS) under 300 MB after those loads, and again
 *    once a reload (4.) has settled;
 * 4. reload under load: during a run at full rate a new version of the 3M list (1% of its
 *    prefixes replaced: another fingerprint) is published shard by shard through the
 *    feed; the decider must serve it (addresses leaving the list and addresses joining it
 *    change verdict within the run) and no request may fail: every answer 200 or 403, no
 *    socket error, no timeout. And, as the issue's "no failed request" means behind
 *    Envoy, none slower than the gateway's ext_authz timeout (`VERDICT_TIMEOUT`, 0.25 s),
 *    after which Envoy applies `failurePolicy` instead of the verdict.
 * Not targets, printed to explain them: each server's CPU time per request (from its own
 * `process.cpuUsage()`, so independent of how fast the client is), and the CPU other
 * processes took during each run (/proc/stat less ours): a run with neighbours measures
 * them too, and the summary warns when they took more than a tenth of a core.
 *
 * What is loaded, made here from `--seed`, before anything is measured:
 * - list `proxies`, Presumed, exactly `--prefixes` (3,000,000) prefixes: 80% IPv4 /32,
 *   15% IPv4 /24, 5% IPv6 /48, random over public space, made as typed arrays and handed
 *   to the publisher's own code: `merge` (canonical order, duplicates gone) and
 *   `publishedSet` (`budget` to `maxEntries` = `--prefixes`, canonical text,
 *   fingerprint, shards of `DECIDER_SHARD_SIZE` = 5,000 lines, so 600 shards), then
 *   `deciderConfigMap` for each shard's ConfigMap with its fingerprint and total. The
 *   decider reads byte for byte what the operator publishes and verifies it with
 *   `selectShardSets` as in a cluster. Writing the list as text and parsing it back
 *   would cost only 0.5 s (measured: 0.3 s to write 52 MB, 0.25 s for `parseBlocklist`)
 *   but would test nothing the publisher does not redo, so the arrays go straight to
 *   `merge`. /32s are even hosts of odd /24s and /24s even ones, so almost nothing
 *   merges; 1% more than needed are made and the budget trims them to the exact count.
 * - list `scanners`, Certain, 1,000 /32s (one shard): its clients are dropped, 403.
 * - the site: the operator's `siteConfigText` of a minimal EdgeSite (posture Challenge,
 *   the product default; one allowlist `monitors` of two prefixes), written as the
 *   kubelet writes ConfigMap volumes (`writeVolume` of the decider test harness).
 * - no Valkey: a listed client gets its verdict (pow) without a state read, as when
 *   Valkey is down; with Valkey each listed request adds a round trip to it. So these are
 *   the numbers of the lookup and the HTTP path, not of the state store. A pow verdict is
 *   answered with the challenge page (403, a fresh signed nonce), which needs the site's
 *   signing key: the decider is given one as `EXOLEDGE_SIGNING_KEYS` would
 *   (`signingKeys` in `support/exoledge-decider-server.ts`); without it a listed request
 *   is a 503 and the checks below fail.
 *
 * The requests: `GET /v1/verdict/shop/products/42` (the ext_authz path prefix and the
 * request's path, as Envoy sends them) with `x-forwarded-for` (the client's address,
 * the entry the gateway appended) and `user-agent`, cycling over 400 requests whose client addresses
 * are 64% on no list, 27% in `proxies` (/32 hosts, hosts of /24s, IPv6 in /48s), 5% in
 * `scanners` and 4% in the allowlist. Each address's verdict is checked through
 * `/v1/verdict?addr=` and the ext_authz path before any load. The bare server gets the
 * very same requests.
 *
 * How it runs:
 * - the decider and the bare server each in a child process (the decider's memory is
 *   then its own: it reports `process.memoryUsage()` over IPC, and its peak RSS sampled
 *   every 100 ms), never both under load at once; the decider with the Node options its
 *   Deployment sets (`DECIDER_NODE_OPTIONS`) and jemalloc preloaded, as its image runs it
 *   (`--malloc glibc` for glibc's allocator; see `jemallocPath`);
 * - this process and its load generators pinned to core 0, the servers to core 1
 *   (`taskset`), when there are two cores: unpinned, the scheduler sometimes runs client
 *   and server on one core for part of a run, and one server's rate doubled or halved
 *   from run to run here;
 * - phase 1, the maximum rate, is driven by wrk (Debian's, installed when missing and
 *   running as root; `support/wrk.ts`), `--connections` connections, one thread, a
 *   warm-up run of `--warmup` s per server first. Node's autocannon costs more CPU per
 *   request than the bare server spends answering it: pinned to its core it tops out
 *   near 28,000 requests a second, where the bare server is 75% busy, and the "ratio"
 *   then compares two servers waiting for the same client (1.08 here: meaningless).
 *   wrk needs a third of a core for what saturates either server, so each rate is the
 *   server's own;
 * - phases 2 and 4 are driven by autocannon, in this process, for what wrk does not
 *   give: a fixed rate (`overallRate`), and every response's latency and status.
 *   Autocannon's rate limit sends each connection's share of a second back to back,
 *   then waits for the next second: "half load" is half of each second at full
 *   concurrency and half idle, so its p99 is that of bursts of 10 concurrent requests,
 *   stricter than an evenly paced half load. Latencies come from autocannon's
 *   `response` events (every response, 403s included, to the microsecond), not its
 *   histogram, which rounds to 1 ms and, under a rate, adds coordinated-omission samples
 *   computed from a 1 ms interval;
 * - the reload: the new version is first handed to the decider's process (IPC, not
 *   measured), then `--reload-after` s into a `--reload-duration` s run written shard by
 *   shard over `--rollout-ms` as the publisher rewrites shards in place, each write a
 *   view delivered at once as a watch event would be. The decider keeps the old version
 *   until the new one is complete; its list worker selects, parses and builds the new
 *   table off the request thread, which only swaps it in. The bench prints the event
 *   loop's stall at the last write, the build's time (from the decider's own metric),
 *   and the RSS at the reload's peak, right after it, and every second at rest for
 *   `--settle` s (20) as the list worker retires (`RETIRE_AFTER_MS`) and V8 collects the
 *   old version: the memory target applies to the decider at rest after its first load
 *   and after a reload alike.
 *
 * Run: `npm run bench:exoledge-decider [-- --connections 10 --duration 10 --rounds 5]`;
 * `--malloc glibc` runs the decider on glibc's allocator;
 * `--cpu-prof DIR` writes both servers' V8 CPU profiles there; `DECIDER_BENCH_LOG=info`
 * shows the decider's log (on stderr).
 */
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDebianPackages } from '@operators/controlplane/testing';
import { parseDurationMs } from '@operators/kit';
import autocannon from 'autocannon';
import { type BlocklistSourceSpec, ListKind } from '../operators/exoledge/src/api/blocklist-source.ts';
import { type EdgeSiteSpec, Posture } from '../operators/exoledge/src/api/edge-site.ts';
import { RETIRE_AFTER_MS } from '../operators/exoledge/src/decider/list-loader.ts';
import type { ObservedConfigMap } from '../operators/exoledge/src/decider/shard-sets.ts';
import { merge, type PrefixList, prefixCount } from '../operators/exoledge/src/domain/blocklist/index.ts';
import { formatIpv4 } from '../operators/exoledge/src/domain/blocklist/ipv4.ts';
import { formatIpv6, ipv6FromWords } from '../operators/exoledge/src/domain/blocklist/ipv6.ts';
import {
  DECIDER_DATA_KEY,
  DECIDER_SHARD_SIZE,
  deciderConfigMap,
  publishedSet,
} from '../operators/exoledge/src/domain/blocklist-source/publication.ts';
import { resolveSpec } from '../operators/exoledge/src/domain/blocklist-source/spec.ts';
import { VerdictReason } from '../operators/exoledge/src/domain/decider/verdict.ts';
import { DECIDER_NODE_OPTIONS } from '../operators/exoledge/src/domain/edge-site/decider.ts';
import { VERDICT_TIMEOUT } from '../operators/exoledge/src/domain/edge-site/filters.ts';
import { random32 } from '../operators/exoledge/src/sample/random32.ts';
import { BASE_SPEC } from '../operators/exoledge/test/support/decider-harness.ts';
import { type FromServer, isMessage, type Memory, type ToServer } from './support/exoledge-decider-server.ts';
import { type WrkRequest, type WrkResult, wrk } from './support/wrk.ts';

/** The issue's targets. */
const TARGET = { ratio: 0.7, p99Ms: 2, rssMb: 300 } as const;
const PRESUMED = 'proxies';
const CERTAIN = 'scanners';
const ALLOWLIST = 'monitors';
/** The allowlist's prefixes: documentation ranges, which the generated lists avoid. */
const ALLOWLIST_TEXT = '# uptime checks\n192.0.2.0/24\n2001:db8:100::/48\n';
/** The site: the product's default posture (Challenge), one allowlist. */
const SITE: EdgeSiteSpec = {
  ...BASE_SPEC,
  posture: Posture.Challenge,
  security: { allowlists: [ALLOWLIST] },
};
const CERTAIN_PREFIXES = 1000;
/** Other processes taking more than this many cores during a run make its numbers suspect. */
const NEIGHBOURS_WARNING = 0.1;
/** Share of the prefixes replaced in the reloaded version. */
const CHANGED_SHARE = 0.01;
const VERDICT_URL_PATH = '/v1/verdict/shop/products/42';
const REQUESTS = 400;
const SERVER = join(import.meta.dirname, 'support/exoledge-decider-server.ts');

const MB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A public-looking first octet: 1 to 223, not 10, 127, nor 192 (the allowlist's 192.0.2.0/24 is there). */
function firstOctet(next: () => number): number {
  for (;;) {
    const o = 1 + (next() % 223);
    if (o !== 10 && o !== 127 && o !== 192) return o;
  }
}

/** `v4Hosts` /32s, `v4Blocks` /24s and `v6Blocks` /48s, in no order, from `next`. */
function randomPrefixes(next: () => number, v4Hosts: number, v4Blocks: number, v6Blocks: number): PrefixList {
  const n4 = v4Hosts + v4Blocks;
  const addresses = new Uint32Array(n4);
  const lengths = new Uint8Array(n4);
  for (let i = 0; i < v4Hosts; i++) {
    // An even host of an odd /24: no two hosts are siblings, and no /24 below holds one.
    addresses[i] = (((firstOctet(next) << 24) | (next() & 0xffffff) | 0x100) & ~1) >>> 0;
    lengths[i] = 32;
  }
  for (let i = v4Hosts; i < n4; i++) {
    // An even /24: no two are siblings, so they stay /24s.
    addresses[i] = (((firstOctet(next) << 24) | (next() & 0xffffff)) & 0xfffffe00) >>> 0;
    lengths[i] = 24;
  }
  const words = new Uint32Array(4 * v6Blocks);
  const v6lengths = new Uint8Array(v6Blocks).fill(48);
  for (let i = 0; i < v6Blocks; i++) {
    // 2000::/4, global unicast; 2001:db8::/32 (the allowlist's) is left out.
    let w0: number;
    do w0 = (0x20000000 | (next() & 0x0fffffff)) >>> 0;
    while (w0 === 0x20010db8);
    words[4 * i] = w0;
    words[4 * i + 1] = (next() & 0xffff0000) >>> 0;
  }
  return { ipv4: { addresses, lengths }, ipv6: { words, lengths: v6lengths } };
}

/** `a` without the prefixes at which `drop` is true, then `b`: one unordered list. */
function replaced(a: PrefixList, drop: (i: number) => boolean, b: PrefixList): PrefixList {
  const keep4: number[] = [];
  const keep6: number[] = [];
  for (let i = 0; i < a.ipv4.lengths.length; i++) if (!drop(i)) keep4.push(i);
  for (let i = 0; i < a.ipv6.lengths.length; i++) if (!drop(a.ipv4.lengths.length + i)) keep6.push(i);
  const n4 = keep4.length + b.ipv4.lengths.length;
  const addresses = new Uint32Array(n4);
  const lengths = new Uint8Array(n4);
  keep4.forEach((k, j) => {
    addresses[j] = a.ipv4.addresses[k]!;
    lengths[j] = a.ipv4.lengths[k]!;
  });
  addresses.set(b.ipv4.addresses, keep4.length);
  lengths.set(b.ipv4.lengths, keep4.length);
  const n6 = keep6.length + b.ipv6.lengths.length;
  const words = new Uint32Array(4 * n6);
  const v6lengths = new Uint8Array(n6);
  keep6.forEach((k, j) => {
    words.set(a.ipv6.words.subarray(4 * k, 4 * k + 4), 4 * j);
    v6lengths[j] = a.ipv6.lengths[k]!;
  });
  words.set(b.ipv6.words, 4 * keep6.length);
  v6lengths.set(b.ipv6.lengths, keep6.length);
  return { ipv4: { addresses, lengths }, ipv6: { words, lengths: v6lengths } };
}

interface Published {
  /** The prefixes published, canonical. */
  readonly kept: PrefixList;
  readonly fingerprint: string;
  readonly configMaps: readonly ObservedConfigMap[];
}

/** What the operator publishes of `list` for the decider: budget, canonical text, shard ConfigMaps. */
function publish(name: string, kind: ListKind, list: PrefixList, maxEntries: number): Published {
  const source: BlocklistSourceSpec = { url: `https://lists.example/${name}.txt`, kind, maxEntries };
  const spec = resolveSpec(source);
  const set = publishedSet(merge(list), spec);
  const ref = { apiVersion: 'edge.exoledge.io/v1alpha1', kind: 'BlocklistSource', name, uid: `uid-${name}` };
  const version = { fingerprint: set.fingerprint, total: set.shards.length };
  const configMaps = set.shards.map((text, i): ObservedConfigMap => {
    const cm = deciderConfigMap(ref, spec, 'exoledge-system', i, text, version);
    // What the watch hands the decider (`KubeShardFeed`): name, labels, data.
    return { name: cm.metadata.name ?? '', labels: cm.metadata.labels, data: cm.data };
  });
  return { kept: set.budget.kept, fingerprint: set.fingerprint, configMaps };
}

/** Kinds of client in the request mix, with what the decider must answer for each. */
const Client = {
  Unlisted: 'unlisted',
  Presumed: 'presumed',
  Certain: 'certain',
  Allowlisted: 'allowlisted',
} as const;
type Client = (typeof Client)[keyof typeof Client];

const EXPECTED: Record<Client, { reason: VerdictReason; status: number }> = {
  unlisted: { reason: VerdictReason.NotListed, status: 200 },
  // The challenge page, ext_authz's denied response (the decider serves the challenge itself).
  presumed: { reason: VerdictReason.PresumedListed, status: 403 },
  certain: { reason: VerdictReason.CertainListed, status: 403 },
  allowlisted: { reason: VerdictReason.Allowlisted, status: 200 },
};

/** A generated client address: its text, and its value (a number: IPv4; a bigint: IPv6). */
interface Address {
  readonly text: string;
  readonly value: number | bigint;
}

/** A client address inside prefix `i` of `list` (IPv4 first, then IPv6), its host part random. */
function addressIn(list: PrefixList, i: number, next: () => number): Address {
  const n4 = list.ipv4.lengths.length;
  if (i < n4) {
    const length = list.ipv4.lengths[i]!;
    const host = length === 32 ? 0 : 1 + (next() % (2 ** (32 - length) - 2));
    const value = (list.ipv4.addresses[i]! + host) >>> 0;
    return { text: formatIpv4(value), value };
  }
  const j = i - n4;
  const length = list.ipv6.lengths[j]!;
  const host = length >= 64 ? 0n : (BigInt(next()) << 32n) | BigInt((next() | 1) >>> 0);
  const value = ipv6FromWords(list.ipv6.words, 4 * j) + host;
  return { text: formatIpv6(value), value };
}

/**
 * Whether `list` holds `value`, by a plain scan of every prefix: the benchmark's own
 * oracle of the verdict each address must get, independent of the decider's
 * `PrefixTable` (the code measured). Milliseconds an address, and obviously right.
 */
function holds(list: PrefixList, value: number | bigint): boolean {
  if (typeof value === 'number') {
    const { addresses, lengths } = list.ipv4;
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i]!;
      // A shift by 32 is a shift by 0 in JavaScript: /0 is the one mask made apart.
      const mask = length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0;
      if ((value & mask) >>> 0 === addresses[i]) return true;
    }
    return false;
  }
  const { words, lengths } = list.ipv6;
  for (let i = 0; i < lengths.length; i++) {
    const hostBits = 128n - BigInt(lengths[i]!);
    if (value >> hostBits === ipv6FromWords(words, 4 * i) >> hostBits) return true;
  }
  return false;
}

/** A random public address in none of `lists`. */
function unlistedAddress(next: () => number, v6: boolean, lists: readonly PrefixList[]): string {
  for (;;) {
    const value = v6
      ? (BigInt((0x20000000 | (next() & 0x0fffffff)) >>> 0) << 96n) |
        (BigInt(next()) << 64n) |
        (BigInt(next()) << 32n) |
        BigInt(next())
      : ((firstOctet(next) << 24) | (next() & 0xffffff)) >>> 0;
    if (lists.every((l) => !holds(l, value)))
      return typeof value === 'number' ? formatIpv4(value) : formatIpv6(value);
  }
}

interface Target {
  readonly addr: string;
  readonly client: Client;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** What every measured run reports: the server's CPU and the neighbours'. */
interface Measured {
  readonly responses: number;
  readonly seconds: number;
  /** CPU the server process used during the run. */
  readonly serverCpuMs: number;
  /** CPU other processes than the server and this one (with its load generator) used during the run, when the system tells. */
  readonly othersCpuMs: number | undefined;
}

interface LoadResult extends Measured {
  readonly result: autocannon.Result;
  /** Every response's latency in ms, sorted. */
  readonly latencies: Float64Array;
  /** Responses by status code. */
  readonly statuses: ReadonlyMap<number, number>;
}

interface SaturateResult extends Measured, WrkResult {}

interface LoadOptions {
  readonly server: ChildProcess;
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly overallRate?: number;
  readonly requests: readonly autocannon.Request[];
}

/** Every measured run, for the summary's word on the neighbours. */
const runs: Measured[] = [];

/** `run` with the server's CPU time and the neighbours' measured around it. */
async function measured<T extends { responses: number; seconds: number }>(
  server: ChildProcess,
  run: () => Promise<T>,
): Promise<T & Measured> {
  const before = await memoryOf(server);
  const machineBefore = machineBusyMs();
  const ownBefore = ownCpuMs();
  const value = await run();
  const own = ownCpuMs() - ownBefore;
  const machineAfter = machineBusyMs();
  const after = await memoryOf(server);
  const serverCpuMs = after.cpuMs - before.cpuMs;
  const othersCpuMs =
    machineBefore === undefined || machineAfter === undefined
      ? undefined
      : Math.max(0, machineAfter - machineBefore - serverCpuMs - own);
  const result = { ...value, serverCpuMs, othersCpuMs };
  runs.push(result);
  return result;
}

/** One autocannon run; every response's latency and status kept. */
function load(options: LoadOptions): Promise<LoadResult> {
  return measured(options.server, async () => {
    const run = await cannon(options);
    return { ...run, responses: run.latencies.length, seconds: run.result.duration };
  });
}

/** One wrk run at the maximum rate (`support/wrk.ts`). */
function saturate(
  server: ChildProcess,
  options: { url: string; connections: number; seconds: number; requests: readonly WrkRequest[] },
): Promise<SaturateResult> {
  return measured(server, () => wrk(options));
}

/**
 * CPU time of this process and of its children that have ended (wrk runs), in ms: the
 * load generator's share of a run. The servers are children too, but still running, so
 * not in the children's count until they exit.
 */
function ownCpuMs(): number {
  const self = process.cpuUsage();
  let children = 0;
  try {
    // /proc/self/stat: the fields after the command's closing parenthesis; cutime and cstime are the 14th and 15th.
    const stat = readFileSync('/proc/self/stat', 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children = (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    // No /proc: the children's time is unknown, and counted as the neighbours'.
  }
  return (self.user + self.system) / 1000 + (Number.isFinite(children) ? children : 0);
}

/**
 * CPU time the whole machine spent busy so far (every core, every process), from
 * /proc/stat; undefined where there is none. Less the server's and the load generator's
 * own, it is what other processes took from a run: the bench says so, as such a run
 * measures the neighbours too.
 */
function machineBusyMs(): number | undefined {
  let line: string | undefined;
  try {
    line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0];
  } catch {
    return undefined;
  }
  // cpu user nice system idle iowait irq softirq steal ..., in USER_HZ (100 a second on Linux).
  const ticks = (line ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  if (ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) return undefined;
  const idle = ticks[3]! + ticks[4]!;
  return (ticks.reduce((a, b) => a + b, 0) - idle) * 10;
}

function cannon(options: LoadOptions): Promise<Pick<LoadResult, 'result' | 'latencies' | 'statuses'>> {
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        pipelining: 1,
        duration: options.seconds,
        timeout: 10,
        requests: [...options.requests],
        ...(options.overallRate === undefined ? {} : { overallRate: options.overallRate }),
      },
      (err: unknown, result: autocannon.Result) => {
        if (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        resolve({ result, latencies: Float64Array.from(latencies).sort(), statuses });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      latencies.push(responseTime);
      statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
    });
  });
}

/** Requests per second of a run: responses over its duration. */
function rate(r: Measured): number {
  return r.responses / r.seconds;
}

/** The server's CPU time per response, in microseconds. */
function cpuPerRequest(r: Measured): number {
  return (r.serverCpuMs * 1000) / Math.max(1, r.responses);
}

/** The server's CPU time per response, and how busy it kept its core. */
function cpu(r: Measured): string {
  const busy = r.serverCpuMs / (r.seconds * 1000);
  const others = r.othersCpuMs === undefined ? '' : `; others ${(neighbours(r) * 100).toFixed(0)}% of a core`;
  return `${cpuPerRequest(r).toFixed(1)} µs CPU/req, ${(busy * 100).toFixed(0)}% busy${others}`;
}

/** What other processes took during a run, in cores (0.25: a quarter of one core). */
function neighbours(r: Measured): number {
  return (r.othersCpuMs ?? 0) / (r.seconds * 1000);
}

/** Responses of a run that are neither 200 nor 403. */
function unexpected(r: { readonly statuses: ReadonlyMap<number, number> }): number {
  let n = 0;
  for (const [code, c] of r.statuses) if (code !== 200 && code !== 403) n += c;
  return n;
}

/**
 * A server process in `role`, talking over IPC with structured clone (shard texts go as
 * strings); with `profileDir`, it writes a V8 CPU profile there when it exits.
 */
/**
 * Where Debian's libjemalloc2 puts the library on this machine's architecture. The
 * decider's image preloads it (`LD_PRELOAD`) and the bench runs the decider the same way
 * unless `--malloc glibc`: glibc's allocator keeps what the list worker's thread arenas
 * held after a reload (measured: 404 MB at rest 20 s after a reload with glibc, 285 MB
 * with jemalloc, which returns freed pages after a few seconds).
 */
function jemallocPath(): string {
  const multiarch = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  return `/usr/lib/${multiarch}/libjemalloc.so.2`;
}

function child(
  role: 'decider' | 'bare',
  profileDir: string | undefined,
  malloc: 'jemalloc' | 'glibc' = 'glibc',
): ChildProcess {
  return fork(SERVER, [role], {
    execArgv: [
      ...process.execArgv,
      // The decider runs with the options its Deployment gives it (`NODE_OPTIONS` there).
      ...(role === 'decider'
        ? (process.env.DECIDER_BENCH_NODE_OPTIONS ?? DECIDER_NODE_OPTIONS).split(' ').filter((o) => o !== '')
        : []),
      ...(profileDir === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${role}.cpuprofile`]),
    ],
    env: malloc === 'jemalloc' ? { ...process.env, LD_PRELOAD: jemallocPath() } : process.env,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/**
 * Pins this process (the load generator) to the first core and the servers to the
 * second, every thread, when there are two cores or more and `taskset` (util-linux) is
 * there. Unpinned, the scheduler now and then puts the client and the server on the same
 * core for part of a run, and the same server measures 15,000 or 30,000 requests a
 * second from one run to the next; pinned, runs agree within a few percent. What it
 * says is printed.
 */
function pinCores(servers: readonly ChildProcess[]): string {
  if (availableParallelism() < 2) return 'not pinned: one core';
  const pin = (pid: number | undefined, core: number): string | undefined => {
    const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { encoding: 'utf8' });
    if (r.error) return `taskset: ${r.error.message}`;
    return r.status === 0 ? undefined : `taskset: ${r.stderr.trim()}`;
  };
  const problems = [pin(process.pid, 0), ...servers.map((c) => pin(c.pid, 1))].filter((p) => p !== undefined);
  return problems.length === 0
    ? 'load generator pinned to core 0, servers to core 1 (taskset)'
    : `not pinned (${problems[0]})`;
}

/** The next message of `type` from `c`. */
function reply<T extends FromServer['type']>(
  c: ChildProcess,
  type: T,
): Promise<Extract<FromServer, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown): void => {
      if (isMessage<FromServer>(m) && m.type === type) {
        c.off('message', onMessage);
        c.off('exit', onExit);
        resolve(m as Extract<FromServer, { type: T }>);
      }
    };
    const onExit = (code: number | null): void =>
      reject(new Error(`the ${type} reply never came: child exited ${code}`));
    c.on('message', onMessage);
    c.once('exit', onExit);
  });
}

function tell(c: ChildProcess, message: ToServer): void {
  c.send(message);
}

/** Shards to the decider's process ten at a time (about 800 kB a message); IPC keeps their order. */
function sendShards(c: ChildProcess, configMaps: readonly ObservedConfigMap[]): void {
  for (let i = 0; i < configMaps.length; i += 10)
    tell(c, { type: 'shards', configMaps: configMaps.slice(i, i + 10) });
}

async function memoryOf(c: ChildProcess, resetPeak = false): Promise<Memory> {
  tell(c, { type: 'memory', resetPeak });
  return reply(c, 'memory');
}

/** Tables the decider built, and the seconds they took, from its own metric. */
async function tableBuilds(base: string): Promise<{ count: number; seconds: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name: string): number =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    count: value('exoledge_decider_table_build_seconds_count'),
    seconds: value('exoledge_decider_table_build_seconds_sum'),
  };
}

/** The JSON verdict for `addr`. */
async function verdictOf(base: string, addr: string): Promise<{ verdict: string; reason: string }> {
  const res = await fetch(`${base}/v1/verdict?addr=${encodeURIComponent(addr)}`);
  if (res.status !== 200) throw new Error(`verdict for ${addr}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as { verdict: string; reason: string };
}

async function parent(): Promise<number> {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '10' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '5' },
      prefixes: { type: 'string', default: '3000000' },
      seed: { type: 'string', default: '20240611' },
      'reload-duration': { type: 'string', default: '15' },
      'reload-after': { type: 'string', default: '3' },
      settle: { type: 'string', default: '20' },
      malloc: { type: 'string', default: 'jemalloc' },
      'rollout-ms': { type: 'string', default: '3000' },
      'cpu-prof': { type: 'string' },
    },
  });
  const connections = Number(values.connections);
  const seconds = Number(values.duration);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  const total = Number(values.prefixes);
  const seed = Number(values.seed);
  const reloadSeconds = Number(values['reload-duration']);
  const reloadAfter = Number(values['reload-after']);
  const rolloutMs = Number(values['rollout-ms']);
  const settleSeconds = Number(values.settle);
  const malloc = values.malloc === 'glibc' ? 'glibc' : 'jemalloc';
  const out = (s: string): boolean => process.stdout.write(s);
  await ensureDebianPackages(malloc === 'jemalloc' ? ['wrk', 'libjemalloc2'] : ['wrk']);

  out(
    `exoledge decider under HTTP load: ${total} Presumed prefixes, no Valkey; node ${process.version}, ` +
      `${connections} connections (wrk at the maximum rate, autocannon otherwise), pipelining 1; ` +
      `the decider's allocator: ${malloc === 'jemalloc' ? `jemalloc (LD_PRELOAD ${jemallocPath()}, as its image runs it)` : "glibc's malloc"}\n` +
      `  load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (2 cores; the machine may be shared)\n`,
  );

  // The lists, as the operator would publish them.
  let t = performance.now();
  const next = random32(seed);
  const surplus = 1.01;
  const v4Hosts = Math.ceil(total * 0.8 * surplus);
  const v4Blocks = Math.ceil(total * 0.15 * surplus);
  const v6Blocks = Math.ceil(total * 0.05 * surplus);
  const raw = randomPrefixes(next, v4Hosts, v4Blocks, v6Blocks);
  const before = publish(PRESUMED, ListKind.Presumed, raw, total);
  const genMs = performance.now() - t;
  t = performance.now();
  const changes = Math.round(total * CHANGED_SHARE);
  const dropped = new Set<number>();
  while (dropped.size < changes) dropped.add(next() % prefixCount(before.kept));
  // A few more than removed: some land on prefixes already listed; the budget trims the rest.
  const addedSurplus = 1.03;
  const added = randomPrefixes(
    next,
    Math.ceil(changes * 0.8 * addedSurplus),
    Math.ceil(changes * 0.15 * addedSurplus),
    Math.ceil(changes * 0.05 * addedSurplus),
  );
  const after = publish(
    PRESUMED,
    ListKind.Presumed,
    replaced(before.kept, (i) => dropped.has(i), added),
    total,
  );
  const reloadGenMs = performance.now() - t;
  const certain = publish(
    CERTAIN,
    ListKind.Certain,
    randomPrefixes(next, CERTAIN_PREFIXES, 0, 0),
    CERTAIN_PREFIXES,
  );
  const published = prefixCount(before.kept);
  const bytes = before.configMaps.reduce((n, cm) => n + String(cm.data?.[DECIDER_DATA_KEY] ?? '').length, 0);
  out(
    `lists: ${PRESUMED} ${published} prefixes (${before.kept.ipv4.lengths.length} IPv4, ${before.kept.ipv6.lengths.length} IPv6), ` +
      `${before.configMaps.length} shards of ${DECIDER_SHARD_SIZE}, ${(bytes / MB).toFixed(1)} MB of text, ` +
      `fingerprint ${before.fingerprint.slice(0, 12)}, made in ${(genMs / 1000).toFixed(1)} s; ` +
      `reload version ${after.fingerprint.slice(0, 12)} (${changes} prefixes replaced, ${prefixCount(after.kept)} prefixes, ` +
      `${after.configMaps.length} shards) in ${(reloadGenMs / 1000).toFixed(1)} s; ${CERTAIN} ${prefixCount(certain.kept)} prefixes\n`,
  );
  let failures = 0;
  if (published !== total || prefixCount(after.kept) !== total) {
    out(`check: the lists do not hold exactly ${total} prefixes\n`);
    failures++;
  }

  // The request mix, each address's expected verdict known from a scan of the lists (`holds`).
  const allowlisted = ['192.0.2.10', '192.0.2.200', '2001:db8:100::7', '2001:db8:100:5::1'];
  const targets: Target[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const roll = next() % 100;
    if (roll < 56)
      targets.push({
        addr: unlistedAddress(next, false, [before.kept, certain.kept]),
        client: Client.Unlisted,
      });
    else if (roll < 64)
      targets.push({
        addr: unlistedAddress(next, true, [before.kept, certain.kept]),
        client: Client.Unlisted,
      });
    else if (roll < 91) {
      const k = next() % published;
      targets.push({ addr: addressIn(before.kept, k, next).text, client: Client.Presumed });
    } else if (roll < 96) {
      targets.push({
        addr: addressIn(certain.kept, next() % CERTAIN_PREFIXES, next).text,
        client: Client.Certain,
      });
    } else targets.push({ addr: allowlisted[next() % allowlisted.length]!, client: Client.Allowlisted });
  }
  const requests: autocannon.Request[] = targets.map((target) => ({
    method: 'GET',
    path: VERDICT_URL_PATH,
    headers: {
      host: 'shop.example.com',
      // As the gateway forwards it: the client's address, the entry it appended (0 trusted hops).
      'x-forwarded-for': target.addr,
      'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    },
  }));
  const wrkRequests: WrkRequest[] = requests.map((r) => ({
    method: r.method ?? 'GET',
    path: r.path ?? '/',
    headers: (r.headers ?? {}) as Record<string, string>,
  }));
  // Addresses whose verdict the reload flips: out of the list after it, and into it.
  const leaving: string[] = [];
  for (const i of dropped) {
    const addr = addressIn(before.kept, i, next);
    if (!holds(after.kept, addr.value)) leaving.push(addr.text);
    if (leaving.length === 4) break;
  }
  const arriving: string[] = [];
  for (let i = 0; arriving.length < 4 && i < prefixCount(added); i++) {
    const addr = addressIn(added, i, next);
    if (!holds(before.kept, addr.value) && holds(after.kept, addr.value)) arriving.push(addr.text);
  }

  const bare = child('bare', values['cpu-prof']);
  const decider = child('decider', values['cpu-prof'], malloc);
  const children = [bare, decider];
  out(`cores: ${pinCores(children)}\n`);
  // Listening now: a message nobody waits for is lost.
  const bareListening = reply(bare, 'listening');
  const deciderStarted = reply(decider, 'started');
  try {
    const barePort = (await bareListening).port;
    const empty = await deciderStarted;
    t = performance.now();
    sendShards(decider, [...before.configMaps, ...certain.configMaps]);
    tell(decider, {
      type: 'load',
      spec: SITE,
      allowlists: { [ALLOWLIST]: { 'addresses.txt': ALLOWLIST_TEXT } },
    });
    const deciderPort = (await reply(decider, 'listening')).port;
    const bareUrl = `http://127.0.0.1:${barePort}`;
    const deciderUrl = `http://127.0.0.1:${deciderPort}`;
    for (;;) {
      const res = await fetch(`${deciderUrl}/readyz`);
      await res.text();
      if (res.status === 200) break;
      await sleep(50);
    }
    const readyMs = performance.now() - t;
    const startMemory = await memoryOf(decider);
    out(
      `decider: RSS ${empty.rssMb.toFixed(0)} MB with its modules loaded and no list; ready ` +
        `${(readyMs / 1000).toFixed(1)} s after its shards were sent (IPC included), RSS then ` +
        `${startMemory.rssMb.toFixed(0)} MB, peak while loading ${startMemory.peakRssMb.toFixed(0)} MB\n`,
    );

    // Correctness: every address of the mix gets its verdict, over both APIs.
    let wrong = 0;
    for (const target of new Map(targets.map((x) => [x.addr, x])).values()) {
      const v = await verdictOf(deciderUrl, target.addr);
      const res = await fetch(`${deciderUrl}${VERDICT_URL_PATH}`, {
        headers: { 'x-forwarded-for': target.addr },
      });
      await res.arrayBuffer();
      const want = EXPECTED[target.client];
      if (v.reason !== want.reason || res.status !== want.status) {
        if (wrong++ < 5)
          out(
            `check: ${target.addr} (${target.client}): ${v.reason} ${res.status}, want ${want.reason} ${want.status}\n`,
          );
      }
    }
    const counts = new Map<Client, number>();
    for (const x of targets) counts.set(x.client, (counts.get(x.client) ?? 0) + 1);
    out(
      `check: ${targets.length} requests (${[...counts].map(([k, n]) => `${n} ${k}`).join(', ')}), each address's ` +
        `verdict as expected: ${wrong === 0 ? 'ok' : `${wrong} WRONG`}\n`,
    );
    if (wrong > 0) failures++;

    // 1. Maximum throughput, alternating.
    out(`\nphase 1: maximum rate, ${rounds} rounds of ${seconds} s each after a ${warmup} s warm-up\n`);
    const onBare = { url: bareUrl, connections, requests: wrkRequests };
    const onDecider = { url: deciderUrl, connections, requests: wrkRequests };
    await saturate(bare, { ...onBare, seconds: warmup });
    await saturate(decider, { ...onDecider, seconds: warmup });
    const bareRates: number[] = [];
    const deciderRates: number[] = [];
    const bareCpu: number[] = [];
    const deciderCpu: number[] = [];
    const pairedRatios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Each round a pair, back to back, the order alternating: the ratio is taken within
      // the pair (see the module comment), and neither server always runs second.
      let b: SaturateResult;
      let d: SaturateResult;
      if (r % 2 === 0) {
        b = await saturate(bare, { ...onBare, seconds });
        d = await saturate(decider, { ...onDecider, seconds });
      } else {
        d = await saturate(decider, { ...onDecider, seconds });
        b = await saturate(bare, { ...onBare, seconds });
      }
      pairedRatios.push(rate(d) / rate(b));
      bareRates.push(rate(b));
      deciderRates.push(rate(d));
      bareCpu.push(cpuPerRequest(b));
      deciderCpu.push(cpuPerRequest(d));
      const bad = unexpected(b) + unexpected(d) + b.socketErrors + d.socketErrors;
      out(
        `  round ${r + 1}: bare ${rate(b).toFixed(0)} req/s (p99 ${b.p99Ms.toFixed(2)} ms, ${cpu(b)}); ` +
          `decider ${rate(d).toFixed(0)} req/s (p99 ${d.p99Ms.toFixed(2)} ms, ${cpu(d)}); ` +
          `ratio ${(rate(d) / rate(b)).toFixed(2)}` +
          `${bad > 0 ? `; ${bad} failed requests` : ''}\n`,
      );
      if (bad > 0) failures++;
    }
    const bareRate = median(bareRates);
    const deciderRate = median(deciderRates);
    const ratio = median(pairedRatios);

    // 2. Half the decider's maximum.
    const halfRate = Math.round(deciderRate / 2);
    out(`phase 2: decider at ${halfRate} req/s (half its maximum), ${seconds} s\n`);
    const half = await load({
      server: decider,
      url: deciderUrl,
      connections,
      requests,
      seconds,
      overallRate: halfRate,
    });
    const halfP99 = percentile(half.latencies, 0.99);
    out(
      `  ${rate(half).toFixed(0)} req/s served; latency p50 ${percentile(half.latencies, 0.5).toFixed(3)} ms, ` +
        `p99 ${halfP99.toFixed(3)} ms, p99.9 ${percentile(half.latencies, 0.999).toFixed(3)} ms, ` +
        `max ${half.result.latency.max.toFixed(1)} ms (autocannon's own p99: ${half.result.latency.p99} ms); ${cpu(half)}\n`,
    );
    const halfBad = unexpected(half) + half.result.errors;
    if (halfBad > 0) {
      out(`  ${halfBad} failed requests\n`);
      failures++;
    }

    // 3. Memory after the load.
    const afterLoad = await memoryOf(decider, true);
    const bareMemory = await memoryOf(bare);
    out(
      `phase 3: decider RSS after the load ${afterLoad.rssMb.toFixed(0)} MB (V8 heap ${afterLoad.heapUsedMb.toFixed(0)} MB used of ${afterLoad.heapTotalMb.toFixed(0)} MB, ` +
        `external ${afterLoad.externalMb.toFixed(0)} MB of which ArrayBuffers ${afterLoad.arrayBuffersMb.toFixed(0)} MB; ` +
        `peak so far ${afterLoad.peakRssMb.toFixed(0)} MB); ` +
        `bare server ${bareMemory.rssMb.toFixed(0)} MB\n`,
    );

    // 4. Reload under load.
    sendShards(decider, after.configMaps);
    tell(decider, { type: 'stage' });
    await reply(decider, 'staged');
    await memoryOf(decider, true);
    out(
      `phase 4: reload under load: ${reloadSeconds} s at the maximum rate; at ${reloadAfter} s the new version's ` +
        `${after.configMaps.length} shards are written one by one over ${rolloutMs} ms\n`,
    );
    const buildsBefore = await tableBuilds(deciderUrl);
    const reloadRun = load({
      server: decider,
      url: deciderUrl,
      connections,
      requests,
      seconds: reloadSeconds,
    });
    const runStart = performance.now();
    await sleep(reloadAfter * 1000);
    const rollStart = performance.now();
    tell(decider, { type: 'roll', rolloutMs });
    const rolled = reply(decider, 'rolled');
    let flippedAt: number | undefined;
    const deadline = runStart + reloadSeconds * 1000;
    while (flippedAt === undefined && performance.now() < deadline) {
      const gone = await Promise.all(leaving.map((a) => verdictOf(deciderUrl, a)));
      const come = await Promise.all(arriving.map((a) => verdictOf(deciderUrl, a)));
      if (
        gone.every((v) => v.reason === VerdictReason.NotListed) &&
        come.every((v) => v.reason === VerdictReason.PresumedListed)
      ) {
        flippedAt = performance.now();
        break;
      }
      await sleep(50);
    }
    const reload = await reloadRun;
    const rollout = await rolled;
    const reloadMemory = await memoryOf(decider);
    const buildsAfter = await tableBuilds(deciderUrl);
    // The list worker goes once idle for RETIRE_AFTER_MS (its heap with it); V8 and malloc
    // give the rest back lazily. Sampled every second: what stays is the steady state.
    const settling: { s: number; rssMb: number }[] = [];
    const settleStart = performance.now();
    for (let i = 1; i <= settleSeconds; i++) {
      await sleep(Math.max(0, settleStart + i * 1000 - performance.now()));
      settling.push({ s: i, rssMb: (await memoryOf(decider)).rssMb });
    }
    const settled = await memoryOf(decider);
    const reloadFailed = unexpected(reload) + reload.result.errors + reload.result.timeouts;
    const flipS = flippedAt === undefined ? undefined : (flippedAt - rollStart) / 1000;
    // Envoy gives up on a verdict after this long and applies failurePolicy: a failed request there.
    const gatewayTimeoutMs = parseDurationMs(VERDICT_TIMEOUT) ?? 250;
    const tooSlow = reload.latencies.filter((ms) => ms > gatewayTimeoutMs).length;
    const buildMs =
      buildsAfter.count > buildsBefore.count
        ? (buildsAfter.seconds - buildsBefore.seconds) * 1000
        : undefined;
    out(
      `  ${rate(reload).toFixed(0)} req/s; ${[...reload.statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([code, n]) => `${n} × ${code}`)
        .join(', ')}; ${reload.result.errors} socket errors, ${reload.result.timeouts} timeouts\n` +
        `  rollout ${rollout.ms.toFixed(0)} ms; its last write, which completes the version, held the event loop ` +
        `${rollout.lastWriteMs.toFixed(0)} ms (select and verify, parse, then the table build: ` +
        `${buildMs === undefined ? 'no build seen' : `${buildMs.toFixed(0)} ms`} by the decider's metric); ` +
        `${leaving.length} leaving and ${arriving.length} arriving addresses ` +
        `flipped ${flipS === undefined ? 'NEVER within the run' : `${flipS.toFixed(2)} s after the rollout began`}\n` +
        `  latency p99 ${percentile(reload.latencies, 0.99).toFixed(2)} ms, max ` +
        `${(reload.latencies.at(-1) ?? 0).toFixed(0)} ms; ${tooSlow} responses slower than the gateway's ext_authz ` +
        `timeout (${VERDICT_TIMEOUT}), which Envoy would have decided by failurePolicy; ` +
        `decider RSS peak during the reload ${reloadMemory.peakRssMb.toFixed(0)} MB, after it ${reloadMemory.rssMb.toFixed(0)} MB, ` +
        `then at rest ${settling
          .filter((x) => x.s % 5 === 0 || x.s === settleSeconds)
          .map((x) => `+${x.s} s ${x.rssMb.toFixed(0)}`)
          .join(', ')} MB (the list worker retires at +${RETIRE_AFTER_MS / 1000} s; at the end ` +
        `V8 heap ${settled.heapUsedMb.toFixed(0)} MB used of ${settled.heapTotalMb.toFixed(0)} MB, external ${settled.externalMb.toFixed(0)} MB)\n` +
        // Autocannon has only `connections` requests waiting through a stall; a gateway keeps sending.
        `  an open-loop gateway at half load (${halfRate} req/s) sends about ` +
        `${Math.round((halfRate * rollout.lastWriteMs) / 1000)} requests during that ${rollout.lastWriteMs.toFixed(0)} ms stall, ` +
        `about ${Math.round((halfRate * Math.max(0, rollout.lastWriteMs - gatewayTimeoutMs)) / 1000)} of them waiting past ${VERDICT_TIMEOUT}\n`,
    );
    const reloadOk = reloadFailed === 0 && flipS !== undefined && leaving.length > 0 && arriving.length > 0;
    const gatewayOk = tooSlow === 0;

    const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');
    const busiest = Math.max(0, ...runs.map(neighbours));
    const ratioOk = ratio >= TARGET.ratio;
    const p99Ok = halfP99 < TARGET.p99Ms;
    const rssOk = afterLoad.rssMb < TARGET.rssMb;
    const settledOk = settled.rssMb < TARGET.rssMb;
    out(
      `\n| measure | bare node:http | decider | target | |\n|---|---|---|---|---|\n` +
        `| req/s, median of ${rounds} × ${seconds} s | ${bareRate.toFixed(0)} | ${deciderRate.toFixed(0)} | ` +
        `ratio >= ${TARGET.ratio} (median of the rounds' ratios): ${ratio.toFixed(2)} | ${verdict(ratioOk)} |\n` +
        `| server CPU per request, median (not a target) | ${median(bareCpu).toFixed(1)} µs | ` +
        `${median(deciderCpu).toFixed(1)} µs | — | — |\n` +
        `| p99 at ${halfRate} req/s | — | ${halfP99.toFixed(3)} ms | < ${TARGET.p99Ms} ms | ${verdict(p99Ok)} |\n` +
        `| RSS after the load | ${bareMemory.rssMb.toFixed(0)} MB | ${afterLoad.rssMb.toFixed(0)} MB | ` +
        `< ${TARGET.rssMb} MB | ${verdict(rssOk)} |\n` +
        `| RSS ${settleSeconds} s after the reload, at rest | — | ${settled.rssMb.toFixed(0)} MB | < ${TARGET.rssMb} MB | ${verdict(settledOk)} |\n` +
        `| reload under load | — | ${reloadFailed} failed of ${reload.latencies.length}, ` +
        `served after ${flipS === undefined ? '—' : `${flipS.toFixed(2)} s`} | 0 failed, served | ${verdict(reloadOk)} |\n` +
        `| reload: answers within the gateway's ${VERDICT_TIMEOUT} | — | ${tooSlow} slower | 0 slower | ${verdict(gatewayOk)} |\n` +
        `${busiest > NEIGHBOURS_WARNING ? `\nWARNING: other processes took up to ${busiest.toFixed(2)} of a core during a run: these numbers measure the neighbours too; rerun on a quiet machine.\n` : ''}` +
        `\nload average at end ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}\n`,
    );
    out(
      `${JSON.stringify({
        prefixes: total,
        connections,
        bareRates,
        deciderRates,
        bareCpuUsPerRequest: bareCpu,
        deciderCpuUsPerRequest: deciderCpu,
        pairedRatios,
        ratio,
        halfRate,
        halfP99Ms: halfP99,
        rssMb: afterLoad.rssMb,
        settledRssMb: settled.rssMb,
        settlingRssMb: settling.map((x) => Number(x.rssMb.toFixed(1))),
        neighboursCores: runs.map((r) => Number(neighbours(r).toFixed(3))),
        reload: {
          failed: reloadFailed,
          slowerThanGateway: tooSlow,
          buildMs,
          responses: reload.latencies.length,
          flipS,
          lastWriteMs: rollout.lastWriteMs,
        },
      })}\n`,
    );
    if (!ratioOk) failures++;
    if (!p99Ok) failures++;
    if (!rssOk) failures++;
    if (!settledOk) failures++;
    if (!reloadOk) failures++;
    if (!gatewayOk) failures++;
  } finally {
    for (const c of children) {
      if (c.exitCode === null && c.connected) tell(c, { type: 'stop' });
    }
    await Promise.race([
      Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined))),
      sleep(7000),
    ]);
    for (const c of children) if (c.exitCode === null) c.kill();
  }
  return failures;
}

process.exitCode = (await parent()) === 0 ? 0 : 1;
