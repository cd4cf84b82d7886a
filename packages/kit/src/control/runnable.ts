/**
 * A runnable is anything the manager starts and stops beside its controllers: a
 * webhook server, a watcher that feeds a sidecar, a periodic exporter.
 *
 * Some must run only on the leader (anything that writes on the cluster's behalf);
 * others must run on every replica (a webhook server: the apiserver calls any ready
 * pod behind the Service, leader or not). The manager takes the choice at `add()` time,
 * as controller-runtime's `LeaderElectionRunnable.NeedLeaderElection()` does.
 *
 * When the manager runs them (`manager.add`, see manager.ts):
 * - not needing leadership: started by `start()` before the caches sync (a conversion
 *   webhook of a kind the caches list must answer first), stopped at the end of a
 *   shutdown, after the lease is released;
 * - needing leadership: started once this process leads and its caches have synced,
 *   stopped when it stops leading: at once on a lost lease, or with the controllers'
 *   drain on a graceful stop, before the lease is released.
 * Each `stop()` is awaited for a bounded time only: a runnable that does not stop in
 * time is logged and left behind, so that a shutdown always ends.
 */

export interface Runnable {
  /** For logs and health: `webhook-server`, `decider-watcher`. */
  readonly name: string;
  /**
   * Starts the runnable and resolves once it is serving (a server listening, a watcher
   * synced). `signal` aborts when the manager stops or, for a leader-only runnable, when
   * leadership is lost: the runnable must stop its work then.
   */
  start(signal: AbortSignal): Promise<void>;
  /** Stops it and resolves once stopped: connections closed, timers cleared. Idempotent. */
  stop(): Promise<void>;
}

export interface RunnableOptions {
  /**
   * Whether the runnable runs only while this process leads. Default true: acting on the
   * cluster from two replicas at once is the failure leader election exists to prevent,
   * so running on every replica is the choice to state (`false`).
   */
  readonly needLeaderElection?: boolean;
}
