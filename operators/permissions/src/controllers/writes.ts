/**
 * Writes that cost nothing when nothing changed: read, compare with what we want, and
 * only then server-side apply. A resync of 1,000 roles over two clusters must make zero
 * writes (the benchmark counts them), and a ClusterRole in a client cluster is
 * not ours alone to churn: every write wakes its watchers.
 */
import type { GroupVersionKind, KubeClient, KubeObject } from '@operators/kit';
import { ApiErrorReason, isApiError, type JsonValue, jsonEqual } from '@operators/kit';

/** Label keys that are ours: on an object we write, a key of ours that we no longer want must go. */
const OUR_LABEL_PREFIXES = ['permissions.shturval.tech/', 'aggregate-to.permissions.shturval.tech/'];

const isOurs = (key: string): boolean => OUR_LABEL_PREFIXES.some((p) => key.startsWith(p));

/** Whether every field of `want` is present with the same value in `have` (lists compared whole). */
export function contains(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return false;
    return want.every((w, i) => contains(have[i], w));
  }
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return false;
    const h = have as Record<string, unknown>;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
      v === undefined ? true : contains(h[k], v),
    );
  }
  return have === want;
}

/**
 * Whether the live object already is what `desired` says, for an object this operator
 * wholly owns: its labels of ours exactly (a dropped aggregation label must go), other
 * labels, annotations and owner references as a subset (others may add theirs), and each
 * top-level field of the body exactly (a Tenant that loses a namespace must lose it in its
 * Scope). `subjects` absent from `desired` means none: the apiserver drops an empty list.
 * `rules` absent (an aggregating ClusterRole) is left to kube-controller-manager.
 */
export function upToDate(live: KubeObject, desired: KubeObject): boolean {
  const want = desired.metadata;
  const have = live.metadata;
  const haveLabels = have.labels ?? {};
  const wantLabels = want.labels ?? {};
  if (!Object.entries(wantLabels).every(([k, v]) => haveLabels[k] === v)) return false;
  if (Object.keys(haveLabels).some((k) => isOurs(k) && !(k in wantLabels))) return false;
  if (!contains(have.annotations ?? {}, want.annotations ?? {})) return false;
  if (
    want.ownerReferences &&
    !want.ownerReferences.every((r) => (have.ownerReferences ?? []).some((h) => contains(h, r)))
  ) {
    return false;
  }
  const { metadata: _m, apiVersion: _a, kind: _k, ...body } = desired as KubeObject & Record<string, unknown>;
  const liveBody = live as KubeObject & Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) {
    if (v === undefined) continue;
    if (!jsonEqual(JSON.parse(JSON.stringify(v)) as JsonValue, (liveBody[k] ?? null) as JsonValue))
      return false;
  }
  if (desired.kind?.endsWith('Binding') && body.subjects === undefined) {
    const s = liveBody.subjects as unknown[] | undefined;
    if (s && s.length > 0) return false;
  }
  return true;
}

const gvkOf = (o: KubeObject): GroupVersionKind => ({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' });

/**
 * Server-side applies `desired` unless the live object is already {@link upToDate}.
 * Returns whether it wrote. `desired` must be a complete apply configuration (name,
 * namespace, labels and every field we own): forced, so it takes over fields another
 * manager changed, which is the point of reconciling them.
 */
export async function applyIfDiffers(
  client: KubeClient,
  desired: KubeObject,
  fieldManager: string,
): Promise<boolean> {
  const live = await client.find(gvkOf(desired), desired.metadata.name ?? '', desired.metadata.namespace);
  if (live && upToDate(live, desired)) return false;
  await client.apply(desired, { fieldManager, force: true });
  return true;
}

/**
 * Deletes `name` if it exists and carries every label of `ours` (so a same-named object
 * someone else wrote is never removed). Returns whether it deleted; a missing object is
 * not an error.
 */
export async function deleteIfOurs(
  client: KubeClient,
  gvk: GroupVersionKind,
  name: string,
  namespace: string | undefined,
  ours: Readonly<Record<string, string>>,
): Promise<boolean> {
  const live = await client.find(gvk, name, namespace);
  if (!live) return false;
  const labels = live.metadata.labels ?? {};
  if (!Object.entries(ours).every(([k, v]) => labels[k] === v)) return false;
  try {
    return await client.delete(gvk, name, namespace, { uid: live.metadata.uid });
  } catch (err) {
    if (isApiError(err, ApiErrorReason.Conflict)) return false;
    throw err;
  }
}
