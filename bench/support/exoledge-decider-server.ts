/**
 * The servers of `bench/exoledge-decider.bench.ts`, each run as a child process of the
 * benchmark (`node bench/support/exoledge-decider-server.ts decider|bare`) so that its
 * memory is its own, driven over IPC (`ToServer`, `FromServer`):
 *
 * - `bare`: `http.createServer((req, res) => { res.writeHead(200); res.end(); })`, the
 *   baseline, with nothing else loaded;
 * - `decider`: the real decider (`runDecider`) on 127.0.0.1 and a free port, without
 *   Valkey, its site files written in a temp folder as the kubelet writes a ConfigMap
 *   volume, its shard ConfigMaps handed over by the benchmark into a `MemoryShardFeed`.
 *   Only the decider's own modules are loaded (imported once the role is known), as in
 *   the decider's pod; the benchmark's generator and load generator stay in the parent.
 *
 * Both report `process.memoryUsage()` on request, with the highest RSS sampled every
 * 100 ms since the last reset. `DECIDER_BENCH_LOG=info` lets the decider log (stderr).
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EdgeSiteSpec } from '../../operators/exoledge/src/api/edge-site.ts';
import type { RunningDecider } from '../../operators/exoledge/src/decider/run.ts';
import type { ObservedConfigMap } from '../../operators/exoledge/src/decider/shard-sets.ts';
import type { DeciderSettings } from '../../operators/exoledge/src/domain/decider/env.ts';

/** What the benchmark asks a server. */
export type ToServer =
  /**
   * Shard ConfigMaps, a few at a time, kept until `load` or `stage` takes them: a watch
   * too receives them one by one, and one message of 50 MB would leave the decider with
   * buffers no watch makes it allocate.
   */
  | { readonly type: 'shards'; readonly configMaps: readonly ObservedConfigMap[] }
  /** The site; the shards received are the first complete view, the decider starts on it. */
  | {
      readonly type: 'load';
      readonly spec: EdgeSiteSpec;
      /** Allowlist name to its files, each a data key and its text. */
      readonly allowlists: Readonly<Record<string, Readonly<Record<string, string>>>>;
    }
  /** The shards received are a new version, held until `roll` (handing it over is not measured). */
  | { readonly type: 'stage' }
  /** Writes the staged shards one by one over `rolloutMs`, as the publisher rewrites them. */
  | { readonly type: 'roll'; readonly rolloutMs: number }
  | { readonly type: 'memory'; readonly resetPeak: boolean }
  | { readonly type: 'stop' };

export interface Memory {
  readonly rssMb: number;
  readonly heapUsedMb: number;
  /** The V8 heap reserved, used or not: V8 keeps what a peak made it take. */
  readonly heapTotalMb: number;
  /** `external` of `process.memoryUsage()`: C++ memory held by JavaScript objects, typed arrays included. */
  readonly externalMb: number;
  /** Of which ArrayBuffers: their allocated size, not their touched pages. */
  readonly arrayBuffersMb: number;
  /** The highest RSS sampled since the last reset. */
  readonly peakRssMb: number;
  /** CPU time used so far, user and system: per request, the server's own cost, whatever the client's. */
  readonly cpuMs: number;
}

/** What a server answers. */
export type FromServer =
  /** Modules loaded, nothing served yet. */
  | ({ readonly type: 'started' } & Memory)
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'staged' }
  | {
      readonly type: 'rolled';
      /** From the first shard written to the last one's write returning. */
      readonly ms: number;
      /** The last write alone: the new version selected, parsed and its table built while requests wait. */
      readonly lastWriteMs: number;
    }
  | ({ readonly type: 'memory' } & Memory);

export function isMessage<T extends { type: string }>(m: unknown): m is T {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string';
}

function send(message: FromServer): void {
  process.send?.(message);
}

const MB = 1024 * 1024;

/** Samples this process's RSS every 100 ms; `memory()` reports it. */
function memoryWatch(): { memory(resetPeak: boolean): Memory } {
  let peak = process.memoryUsage.rss();
  setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 100).unref();
  return {
    memory(resetPeak) {
      const m = process.memoryUsage();
      peak = Math.max(peak, m.rss);
      const cpu = process.cpuUsage();
      const out = {
        cpuMs: (cpu.user + cpu.system) / 1000,
        rssMb: m.rss / MB,
        heapUsedMb: m.heapUsed / MB,
        heapTotalMb: m.heapTotal / MB,
        externalMb: m.external / MB,
        arrayBuffersMb: m.arrayBuffers / MB,
        peakRssMb: peak / MB,
      };
      if (resetPeak) peak = m.rss;
      return out;
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function bare(): Promise<void> {
  const watch = memoryWatch();
  const server = createServer((_req, res) => {
    res.writeHead(200);
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('message', (m: unknown) => {
    if (!isMessage<ToServer>(m)) return;
    if (m.type === 'memory') send({ type: 'memory', ...watch.memory(m.resetPeak) });
    if (m.type === 'stop') server.close(() => process.exit(0));
  });
  send({ type: 'started', ...watch.memory(false) });
  send({ type: 'listening', port: (server.address() as AddressInfo).port });
}

async function decider(): Promise<void> {
  const watch = memoryWatch();
  const [{ pino }, { runDecider }, { MemoryShardFeed }, { siteConfigText }, { writeVolume }, publication] =
    await Promise.all([
      import('pino'),
      import('../../operators/exoledge/src/decider/run.ts'),
      import('../../operators/exoledge/src/decider/shard-feed.ts'),
      import('../../operators/exoledge/src/domain/edge-site/site-config.ts'),
      import('../../operators/exoledge/test/support/decider-harness.ts'),
      import('../../operators/exoledge/src/domain/blocklist-source/publication.ts'),
    ]);
  const dir = await mkdtemp(join(tmpdir(), 'exoledge-decider-bench-'));
  const feed = new MemoryShardFeed();
  const log = pino({ level: process.env.DECIDER_BENCH_LOG ?? 'silent' }, pino.destination(2));
  let received: ObservedConfigMap[] = [];
  let staged: readonly ObservedConfigMap[] = [];
  /** The shards the feed holds, by name, with their list: a rollout removes those its version lacks. */
  const held = new Map<string, string | undefined>();
  const listOf = (cm: ObservedConfigMap): string | undefined => cm.labels?.[publication.LABEL_SOURCE];
  let running: RunningDecider | undefined;

  async function start(m: Extract<ToServer, { type: 'load' }>): Promise<void> {
    const configDir = join(dir, 'site');
    const allowlistsDir = join(dir, 'allowlists');
    await writeVolume(configDir, { 'config.json': siteConfigText(m.spec) });
    for (const [name, files] of Object.entries(m.allowlists)) {
      await writeVolume(join(allowlistsDir, name), files);
    }
    // One view with every shard: what the watch delivers once its first list is complete.
    feed.set(received);
    for (const cm of received) held.set(cm.name, listOf(cm));
    received = [];
    const settings: DeciderSettings = {
      siteNamespace: 'shop',
      site: 'shop',
      siteConfigPath: join(configDir, 'config.json'),
      shardNamespace: 'exoledge-system',
      allowlistsDir,
      listen: { host: '127.0.0.1', port: 0 },
      valkeyUrl: undefined,
      trustedHops: 0,
      // The chart's signing-key Secret: without Valkey, the one source of the key that signs
      // challenge nonces and clearances (without one a Presumed client gets a 503).
      signingKeys: [Buffer.from('bench-signing-key-of-at-least-32-characters')],
    };
    running = await runDecider({ settings, feed, log });
    send({ type: 'listening', port: running.port });
  }

  async function roll(rolloutMs: number): Promise<void> {
    const next = staged;
    staged = [];
    const started = performance.now();
    let lastWriteMs = 0;
    const gap = rolloutMs / Math.max(1, next.length);
    for (let i = 0; i < next.length; i++) {
      const t = performance.now();
      feed.put(next[i]!);
      lastWriteMs = performance.now() - t;
      // A timer between writes, not a loop: requests are answered between them, as between watch events.
      await sleep(Math.max(0, started + gap * (i + 1) - performance.now()));
    }
    // Shards of the same lists beyond the new version's last (it has fewer): deleted last, as the publisher does.
    const names = new Set(next.map((cm) => cm.name));
    const lists = new Set(next.map(listOf));
    for (const [name, list] of held) {
      if (!names.has(name) && lists.has(list)) {
        feed.remove(name);
        held.delete(name);
      }
    }
    for (const cm of next) held.set(cm.name, listOf(cm));
    send({ type: 'rolled', ms: performance.now() - started, lastWriteMs });
  }

  process.on('message', (m: unknown) => {
    if (!isMessage<ToServer>(m)) return;
    switch (m.type) {
      case 'shards':
        received.push(...m.configMaps);
        break;
      case 'load':
        void start(m);
        break;
      case 'stage':
        staged = received;
        received = [];
        send({ type: 'staged' });
        break;
      case 'roll':
        void roll(m.rolloutMs);
        break;
      case 'memory':
        send({ type: 'memory', ...watch.memory(m.resetPeak) });
        break;
      case 'stop':
        void (running?.close() ?? Promise.resolve())
          .then(() => rm(dir, { recursive: true, force: true }))
          .then(() => process.exit(0));
        break;
      default:
        m satisfies never;
    }
  });
  send({ type: 'started', ...watch.memory(false) });
}

// Run as a process; imported (by the benchmark, for its types and `isMessage`), nothing starts.
if (import.meta.main) {
  const role = process.argv[2];
  if (role === 'bare') await bare();
  else if (role === 'decider') await decider();
  else {
    process.stderr.write('usage: exoledge-decider-server.ts decider|bare (as a child of the benchmark)\n');
    process.exit(2);
  }
}
