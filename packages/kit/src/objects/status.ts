/**
 * Writing a custom resource's status without churn: conditions updated in order (each
 * keeping its lastTransitionTime unless its status flips), and a server-side apply of
 * the status subresource only when it differs from what the object already holds, so a
 * resync that finds everything in place writes nothing.
 */
import type { KubeClient } from '../client/client.ts';
import type { GroupVersionKind, KubeObject } from '../client/types.ts';
import { type JsonValue, jsonEqual } from '../webhook/json-patch.ts';
import { type Condition, type ConditionUpdate, setCondition } from './conditions.ts';

/** Applies condition updates in order. */
export function withConditions(
  previous: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  now: Date,
): readonly Condition[] {
  let c = previous ?? [];
  for (const u of updates) c = setCondition(c, u, now);
  return c;
}

export interface StatusWriteOptions {
  /**
   * Sends `obj`'s resourceVersion with the apply, so the apiserver refuses it (409
   * Conflict, retried by the controller on a fresh read) when the object changed since
   * `obj` was read. For a status that is the only record of something outside the
   * cluster (an ID on a server): a forced apply computed from a stale cached read
   * removes every field this manager set after that read, and the ID with it. Unguarded
   * (the default) suits a status recomputed whole at every reconcile.
   */
  readonly guarded?: boolean;
}

/**
 * Server-side applies `status` (as `fieldManager`, forced: the status belongs to the
 * operator) when it differs from `obj.status`; returns whether it wrote.
 */
export async function applyStatusIfChanged<S extends object>(
  client: KubeClient,
  gvk: GroupVersionKind,
  obj: KubeObject & { readonly status?: S },
  status: S,
  fieldManager: string,
  options: StatusWriteOptions = {},
): Promise<boolean> {
  // A JSON round trip drops keys set to undefined, as the apiserver would never store them.
  const next = JSON.parse(JSON.stringify(status)) as S;
  if (jsonEqual(next as unknown as JsonValue, (obj.status ?? {}) as unknown as JsonValue)) return false;
  await client.applyStatus(
    {
      apiVersion: gvk.apiVersion,
      kind: gvk.kind,
      metadata: {
        name: obj.metadata.name,
        namespace: obj.metadata.namespace,
        ...(options.guarded ? { resourceVersion: obj.metadata.resourceVersion } : {}),
      },
      status: next,
    },
    { fieldManager, force: true },
  );
  return true;
}
