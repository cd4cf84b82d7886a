/**
 * The four finalizer states every reconciler of this operator goes through (kube-rs's
 * `finalizer()` shape), in one place. Unlike the kit's `finalizer()`, a cleanup here may
 * decide that it is not done yet (§5's waits: a Permission still named by a role, a Scope
 * still holding users, a Tenant with children): it returns a result to come back later,
 * and removes the finalizer itself only when it is done.
 */
import {
  addFinalizer,
  finalizerLifecycle,
  type JsonPatchOp,
  type KubeClient,
  type KubeObject,
  type ReconcileResult,
} from '@operators/kit';
import { FINALIZER } from '../api/common.ts';

export interface LifecycleHandlers<T extends KubeObject> {
  /** Not deleting, our finalizer in place: bring the world in line with the object. */
  readonly apply: (obj: T) => Promise<ReconcileResult>;
  /** Deleting, our finalizer still on it: undo what apply did, or say when to look again. */
  readonly cleanup: (obj: T) => Promise<ReconcileResult>;
  /**
   * After adding the finalizer, come back (§5's Tenant: "immediate requeue after the first
   * finalizer") instead of applying in the same pass.
   */
  readonly requeueAfterAdd?: boolean;
  /**
   * Metadata the first reconcile would write right after the finalizer (a role's owner
   * reference), as guarded JSON-patch operations sent in the finalizer's own patch: one
   * write per new object instead of two.
   */
  readonly alsoOnAdd?: (obj: T) => readonly JsonPatchOp[];
}

export async function reconcileLifecycle<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  handlers: LifecycleHandlers<T>,
): Promise<ReconcileResult> {
  const step = finalizerLifecycle(obj, FINALIZER);
  switch (step.kind) {
    case 'nothing':
      // Deleting and not ours any more: nothing left to undo.
      return {};
    case 'add': {
      const added = await addFinalizer(client, obj, FINALIZER, { also: handlers.alsoOnAdd?.(obj) ?? [] });
      // Someone changed it since our read: decide again on a fresh read.
      if (added.kind === 'conflict') return { requeue: true };
      if (added.kind === 'gone') return {};
      if (handlers.requeueAfterAdd) return { requeue: true };
      return handlers.apply(added.kind === 'patched' ? added.object : obj);
    }
    case 'apply':
      return handlers.apply(obj);
    case 'cleanup':
      return handlers.cleanup(obj);
    default:
      return step satisfies never;
  }
}
