/**
 * Every chart installed with `helm install` on one real node (issue 39): containerd 2,
 * runc, the CNI bridge, kubelet, kube-proxy, kube-scheduler and CoreDNS, started by
 * packages/controlplane, with the images `npm run images` builds imported into the
 * node's containerd. Each operator's module says what its chart must do; the checks
 * common to all are in support/chart-checks.ts.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { describeBadImage } from './bad-image.ts';
import { describeChartOnNode } from './support/chart-checks.ts';
import { NODE_CHARTS } from './support/charts.ts';
import { type NodeEnv, startNodeEnv } from './support/node-env.ts';
import { type MachineTrace, machineTrace } from './support/node-gone.ts';
import { startSecondNode } from './support/second-node.ts';

let env: NodeEnv | undefined;
const current = (): NodeEnv => {
  if (!env) throw new Error('the node environment did not start');
  return env;
};

const reused = process.env.KUBE_OPERATORS_E2E_REUSE === '1';
let beforeNode: MachineTrace | undefined;

// On a new machine the node's binaries are built first (minutes: CoreDNS alone is several).
before(
  async () => {
    if (!reused) beforeNode = await machineTrace();
    const started = Date.now();
    env = await startNodeEnv((m) => process.stderr.write(`[e2e] ${m}\n`));
    process.stderr.write(
      `[e2e] plane, node and images ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  },
  { timeout: 45 * 60_000 },
);

after(async () => {
  await env?.stop();
});

for (const chart of NODE_CHARTS.filter(
  (c) => !process.env.KUBE_OPERATORS_E2E_ONLY || c.operator === process.env.KUBE_OPERATORS_E2E_ONLY,
))
  describeChartOnNode(current, chart);
describeBadImage(current);

if (!reused) {
  describe('one node per machine', () => {
    it("a second plane with a node is refused while this node's owner lives, naming it, and this node keeps running", async () => {
      const second = await startSecondNode();
      assert.equal(second.code, 3, second.output);
      assert.match(
        second.output,
        new RegExp(`a node already runs on this machine, owned by process ${process.pid}`),
      );
      // The apiserver's own answer: the node is still Ready, and the folder still ours.
      const ready = await current().kubectl([
        'get',
        'node',
        'kot-node',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      assert.equal(ready, 'True');
      assert.equal(await readFile(`${current().nodeDir}/owner.pid`, 'utf8'), String(process.pid));
    });
  });
}

// A reused development node is not this run's to stop.
if (!reused) {
  describe('the plane stopped', () => {
    it('leaves the machine as it found it: no process, mount, link, iptables chain, cgroup or path of the node, the sysctls restored', async () => {
      await current().stop();
      const after = await machineTrace();
      assert.deepEqual(after, beforeNode);
    });

    it('a node refuses to start beside a kubelet that is not ours, and changes nothing of the machine or of that kubelet', async (t) => {
      // A foreign kubelet's files, where kubeadm and distribution packages put them.
      assert.ok(!existsSync('/var/lib/kubelet'), 'this machine already has a /var/lib/kubelet');
      await mkdir('/var/lib/kubelet');
      t.after(() => rm('/var/lib/kubelet', { recursive: true, force: true }));
      const config = 'kind: KubeletConfiguration\n# a kubelet this suite did not start\n';
      await writeFile('/var/lib/kubelet/config.yaml', config);
      const trace = await machineTrace();
      const second = await startSecondNode();
      assert.equal(second.code, 3, second.output);
      assert.match(
        second.output,
        /\/var\/lib\/kubelet\/config\.yaml exists: another kubelet or containerd runs on this machine/,
      );
      assert.deepEqual(await machineTrace(), trace);
      assert.equal(await readFile('/var/lib/kubelet/config.yaml', 'utf8'), config);
    });
  });
}
