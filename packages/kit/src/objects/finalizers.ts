/**
 * Finalizers: how a controller gets to clean up before an object it manages is gone.
 * The decision of what to do with an object is pure ({@link finalizerLifecycle}); the
 * patches ({@link addFinalizer}, {@link removeFinalizer}) are guarded by JSON-patch
 * `test` operations, as kube-rs's finalizer helper is, so that a write racing ours
 * makes our patch fail instead of making it wrong; {@link finalizer} puts the two
 * together the way kube-rs's `finalizer()` does.
 */
import type { KubeClient } from '../client/client.ts';
import { gvkOf, type JsonPatchOp } from '../client/client.ts';
import { ApiErrorReason, isApiError } from '../client/errors.ts';
import type { KubeObject } from '../client/types.ts';

/**
 * What to do with an object, given whether it carries our finalizer and whether it is
 * being deleted. One state per combination; a `switch` over `kind` covers them all.
 */
export type FinalizerStep =
  /** Not deleting, no finalizer yet: add it before doing anything that will need cleaning up. */
  | { readonly kind: 'add' }
  /** Not deleting, finalizer present: reconcile normally. */
  | { readonly kind: 'apply' }
  /** Deleting, finalizer present: clean up, then remove the finalizer so the deletion completes. */
  | { readonly kind: 'cleanup' }
  /** Deleting, no finalizer (never added, or removed already): nothing of ours is left to do. */
  | { readonly kind: 'nothing' };

/** Which of the four states `obj` is in for `finalizerName`. Pure. */
export function finalizerLifecycle(obj: KubeObject, finalizerName: string): FinalizerStep {
  const present = (obj.metadata.finalizers ?? []).includes(finalizerName);
  const deleting = obj.metadata.deletionTimestamp !== undefined;
  if (deleting) return present ? { kind: 'cleanup' } : { kind: 'nothing' };
  return present ? { kind: 'apply' } : { kind: 'add' };
}

/** The outcome of a guarded finalizer patch. Only unexpected API errors are thrown. */
export type FinalizerPatchResult<T extends KubeObject> =
  /** The patch was applied; `object` is the object as the apiserver returned it. */
  | { readonly kind: 'patched'; readonly object: T }
  /** The object as read needed no change; nothing was sent. */
  | { readonly kind: 'unchanged' }
  /**
   * The object changed since it was read (its finalizers, its deletion, or it was
   * recreated under the same name), so the patch was refused rather than applied to
   * something we have not seen. Read it again and decide again; retrying with backoff
   * does that.
   */
  | { readonly kind: 'conflict'; readonly message: string }
  /** The object no longer exists. */
  | { readonly kind: 'gone' };

/** Options of {@link addFinalizer}. */
export interface AddFinalizerOptions {
  /**
   * Further operations sent in the same guarded patch: a first reconcile that must also
   * set an owner reference (say) makes one write instead of two, and a failed `test`
   * among them is a `conflict` like any other. Only sent when the finalizer is missing.
   */
  readonly also?: readonly JsonPatchOp[];
}

/**
 * Adds `finalizerName` to `obj`, provided the object on the server is still the one
 * read: same UID, same finalizers, not being deleted. A concurrent writer that added
 * or removed a finalizer in the meantime makes this a `conflict`, never a lost or
 * duplicated entry (the apiserver does not deduplicate finalizers); and a finalizer
 * is never added to an object whose deletion has begun, which would block it for good
 * if our cleanup had already run.
 *
 * @throws Error if `finalizerName` is not a domain-qualified name, or `obj` has no uid.
 */
export async function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  finalizerName: string,
  opts: AddFinalizerOptions = {},
): Promise<FinalizerPatchResult<T>> {
  validateFinalizerName(finalizerName);
  const uid = requireUid(obj);
  const current = obj.metadata.finalizers ?? [];
  if (current.includes(finalizerName)) return { kind: 'unchanged' };
  if (obj.metadata.deletionTimestamp !== undefined) {
    return {
      kind: 'conflict',
      message: `${describe(obj)} is being deleted; no finalizer can be added any more`,
    };
  }
  const ops: JsonPatchOp[] = [
    { op: 'test', path: '/metadata/uid', value: uid },
    { op: 'test', path: '/metadata/deletionTimestamp', value: null },
    ...(current.length === 0
      ? // An empty list is omitted by the apiserver: `null` tests that it is still absent.
        [
          { op: 'test', path: '/metadata/finalizers', value: null } as const,
          { op: 'add', path: '/metadata/finalizers', value: [finalizerName] } as const,
        ]
      : [
          { op: 'test', path: '/metadata/finalizers', value: current } as const,
          { op: 'add', path: '/metadata/finalizers/-', value: finalizerName } as const,
        ]),
    ...(opts.also ?? []),
  ];
  return guardedPatch(client, obj, ops);
}

/**
 * Removes every occurrence of `finalizerName` from `obj`, each one only if it still
 * sits at the index where it was read: another controller's finalizer is never
 * removed in its place. Finalizers others append meanwhile do not conflict (they
 * leave our indices alone); any other change to the list before ours does.
 *
 * @throws Error if `obj` has no uid.
 */
export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  finalizerName: string,
): Promise<FinalizerPatchResult<T>> {
  const uid = requireUid(obj);
  const indices = (obj.metadata.finalizers ?? []).flatMap((f, i) => (f === finalizerName ? [i] : []));
  if (indices.length === 0) return { kind: 'unchanged' };
  const ops: JsonPatchOp[] = [{ op: 'test', path: '/metadata/uid', value: uid }];
  // Highest index first, so that each removal leaves the indices still to test unchanged.
  for (const i of indices.reverse()) {
    ops.push({ op: 'test', path: `/metadata/finalizers/${i}`, value: finalizerName });
    ops.push({ op: 'remove', path: `/metadata/finalizers/${i}` });
  }
  return guardedPatch(client, obj, ops);
}

/** What {@link finalizer} runs: both must be idempotent. */
export interface FinalizerHandlers<T extends KubeObject, R> {
  /** Reconciles an object that is not being deleted; our finalizer is in place. */
  readonly apply: (obj: T) => Promise<R>;
  /** Undoes what `apply` did outside the object; the finalizer is removed only if this resolves. */
  readonly cleanup: (obj: T) => Promise<R>;
}

export type FinalizerOutcome<T extends KubeObject, R> =
  /** `apply` ran (after adding the finalizer first, when `finalizerAdded`). */
  | { readonly kind: 'applied'; readonly result: R; readonly finalizerAdded: boolean }
  /** `cleanup` ran and our finalizer is gone from the object (or the object with it). */
  | { readonly kind: 'cleanedUp'; readonly result: R }
  /** Deleting, and our finalizer is not on it: nothing to do. */
  | { readonly kind: 'nothing' }
  /**
   * Adding or removing the finalizer met a concurrent change; the object must be read
   * again. After a `remove` conflict, `cleanup` has run and will run again.
   */
  | {
      readonly kind: 'conflict';
      readonly step: 'add' | 'remove';
      readonly message: string;
      readonly object: T;
    }
  /** The object disappeared before the finalizer could be added. */
  | { readonly kind: 'gone' };

/**
 * Reconciles an object that needs cleanup before it may be deleted, by keeping
 * `finalizerName` in its `metadata.finalizers` for as long as cleanup is owed.
 * Use it as the whole body of a reconcile, passing the object read for this key.
 *
 * ## Expected Flow
 * 1. A user creates the object.
 * 2. The controller reconciles it: the state is `add`.
 * 3. `finalizer` adds `finalizerName` (guarded: same object, same finalizers, not deleting).
 * 4. `finalizer` runs `apply` on the object the patch returned.
 * 5. The user updates the object.
 * 6. The controller reconciles it: the state is `apply`.
 * 7. `finalizer` runs `apply`.
 * 8. The user deletes the object; the apiserver sets `deletionTimestamp` and keeps it,
 *    because a finalizer is present.
 * 9. The controller reconciles it: the state is `cleanup`.
 * 10. `finalizer` runs `cleanup`.
 * 11. Only when `cleanup` resolved, `finalizer` removes `finalizerName` (guarded by index and value).
 * 12. When no finalizer is left, the apiserver deletes the object.
 * 13. A late reconcile of the deleting object finds the state `nothing` and does nothing.
 *
 * ## Guarantees
 * - If `apply` ever started, `cleanup` has resolved before the deletion completes
 *   (unless someone else strips our finalizer by hand).
 * - No other controller's finalizer is removed or duplicated, whatever races ours.
 * - A finalizer is never added to an object whose deletion has begun, nor to a new
 *   object that reuses the name of the one we read.
 *
 * ## Assumptions
 * - `finalizerName` is unique to this controller (domain-qualified, e.g. `example.com/cleanup`).
 * - `apply` and `cleanup` are idempotent and tolerate running several times, including
 *   after an earlier run failed half-way.
 * - `cleanup` tolerates `apply` never having run, or never having succeeded.
 * - The object passed in is the latest the controller has seen (from its cache).
 *
 * ## Caveats
 * - Deleting the object blocks while the controller is not running, or while `cleanup`
 *   keeps failing; deleting the namespace blocks with it.
 * - A stale read is not an error: the guarded patch reports a `conflict`, and the
 *   reconcile must run again (requeue with backoff) on a fresh read.
 * - `apply` receives the object returned by the finalizer patch when one was made,
 *   which may be newer than the object passed in.
 *
 * ## Errors
 * Errors thrown by `apply` and `cleanup` propagate unchanged (the finalizer stays);
 * so do unexpected API errors of the patches (Forbidden, Transient ...). Conflicts
 * and disappearance are outcomes, not errors.
 */
export async function finalizer<T extends KubeObject, R>(
  client: KubeClient,
  obj: T,
  finalizerName: string,
  handlers: FinalizerHandlers<T, R>,
): Promise<FinalizerOutcome<T, R>> {
  const step = finalizerLifecycle(obj, finalizerName);
  switch (step.kind) {
    case 'add': {
      // The finalizer must be in place before `apply` creates anything that needs cleaning up.
      const added = await addFinalizer(client, obj, finalizerName);
      switch (added.kind) {
        case 'patched':
          return { kind: 'applied', result: await handlers.apply(added.object), finalizerAdded: true };
        case 'unchanged':
          return { kind: 'applied', result: await handlers.apply(obj), finalizerAdded: false };
        case 'conflict':
          return { kind: 'conflict', step: 'add', message: added.message, object: obj };
        case 'gone':
          return { kind: 'gone' };
        default:
          return unreachable(added);
      }
    }
    case 'apply':
      return { kind: 'applied', result: await handlers.apply(obj), finalizerAdded: false };
    case 'cleanup': {
      // Cleanup must succeed before removing the finalizer is safe: if it throws, we keep it.
      const result = await handlers.cleanup(obj);
      const removed = await removeFinalizer(client, obj, finalizerName);
      if (removed.kind === 'conflict') {
        return { kind: 'conflict', step: 'remove', message: removed.message, object: obj };
      }
      return { kind: 'cleanedUp', result };
    }
    case 'nothing':
      return { kind: 'nothing' };
    default:
      return unreachable(step);
  }
}

/**
 * The apiserver's rule for a finalizer a controller may add: a qualified name with a
 * DNS-subdomain prefix (`example.com/name`); names without a prefix are reserved for
 * Kubernetes' own (`kubernetes`, `orphan`, `foregroundDeletion`).
 */
export const FINALIZER_NAME_PATTERN =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Throws unless `name` is a finalizer name the apiserver accepts on any kind. */
export function validateFinalizerName(name: string): void {
  const slash = name.indexOf('/');
  if (!FINALIZER_NAME_PATTERN.test(name) || slash > 253 || name.length - slash - 1 > 63) {
    throw new Error(
      `finalizer name ${JSON.stringify(name)} is not domain-qualified: use a name such as example.com/cleanup ` +
        '(a DNS subdomain, a slash, then at most 63 letters, digits, -, _ or .)',
    );
  }
}

async function guardedPatch<T extends KubeObject>(
  client: KubeClient,
  obj: T,
  ops: readonly JsonPatchOp[],
): Promise<FinalizerPatchResult<T>> {
  try {
    const object = await client.patch<T>(gvkOf(obj), obj.metadata.name ?? '', obj.metadata.namespace, {
      type: 'json',
      body: ops,
    });
    return { kind: 'patched', object };
  } catch (err) {
    if (isApiError(err, ApiErrorReason.NotFound)) return { kind: 'gone' };
    // A failed `test` operation comes back as 422 Invalid without causes; validation
    // failures always carry causes naming the field, and are bugs to surface.
    if (isApiError(err, ApiErrorReason.Invalid) && err.causes.length === 0) {
      return {
        kind: 'conflict',
        message: `${describe(obj)} changed since it was read (finalizers, deletion or uid); read it again`,
      };
    }
    throw err;
  }
}

function requireUid(obj: KubeObject): string {
  const uid = obj.metadata.uid;
  if (!uid)
    throw new Error(`${describe(obj)} has no uid: finalizers are managed on objects read from the apiserver`);
  return uid;
}

function describe(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return `${obj.kind ?? 'object'} ${namespace ? `${namespace}/` : ''}${name ?? '(unnamed)'}`;
}

function unreachable(x: never): never {
  throw new Error(`unhandled case ${JSON.stringify(x)}`);
}
