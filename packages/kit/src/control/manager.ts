/**
 * The manager runs an operator: shared informers, controllers, leader election, the
 * health and metrics endpoint, JSON logs, and a graceful shutdown.
 *
 * Expected flow:
 *  1. Build controllers with `manager.controller(name)`.
 *  2. `await manager.start()`: the endpoint listens; informers list and watch; once
 *     every cache has synced, /readyz turns ready; with leader election the manager
 *     then campaigns, and only the leader starts its workers (a standby keeps warm
 *     caches so that it takes over at once).
 *  3. `await manager.stop()` (or SIGTERM with `installSignalHandlers()`): workers stop
 *     taking keys, in-flight reconciles get `shutdownTimeoutMs` (30 s) to finish, the
 *     lease is released, watches close, the endpoint closes.
 *
 * Controllers built after `start()` (kinds known only at run time, such as rules read
 * from a ConfigMap) join the running manager: their informers start, and once those
 * have synced their workers start too, if this process leads. `running(c)` resolves
 * then; `removeController(c)` stops one (its informers stay shared in the cache).
 *
 * Losing the lease (no renewal within 10 s) stops the workers at once and makes
 * `done` resolve with 'LeadershipLost': a process should exit then, as controller-runtime's
 * does, and be restarted as a candidate, rather than risk acting beside a new leader.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { type Logger, pino } from 'pino';
import { collectDefaultMetrics, type Gauge, Registry } from 'prom-client';
import type { Clock } from '../base/clock.ts';
import { sharedGauge } from '../base/shared-metrics.ts';
import { InformerCache } from '../cache/informer-cache.ts';
import type { ReflectorOptions } from '../cache/reflector.ts';
import type { KubeClient } from '../client/client.ts';
import { EventRecorder } from '../objects/events.ts';
import { type Controller, ControllerBuilder } from './controller.ts';
import { LeaderElector } from './leader-election.ts';

export interface ManagerOptions {
  /** The operator's name: field manager prefix, event reporter, lease name. */
  readonly name: string;
  readonly client: KubeClient;
  /** Lease-based leader election; off when omitted (one replica, or tests). */
  readonly leaderElection?: {
    readonly namespace: string;
    readonly name?: string;
    readonly identity?: string;
    readonly leaseDurationMs?: number;
    readonly renewDeadlineMs?: number;
    readonly retryPeriodMs?: number;
  };
  /** The health and metrics endpoint; port 0 picks a free one; omitted: no endpoint. */
  readonly endpoint?: { readonly port: number; readonly host?: string };
  readonly logger?: Logger;
  readonly registry?: Registry;
  readonly clock?: Clock;
  readonly shutdownTimeoutMs?: number;
  /** Reflector tuning (timeouts), mostly for tests. */
  readonly reflector?: Partial<ReflectorOptions>;
}

/** Why a manager's run ended. */
export type ManagerExit = 'Stopped' | 'LeadershipLost';

export class Manager {
  readonly name: string;
  readonly client: KubeClient;
  readonly cache: InformerCache;
  readonly registry: Registry;
  readonly log: Logger;
  readonly recorder: EventRecorder;
  /** Resolves when the manager has stopped, and why. */
  readonly done: Promise<ManagerExit>;
  private resolveDone!: (e: ManagerExit) => void;
  private readonly opts: ManagerOptions;
  private readonly controllers: Controller[] = [];
  /** Controllers built after start, until their informers have synced. */
  private readonly joining = new Set<Controller>();
  private readonly joined = new WeakMap<Controller, Promise<void>>();
  private readonly elector: LeaderElector | undefined;
  private readonly leaderGauge: Gauge<'name'>;
  private server: Server | undefined;
  private readonly lifetime = new AbortController();
  private workersStarted = false;
  private stopping: Promise<void> | undefined;
  private synced = false;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.client = opts.client;
    this.log = opts.logger ?? pino({ base: { operator: opts.name } });
    this.registry = opts.registry ?? new Registry();
    if (!opts.registry) collectDefaultMetrics({ register: this.registry });
    this.cache = new InformerCache(opts.client, this.log, opts.clock, opts.reflector);
    this.recorder = new EventRecorder({
      client: opts.client,
      controller: opts.name,
      instance: process.env.POD_NAME ?? hostname(),
      registry: this.registry,
      logger: this.log,
      clock: opts.clock,
    });
    this.leaderGauge = sharedGauge(
      this.registry,
      'leader_election_master_status',
      '1 while this process leads, else 0.',
      ['name'],
    );
    this.leaderGauge.labels(opts.name).set(opts.leaderElection ? 0 : 1);
    if (opts.leaderElection) {
      this.elector = new LeaderElector(
        opts.client,
        {
          namespace: opts.leaderElection.namespace,
          name: opts.leaderElection.name ?? `${opts.name}-leader`,
          identity: opts.leaderElection.identity ?? `${hostname()}_${randomUUID()}`,
          leaseDurationMs: opts.leaderElection.leaseDurationMs,
          renewDeadlineMs: opts.leaderElection.renewDeadlineMs,
          retryPeriodMs: opts.leaderElection.retryPeriodMs,
        },
        this.log,
        opts.clock,
      );
    }
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
  }

  /** A controller builder bound to this manager's cache, logger and metrics. */
  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(
      name,
      {
        client: this.client,
        cache: this.cache,
        log: this.log,
        registry: this.registry,
        clock: this.opts.clock,
      },
      (c) => {
        this.controllers.push(c);
        if (!this.synced) return;
        this.joining.add(c);
        const joined = this.join(c);
        joined.catch((err: unknown) =>
          this.log.error({ controller: c.name, err: String(err) }, 'controller could not join'),
        );
        this.joined.set(c, joined);
      },
    );
  }

  /** A controller built after start: prepare it, wait for its caches, start its workers if leading. */
  private async join(c: Controller): Promise<void> {
    try {
      await c.prepare();
      await Promise.race([
        c.waitForSync(),
        new Promise((_, reject) =>
          this.lifetime.signal.addEventListener('abort', () => reject(this.lifetime.signal.reason), {
            once: true,
          }),
        ),
      ]);
    } finally {
      this.joining.delete(c);
    }
    if (this.workersStarted && !this.lifetime.signal.aborted && this.controllers.includes(c))
      c.startWorkers();
  }

  /**
   * Resolves when a controller built after start is running (its caches synced, its
   * workers started if this process leads); at once for the others. Rejects if its
   * kind cannot be resolved.
   */
  async running(c: Controller): Promise<void> {
    await this.joined.get(c);
  }

  /** Stops a controller's workers (draining up to `drainMs`) and forgets it. */
  async removeController(c: Controller, drainMs = this.opts.shutdownTimeoutMs ?? 30_000): Promise<void> {
    const i = this.controllers.indexOf(c);
    if (i >= 0) this.controllers.splice(i, 1);
    await c.stop(drainMs);
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.workersStarted;
  }

  /** The endpoint's address once listening (tests use port 0). */
  get endpoint(): { host: string; port: number } | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  /**
   * Starts everything; resolves once caches are synced (workers may still be waiting
   * for leadership). Rejects if a controller's kind cannot be resolved.
   */
  async start(): Promise<void> {
    if (this.opts.endpoint) await this.listen(this.opts.endpoint.port, this.opts.endpoint.host ?? '0.0.0.0');
    for (const c of this.controllers) await c.prepare();
    this.cache.start();
    await this.cache.waitForSync(this.lifetime.signal);
    this.synced = true;
    this.log.info({ informers: this.cache.health().length }, 'caches synced');
    void this.lead();
  }

  private async lead(): Promise<void> {
    const signal = this.lifetime.signal;
    if (this.elector) {
      if (!(await this.elector.acquire(signal))) return;
      this.leaderGauge.labels(this.name).set(1);
    }
    if (signal.aborted) return;
    this.workersStarted = true;
    for (const c of this.controllers) if (!this.joining.has(c)) c.startWorkers();
    if (!this.elector) return;
    const outcome = await this.elector.hold(signal);
    this.leaderGauge.labels(this.name).set(0);
    if (outcome === 'lost') {
      this.log.error('leadership lost: stopping all controllers at once');
      await this.shutdown('LeadershipLost', 0);
    }
  }

  /** Graceful stop: drain reconciles (30 s by default), release the lease, close watches and endpoint. */
  stop(): Promise<void> {
    return this.shutdown('Stopped', this.opts.shutdownTimeoutMs ?? 30_000);
  }

  private shutdown(exit: ManagerExit, drainMs: number): Promise<void> {
    this.stopping ??= (async () => {
      this.lifetime.abort(new Error(exit));
      const stragglers = (await Promise.all(this.controllers.map((c) => c.stop(drainMs)))).flat();
      if (stragglers.length)
        this.log.warn({ keys: stragglers }, 'reconciles still running at the shutdown deadline');
      if (exit === 'Stopped') await this.elector?.release();
      this.leaderGauge.labels(this.name).set(0);
      await this.recorder.close();
      await this.cache.stop();
      await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
      this.server?.closeAllConnections();
      this.log.info({ exit }, 'manager stopped');
      this.resolveDone(exit);
    })();
    return this.stopping;
  }

  /** SIGTERM and SIGINT stop the manager gracefully, then exit (code 0, or 1 after a lost lease). */
  installSignalHandlers(): void {
    const onSignal = (sig: string): void => {
      this.log.info({ signal: sig }, 'signal received: shutting down');
      void this.stop();
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    void this.done.then((exit) => process.exit(exit === 'Stopped' ? 0 : 1));
  }

  /** Readiness: caches synced and no watch stale. */
  readiness(): { ready: boolean; detail: string[] } {
    const detail: string[] = [];
    if (!this.synced) detail.push('caches not synced yet');
    for (const h of this.cache.health()) {
      if (h.stale) detail.push(`watch stale: ${h.name}${h.lastError ? ` (${h.lastError})` : ''}`);
    }
    if (this.stopping) detail.push('shutting down');
    return { ready: detail.length === 0, detail };
  }

  private listen(port: number, host: string): Promise<void> {
    this.server = createServer((req, res) => void this.serve(req, res));
    return new Promise((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(port, host, () => resolve());
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/livez') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const { ready, detail } = this.readiness();
      res
        .writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ready ? 'ok\n' : `${detail.join('\n')}\n`);
    } else if (path === '/metrics') {
      res.writeHead(200, { 'content-type': this.registry.contentType }).end(await this.registry.metrics());
    } else {
      res.writeHead(404).end();
    }
  }
}
