/**
 * One case of bench/kit-memory.bench.ts, alone in its process so that no case inherits
 * another's heap: syncs a reflector over the namespace's ConfigMaps and prints one JSON
 * line (heap retained by the cache, RSS, peak RSS, initial sync time).
 *
 *   node --expose-gc kit-memory-case.ts KUBECONFIG NAMESPACE watch-list|list [keep-managed-fields]
 */
import { KubeClient, type ListMode, Reflector } from '@operators/kit';
import { pino } from 'pino';

const [kubeconfig, namespace, mode, keep] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !kubeconfig || !namespace || (mode !== 'watch-list' && mode !== 'list'))
  throw new Error(
    'usage: node --expose-gc kit-memory-case.ts KUBECONFIG NAMESPACE watch-list|list [keep-managed-fields]',
  );
const client = await KubeClient.load(kubeconfig);
const gvk = { apiVersion: 'v1', kind: 'ConfigMap' };
// Discovery first, so that the measured heap holds the cache and nothing else new.
await client.resolve(gvk);
gc();
const before = process.memoryUsage();
const started = performance.now();
const r = new Reflector({
  client,
  gvk,
  namespace,
  log: pino({ level: 'silent' }),
  listMode: mode as ListMode,
  keepManagedFields: keep === 'keep-managed-fields',
});
r.start();
await r.waitForSync();
const syncMs = performance.now() - started;
const listModeUsed = r.health().listMode;
await r.stop();
await client.transport.close();
gc();
const after = process.memoryUsage();
const objects = r.store.size;
process.stdout.write(
  `${JSON.stringify({
    mode,
    listModeUsed,
    keepManagedFields: keep === 'keep-managed-fields',
    objects,
    heapBytes: after.heapUsed - before.heapUsed,
    rssBytes: after.rss,
    rssGrowthBytes: after.rss - before.rss,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    syncMs,
  })}\n`,
);
