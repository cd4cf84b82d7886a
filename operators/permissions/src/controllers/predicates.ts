/** Which changes deserve a reconcile, for this operator's watches. */
import type { KubeObject, Predicate } from '@operators/kit';
import type { ScopeStatus } from '../api/scope.ts';
import { type CapiCluster, clusterPaused, clusterReady } from '../domain/cluster-selection.ts';
import { SCOPE_ANNOTATION_PREFIX } from '../domain/scope-annotations.ts';

/**
 * Spec changes (generation), a deletion starting, creations and deletions. Our own status
 * writes are not in it: a status write must not bring the object straight back.
 */
export const specOrDeletionChanged: Predicate = (d) =>
  d.type !== 'updated' ||
  d.old.metadata.generation !== d.object.metadata.generation ||
  (d.old.metadata.deletionTimestamp === undefined) !== (d.object.metadata.deletionTimestamp === undefined);

const sameMap = (
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
) => JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());

/** A Cluster's annotations without the ones our Scopes write (ours must not wake us again). */
function foreignAnnotations(c: CapiCluster): Record<string, string> {
  return Object.fromEntries(
    Object.entries(c.metadata.annotations ?? {}).filter(([k]) => !k.startsWith(SCOPE_ANNOTATION_PREFIX)),
  );
}

/** A Cluster API Cluster appearing, going, becoming (un)ready or (un)paused, or relabelled / re-annotated. */
export const clusterSelectionChanged: Predicate = (d) => {
  if (d.type !== 'updated') return true;
  const a = d.old as KubeObject as CapiCluster;
  const b = d.object as KubeObject as CapiCluster;
  return (
    clusterReady(a) !== clusterReady(b) ||
    clusterPaused(a) !== clusterPaused(b) ||
    !sameMap(a.metadata.labels, b.metadata.labels) ||
    !sameMap(foreignAnnotations(a), foreignAnnotations(b))
  );
};

/** For roles: only readiness and `spec.paused` (§5: UserRole watches Cluster.spec.paused). */
export const clusterPauseOrReadinessChanged: Predicate = (d) => {
  if (d.type !== 'updated') return true;
  const a = d.old as KubeObject as CapiCluster;
  const b = d.object as KubeObject as CapiCluster;
  return clusterReady(a) !== clusterReady(b) || clusterPaused(a) !== clusterPaused(b);
};

/**
 * For roles, a Scope's changes that move where grants land: its spec, its deletion, and
 * its status's clusters and namespace rows (a namespace created in a client cluster lets
 * the RoleBinding there be written). Not its `permissions` list, which every new role in
 * it changes: 700 roles in one Scope would each wake the other 699.
 */
export const scopeTargetsChanged: Predicate = (d) => {
  if (specOrDeletionChanged(d)) return true;
  if (d.type !== 'updated') return true;
  const a = (d.old as KubeObject & { status?: ScopeStatus }).status;
  const b = (d.object as KubeObject & { status?: ScopeStatus }).status;
  return (
    JSON.stringify(a?.clusters ?? []) !== JSON.stringify(b?.clusters ?? []) ||
    JSON.stringify(a?.objectsStatus ?? []) !== JSON.stringify(b?.objectsStatus ?? [])
  );
};
