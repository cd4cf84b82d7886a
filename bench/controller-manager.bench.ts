/**
 * What kube-controller-manager costs a test plane: warm start time of a plane with it
 * against one without (the baseline, same machine, interleaved runs), its resident
 * memory once ready and after an idle spell, and the CPU it and the apiserver burn
 * while idle and while the namespaces of a test run are deleted.
 *
 *   npm run bench:controller-manager            RUNS=3 IDLE_S=20 NAMESPACES=20 by default
 */
import { readFileSync } from 'node:fs';
import { ControlPlane } from '@operators/controlplane';
import { KubeClient } from '@operators/kit';

const RUNS = Number(process.env.RUNS ?? 3);
const IDLE_S = Number(process.env.IDLE_S ?? 20);
const NAMESPACES = Number(process.env.NAMESPACES ?? 20);
const TICKS = 100; // USER_HZ on Linux

const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

async function startMs(controllerManager: boolean): Promise<number> {
  const t = performance.now();
  const plane = await ControlPlane.start({ log: () => {}, controllerManager });
  const ms = performance.now() - t;
  await plane.stop();
  return ms;
}

await startMs(true); // warm the page cache
const without: number[] = [];
const withKcm: number[] = [];
for (let i = 0; i < RUNS; i++) {
  without.push(await startMs(false));
  withKcm.push(await startMs(true));
}
const a = median(without);
const b = median(withKcm);
console.log(
  `warm start, median of ${RUNS}: without kube-controller-manager ${(a / 1000).toFixed(2)} s; ` +
    `with it ${(b / 1000).toFixed(2)} s; ratio ${(b / a).toFixed(2)} (+${((b - a) / 1000).toFixed(2)} s)`,
);

/** Idle and namespace-churn cost on one plane, with or without the controller manager. */
async function steady(controllerManager: boolean): Promise<void> {
  const plane = await ControlPlane.start({ log: () => {}, controllerManager });
  const client = await KubeClient.load(plane.kubeconfigPath);
  try {
    const { apiserver, controllerManager: kcm } = plane.pids;
    const kcmStartCpu = cpuSeconds(kcm);
    const rssReady = rssMiB(kcm);
    const api0 = cpuSeconds(apiserver);
    const kcm0 = cpuSeconds(kcm);
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const apiIdle = cpuSeconds(apiserver) - api0;
    const kcmIdle = cpuSeconds(kcm) - kcm0;
    const rssIdle = rssMiB(kcm);

    // A test run's namespaces: each with a few ConfigMaps, deleted at the end.
    const names = Array.from({ length: NAMESPACES }, (_, i) => `bench-ns-${i}`);
    for (const name of names) {
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      for (let j = 0; j < 5; j++) {
        await client.create({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `cm-${j}`, namespace: name },
        });
      }
    }
    const api1 = cpuSeconds(apiserver);
    const kcm1 = cpuSeconds(kcm);
    const t = performance.now();
    for (const name of names) await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, name);
    if (controllerManager) {
      for (const name of names) {
        while (await client.find({ apiVersion: 'v1', kind: 'Namespace' }, name)) {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    const churnS = (performance.now() - t) / 1000;
    const label = controllerManager ? 'with kube-controller-manager' : 'without (baseline)';
    console.log(
      `${label}: apiserver CPU idle ${((apiIdle / IDLE_S) * 100).toFixed(1)} % of a core over ${IDLE_S} s` +
        (controllerManager
          ? `; kube-controller-manager CPU to ready ${kcmStartCpu.toFixed(2)} s, idle ${((kcmIdle / IDLE_S) * 100).toFixed(1)} % of a core, ` +
            `RSS ${rssReady.toFixed(0)} MiB ready, ${rssIdle.toFixed(0)} MiB after ${IDLE_S} s idle; ` +
            `${NAMESPACES} namespaces (5 ConfigMaps each) deleted to the end in ${churnS.toFixed(1)} s, ` +
            `CPU kcm ${(cpuSeconds(kcm) - kcm1).toFixed(2)} s, apiserver ${(cpuSeconds(apiserver) - api1).toFixed(2)} s`
          : `; ${NAMESPACES} namespaces marked Terminating in ${churnS.toFixed(1)} s, apiserver CPU ${(cpuSeconds(apiserver) - api1).toFixed(2)} s`),
    );
  } finally {
    await client.transport.close();
    await plane.stop();
  }
}

await steady(false);
await steady(true);
