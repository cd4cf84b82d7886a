/**
 * The manager runs an operator: shared informers, controllers, runnables, leader
 * election, the health probe and metrics endpoints, JSON logs, and a bounded shutdown.
 *
 * Expected flow:
 *  1. Build controllers with `manager.controller(name)`; add other work with
 *     `manager.add(runnable, { needLeaderElection })`; add probes with
 *     `addHealthCheck` / `addReadyCheck`.
 *  2. `await manager.start()`: the endpoints listen; runnables that do not need
 *     leadership start (a webhook server serves before the caches sync, as
 *     controller-runtime starts webhooks first: the apiserver may need this very
 *     process's conversion webhook to list what the caches are waiting for); informers
 *     list and watch; `start()` resolves once every cache has synced, or rejects after
 *     `cacheSyncTimeoutMs` (2 min) naming the informers that did not. With leader
 *     election the manager then campaigns, and only the leader starts its workers and
 *     leader-only runnables (a standby keeps warm caches so that it takes over at once).
 *  3. `await manager.stop()` (or SIGTERM with `installSignalHandlers()`), in
 *     controller-runtime's order: workers stop taking keys and in-flight reconciles get
 *     `shutdownTimeoutMs` (30 s) to finish WHILE THE LEASE IS STILL RENEWED (a standby
 *     must not act beside a reconcile still running); leader-only runnables stop; the
 *     event recorder flushes (at most 2 s); the lease is released, last; runnables that
 *     did not need leadership, watches and endpoints close. Every step after the drain
 *     is bounded (about 2 s each, see {@link STOP_STEP_TIMEOUT_MS}), so a stopped
 *     operator exits in seconds whatever its apiserver does.
 *
 *     A reconcile still running at the drain deadline (a straggler) is NOT waited for:
 *     the lease is released while it may still run. What holds instead: its `signal`
 *     aborts at the deadline, before the release, and with it its `ctx.client`: a
 *     request in transit is torn down (what the apiserver had not received whole is
 *     never sent on) and any later call is refused before sending anything, so a
 *     straggler cannot start a write through `ctx.client` once the lease can be
 *     released. A write the apiserver had already received whole at the deadline may
 *     still be committed, as any cancelled HTTP request may. Writes through other
 *     clients (`manager.client`, the cached client's writes) and effects outside the
 *     cluster are not fenced: a straggler may make them beside the successor until the
 *     process exits (`installSignalHandlers()` exits as soon as `done` resolves).
 *
 * Controllers built after `start()` (kinds known only at run time, such as rules read
 * from a ConfigMap) join the running manager: their informers start, and once those
 * have synced their workers start too, if this process leads. `running(c)` resolves
 * then; `removeController(c)` stops one (its informers stay shared in the cache).
 *
 * Losing the lease (no renewal within the renew deadline) stops the workers and
 * leader-only runnables at once (reconcile signals abort, and with them every request
 * of `ctx.client`), before a standby can take the lease, and makes `done` resolve with
 * 'LeadershipLost': a process should exit then, as controller-runtime's does, and be
 * restarted as a candidate, rather than risk acting beside a new leader.
 *
 * Reconcile traffic never starves lease renewals, by construction: the elector talks to
 * the apiserver through a client of its own, derived from `client`
 * ({@link leaderElectionClient}: same credentials, its own connections, no token
 * bucket), so 100 workers saturating `client`'s 20 qps cannot delay a renewal. The
 * secure metrics endpoint's reviews go through a third client ({@link reviewClient}:
 * its own connections and 5 qps budget, at most 8 reviews in flight, 429 beyond), so a
 * flood of made-up tokens touches neither the reconciles' budget nor the lease.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Logger, pino } from 'pino';
import { collectDefaultMetrics, type Gauge, Registry } from 'prom-client';
import type { Clock } from '../base/clock.ts';
import { sharedGauge } from '../base/shared-metrics.ts';
import { CachedClient } from '../cache/cached-client.ts';
import { type CacheScope, InformerCache } from '../cache/informer-cache.ts';
import type { ReflectorOptions } from '../cache/reflector.ts';
import type { KubeClient } from '../client/client.ts';
import { EventRecorder } from '../objects/events.ts';
import { type Controller, ControllerBuilder } from './controller.ts';
import {
  DEFAULT_METRICS_HOST,
  DEFAULT_PROBE_HOST,
  Endpoint,
  type MetricsEndpointOptions,
  metricsCertificate,
  metricsRoute,
  type ProbeEndpointOptions,
  probeRoutes,
} from './endpoint.ts';
import { type HealthCheck, HealthChecks } from './health.ts';
import {
  DEFAULT_RENEW_DEADLINE_MS,
  HoldOutcome,
  LeaderElector,
  leaderElectionClient,
} from './leader-election.ts';
import { RequestAuthorizer, reviewClient } from './request-authorizer.ts';
import type { Runnable, RunnableOptions } from './runnable.ts';

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
  /** `/healthz`, `/livez`, `/readyz` on this address (host 0.0.0.0 by default); omitted: none. */
  readonly healthProbe?: ProbeEndpointOptions;
  /** `/metrics` on this address (host 127.0.0.1 by default, or secure); omitted: none. */
  readonly metrics?: MetricsEndpointOptions;
  readonly logger?: Logger;
  readonly registry?: Registry;
  readonly clock?: Clock;
  /** How long in-flight reconciles (and leader-only runnables) get to finish on `stop()`. */
  readonly shutdownTimeoutMs?: number;
  /** `start()` rejects when the caches have not synced within this time (default 2 min). */
  readonly cacheSyncTimeoutMs?: number;
  /** Reflector tuning (timeouts), mostly for tests. */
  readonly reflector?: Partial<ReflectorOptions>;
  /**
   * What the cache watches: default namespaces for namespaced kinds and per-kind
   * namespaces and selectors, so that an operator with namespaced RBAC never lists
   * cluster-wide. See InformerCache.
   */
  readonly cache?: CacheScope;
}

/** Why a manager's run ended. */
export type ManagerExit =
  /** `stop()` (or a signal): a graceful stop. */
  | 'Stopped'
  /** No renewal within the renew deadline: another replica may lead now. */
  | 'LeadershipLost'
  /** A runnable failed to start: the process cannot do its job. */
  | 'RunnableFailed';

/** controller-runtime's `CacheSyncTimeout` default. */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;
/**
 * The bound on each step of a stop after the drain (the event flush, the lease
 * release, stopping runnables, watches and endpoints): a step the apiserver does not
 * let finish is abandoned with a log line.
 */
export const STOP_STEP_TIMEOUT_MS = 2_000;

/** A runnable the manager started, and how to stop it. */
interface Started {
  readonly runnable: Runnable;
  readonly abort: AbortController;
}

export class Manager {
  readonly name: string;
  readonly client: KubeClient;
  readonly cache: InformerCache;
  /**
   * Reads from `cache` (waiting for a kind's first sync), writes to `client`: the
   * client a reconcile reads through, with field indexes (see `cache/cached-client.ts`).
   */
  readonly cachedClient: CachedClient;
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
  /** The elector's own client, derived from `client`; closed once the lease is released. */
  private readonly electorClient: KubeClient | undefined;
  /** The metrics authorizer's own client, derived from `client`; closed with the endpoint. */
  private reviewClient: KubeClient | undefined;
  private readonly leaderGauge: Gauge<'name'>;
  private readonly healthChecks = new HealthChecks('healthz');
  private readonly readyChecks = new HealthChecks('readyz');
  private readonly endpoints: { probe?: Endpoint; metrics?: Endpoint } = {};
  /** Runnables by whether they need leadership, in the order added. */
  private readonly runnables: { readonly runnable: Runnable; readonly leaderOnly: boolean }[] = [];
  private readonly startedRunnables = new Set<Started>();
  /** Runnables ever started: each starts once, even if added while start() iterates. */
  private readonly launched = new WeakSet<Runnable>();
  /** Aborted by `stop()` or a lost lease: nothing new starts. */
  private readonly lifetime = new AbortController();
  /** Aborted when this process stops leading (a lost lease, or the end of a stop's drain). */
  private readonly leadership = new AbortController();
  /** Aborted after the drain of a graceful stop: the lease stops being renewed, then is released. */
  private readonly renewing = new AbortController();
  private holding: Promise<HoldOutcome> | undefined;
  private startCalled = false;
  private workersStarted = false;
  private stopping: Promise<void> | undefined;
  private synced = false;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.client = opts.client;
    this.log = opts.logger ?? pino({ base: { operator: opts.name } });
    this.registry = opts.registry ?? new Registry();
    // Process and Node.js metrics once per registry: a registry shared with the client (its
    // request metrics) must still get them, and a second manager on it must not register twice.
    if (!this.registry.getSingleMetric('process_cpu_seconds_total'))
      collectDefaultMetrics({ register: this.registry });
    this.cache = new InformerCache(opts.client, this.log, opts.clock, opts.reflector, opts.cache);
    this.cachedClient = new CachedClient(this.cache, opts.client);
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
      // Its own client: renewals must never wait behind reconciles in `client`'s bucket or pool.
      const electorClient = leaderElectionClient(
        opts.client,
        opts.leaderElection.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
      );
      this.electorClient = electorClient;
      this.elector = new LeaderElector(
        electorClient,
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
    // controller-runtime's `healthz.Ping`: the process answers.
    this.healthChecks.add('ping', () => {});
    this.readyChecks.add('manager', () => {
      const { ready, detail } = this.readiness();
      if (!ready) throw new Error(detail.join('; '));
    });
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

  /**
   * Adds a runnable. One that needs leadership (the default) starts once this process
   * leads and its caches have synced, and stops when leadership ends; the others start
   * with the manager, before the caches sync, and stop at shutdown. Added to a running
   * manager, a runnable starts at once if its condition holds.
   */
  add(runnable: Runnable, opts: RunnableOptions = {}): void {
    const leaderOnly = opts.needLeaderElection ?? true;
    this.runnables.push({ runnable, leaderOnly });
    if (this.lifetime.signal.aborted) return;
    if (leaderOnly ? this.workersStarted : this.startCalled) {
      const signal = leaderOnly ? this.leadership.signal : this.lifetime.signal;
      this.startRunnable(runnable, signal).catch((err: unknown) => this.runnableFailed(runnable, err));
    }
  }

  /** A liveness check: failing, `/healthz` answers 500 with the check's name and reason (the kubelet restarts the pod). */
  addHealthCheck(name: string, check: HealthCheck): void {
    this.healthChecks.add(name, check);
  }

  /** A readiness check: failing, `/readyz` answers 503 with the check's name and reason (no traffic from Services). */
  addReadyCheck(name: string, check: HealthCheck): void {
    this.readyChecks.add(name, check);
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
    if (this.workersStarted && !this.leadership.signal.aborted && this.controllers.includes(c))
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

  /** Whether this process may act: it holds the lease within its renew deadline (or runs without election). */
  get isLeader(): boolean {
    if (this.leadership.signal.aborted) return false;
    return this.elector ? this.elector.isLeader : this.workersStarted;
  }

  /** The health probe endpoint's address once listening (tests use port 0). */
  get healthProbeEndpoint(): { host: string; port: number } | undefined {
    return this.endpoints.probe?.address;
  }

  /** The metrics endpoint's address once listening. */
  get metricsEndpoint(): { host: string; port: number } | undefined {
    return this.endpoints.metrics?.address;
  }

  /**
   * Starts everything; resolves once caches are synced (workers may still be waiting
   * for leadership). Rejects if a controller's kind cannot be resolved, if a runnable
   * that does not need leadership fails to start, or if the caches do not sync within
   * `cacheSyncTimeoutMs` (the message names the informers that did not).
   */
  async start(): Promise<void> {
    this.startCalled = true;
    await this.listen();
    for (const { runnable, leaderOnly } of this.runnables) {
      if (!leaderOnly) await this.startRunnable(runnable, this.lifetime.signal);
    }
    for (const c of this.controllers) await c.prepare();
    this.cache.start();
    await this.waitForCaches(this.opts.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS);
    this.synced = true;
    this.log.info({ informers: this.cache.health().length }, 'caches synced');
    void this.lead().catch((err: unknown) => this.log.error({ err: String(err) }, 'leading failed'));
  }

  private async waitForCaches(timeoutMs: number): Promise<void> {
    const waiting = new AbortController();
    const signal = AbortSignal.any([this.lifetime.signal, waiting.signal]);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const unsynced = this.cache
          .health()
          .filter((h) => !h.synced)
          .map((h) => `${h.name}${h.lastError ? ` (${h.lastError})` : ''}`);
        waiting.abort();
        reject(
          new Error(`caches did not sync within ${timeoutMs} ms: ${unsynced.join(', ') || 'none pending'}`),
        );
      }, timeoutMs);
    });
    try {
      await Promise.race([this.cache.waitForSync(signal), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async listen(): Promise<void> {
    const { healthProbe, metrics } = this.opts;
    const probes = probeRoutes(this.healthChecks, this.readyChecks);
    if (healthProbe) {
      this.endpoints.probe = new Endpoint('health-probe', probes);
      await this.endpoints.probe.listen(healthProbe.port, healthProbe.host ?? DEFAULT_PROBE_HOST);
    }
    if (metrics) {
      const secure = metrics.secure;
      let authorizer: RequestAuthorizer | undefined;
      if (secure) {
        // Its own client and budget: a flood of made-up tokens must not spend `client`'s.
        this.reviewClient = reviewClient(this.client);
        authorizer = new RequestAuthorizer(this.reviewClient);
      }
      this.endpoints.metrics = new Endpoint('metrics', metricsRoute(this.registry, authorizer));
      await this.endpoints.metrics.listen(
        metrics.port,
        metrics.host ?? (secure ? '0.0.0.0' : DEFAULT_METRICS_HOST),
        secure ? await metricsCertificate(secure) : undefined,
      );
    }
  }

  private async lead(): Promise<void> {
    const signal = this.lifetime.signal;
    if (this.elector) {
      if (!(await this.elector.acquire(signal))) return;
      this.leaderGauge.labels(this.name).set(1);
      // Renewal starts at once, and goes on through a stop's drain until `renewing` aborts.
      this.holding = this.elector.hold(this.renewing.signal);
    }
    if (signal.aborted) {
      this.leadership.abort(new Error('stopped before leading'));
      return;
    }
    this.workersStarted = true;
    for (const c of this.controllers) if (!this.joining.has(c)) c.startWorkers();
    for (const { runnable, leaderOnly } of this.runnables) {
      if (leaderOnly) {
        this.startRunnable(runnable, this.leadership.signal).catch((err: unknown) =>
          this.runnableFailed(runnable, err),
        );
      }
    }
    if (!this.holding) return;
    const outcome = await this.holding;
    this.leaderGauge.labels(this.name).set(0);
    if (outcome === HoldOutcome.Lost) {
      this.log.error('leadership lost: stopping all controllers at once');
      // At once, even if a graceful stop is draining: a standby may lead soon.
      this.leadership.abort(new Error('LeadershipLost'));
      await Promise.all([
        ...this.controllers.map((c) => c.stop(0)),
        this.stopRunnables(true, 0),
        this.shutdown('LeadershipLost', 0),
      ]);
    }
  }

  /** Starts a runnable under `signal` (aborted when it must stop); tracked for stop(). */
  private async startRunnable(runnable: Runnable, parent: AbortSignal): Promise<void> {
    const abort = new AbortController();
    const started: Started = { runnable, abort };
    const onParent = (): void => abort.abort(parent.reason);
    if (parent.aborted || this.launched.has(runnable)) return;
    this.launched.add(runnable);
    parent.addEventListener('abort', onParent, { once: true });
    this.startedRunnables.add(started);
    this.log.info({ runnable: runnable.name }, 'starting runnable');
    await runnable.start(abort.signal);
  }

  private runnableFailed(runnable: Runnable, err: unknown): void {
    this.log.error(
      { runnable: runnable.name, err: String(err) },
      'runnable failed to start: stopping the manager',
    );
    void this.shutdown('RunnableFailed', this.opts.shutdownTimeoutMs ?? 30_000);
  }

  /** Stops the started runnables that need leadership (or those that do not), each bounded by `boundMs`. */
  private async stopRunnables(leaderOnly: boolean, boundMs: number): Promise<void> {
    const which = [...this.startedRunnables].filter(
      (s) => this.runnables.find((r) => r.runnable === s.runnable)?.leaderOnly === leaderOnly,
    );
    await Promise.all(
      which.map(async (s) => {
        this.startedRunnables.delete(s);
        s.abort.abort(new Error('runnable stopping'));
        await this.bounded(`stopping runnable ${s.runnable.name}`, s.runnable.stop(), boundMs);
      }),
    );
  }

  /**
   * Graceful stop: drain reconciles (30 s by default) while still renewing, then release
   * the lease and close. A reconcile still running at the drain deadline is not waited
   * for: its signal and its `ctx.client` abort then, before the release (see the module
   * comment for exactly what that fences).
   */
  stop(): Promise<void> {
    return this.shutdown('Stopped', this.opts.shutdownTimeoutMs ?? 30_000);
  }

  private shutdown(exit: ManagerExit, drainMs: number): Promise<void> {
    this.stopping ??= (async () => {
      this.lifetime.abort(new Error(exit));
      // 1. Drain, still leading: the lease keeps being renewed meanwhile. At the deadline
      // each controller aborts its stragglers' signals (and so their ctx.client) before
      // resolving: nothing a straggler starts through ctx.client is sent after this.
      const [stragglers] = await Promise.all([
        Promise.all(this.controllers.map((c) => c.stop(drainMs))),
        this.stopRunnables(true, Math.max(drainMs, STOP_STEP_TIMEOUT_MS)),
      ]);
      if (stragglers.flat().length)
        this.log.warn({ keys: stragglers.flat() }, 'reconciles still running at the shutdown deadline');
      // 2. Final event counts, written by the leader that made them.
      await this.recorder.close(STOP_STEP_TIMEOUT_MS);
      // 3. Stop leading, last: release the lease.
      this.leadership.abort(new Error(exit));
      this.renewing.abort(new Error(exit));
      const outcome = await this.holding;
      if (outcome === HoldOutcome.Stopped) await this.elector?.release();
      this.leaderGauge.labels(this.name).set(0);
      // 4. Everything else, each bounded; the elector's client, with the lease released,
      // has nothing left to send.
      await Promise.all([
        this.stopRunnables(false, STOP_STEP_TIMEOUT_MS),
        this.bounded('stopping watches', this.cache.stop(), STOP_STEP_TIMEOUT_MS),
        this.closeClient('closing the elector client', this.electorClient),
      ]);
      // The review client with the endpoint it serves (a review in flight is answered to no one).
      await Promise.all([
        this.endpoints.probe?.close(),
        this.endpoints.metrics?.close(),
        this.closeClient('closing the review client', this.reviewClient),
      ]);
      this.log.info({ exit }, 'manager stopped');
      this.resolveDone(exit);
    })();
    return this.stopping;
  }

  /** Closes a client the manager derived, bounded: its requests in flight may be waited for, not long. */
  private async closeClient(what: string, client: KubeClient | undefined): Promise<void> {
    if (client) await this.bounded(what, client.transport.close(), STOP_STEP_TIMEOUT_MS);
  }

  /** Waits for `p` at most `ms`; a step that does not finish is logged and left behind. */
  private async bounded(what: string, p: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), ms);
    });
    try {
      const r = await Promise.race([p.then(() => 'done' as const), late]);
      if (r === 'late')
        this.log.warn({ step: what, boundMs: ms }, 'shutdown step did not finish in time: abandoned');
    } catch (err) {
      this.log.warn({ step: what, err: String(err) }, 'shutdown step failed');
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGTERM and SIGINT stop the manager gracefully, then exit (code 0, or 1 after a lost lease or a failed runnable). */
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
    // Synced informers whose watch is stale; informers created later count once synced,
    // a kind not served never (its health says why): see InformerCache.notReady.
    detail.push(...this.cache.notReady());
    if (this.stopping) detail.push('shutting down');
    return { ready: detail.length === 0, detail };
  }
}
