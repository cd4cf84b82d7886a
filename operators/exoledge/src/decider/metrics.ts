/**
 * The decider's metrics, served on `/metrics` in Prometheus' text format. One registry
 * per decider (a test runs several in one process).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class DeciderMetrics {
  /** Every verdict, by verdict and reason (`ListedObserved` counts what Observe let through). */
  readonly verdicts: Counter<'verdict' | 'reason'>;
  /** Valkey calls without an answer: refused, timed out, sent while disconnected, or skipped in the pause after a failure. */
  readonly valkeyFailures: Counter;
  /** 1 while the last Valkey call succeeded, 0 otherwise or without Valkey. */
  readonly valkeyUp: Gauge;
  /** A file or shard that did not read; the previous version stays served. */
  readonly reloadFailures: Counter<'source'>;
  /** New lookup tables served (a list changed version, came or went). */
  readonly tableBuilds: Counter;
  readonly tableBuildSeconds: Histogram;
  /** Lists served, by kind. */
  readonly lists: Gauge<'kind'>;
  /** Challenges answered with a valid proof-of-work (a clearance issued), and refused answers by reason. */
  readonly challengeAnswers: Counter<'outcome'>;
  /**
   * Verdicts counted since the last scrape, by verdict and reason, flushed into
   * `verdicts` when it is collected. `Counter.inc(labels)` validates and hashes its labels
   * on every call, a measurable part of a verdict's cost at tens of thousands a second; a
   * number in a map is not. A handful of pairs exist (the reasons are constants).
   */
  readonly #pendingVerdicts = new Map<string, Map<string, { count: number }>>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.verdicts = new Counter({
      name: 'exoledge_decider_verdicts_total',
      help: 'Verdicts given, by verdict and reason.',
      labelNames: ['verdict', 'reason'],
      registers,
      collect: () => this.#flushVerdicts(),
    });
    this.valkeyFailures = new Counter({
      name: 'exoledge_decider_valkey_failures_total',
      help: 'Valkey calls that got no answer (failed, or skipped in the second after a failure); each fell back to no state.',
      registers,
    });
    this.valkeyUp = new Gauge({
      name: 'exoledge_decider_valkey_up',
      help: '1 while Valkey answers, 0 when its last call failed or none is configured.',
      registers,
    });
    this.reloadFailures = new Counter({
      name: 'exoledge_decider_reload_failures_total',
      help: 'Shards, site configurations and allowlists that did not read; the previous version stays served.',
      labelNames: ['source'],
      registers,
    });
    this.tableBuilds = new Counter({
      name: 'exoledge_decider_table_builds_total',
      help: 'Lookup tables built and swapped in after a list changed.',
      registers,
    });
    this.tableBuildSeconds = new Histogram({
      name: 'exoledge_decider_table_build_seconds',
      help: 'Time to build a lookup table.',
      buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2],
      registers,
    });
    this.lists = new Gauge({
      name: 'exoledge_decider_lists',
      help: 'Blocklists served, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.challengeAnswers = new Counter({
      name: 'exoledge_decider_challenge_answers_total',
      help: 'Answers to proof-of-work challenges: cleared, or the reason they were refused.',
      labelNames: ['outcome'],
      registers,
    });
  }

  /** Counts one verdict (`exoledge_decider_verdicts_total`). */
  countVerdict(verdict: string, reason: string): void {
    let byReason = this.#pendingVerdicts.get(verdict);
    if (byReason === undefined) {
      byReason = new Map();
      this.#pendingVerdicts.set(verdict, byReason);
    }
    const pending = byReason.get(reason);
    if (pending === undefined) byReason.set(reason, { count: 1 });
    else pending.count++;
  }

  #flushVerdicts(): void {
    for (const [verdict, byReason] of this.#pendingVerdicts) {
      for (const [reason, pending] of byReason) {
        if (pending.count > 0) this.verdicts.inc({ verdict, reason }, pending.count);
        pending.count = 0;
      }
    }
  }
}
