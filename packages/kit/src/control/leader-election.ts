/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's timing: a lease
 * of 15 s, renewed every 2 s, given up if not renewed within 10 s.
 *
 * Guarantees:
 * - At most one holder acts at a time, provided clocks tick at the same rate (no clock
 *   synchronisation is assumed: expiry is measured on our own clock from the moment we
 *   last saw the lease change, as client-go does).
 * - A leader that cannot renew within the renew deadline stops leading (its `signal`
 *   aborts) before another candidate can take the lease (renew deadline < lease duration).
 * - `release()` on a graceful stop empties the holder, so a successor takes over at its
 *   next retry instead of waiting out the lease.
 * Writes use the Lease's resourceVersion (optimistic concurrency): two candidates
 * racing for an expired lease cannot both win.
 */
import type { Logger } from 'pino';
import { type Clock, realClock, sleep } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { KubeObject } from '../client/types.ts';
import { microTime } from '../objects/events.ts';

export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  /** Unique per process: hostname plus a random suffix by default. */
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } as const;

export class LeaderElector {
  readonly identity: string;
  private readonly client: KubeClient;
  private readonly opts: Required<LeaderElectionOptions>;
  private readonly log: Logger;
  private readonly clock: Clock;
  /** The last lease we saw and when (on our clock) we saw it change. */
  private observed: { lease: Lease; at: number } | undefined;
  private leading = false;

  constructor(client: KubeClient, opts: LeaderElectionOptions, log: Logger, clock: Clock = realClock) {
    this.client = client;
    this.opts = {
      ...opts,
      leaseDurationMs: opts.leaseDurationMs ?? 15_000,
      renewDeadlineMs: opts.renewDeadlineMs ?? 10_000,
      retryPeriodMs: opts.retryPeriodMs ?? 2_000,
    };
    this.identity = opts.identity;
    this.log = log.child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
    this.clock = clock;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Waits until this process holds the lease (or `signal` aborts: resolves false), then
   * returns true. Keep leading with {@link hold}.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) {
        this.leading = true;
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
   * Renews every retry period until `signal` aborts (resolves 'stopped') or a renewal
   * could not succeed within the renew deadline (resolves 'lost').
   */
  async hold(signal: AbortSignal): Promise<'stopped' | 'lost'> {
    let lastRenew = this.clock.now();
    while (!signal.aborted) {
      try {
        await sleep(this.clock, this.opts.retryPeriodMs, signal);
      } catch {
        return 'stopped';
      }
      if (await this.tryAcquireOrRenew()) {
        lastRenew = this.clock.now();
      } else if (this.clock.now() - lastRenew >= this.opts.renewDeadlineMs) {
        this.leading = false;
        this.log.error('could not renew the lease within the renew deadline: stopped leading');
        return 'lost';
      }
    }
    return 'stopped';
  }

  /** Gives the lease up (holder emptied) so that a successor takes over at once. */
  async release(): Promise<void> {
    if (!this.leading || !this.observed) return;
    this.leading = false;
    const lease = this.observed.lease;
    if (lease.spec?.holderIdentity !== this.identity) return;
    try {
      await this.client.replace<Lease>({
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: null,
          leaseDurationSeconds: 1,
          renewTime: microTime(this.clock.now()),
        },
      });
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err: String(err) }, 'could not release the lease; a successor waits for it to expire');
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    const nowTime = microTime(now);
    const leaseSeconds = Math.round(this.opts.leaseDurationMs / 1000);
    try {
      const current = await this.client.find<Lease>(LEASE, this.opts.name, this.opts.namespace);
      if (!current) {
        const created = await this.client.create<Lease>({
          ...LEASE,
          metadata: { name: this.opts.name, namespace: this.opts.namespace },
          spec: {
            holderIdentity: this.identity,
            leaseDurationSeconds: leaseSeconds,
            acquireTime: nowTime,
            renewTime: nowTime,
            leaseTransitions: 0,
          },
        });
        this.observed = { lease: created, at: now };
        return true;
      }
      if (this.observed?.lease.metadata.resourceVersion !== current.metadata.resourceVersion) {
        this.observed = { lease: current, at: now };
      }
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const durationMs = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
      const expired = this.observed === undefined || this.observed.at + durationMs <= now;
      if (holder && holder !== this.identity && !expired) return false;
      const taking = holder !== this.identity;
      const updated = await this.client.replace<Lease>({
        ...current,
        spec: {
          ...spec,
          holderIdentity: this.identity,
          leaseDurationSeconds: leaseSeconds,
          renewTime: nowTime,
          acquireTime: taking ? nowTime : spec.acquireTime,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (taking && holder ? 1 : 0),
        },
      });
      this.observed = { lease: updated, at: now };
      return true;
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.Conflict) && !isApiError(err, ApiErrorReason.AlreadyExists)) {
        this.log.warn({ err: String(err) }, 'lease request failed');
      }
      return false;
    }
  }
}

function jitter(ms: number): number {
  return ms * (1 + Math.random() * 0.2);
}
