/**
 * The annotation a Scope writes on every Cluster API Cluster it selects (§1, §5: "the
 * Scope reconcile updates ... cluster annotations"): `scope.permissions.shturval.tech/<id>`
 * = the Scope's level, where `<id>` is the Scope's `<ns>.<name>` (hash-shortened like an
 * aggregation id). One key per Scope, so Scopes never contend for one value, and
 * `kubectl get cluster -o yaml` shows which Scopes grant into a cluster.
 */
import type { Level } from '../api/common.ts';
import { aggregationId } from './names.ts';

export const SCOPE_ANNOTATION_PREFIX = 'scope.permissions.shturval.tech/';

export function scopeAnnotationKey(namespace: string, name: string): string {
  return `${SCOPE_ANNOTATION_PREFIX}${aggregationId(namespace, name)}`;
}

/**
 * The merge patch that brings one Cluster's annotation in line: set to the level when
 * selected, removed when not; `undefined` when it is already right (no write).
 */
export function scopeAnnotationPatch(
  annotations: Readonly<Record<string, string>> | undefined,
  key: string,
  selected: boolean,
  level: Level,
): { metadata: { annotations: Record<string, string | null> } } | undefined {
  const have = annotations?.[key];
  if (selected && have === level) return undefined;
  if (!selected && have === undefined) return undefined;
  return { metadata: { annotations: { [key]: selected ? level : null } } };
}
