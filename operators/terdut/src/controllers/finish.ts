/** The end of every reconcile: the finalizer's outcome, and a `Waiting` turned into a quiet requeue. */
import { finalizer, type KubeObject, type ReconcileContext, type ReconcileResult } from '@operators/kit';
import { FINALIZER } from '../domain/names.ts';
import { Waiting } from './common.ts';

export const SECRET_GVK = { apiVersion: 'v1', kind: 'Secret' } as const;

/**
 * Runs `apply` or, once the object is being deleted, `cleanup` then lifts the finalizer
 * (the kit's `finalizer`). A `Waiting` from either is a requeue after its delay, not an
 * error; a stale read (a conflict on the finalizer) is retried.
 */
export async function reconcileWithFinalizer<T extends KubeObject>(
  ctx: ReconcileContext,
  obj: T,
  apply: (obj: T) => Promise<ReconcileResult>,
  cleanup: (obj: T) => Promise<void>,
): Promise<ReconcileResult> {
  try {
    const outcome = await finalizer(ctx.client, obj, FINALIZER, {
      apply: (o) => apply(o as T),
      cleanup: async (o) => {
        await cleanup(o as T);
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
  } catch (err) {
    if (err instanceof Waiting) return { requeueAfterMs: err.afterMs };
    throw err;
  }
}
