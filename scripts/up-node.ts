/**
 * `npm run up -- --node`: the real install, for a newcomer who wants to see it. A control
 * plane with a node on this machine (containerd, kubelet, kube-proxy, kube-scheduler,
 * CoreDNS; see docs/controlplane.md), the project's images built and imported, and every
 * operator installed with `helm install` from its chart, as the end-to-end suite installs
 * them (the same install specs: e2e/<operator>.ts). Needs root; Ctrl-C removes it all.
 */
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { installChart } from '../e2e/support/chart-checks.ts';
import { NODE_CHARTS } from '../e2e/support/charts.ts';
import { startNodeEnv } from '../e2e/support/node-env.ts';

export async function upWithNode(log: (m: string) => void): Promise<void> {
  const started = Date.now();
  const env = await startNodeEnv(log);
  // Where `npm run kubectl` looks, as for the plain `up`.
  const stateDir = process.env.KUBE_OPERATORS_UP_DIR ?? join(import.meta.dirname, '..', '.tmp');
  mkdirSync(stateDir, { recursive: true });
  const kubeconfig = join(stateDir, 'kubeconfig');
  copyFileSync(env.kubeconfig, kubeconfig);
  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) process.exit(130);
    stopping = true;
    log(`${signal}: stopping: the plane, the node, its pods and everything the node made (a few seconds)`);
    await env.stop();
    rmSync(kubeconfig, { force: true });
    process.exit(0);
  };
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  try {
    for (const chart of NODE_CHARTS) {
      const t = Date.now();
      await installChart(env, chart);
      log(
        `helm install ${chart.release} (operators/${chart.operator}/chart): Ready in ${((Date.now() - t) / 1000).toFixed(1)} s`,
      );
    }
  } catch (err) {
    await env.stop();
    throw err;
  }
  process.stdout.write(
    [
      '',
      `Every operator runs as pods on a real node (up in ${((Date.now() - started) / 1000).toFixed(0)} s).`,
      'In another terminal:',
      '',
      `  export KUBECONFIG=${kubeconfig}`,
      '  npm run kubectl -- get pods -A -o wide',
      '  helm list -A',
      '',
      'Ctrl-C uninstalls nothing and removes everything: the plane, the node, its pods and rules.',
      '',
    ].join('\n'),
  );
  setInterval(() => undefined, 1 << 30);
}
