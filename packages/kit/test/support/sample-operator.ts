/**
 * A small operator built with the kit, the subject of the kit's acceptance tests and
 * benchmark: each Widget gets a ConfigMap echoing its message (owned by the Widget),
 * and its status records the message and the generation it saw.
 */
import {
  type Controller,
  controllerReference,
  customResourceDefinition,
  generationChanged,
  hasDrifted,
  type KubeObject,
  type Manager,
  type RateLimiter,
  type ReconcileResult,
} from '@operators/kit';

export const WIDGET = { apiVersion: 'kit.test.io/v1', kind: 'Widget' } as const;
export const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
export const FIELD_MANAGER = 'kit-sample';

export type Widget = KubeObject & {
  spec?: { message?: string; fail?: 'always' | 'terminal' | number };
  status?: { message?: string; observedGeneration?: number };
};

/** Written with the kit's own CRD helper, as operators write theirs. */
export const WIDGET_CRD: KubeObject = customResourceDefinition({
  group: 'kit.test.io',
  kind: 'Widget',
  plural: 'widgets',
  scope: 'Namespaced',
  versions: [
    {
      name: 'v1',
      schema: {
        type: 'object',
        properties: {
          spec: {
            type: 'object',
            properties: {
              message: { type: 'string' },
              fail: { 'x-kubernetes-int-or-string': true },
              padding: { type: 'string' },
            },
          },
          status: {
            type: 'object',
            properties: { message: { type: 'string' }, observedGeneration: { type: 'integer' } },
          },
        },
      },
    },
  ],
});

/** Every write the sample makes, so tests can count them (a resync must make none). */
export interface WriteLog {
  configMaps: number;
  statuses: number;
  reconciles: number;
}

export function newWriteLog(): WriteLog {
  return { configMaps: 0, statuses: 0, reconciles: 0 };
}

export interface SampleOptions {
  readonly namespace?: string;
  readonly concurrency?: number;
  readonly resyncMs?: number;
  readonly writes?: WriteLog;
  /** The retry limiter; client-go's default (10 retries a second overall) unless given. */
  readonly rateLimiter?: RateLimiter;
}

/** Registers the sample controller on `manager`; returns it (tests watch its queue). */
export function addSampleController(manager: Manager, opts: SampleOptions = {}): Controller<Widget> {
  const writes = opts.writes ?? newWriteLog();
  const informerOpts = opts.namespace ? { namespace: opts.namespace } : {};
  const controller = manager
    .controller('widgets')
    .for<Widget>(WIDGET, { ...informerOpts, predicates: [generationChanged] })
    .owns(CONFIGMAP, informerOpts)
    .withConcurrency(opts.concurrency ?? 4);
  if (opts.resyncMs) controller.resyncEvery(opts.resyncMs);
  if (opts.rateLimiter) controller.withRateLimiter(opts.rateLimiter);
  return controller.reconcile(async (req): Promise<ReconcileResult> => {
    writes.reconciles++;
    const widget = req.object; // the cached Widget, typed by for<Widget>()
    if (!widget) return {}; // deleted: the ConfigMap goes with it (owner reference)
    const fail = widget.spec?.fail;
    if (fail === 'always') throw new Error('asked to fail');
    if (fail === 'terminal') {
      const { TerminalError } = await import('@operators/kit');
      throw new TerminalError('AskedToFail', 'asked to fail terminally');
    }
    const message = widget.spec?.message ?? '';
    const desired = {
      ...CONFIGMAP,
      metadata: {
        name: `widget-${req.name}`,
        namespace: req.namespace,
        labels: { 'app.kubernetes.io/managed-by': FIELD_MANAGER },
        ownerReferences: [controllerReference(widget)],
      },
      data: { message },
    };
    const cms = manager.cache.informer(CONFIGMAP, informerOpts).store;
    const live = cms.get(`${req.namespace}/widget-${req.name}`);
    if (hasDrifted(desired, live)) {
      await manager.client.apply(desired, { fieldManager: FIELD_MANAGER, force: true });
      writes.configMaps++;
    }
    const gen = widget.metadata.generation;
    if (widget.status?.message !== message || widget.status?.observedGeneration !== gen) {
      await manager.client.patchStatus(WIDGET, req.name, req.namespace, {
        type: 'merge',
        body: { status: { message, observedGeneration: gen } },
      });
      writes.statuses++;
    }
    return {};
  });
}
