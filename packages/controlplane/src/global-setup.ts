/**
 * `node --test --test-global-setup` hook: one control plane for the whole test run.
 * Test files run in child processes; they find the plane through the environment
 * variable set here, which the runner passes on to them.
 */
import { ControlPlane } from './controlplane.ts';
import { SHARED_ETCD_ENV, SHARED_KUBECONFIG_ENV } from './testing.ts';

let plane: ControlPlane | undefined;

export async function globalSetup(): Promise<void> {
  const started = Date.now();
  plane = await ControlPlane.start();
  process.env[SHARED_KUBECONFIG_ENV] = plane.kubeconfigPath;
  process.env[SHARED_ETCD_ENV] = plane.etcdUrl;
  process.stderr.write(
    `[controlplane] shared control plane ready at ${plane.url} in ${Date.now() - started} ms\n`,
  );
}

export async function globalTeardown(): Promise<void> {
  await plane?.stop();
}
