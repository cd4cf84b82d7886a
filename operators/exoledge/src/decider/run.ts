/**
 * One decider process: the engine, its state store and its HTTP server, put together
 * from settings and a shard feed. `main.ts` runs it against the cluster; tests run it
 * against a feed of their own.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { DeciderSettings } from '../domain/decider/env.ts';
import { Decider } from './decider.ts';
import { httpApi } from './http-api.ts';
import { DeciderMetrics } from './metrics.ts';
import type { ShardFeed } from './shard-feed.ts';
import { NoStateStore, type StateStore } from './state-store.ts';
import { keyPrefix, ValkeyStateStore } from './valkey-state.ts';

/** A graceful stop gives up after this long: the kubelet's grace period is longer. */
export const CLOSE_TIMEOUT_MS = 5000;
/** Open requests are given this long to finish before their connections are cut. */
const DRAIN_MS = 2000;

export interface RunOptions {
  readonly settings: DeciderSettings;
  readonly feed: ShardFeed;
  readonly log: Logger;
  /** Default `POLL_INTERVAL_MS`. */
  readonly pollIntervalMs?: number;
}

export interface RunningDecider {
  readonly decider: Decider;
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets open requests finish, stops the feed and Valkey; within `CLOSE_TIMEOUT_MS`. */
  close(): Promise<void>;
}

export async function runDecider(options: RunOptions): Promise<RunningDecider> {
  const { settings, log } = options;
  const registry = new Registry();
  const metrics = new DeciderMetrics(registry);
  const state: StateStore =
    settings.valkeyUrl === undefined
      ? new NoStateStore()
      : new ValkeyStateStore({
          url: settings.valkeyUrl,
          prefix: keyPrefix(settings.siteNamespace, settings.site),
          metrics,
          log: log.child({ component: 'valkey' }),
        });
  if (settings.valkeyUrl === undefined) {
    metrics.valkeyUp.set(0);
    log.warn('no Valkey configured: no clearance can be issued nor checked, nothing is counted');
  }
  const decider = new Decider({
    settings,
    feed: options.feed,
    state,
    metrics,
    registry,
    log,
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
  });
  await decider.start();
  const server = createServer(
    { keepAliveTimeout: 65_000 },
    httpApi(decider, {
      trustedHops: settings.trustedHops,
      clientAddressHeader: settings.clientAddressHeader,
    }),
  );
  server.listen(settings.listen.port, settings.listen.host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const host = settings.listen.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log.info({ url, trustedHops: settings.trustedHops }, 'decider listening');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const drain = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
      const all = Promise.all([stopped, decider.close()]).then(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          log.warn(`the decider did not stop within ${CLOSE_TIMEOUT_MS} ms; stopping anyway`);
          server.closeAllConnections();
          resolve();
        }, CLOSE_TIMEOUT_MS);
      });
      await Promise.race([all, timeout]);
      clearTimeout(drain);
      clearTimeout(timer);
    })();
    return closing;
  };
  return { decider, url, port, close };
}
