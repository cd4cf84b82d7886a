/**
 * Leader election between two managers on one Lease: only the leader reconciles; a
 * graceful stop hands over at once; a killed leader is replaced within the lease
 * duration plus a retry period.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import {
  addSampleController,
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

type Lease = KubeObject & { spec?: { holderIdentity?: string | null } };

function candidate(ns: string, identity: string, writes: WriteLog): Manager {
  const m = new Manager({
    name: 'sample',
    client: env.admin,
    logger: pino({ level: 'silent' }),
    leaderElection: { namespace: ns, identity, ...TIMING },
  });
  addSampleController(m, { namespace: ns, writes });
  return m;
}

async function holder(ns: string): Promise<string | undefined> {
  const lease = await env.admin.find<Lease>(LEASE, 'sample-leader', ns);
  return lease?.spec?.holderIdentity ?? undefined;
}

describe('leader election', () => {
  it('only the leader reconciles, and a graceful stop hands over at once', async (t) => {
    const ns = await env.namespace(t, 'leader');
    const a = newWriteLog();
    const b = newWriteLog();
    const first = candidate(ns, 'first', a);
    await first.start();
    await eventually('first leads', async () => ((await holder(ns)) === 'first' ? true : undefined));
    const second = candidate(ns, 'second', b);
    await second.start();
    t.after(async () => {
      await first.stop();
      await second.stop();
    });
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
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(b.reconciles, 0, 'the standby reconciled');
    assert.equal(second.isLeader, false);

    const stoppedAt = Date.now();
    await first.stop();
    await eventually(
      'second leads',
      async () => ((await holder(ns)) === 'second' ? true : undefined),
      10_000,
    );
    const handover = Date.now() - stoppedAt;
    assert.ok(handover < TIMING.retryPeriodMs * 3, `graceful handover took ${handover} ms`);
    await env.admin.create({
      ...WIDGET,
      metadata: { name: 'after', namespace: ns },
      spec: { message: 'hi' },
    });
    await eventually('the new leader reconciles', async () => (b.statuses >= 1 ? true : undefined));
    const aWrites = a.statuses + a.configMaps;
    await new Promise((r) => setTimeout(r, 300));
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
    await eventually(
      'the child leads',
      async () => ((await holder(ns)) === 'doomed' ? true : undefined),
      20_000,
    );
    const writes = newWriteLog();
    const survivor = candidate(ns, 'survivor', writes);
    await survivor.start();
    t.after(() => survivor.stop());
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(survivor.isLeader, false);

    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await eventually('survivor leads', async () => (survivor.isLeader ? true : undefined), 15_000);
    const took = Date.now() - killedAt;
    // Jitter of up to 20 % on the retry period, and one lease read of latency.
    const bound = TIMING.leaseDurationMs + TIMING.retryPeriodMs * 1.2 + 500;
    assert.ok(took <= bound, `takeover took ${took} ms, more than ${bound}`);
    assert.equal(await holder(ns), 'survivor');
  });
});
