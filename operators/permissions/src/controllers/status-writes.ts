/** Status writes of this operator: computed, compared, and applied only when they differ. */
import {
  applyStatusIfChanged,
  type GroupVersionKind,
  type KubeClient,
  type KubeObject,
} from '@operators/kit';
import { FIELD_MANAGER } from './deps.ts';

/** Server-side applies `status` when it differs from the object's; returns whether it wrote. */
export function applyStatus<S extends object>(
  client: KubeClient,
  gvk: GroupVersionKind,
  obj: KubeObject & { readonly status?: S },
  status: S,
): Promise<boolean> {
  return applyStatusIfChanged(client, gvk, obj, status, FIELD_MANAGER);
}
