/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's timing: a lease
 * of 15 s, renewed every 2 s, given up if not renewed within 10 s.
 *
 * Guarantees:
 * - At most one holder acts at a time, provided clocks tick at the same rate (no clock
 *   synchronisation is assumed: expiry is measured on our own clock from the moment we
 *   last saw the lease change, as client-go does).
 * - A leader that cannot renew within the renew deadline stops leading before another
 *   candidate can take the lease. The deadline counts from the START of the last
 *   successful renewal (the write landed no earlier, so a standby saw it no earlier and
 *   waits a full lease duration from then), and every lease request is aborted at that
 *   deadline: a hung request cannot keep `isLeader` true. `isLeader` itself turns false
 *   at the deadline, whatever the request is doing. The margin left to stop the work is
 *   lease duration − renew deadline (5 s by default), hence `renewDeadline < leaseDuration`.
 * - `release()` on a graceful stop empties the holder, so a successor takes over at its
 *   next retry instead of waiting out the lease.
 * - Renewals never wait behind the operator's own traffic, when the elector is given a
 *   client of its own ({@link leaderElectionClient}; the Manager does this itself): its
 *   own connections, no token bucket, each request bounded by half the renew deadline.
 *   On the manager's client a renewal queued behind reconciles (20 qps shared by 100
 *   busy workers) or behind the metrics endpoint's reviews lost the lease in 10 s; on its
 *   own client it holds by construction, as client-go's lease lock has its own clientset.
 * Writes use the Lease's resourceVersion (optimistic concurrency): two candidates
 * racing for an expired lease cannot both win.
 */
import type { Logger } from 'pino';
import { type Clock, realClock, sleep, type TimerHandle } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { KubeObject } from '../client/types.ts';
import { microTime } from '../objects/events.ts';

/**
 * Where an operator's Lease lives and client-go's three timings (defaults below when
 * omitted): what the kit's command line parses and an operator passes on to its Manager,
 * which adds the Lease's name and the process's identity.
 */
export interface LeaderElectionSettings {
  readonly namespace: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  /** Unique per process: hostname plus a random suffix by default. */
  readonly identity: string;
  /** How long a standby waits, from the last change it saw, before taking the lease. */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps leading without a successful renewal. Below the lease duration. */
  readonly renewDeadlineMs?: number;
  /** The pause between two attempts (to acquire or renew). Below the renew deadline. */
  readonly retryPeriodMs?: number;
}

/** client-go's defaults. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** The bound on `release()`: a graceful stop must not wait on a hung apiserver. */
export const RELEASE_TIMEOUT_MS = 2_000;
/**
 * The connections of the elector's own pool: it sends one request at a time (a read,
 * then a write), so two leave a spare for when one has just been torn down.
 */
export const LEADER_ELECTION_CONNECTIONS = 2;
/**
 * The shortest per-request deadline of the elector's client (client-go's floor, in
 * `resourcelock.NewFromKubeconfig`): below it a renewal on a busy apiserver would be
 * abandoned before it could answer.
 */
export const MIN_LEASE_REQUEST_TIMEOUT_MS = 1_000;

/**
 * The per-request deadline of the elector's client: half the renew deadline (at least
 * {@link MIN_LEASE_REQUEST_TIMEOUT_MS}), as client-go sets its lease lock's `Timeout`.
 * A request stuck on a dead connection is abandoned in time for one more attempt, a
 * retry period later, before the renew deadline passes.
 */
export function leaseRequestTimeoutMs(renewDeadlineMs: number): number {
  return Math.max(MIN_LEASE_REQUEST_TIMEOUT_MS, Math.floor(renewDeadlineMs / 2));
}

/**
 * The client to give a {@link LeaderElector}: `client`'s server and credentials on a
 * transport of its own ({@link KubeClient.isolated}): its own connections, so a pool
 * busy with reconciles or a connection frozen under them cannot hold a renewal; NO
 * token bucket, because the elector paces itself (two requests per retry period) and a
 * bucket could only delay a renewal, never protect the apiserver from one; and each
 * request bounded by {@link leaseRequestTimeoutMs}. The Manager makes one from its
 * client, so operators need not. Close its transport when the elector is done.
 */
export function leaderElectionClient(
  client: KubeClient,
  renewDeadlineMs: number = DEFAULT_RENEW_DEADLINE_MS,
): KubeClient {
  return client.isolated({
    timeoutMs: leaseRequestTimeoutMs(renewDeadlineMs),
    connections: LEADER_ELECTION_CONNECTIONS,
  });
}

/** How a period of leadership ended. */
export const HoldOutcome = {
  /** The caller's signal aborted (a graceful stop): the lease is still ours, to release. */
  Stopped: 'stopped',
  /** No renewal succeeded within the renew deadline: another candidate may lead soon. */
  Lost: 'lost',
} as const;
export type HoldOutcome = (typeof HoldOutcome)[keyof typeof HoldOutcome];

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;

/** Throws unless lease duration > renew deadline > retry period > 0, the order safety rests on. */
export function validateLeaderElectionTiming(t: {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}): void {
  if (!(t.retryPeriodMs > 0))
    throw new Error(`leader election: retryPeriodMs must be positive, got ${t.retryPeriodMs}`);
  if (!(t.renewDeadlineMs > t.retryPeriodMs)) {
    throw new Error(
      `leader election: renewDeadlineMs (${t.renewDeadlineMs}) must exceed retryPeriodMs (${t.retryPeriodMs}), or a leader gets no second attempt`,
    );
  }
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) {
    throw new Error(
      `leader election: leaseDurationMs (${t.leaseDurationMs}) must exceed renewDeadlineMs (${t.renewDeadlineMs}): the difference is the time a leader that cannot renew has to stop before a standby takes over`,
    );
  }
}

/**
 * Campaigns for, holds and releases one Lease. Give it a client of its own
 * ({@link leaderElectionClient}): on a client shared with reconciles, its renewals wait
 * in their token bucket and connection pool, and a busy leader loses its lease.
 */
export class LeaderElector {
  readonly identity: string;
  private readonly client: KubeClient;
  private readonly opts: Required<LeaderElectionOptions>;
  private readonly log: Logger;
  private readonly clock: Clock;
  /** The last lease we saw and when (on our clock) we saw it change. */
  private observed: { lease: Lease; at: number } | undefined;
  private leading = false;
  /** While leading: the time (our clock) by which a renewal must have succeeded. */
  private renewBy = 0;

  constructor(client: KubeClient, opts: LeaderElectionOptions, log: Logger, clock: Clock = realClock) {
    this.client = client;
    this.opts = {
      ...opts,
      leaseDurationMs: opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
      renewDeadlineMs: opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
      retryPeriodMs: opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
    };
    validateLeaderElectionTiming(this.opts);
    this.identity = opts.identity;
    this.log = log.child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
    this.clock = clock;
  }

  /** True while we hold the lease and the renew deadline has not passed. */
  get isLeader(): boolean {
    return this.leading && this.clock.now() < this.renewBy;
  }

  /**
   * Waits until this process holds the lease (or `signal` aborts: resolves false), then
   * returns true. Keep leading with {@link hold}. Each attempt is bounded by the renew
   * deadline: a hung request is abandoned and retried.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      const started = this.clock.now();
      const attempt = this.deadlineSignal(started + this.opts.renewDeadlineMs, signal);
      const ok = await this.tryAcquireOrRenew(attempt.signal);
      attempt.dispose();
      if (ok && signal.aborted) {
        // Won just as we were told to stop: hand it back rather than make a standby wait it out.
        this.leading = true;
        await this.release();
        return false;
      }
      if (ok) {
        this.leading = true;
        this.renewBy = started + this.opts.renewDeadlineMs;
        this.log.info('became leader');
        return true;
      }
      try {
        await sleep(this.clock, jitter(this.opts.retryPeriodMs), signal);
      } catch {
        return false;
      }
    }
    return false;
  }

  /**
   * Renews every retry period until `signal` aborts (resolves 'stopped') or no renewal
   * succeeded within the renew deadline (resolves 'lost', at the deadline: a request in
   * flight then is aborted, not waited for).
   */
  async hold(signal: AbortSignal): Promise<HoldOutcome> {
    const lost = new AbortController();
    let timer: TimerHandle | undefined;
    const arm = (): void => {
      if (timer !== undefined) this.clock.clearTimeout(timer);
      timer = this.clock.setTimeout(
        () => lost.abort(new Error('renew deadline passed')),
        this.renewBy - this.clock.now(),
      );
    };
    arm();
    const either = AbortSignal.any([signal, lost.signal]);
    try {
      while (!either.aborted) {
        try {
          await sleep(this.clock, this.opts.retryPeriodMs, either);
        } catch {
          break;
        }
        const started = this.clock.now();
        if ((await this.tryAcquireOrRenew(either)) && !lost.signal.aborted) {
          this.renewBy = started + this.opts.renewDeadlineMs;
          arm();
        }
      }
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
    if (lost.signal.aborted) {
      this.leading = false;
      this.log.error('could not renew the lease within the renew deadline: stopped leading');
      return HoldOutcome.Lost;
    }
    return HoldOutcome.Stopped;
  }

  /**
   * Gives the lease up (holder emptied) so that a successor takes over at once. Reads
   * the lease afresh (a renewal aborted by the stop may have landed) and leaves it alone
   * if someone else holds it. Bounded by {@link RELEASE_TIMEOUT_MS}: on a hung apiserver
   * the successor waits out the lease instead.
   */
  async release(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    const signal = AbortSignal.timeout(RELEASE_TIMEOUT_MS);
    try {
      const lease = await this.client.find<Lease>(LEASE, this.opts.name, this.opts.namespace, { signal });
      if (!lease || lease.spec?.holderIdentity !== this.identity) return;
      await this.client.replace<Lease>(
        {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: null,
            leaseDurationSeconds: 1,
            renewTime: microTime(this.clock.now()),
          },
        },
        { signal },
      );
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err: String(err) }, 'could not release the lease; a successor waits for it to expire');
    }
  }

  /** A signal that aborts at `deadline` on our clock, or with `parent`. */
  private deadlineSignal(deadline: number, parent: AbortSignal): { signal: AbortSignal; dispose(): void } {
    const ctl = new AbortController();
    const timer = this.clock.setTimeout(
      () => ctl.abort(new Error('lease request exceeded the renew deadline')),
      deadline - this.clock.now(),
    );
    return { signal: AbortSignal.any([parent, ctl.signal]), dispose: () => this.clock.clearTimeout(timer) };
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    const nowTime = microTime(now);
    // Rounded up: a standby must never wait less than the duration we mean.
    const leaseSeconds = Math.ceil(this.opts.leaseDurationMs / 1000);
    try {
      const current = await this.client.find<Lease>(LEASE, this.opts.name, this.opts.namespace, { signal });
      if (!current) {
        const created = await this.client.create<Lease>(
          {
            ...LEASE,
            metadata: { name: this.opts.name, namespace: this.opts.namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: leaseSeconds,
              acquireTime: nowTime,
              renewTime: nowTime,
              leaseTransitions: 0,
            },
          },
          { signal },
        );
        this.observed = { lease: created, at: now };
        return true;
      }
      if (this.observed?.lease.metadata.resourceVersion !== current.metadata.resourceVersion) {
        this.observed = { lease: current, at: this.clock.now() };
      }
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const durationMs = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
      const expired = this.observed === undefined || this.observed.at + durationMs <= this.clock.now();
      if (holder && holder !== this.identity && !expired) return false;
      const taking = holder !== this.identity;
      const updated = await this.client.replace<Lease>(
        {
          ...current,
          spec: {
            ...spec,
            holderIdentity: this.identity,
            leaseDurationSeconds: leaseSeconds,
            renewTime: nowTime,
            acquireTime: taking ? nowTime : spec.acquireTime,
            leaseTransitions: (spec.leaseTransitions ?? 0) + (taking && holder ? 1 : 0),
          },
        },
        { signal },
      );
      this.observed = { lease: updated, at: this.clock.now() };
      return true;
    } catch (err) {
      if (signal.aborted) {
        this.log.warn({ err: String(signal.reason) }, 'lease request abandoned');
      } else if (
        !isApiError(err, ApiErrorReason.Conflict) &&
        !isApiError(err, ApiErrorReason.AlreadyExists)
      ) {
        this.log.warn({ err: String(err) }, 'lease request failed');
      }
      return false;
    }
  }
}

function jitter(ms: number): number {
  return ms * (1 + Math.random() * 0.2);
}
