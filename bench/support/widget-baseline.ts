/**
 * What the kit benchmarks compare the sample Widget controller with: the same two writes
 * per Widget (its ConfigMap by server-side apply, its status by merge patch) made by a
 * plain loop, with no cache, no queue and no controller. Shared by bench/kit.bench.ts and
 * bench/kit-scale.bench.ts so that both measure against the same baseline.
 */
import type { KubeClient } from '@operators/kit';
import {
  CONFIGMAP,
  FIELD_MANAGER,
  WIDGET,
  type Widget,
} from '../../packages/kit/test/support/sample-operator.ts';

/** Runs `fn` over `items` with at most `n` calls in flight. */
export async function pool<T>(items: readonly T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T);
      }
    }),
  );
}

/** The bare loop's work for one Widget: exactly the writes the sample controller makes. */
export async function bareWidgetWrites(client: KubeClient, namespace: string, w: Widget): Promise<void> {
  const name = w.metadata.name ?? '';
  await client.apply(
    {
      ...CONFIGMAP,
      metadata: {
        name: `widget-${name}`,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': FIELD_MANAGER },
        ownerReferences: [
          {
            apiVersion: WIDGET.apiVersion,
            kind: WIDGET.kind,
            name,
            uid: w.metadata.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: { message: w.spec?.message ?? '' },
    },
    { fieldManager: FIELD_MANAGER, force: true },
  );
  await client.patchStatus(WIDGET, name, namespace, {
    type: 'merge',
    body: { status: { message: w.spec?.message, observedGeneration: w.metadata.generation } },
  });
}
