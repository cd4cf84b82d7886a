import { ControlPlane } from '@operators/controlplane';
import { writeFileSync } from 'node:fs';
const plane = await ControlPlane.start();
writeFileSync('/tmp/exp/kubeconfig-path', plane.kubeconfigPath);
process.stderr.write(`up ${plane.kubeconfigPath}\n`);
process.on('SIGTERM', async () => { await plane.stop(); process.exit(0); });
setInterval(() => {}, 1 << 30);
