/**
 * Runnables beside controllers: one that needs leadership runs on the leader only, from
 * when it leads until it stops leading; one that does not runs on every replica, from
 * before the caches sync (a webhook server must answer while they do) until shutdown.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { Manager, type Runnable } from '@operators/kit';
import { pino } from 'pino';
import { WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

const quiet = pino({ level: 'silent' });
const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

/** Records what the manager did to it. */
class Probe implements Runnable {
  readonly name: string;
  startedAt: number | undefined;
  stoppedAt: number | undefined;
  /** Whether the manager's caches had synced when it started. */
  startedWithSyncedCaches: boolean | undefined;
  signal: AbortSignal | undefined;
  private readonly manager: () => Manager;

  constructor(name: string, manager: () => Manager) {
    this.name = name;
    this.manager = manager;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    this.startedAt = Date.now();
    this.startedWithSyncedCaches = !this.manager().readiness().detail.includes('caches not synced yet');
  }

  async stop(): Promise<void> {
    this.stoppedAt ??= Date.now();
  }
}

function replica(ns: string, identity: string): { manager: Manager; leaderOnly: Probe; everywhere: Probe } {
  const manager: Manager = new Manager({
    name: 'runnables',
    client: env.admin,
    logger: quiet,
    leaderElection: { namespace: ns, identity, ...TIMING },
  });
  manager
    .controller('widgets')
    .for(WIDGET, { namespace: ns })
    .reconcile(async () => ({}));
  const leaderOnly = new Probe(`${identity}-leader-only`, () => manager);
  const everywhere = new Probe(`${identity}-everywhere`, () => manager);
  manager.add(leaderOnly);
  manager.add(everywhere, { needLeaderElection: false });
  return { manager, leaderOnly, everywhere };
}

describe('runnables', () => {
  it('a leader-only runnable runs on the leader alone; the others run on every replica from before the caches sync', async (t) => {
    const ns = await env.namespace(t, 'runnables');
    const a = replica(ns, 'a');
    await a.manager.start();
    t.after(() => a.manager.stop());
    await eventually('a leads', async () => (a.manager.isLeader ? true : undefined));
    await eventually('a started its leader-only runnable', async () => a.leaderOnly.startedAt);
    const b = replica(ns, 'b');
    await b.manager.start();
    t.after(() => b.manager.stop());

    assert.equal(a.everywhere.startedWithSyncedCaches, false, 'started only after the caches synced');
    assert.equal(b.everywhere.startedWithSyncedCaches, false);
    assert.ok(
      b.everywhere.startedAt !== undefined,
      'the standby did not start its runnable for every replica',
    );
    // b cannot lead while a renews; its leader-only runnable starts only with leadership.
    assert.equal(b.manager.isLeader, false);
    assert.equal(b.leaderOnly.startedAt, undefined, 'a leader-only runnable ran on the standby');
    assert.equal(a.leaderOnly.startedWithSyncedCaches, true);

    await a.manager.stop();
    assert.ok(
      a.leaderOnly.signal?.aborted && a.leaderOnly.stoppedAt !== undefined,
      'not stopped with leadership',
    );
    assert.ok(
      a.everywhere.signal?.aborted && a.everywhere.stoppedAt !== undefined,
      'not stopped at shutdown',
    );
    // Leader-only work ends before the lease is released, so before b can lead.
    const bLeads = await eventually(
      'b takes over and starts its leader-only runnable',
      async () => b.leaderOnly.startedAt,
    );
    assert.ok((a.leaderOnly.stoppedAt ?? Number.POSITIVE_INFINITY) <= bLeads);
    assert.equal(b.everywhere.stoppedAt, undefined);
  });

  it('a runnable added to a running manager starts at once when its condition holds', async (t) => {
    const manager = new Manager({ name: 'late-runnable', client: env.admin, logger: quiet });
    await manager.start();
    t.after(() => manager.stop());
    const late = new Probe('late', () => manager);
    manager.add(late);
    await eventually('started', async () => late.startedAt);
    await manager.stop();
    assert.ok(late.stoppedAt !== undefined);
  });

  it('a runnable that fails to start before the caches sync makes start() fail', async () => {
    const manager = new Manager({ name: 'failing-runnable', client: env.admin, logger: quiet });
    manager.add(
      {
        name: 'broken',
        start: async () => {
          throw new Error('port in use');
        },
        stop: async () => {},
      },
      { needLeaderElection: false },
    );
    await assert.rejects(manager.start(), /port in use/);
    await manager.stop();
  });
});
