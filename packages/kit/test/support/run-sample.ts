/**
 * The sample operator as a process, for tests that kill it: argv = kubeconfig,
 * namespace, identity, and optionally lease duration, renew deadline and retry period
 * in ms (default 4000, 3000, 500). Leader election on.
 */
import { KubeClient, Manager } from '@operators/kit';
import { pino } from 'pino';
import { addSampleController } from './sample-operator.ts';

const [kubeconfig, namespace, identity, lease, renew, retry] = process.argv.slice(2);
if (!kubeconfig || !namespace || !identity)
  throw new Error('usage: run-sample.ts KUBECONFIG NAMESPACE IDENTITY');
const client = await KubeClient.load(kubeconfig);
const manager = new Manager({
  name: 'sample',
  client,
  logger: pino({ level: 'silent' }),
  leaderElection: {
    namespace,
    identity,
    leaseDurationMs: Number(lease ?? 4_000),
    renewDeadlineMs: Number(renew ?? 3_000),
    retryPeriodMs: Number(retry ?? 500),
  },
});
addSampleController(manager, { namespace });
manager.installSignalHandlers();
await manager.start();
process.stdout.write('started\n');
