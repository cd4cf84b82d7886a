/**
 * Owner references: how an object says "I exist because of that one". The garbage
 * collector deletes dependents with their owner; the controller builder's `owns(kind)`
 * maps a dependent's event to its controller's key. Pure functions over metadata;
 * ownership is by UID, as the garbage collector sees it, never by name (a deleted and
 * recreated owner is another owner).
 */
import type { KubeObject, OwnerReference } from '../client/types.ts';

/**
 * The reference a controller puts on what it creates: `controller: true` (one object
 * has at most one controller: the one that reconciles it) and `blockOwnerDeletion:
 * true`, so that a foreground deletion of the owner waits for its dependents.
 *
 * @throws Error if `owner` lacks apiVersion, kind, name or uid: an owner must be an
 *   object read from the apiserver, not one about to be created.
 */
export function controllerReference(owner: KubeObject): OwnerReference {
  return { ...ownerReference(owner), controller: true, blockOwnerDeletion: true };
}

/** A plain (non-controller) owner reference to `owner`: the dependent is deleted with it. */
export function ownerReference(owner: KubeObject): OwnerReference {
  const { apiVersion, kind } = owner;
  const { name, uid } = owner.metadata;
  if (!apiVersion || !kind || !name || !uid) {
    throw new Error(
      `cannot reference ${kind ?? 'an object'} ${name ?? '(unnamed)'} as an owner: it needs apiVersion, kind, ` +
        'name and uid; use the object as read from the apiserver',
    );
  }
  return { apiVersion, kind, name, uid };
}

/** `obj` has an owner reference (controller or not) to `owner`'s UID. */
export function isOwnedBy(obj: KubeObject, owner: KubeObject): boolean {
  const uid = owner.metadata.uid;
  return uid !== undefined && (obj.metadata.ownerReferences ?? []).some((r) => r.uid === uid);
}

/** The owner reference marked `controller: true`, if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** `obj` is controlled by `owner` (its controller reference carries `owner`'s UID). */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  const c = controllerOf(obj);
  return c !== undefined && owner.metadata.uid !== undefined && c.uid === owner.metadata.uid;
}

/**
 * Whether `owner` may become the controller of `dependent`, and the owner references
 * that would result. A decision, not a write: the caller puts `ownerReferences` in
 * what it applies.
 */
export type ControllerClaim =
  /** `ownerReferences` is the dependent's list with the owner as controller (unchanged if it already was). */
  | { readonly kind: 'claimed'; readonly ownerReferences: readonly OwnerReference[] }
  /** Another object controls the dependent already: two controllers would fight over it. */
  | { readonly kind: 'controlledByOther'; readonly controller: OwnerReference }
  /**
   * The garbage collector would not honour the reference: a namespaced owner in another
   * namespace, or a namespaced owner of a cluster-scoped dependent.
   */
  | { readonly kind: 'invalidScope'; readonly message: string };

/**
 * controller-runtime's `SetControllerReference` as a decision: claims `dependent` for
 * `owner`, refusing when another controller holds it or when the scopes make the
 * reference meaningless. Other owner references on the dependent are kept.
 */
export function claimController(dependent: KubeObject, owner: KubeObject): ControllerClaim {
  const ref = controllerReference(owner);
  const ownerNs = owner.metadata.namespace;
  const depNs = dependent.metadata.namespace;
  if (ownerNs && ownerNs !== depNs) {
    return {
      kind: 'invalidScope',
      message: depNs
        ? `${ref.kind} ${ownerNs}/${ref.name} cannot own an object in namespace ${depNs}: owners must share the dependent's namespace`
        : `${ref.kind} ${ownerNs}/${ref.name} is namespaced and cannot own a cluster-scoped object`,
    };
  }
  const existing = controllerOf(dependent);
  if (existing !== undefined && existing.uid !== ref.uid)
    return { kind: 'controlledByOther', controller: existing };
  const refs = dependent.metadata.ownerReferences ?? [];
  const i = refs.findIndex((r) => r.uid === ref.uid);
  // In place when the owner is listed already, so an unchanged claim is an unchanged list.
  return {
    kind: 'claimed',
    ownerReferences: i < 0 ? [...refs, ref] : refs.map((r, j) => (j === i ? ref : r)),
  };
}
