/**
 * The sweep's one decision: which of the objects carrying our labels have lost their owner.
 *
 * Why a sweep at all: what the operator writes is removed by its owner's finalizer. A
 * finalizer removed by hand (the apiserver admits it: the spec did not change) lets the
 * owner go with nothing undone, and the bindings it wrote would grant for ever. So the
 * objects that carry our owner labels and whose owner no longer exists are deleted by a
 * periodic sweep (src/controllers/sweep.ts).
 *
 * Why so narrow: a sweep deletes. An object is an orphan only when every label naming
 * its owner is there and well-formed, the `managed-by` label is exactly ours, the owner
 * kind is one of ours, and no live object of that kind, namespace, name and uid exists.
 * Anything else (no labels, labels of another tool, a label missing, an unknown kind) is
 * not ours to judge and never an orphan. The live owners come from the informer caches
 * (what the model is built from) once they have listed, read AFTER the objects were
 * listed: an owner created since wrote nothing the list could have shown, so an object
 * listed is never judged against a picture older than its writer.
 */
import type { KubeObject } from '@operators/kit';
import { LABELS, labelSafe, MANAGED_BY, type OwnerKind } from './names.ts';

/** The kinds whose objects carry owner labels (names.ts OwnerKind), as a set to check labels against. */
export const OWNER_KINDS: ReadonlySet<string> = new Set<OwnerKind>([
  'Permission',
  'UserRole',
  'GroupRole',
  'Tenant',
]);

/** A live owner, as the caches hold it. */
export interface LiveOwner {
  readonly kind: OwnerKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** The label selector the sweep lists with: exactly our `managed-by` value. */
export const SWEEP_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

/** The owner an object's labels name, as the labels spell it, or undefined when they do not name one fully. */
export function labelledOwner(labels: Readonly<Record<string, string>> | undefined): string | undefined {
  if (labels?.[LABELS.managedBy] !== MANAGED_BY) return undefined;
  const kind = labels[LABELS.ownerKind];
  const namespace = labels[LABELS.ownerNamespace];
  const name = labels[LABELS.ownerName];
  const uid = labels[LABELS.ownerUid];
  if (!kind || !OWNER_KINDS.has(kind) || !namespace || !name || !uid) return undefined;
  return ownerKey(kind, namespace, name, uid);
}

function ownerKey(kind: string, namespace: string, name: string, uid: string): string {
  return JSON.stringify([kind, namespace, name, uid]);
}

/** A live owner's key as its objects' labels spell it (names.ts ownerLabels: each value through labelSafe). */
function liveKey(o: LiveOwner): string {
  return ownerKey(o.kind, labelSafe(o.namespace), labelSafe(o.name), labelSafe(o.uid));
}

/**
 * The objects among `objects` whose labels name an owner of ours, fully, that is not
 * among `owners`. Order kept. Pure: the caller lists, decides here, then deletes each
 * with its uid and resourceVersion as preconditions (an object changed since the list,
 * say adopted by a re-created owner, is not deleted).
 */
export function orphans<T extends KubeObject>(objects: readonly T[], owners: Iterable<LiveOwner>): T[] {
  const live = new Set<string>();
  for (const o of owners) live.add(liveKey(o));
  return objects.filter((o) => {
    const owner = labelledOwner(o.metadata.labels);
    return owner !== undefined && !live.has(owner);
  });
}
