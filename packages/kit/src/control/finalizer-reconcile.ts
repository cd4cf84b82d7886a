/**
 * The kit's `finalizer()` as the whole body of a reconcile. Every controller that used it
 * turned its outcome into a `ReconcileResult` the same way, and wrapped a cleanup that
 * returns nothing the same way; this is that one translation.
 */
import type { KubeClient } from '../client/client.ts';
import type { KubeObject } from '../client/types.ts';
import { finalizer } from '../objects/finalizers.ts';
import type { ReconcileResult } from './controller.ts';

/** What {@link finalizerReconcile} runs; both must be idempotent, as `finalizer()` says. */
export interface FinalizerReconcileHandlers<T extends KubeObject> {
  /** Reconciles an object that is not being deleted; our finalizer is in place. */
  readonly apply: (obj: T) => Promise<ReconcileResult>;
  /**
   * Undoes what `apply` did outside the object. Nothing to return: once it resolves the
   * finalizer is lifted and the object goes, so there is no key left to come back to. A
   * cleanup that must wait throws, and the finalizer stays until a retry succeeds.
   */
  readonly cleanup: (obj: T) => Promise<void>;
}

/**
 * Runs `finalizer()` for `obj` and answers what the controller should do next: `apply`'s
 * result, or nothing once cleaned up, already gone, or not ours any more. A conflict on the
 * finalizer patch is a stale read, thrown so that the controller retries with backoff on a
 * fresh read rather than acting on what it read. Errors of the handlers propagate unchanged.
 */
export async function finalizerReconcile<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  finalizerName: string,
  handlers: FinalizerReconcileHandlers<T>,
): Promise<ReconcileResult> {
  const outcome = await finalizer(client, obj, finalizerName, {
    apply: handlers.apply,
    cleanup: async (o): Promise<ReconcileResult> => {
      await handlers.cleanup(o);
      return {};
    },
  });
  switch (outcome.kind) {
    case 'applied':
    case 'cleanedUp':
      return outcome.result;
    case 'conflict':
      throw new Error(outcome.message);
    case 'nothing':
    case 'gone':
      return {};
    default:
      return outcome satisfies never;
  }
}
