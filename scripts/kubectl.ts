/**
 * `npm run kubectl -- ARGS`: the project's kubectl against the plane `npm run up` started.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { resolvePlaneBinaries } from '@operators/controlplane';

const kubeconfig = join(import.meta.dirname, '..', '.tmp', 'kubeconfig');
if (!existsSync(kubeconfig)) {
  process.stderr.write('no local control plane: start one with `npm run up` in another terminal\n');
  process.exit(1);
}
const { kubectl } = await resolvePlaneBinaries();
const r = spawnSync(kubectl, process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, KUBECONFIG: kubeconfig },
});
process.exit(r.status ?? 1);
