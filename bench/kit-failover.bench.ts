/**
 * Failover: the time from SIGKILL of a leading operator process to the first reconcile
 * by the standby, for three lease settings (the ratios of client-go's 15 s / 10 s / 2 s),
 * against the target of one lease duration plus one retry period. Ratio ≤ 1 meets it.
 * The floor is about lease − retry: a standby waits a full lease duration from the last
 * renewal it saw, and the killed leader renewed at most one retry period before dying;
 * a ratio below (lease − retry)/(lease + retry) would mean a lease taken too early.
 *
 * Each trial: the sample operator runs as a child process and leads; a standby manager
 * in this process keeps warm caches; the child is SIGKILLed (no release); the clock
 * stops at the standby's first reconcile. A private control plane, three trials per
 * setting, about two minutes in all.
 *
 *   npm run bench:kit-failover        (TRIALS=3)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { privateTestEnv } from '@operators/controlplane/testing';
import { type KubeObject, Manager } from '@operators/kit';
import { pino } from 'pino';
import { WIDGET, WIDGET_CRD } from '../packages/kit/test/support/sample-operator.ts';

const TRIALS = Number(process.env.TRIALS ?? 3);
const SETTINGS = [
  { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 },
  { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
  { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 1_000 },
] as const;
const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
const RUN_SAMPLE = join(import.meta.dirname, '..', 'packages', 'kit', 'test', 'support', 'run-sample.ts');

const env = await privateTestEnv({ log: () => {} });
await env.installCrds([WIDGET_CRD]);

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function trial(setting: (typeof SETTINGS)[number], n: number): Promise<number> {
  const ns = `failover-${setting.leaseDurationMs}-${n}`;
  await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await env.admin.create({ ...WIDGET, metadata: { name: 'w', namespace: ns }, spec: { message: 'hi' } });
  const child: ChildProcess = spawn(
    process.execPath,
    [
      RUN_SAMPLE,
      env.kubeconfigPath,
      ns,
      'doomed',
      String(setting.leaseDurationMs),
      String(setting.renewDeadlineMs),
      String(setting.retryPeriodMs),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = new Promise((r) => child.once('exit', r));
  await until('the child leads', async () => {
    const l = await env.admin.find<KubeObject & { spec?: { holderIdentity?: string } }>(
      LEASE,
      'sample-leader',
      ns,
    );
    return l?.spec?.holderIdentity === 'doomed' ? true : undefined;
  });
  let firstReconcile: number | undefined;
  const standby = new Manager({
    name: 'sample',
    client: env.admin,
    logger: pino({ level: 'silent' }),
    leaderElection: { namespace: ns, identity: 'standby', ...setting },
  });
  standby
    .controller('widgets')
    .for(WIDGET, { namespace: ns })
    .reconcile(async () => {
      firstReconcile ??= Date.now();
      return {};
    });
  await standby.start();
  child.kill('SIGKILL');
  await exited;
  const killedAt = Date.now();
  const at = await until('the standby reconciles', async () => firstReconcile);
  await standby.stop();
  return at - killedAt;
}

const rows: string[] = [];
for (const setting of SETTINGS) {
  const times: number[] = [];
  for (let i = 0; i < TRIALS; i++) times.push(await trial(setting, i));
  const target = setting.leaseDurationMs + setting.retryPeriodMs;
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const worst = Math.max(...times);
  rows.push(
    `lease ${setting.leaseDurationMs} ms, renew ${setting.renewDeadlineMs} ms, retry ${setting.retryPeriodMs} ms: ` +
      `failover ${times.map((t) => `${t}`).join(' / ')} ms (mean ${mean.toFixed(0)}), target ${target} ms, ` +
      `ratio mean ${(mean / target).toFixed(2)}, worst ${(worst / target).toFixed(2)} (floor ${((setting.leaseDurationMs - setting.retryPeriodMs) / target).toFixed(2)})`,
  );
  process.stdout.write(`${rows.at(-1)}\n`);
}
await env.close();
