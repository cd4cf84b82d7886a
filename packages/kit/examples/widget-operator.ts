/**
 * The kit's documented example, whole: docs/kit.md shows this file verbatim (a test
 * holds them equal), the type checker compiles it, and a test runs it on a real plane.
 * Each Widget gets a ConfigMap echoing its message, and a status saying which
 * generation it saw. Run it with `node packages/kit/examples/widget-operator.ts`.
 */
import {
  controllerReference,
  DEFAULT_CLIENT_RATE_LIMIT,
  generationChanged,
  hasDrifted,
  KubeClient,
  type KubeObject,
  Manager,
} from '@operators/kit';
import { Registry } from 'prom-client';

const WIDGET = { apiVersion: 'kit.test.io/v1', kind: 'Widget' } as const;
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
type Widget = KubeObject & { spec: { message: string } };

export interface WidgetOperatorOptions {
  readonly leaseNamespace: string;
  readonly registry?: Registry;
  /** 8081 and 8080 by default; tests pass 0 (any free port). */
  readonly ports?: { readonly health: number; readonly metrics: number };
}

export function widgetOperator(client: KubeClient, opts: WidgetOperatorOptions): Manager {
  const manager = new Manager({
    name: 'widgets',
    client,
    registry: opts.registry,
    leaderElection: { namespace: opts.leaseNamespace },
    healthProbe: { port: opts.ports?.health ?? 8081 }, // /healthz, /readyz for the kubelet
    metrics: { port: opts.ports?.metrics ?? 8080 }, // 127.0.0.1 only (`secure: {}`: HTTPS, callers checked)
  });
  manager
    .controller('widgets')
    .for<Widget>(WIDGET, { predicates: [generationChanged] }) // keys are Widgets' namespace/name
    .owns(CONFIGMAP) // a ConfigMap event → its owner Widget's key
    .withConcurrency(4)
    .resyncEvery(5 * 60_000)
    .reconcile(async ({ namespace, name, object: widget }, { log, client }) => {
      // `object` is the cached Widget (typed by for<Widget>), undefined once deleted;
      // `client` is aborted with the reconcile (shutdown, lost lease).
      if (!widget) return {}; // deleted: nothing to do (owner GC removes the ConfigMap)
      const desired = {
        ...CONFIGMAP,
        metadata: { name: `widget-${name}`, namespace, ownerReferences: [controllerReference(widget)] },
        data: { message: widget.spec.message },
      };
      // Read from the cache (waits for its first sync; never "absent" before it).
      const live = await manager.cachedClient.find(CONFIGMAP, `widget-${name}`, namespace);
      if (hasDrifted(desired, live)) {
        // never rewrite an unchanged object
        await client.apply(desired, { fieldManager: 'widgets', force: true });
        log.info('ConfigMap applied');
      }
      await client.patchStatus(WIDGET, name, namespace, {
        type: 'merge',
        body: { status: { message: widget.spec.message, observedGeneration: widget.metadata.generation } },
      });
      return {};
    });
  return manager;
}

if (import.meta.main) {
  const registry = new Registry(); // one registry: the client's request metrics and the manager's
  // $KUBECONFIG, ~/.kube/config or the pod's service account; client-go's 20 QPS, burst 30.
  const client = await KubeClient.load(undefined, { rateLimit: DEFAULT_CLIENT_RATE_LIMIT, registry });
  const leaseNamespace = process.env.POD_NAMESPACE ?? 'widgets-system';
  const manager = widgetOperator(client, { leaseNamespace, registry });
  manager.installSignalHandlers(); // SIGTERM: drain within 30 s, release the lease last, exit
  await manager.start();
}
