/**
 * A TCP proxy to the apiserver that plays a sick network: `freeze()` stops every byte of
 * every connection, open or opened later (sockets stay open, no FIN: a dead NAT entry,
 * a hung apiserver); `delayRequests(ms)` holds each chunk a client sends for `ms` before
 * passing it on (a slow link). A connection closed by either side drops what it still
 * holds: bytes of an aborted request never reach the apiserver. `held` counts the chunks
 * held now, so a test can wait until nothing is in transit.
 */
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { KubeClient } from '@operators/kit';

export interface SickProxy {
  readonly port: number;
  /** Chunks held now, in either direction. */
  readonly held: number;
  /** Chunks dropped because their connection closed first. */
  readonly dropped: number;
  freeze(): void;
  unfreeze(): void;
  /** Holds every chunk a client sends from now on for `ms` (0: no delay). */
  delayRequests(ms: number): void;
  /** A client of the apiserver whose every connection goes through this proxy. */
  client(): Promise<KubeClient>;
  close(): Promise<void>;
}

interface Lane {
  readonly to: Socket;
  readonly queue: { chunk: Buffer; due: number }[];
  timer: NodeJS.Timeout | undefined;
}

export async function sickProxy(kubeconfigPath: string, server: string): Promise<SickProxy> {
  const target = new URL(server);
  let frozen = false;
  let requestDelayMs = 0;
  let dropped = 0;
  const lanes = new Set<Lane>();
  const sockets = new Set<Socket>();

  const pump = (lane: Lane): void => {
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = undefined;
    if (frozen) return;
    const now = Date.now();
    while (lane.queue.length > 0 && (lane.queue[0]?.due ?? 0) <= now) {
      const next = lane.queue.shift();
      if (next) lane.to.write(next.chunk);
    }
    const head = lane.queue[0];
    if (head) lane.timer = setTimeout(() => pump(lane), head.due - now);
  };

  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const up: Lane = { to: upstream, queue: [], timer: undefined };
    const down: Lane = { to: client, queue: [], timer: undefined };
    lanes.add(up).add(down);
    client.on('data', (chunk: Buffer) => {
      up.queue.push({ chunk, due: Date.now() + requestDelayMs });
      pump(up);
    });
    upstream.on('data', (chunk: Buffer) => {
      down.queue.push({ chunk, due: Date.now() });
      pump(down);
    });
    const drop = (): void => {
      for (const lane of [up, down]) {
        if (!lanes.delete(lane)) continue;
        if (lane.timer) clearTimeout(lane.timer);
        dropped += lane.queue.length;
        lane.queue.length = 0;
      }
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as { port: number }).port;

  return {
    port,
    get held() {
      let n = 0;
      for (const lane of lanes) n += lane.queue.length;
      return n;
    },
    get dropped() {
      return dropped;
    },
    freeze() {
      frozen = true;
    },
    unfreeze() {
      frozen = false;
      for (const lane of lanes) pump(lane);
    },
    delayRequests(ms) {
      requestDelayMs = ms;
    },
    async client() {
      const kubeconfig = readFileSync(kubeconfigPath, 'utf8').replace(
        target.origin,
        `https://127.0.0.1:${port}`,
      );
      return KubeClient.fromKubeconfigString(kubeconfig);
    },
    async close() {
      proxy.close();
      for (const s of sockets) s.destroy();
    },
  };
}
