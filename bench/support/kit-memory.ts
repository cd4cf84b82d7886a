/**
 * Heap cost of the kit's cache: lists the namespace's ConfigMaps into a reflector's
 * store and reports retained bytes per object against the objects' JSON size.
 * Run with --expose-gc (kit.bench.ts does).
 */
import { KubeClient, Reflector } from '@operators/kit';
import { pino } from 'pino';

const [kubeconfig, namespace] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !kubeconfig || !namespace)
  throw new Error('usage: node --expose-gc kit-memory.ts KUBECONFIG NAMESPACE');
const client = await KubeClient.load(kubeconfig);
const gvk = { apiVersion: 'v1', kind: 'ConfigMap' };
// JSON size as the apiserver sends it (managedFields included), and without managedFields.
const { items } = await client.listAll(gvk, { namespace });
const jsonBytes = items.reduce((n, o) => n + Buffer.byteLength(JSON.stringify(o)), 0);
const strippedBytes = items.reduce(
  (n, o) =>
    n + Buffer.byteLength(JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: undefined } })),
  0,
);
items.length = 0;

for (const keep of [false, true]) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const r = new Reflector({
    client,
    gvk,
    namespace,
    log: pino({ level: 'silent' }),
    keepManagedFields: keep,
  });
  r.start();
  await r.waitForSync();
  await r.stop();
  gc();
  const after = process.memoryUsage().heapUsed;
  const n = r.store.size;
  const per = (after - before) / n;
  const json = (keep ? jsonBytes : strippedBytes) / n;
  console.log(
    `memory, ${n} cached ConfigMaps${keep ? ' with managedFields' : ' (managedFields dropped, the default)'}: ${per.toFixed(0)} bytes/object; JSON ${json.toFixed(0)} bytes/object; ratio ${(per / json).toFixed(2)} (target < 3)`,
  );
  // Keep the store alive until measured.
  if (r.store.size < 0) console.log('unreachable');
}
await client.transport.close();
