/** The end of every reconcile: the finalizer's outcome, and a `Waiting` turned into a quiet requeue. */
import {
  finalizerReconcile,
  type KubeObject,
  type ReconcileContext,
  type ReconcileResult,
} from '@operators/kit';
import { FINALIZER } from '../domain/names.ts';
import { Waiting } from './common.ts';

export const SECRET_GVK = { apiVersion: 'v1', kind: 'Secret' } as const;

/**
 * Runs `apply` or, once the object is being deleted, `cleanup` then lifts the finalizer
 * (the kit's `finalizerReconcile`). A `Waiting` from either is a requeue after its delay,
 * not an error; a stale read (a conflict on the finalizer) is retried.
 */
export async function reconcileWithFinalizer<T extends KubeObject>(
  ctx: ReconcileContext,
  obj: T,
  apply: (obj: T) => Promise<ReconcileResult>,
  cleanup: (obj: T) => Promise<void>,
): Promise<ReconcileResult> {
  try {
    return await finalizerReconcile(ctx.client, obj, FINALIZER, { apply, cleanup });
  } catch (err) {
    if (err instanceof Waiting) return { requeueAfterMs: err.afterMs };
    throw err;
  }
}
