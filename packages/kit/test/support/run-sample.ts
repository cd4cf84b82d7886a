/**
 * The sample operator as a process, for tests that kill it: argv = kubeconfig,
 * namespace, identity. Leader election on with short timings.
 */
import { KubeClient, Manager } from '@operators/kit';
import { pino } from 'pino';
import { addSampleController } from './sample-operator.ts';

const [kubeconfig, namespace, identity] = process.argv.slice(2);
if (!kubeconfig || !namespace || !identity)
  throw new Error('usage: run-sample.ts KUBECONFIG NAMESPACE IDENTITY');
const client = await KubeClient.load(kubeconfig);
const manager = new Manager({
  name: 'sample',
  client,
  logger: pino({ level: 'silent' }),
  leaderElection: { namespace, identity, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
});
addSampleController(manager, { namespace });
manager.installSignalHandlers();
await manager.start();
process.stdout.write('started\n');
