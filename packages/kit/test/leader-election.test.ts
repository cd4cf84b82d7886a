/**
 * Leader election between managers on one Lease: only the leader reconciles; a graceful
 * stop drains while still renewing, then hands over at once; a killed leader is replaced
 * within the lease duration plus a retry period; a leader cut off from its apiserver
 * stops leading, and stops its work, before a standby can take the Lease, and a write it
 * had in flight never lands.
 *
 * Oracles: the Lease as the apiserver has it (holder, acquireTime written by the new
 * holder), objects read through the admin client, timestamps taken by the test.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeClient, type KubeObject, LeaderElector, Manager } from '@operators/kit';
import { pino } from 'pino';
import { sickProxy } from './support/proxy.ts';
import {
  addSampleController,
  CONFIGMAP,
  newWriteLog,
  WIDGET,
  WIDGET_CRD,
  type WriteLog,
} from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

/** Short timings so the suite stays fast; the ratios match client-go's 15 s / 10 s / 2 s. */
const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
const quiet = pino({ level: 'silent' });

type Lease = KubeObject & { spec?: { holderIdentity?: string | null; acquireTime?: string | null } };

function candidate(ns: string, identity: string, writes: WriteLog): Manager {
  const m = new Manager({
    name: 'sample',
    client: env.admin,
    logger: quiet,
    leaderElection: { namespace: ns, identity, ...TIMING },
  });
  addSampleController(m, { namespace: ns, writes });
  return m;
}

async function lease(ns: string, name = 'sample-leader'): Promise<Lease | undefined> {
  return env.admin.find<Lease>(LEASE, name, ns);
}

async function holder(ns: string, name = 'sample-leader'): Promise<string | undefined> {
  return (await lease(ns, name))?.spec?.holderIdentity ?? undefined;
}

/** Waits until `identity` holds the Lease, as the apiserver says; returns when it took it (its acquireTime). */
async function heldBy(ns: string, name: string, identity: string, timeoutMs = 20_000): Promise<number> {
  const l = await eventually(
    `${identity} holds the Lease`,
    async () => {
      const current = await lease(ns, name);
      return current?.spec?.holderIdentity === identity ? current : undefined;
    },
    timeoutMs,
  );
  return Date.parse(l.spec?.acquireTime ?? '');
}

async function queueDepth(m: Manager, controller: string): Promise<number | undefined> {
  const metric = await m.registry.getSingleMetric('workqueue_depth')?.get();
  return metric?.values.find((v) => v.labels.name === controller)?.value;
}

describe('leader election', () => {
  it('only the leader reconciles, and a graceful stop releases the Lease for the standby', async (t) => {
    const ns = await env.namespace(t, 'leader');
    const a = newWriteLog();
    const b = newWriteLog();
    const first = candidate(ns, 'first', a);
    await first.start();
    t.after(() => first.stop());
    await heldBy(ns, 'sample-leader', 'first');
    const second = candidate(ns, 'second', b);
    await second.start();
    t.after(() => second.stop());
    for (let i = 0; i < 10; i++) {
      await env.admin.create({
        ...WIDGET,
        metadata: { name: `w${i}`, namespace: ns },
        spec: { message: 'hi' },
      });
    }
    await eventually('leader converged', async () => {
      const { items } = await env.admin.listAll<KubeObject & { status?: { message?: string } }>(WIDGET, {
        namespace: ns,
      });
      return items.length === 10 && items.every((w) => w.status?.message === 'hi') ? true : undefined;
    });
    // A standby running workers would take each key as it comes: its queue would stay
    // empty. Ten keys waiting in it is the standby keeping warm, not reconciling.
    await eventually('the standby queued all ten widgets', async () =>
      (await queueDepth(second, 'widgets')) === 10 ? true : undefined,
    );
    assert.equal(b.reconciles, 0, 'the standby reconciled');
    assert.equal(second.isLeader, false);

    await first.stop();
    const aWrites = a.statuses + a.configMaps;
    // Released, not left to expire: the holder is emptied (or the standby took it already).
    assert.ok(['', 'second'].includes((await holder(ns)) ?? ''), 'the lease was not released');
    await heldBy(ns, 'sample-leader', 'second');
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'after', namespace: ns },
      spec: { message: 'hi' },
    });
    await eventually('the new leader reconciles', async () => (b.statuses >= 1 ? true : undefined));
    // After stop() resolved no reconcile of the old leader could run.
    assert.equal(a.statuses + a.configMaps, aWrites, 'the old leader wrote after stopping');
  });

  it('a killed leader is replaced within the lease duration plus a retry period', async (t) => {
    const ns = await env.namespace(t, 'killed');
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'support', 'run-sample.ts'), env.kubeconfigPath, ns, 'doomed'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const exited = new Promise((r) => child.once('exit', r));
    t.after(() => child.kill('SIGKILL'));
    await heldBy(ns, 'sample-leader', 'doomed');
    const writes = newWriteLog();
    const survivor = candidate(ns, 'survivor', writes);
    await survivor.start();
    t.after(() => survivor.stop());
    assert.equal(survivor.isLeader, false, 'a standby led while the child renewed');

    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await eventually('survivor leads', async () => (survivor.isLeader ? true : undefined), 15_000);
    const took = Date.now() - killedAt;
    // The target is lease + one retry period (with its 20 % jitter); the slack is two
    // lease requests on a loaded two-core machine. The failover bench measures the ratio.
    const bound = TIMING.leaseDurationMs + TIMING.retryPeriodMs * 1.2 + 2_000;
    t.diagnostic(
      `takeover ${took} ms after the kill (target ${TIMING.leaseDurationMs + TIMING.retryPeriodMs})`,
    );
    assert.ok(took <= bound, `takeover took ${took} ms, more than ${bound}`);
    assert.equal(await holder(ns), 'survivor');
  });

  it('a leader whose connection hangs stops leading and stops its workers before a standby takes the Lease', async (t) => {
    const ns = await env.namespace(t, 'fenced');
    await env.admin.create({ ...WIDGET, metadata: { name: 'held', namespace: ns }, spec: {} });
    const proxy = await sickProxy(env.kubeconfigPath, env.admin.transport.server);
    t.after(() => proxy.close());
    let abortedAt: number | undefined;
    let reconciling!: () => void;
    const inReconcile = new Promise<void>((r) => {
      reconciling = r;
    });
    const first = new Manager({
      name: 'fenced',
      client: await proxy.client(),
      logger: quiet,
      leaderElection: { namespace: ns, identity: 'first', ...TIMING },
    });
    first
      .controller('hold')
      .for(WIDGET, { namespace: ns })
      .reconcile(async (_req, { signal }) => {
        reconciling();
        await new Promise<void>((r) =>
          signal.addEventListener(
            'abort',
            () => {
              abortedAt = Date.now();
              r();
            },
            { once: true },
          ),
        );
        return {};
      });
    await first.start();
    t.after(() => first.stop());
    await inReconcile;
    const second = new Manager({
      name: 'fenced',
      client: env.admin,
      logger: quiet,
      leaderElection: { namespace: ns, identity: 'second', ...TIMING },
    });
    second
      .controller('hold')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => ({}));
    await second.start();
    t.after(() => second.stop());

    let notLeaderAt: number | undefined;
    const monitor = setInterval(() => {
      if (notLeaderAt === undefined && !first.isLeader) notLeaderAt = Date.now();
    }, 5);
    t.after(() => clearInterval(monitor));
    assert.equal(first.isLeader, true);
    proxy.freeze();
    const frozenAt = Date.now();
    const acquiredAt = await heldBy(ns, 'fenced-leader', 'second');
    t.diagnostic(
      `after the freeze: first stopped leading at ${(notLeaderAt ?? Number.NaN) - frozenAt} ms, ` +
        `its reconcile aborted at ${(abortedAt ?? Number.NaN) - frozenAt} ms, second took the Lease at ${acquiredAt - frozenAt} ms`,
    );
    assert.ok(
      notLeaderAt !== undefined && notLeaderAt < acquiredAt,
      'two leaders at once: isLeader still true',
    );
    assert.ok(abortedAt !== undefined && abortedAt < acquiredAt, 'the old leader was still reconciling');
    assert.equal(await first.done, 'LeadershipLost');
  });

  it('a graceful stop keeps renewing while a reconcile drains: the standby leads only after it ends', async (t) => {
    const ns = await env.namespace(t, 'drain-lease');
    await env.admin.create({ ...WIDGET, metadata: { name: 'slow', namespace: ns }, spec: {} });
    const timing = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
    let endedAt: number | undefined;
    let reconciling!: () => void;
    const inReconcile = new Promise<void>((r) => {
      reconciling = r;
    });
    const first = new Manager({
      name: 'drain',
      client: env.admin,
      logger: quiet,
      shutdownTimeoutMs: 15_000,
      leaderElection: { namespace: ns, identity: 'first', ...timing },
    });
    first
      .controller('slow')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => {
        reconciling();
        await delay(8_000); // the reconcile's own work, not a wait of the test
        endedAt = Date.now();
        return {};
      });
    await first.start();
    t.after(() => first.stop());
    await inReconcile;
    const second = new Manager({
      name: 'drain',
      client: env.admin,
      logger: quiet,
      leaderElection: { namespace: ns, identity: 'second', ...timing },
    });
    // The standby acts (reconciles) only once it leads: its first reconcile is when it
    // started acting, on the same clock as the old leader's reconcile.
    let actedAt: number | undefined;
    second
      .controller('slow')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => {
        actedAt ??= Date.now();
        return {};
      });
    await second.start();
    t.after(() => second.stop());

    const stopping = first.stop();
    await heldBy(ns, 'drain-leader', 'second', 30_000);
    const acted = await eventually('the standby reconciles', async () => actedAt);
    await stopping;
    assert.ok(endedAt !== undefined, 'the reconcile did not finish');
    assert.ok(
      acted >= endedAt,
      `the standby acted ${endedAt - acted} ms before the old leader's reconcile ended`,
    );
  });

  it('after a lost lease, a write the old leader had in flight is aborted and never lands', async (t) => {
    const ns = await env.namespace(t, 'inflight');
    await env.admin.create({ ...WIDGET, metadata: { name: 'w', namespace: ns }, spec: {} });
    await env.admin.create({
      ...CONFIGMAP,
      metadata: { name: 'target', namespace: ns },
      data: { v: 'before' },
    });
    const proxy = await sickProxy(env.kubeconfigPath, env.admin.transport.server);
    t.after(() => proxy.close());
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let reconciling!: () => void;
    const inReconcile = new Promise<void>((r) => {
      reconciling = r;
    });
    let outcome: string | undefined;
    const first = new Manager({
      name: 'inflight',
      client: await proxy.client(),
      logger: quiet,
      leaderElection: { namespace: ns, identity: 'first', ...TIMING },
    });
    first
      .controller('writer')
      .for(WIDGET, { namespace: ns })
      .reconcile(async (req, ctx) => {
        if (req.name !== 'w' || outcome !== undefined) return {};
        reconciling();
        await gate;
        const client: KubeClient = ctx.client;
        try {
          await client.patch(CONFIGMAP, 'target', ns, { type: 'merge', body: { data: { v: 'after' } } });
          outcome = 'landed';
        } catch (err) {
          outcome = ctx.signal.aborted ? 'aborted' : `failed: ${String(err)}`;
        }
        return {};
      });
    await first.start();
    t.after(() => first.stop());
    await inReconcile;
    // From now on every request takes 8 s to reach the apiserver: the write, and the
    // renewals, so the lease is lost while the write is in transit.
    proxy.delayRequests(8_000);
    open();
    assert.equal(await first.done, 'LeadershipLost');
    await eventually('the write settled', async () => outcome);
    assert.equal(outcome, 'aborted');
    await eventually('nothing left in transit', async () => (proxy.held === 0 ? true : undefined), 40_000);
    const live = await env.admin.get<KubeObject & { data?: { v?: string } }>(CONFIGMAP, 'target', ns);
    assert.equal(live.data?.v, 'before', 'the aborted write landed');
  });

  it('refuses timings where a leader could not stop before a standby takes over', () => {
    const make = (t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }) =>
      new LeaderElector(env.admin, { namespace: 'x', name: 'y', identity: 'z', ...t }, quiet);
    assert.throws(
      () => make({ leaseDurationMs: 3_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 }),
      /leaseDurationMs/,
    );
    assert.throws(
      () => make({ leaseDurationMs: 4_000, renewDeadlineMs: 500, retryPeriodMs: 500 }),
      /renewDeadlineMs/,
    );
    assert.throws(
      () => make({ leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 0 }),
      /retryPeriodMs/,
    );
    assert.doesNotThrow(() => make(TIMING));
  });
});
