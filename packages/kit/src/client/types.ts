/**
 * The shapes of Kubernetes objects as they travel: plain JSON, timestamps as strings.
 * client-node's generated models turn timestamps into Date objects and pay a
 * serializer pass per object; a cache of ten thousand objects cannot afford that.
 */

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
  readonly blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  readonly manager?: string;
  readonly operation?: string;
  readonly apiVersion?: string;
  readonly fieldsType?: string;
  readonly fieldsV1?: Readonly<Record<string, unknown>>;
  readonly subresource?: string;
  readonly time?: string;
}

export interface ObjectMeta {
  readonly name?: string;
  readonly generateName?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly deletionGracePeriodSeconds?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly finalizers?: readonly string[];
  readonly ownerReferences?: readonly OwnerReference[];
  readonly managedFields?: readonly ManagedFieldsEntry[];
}

/** Any Kubernetes object. Typed kinds extend it with their spec and status. */
export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
  readonly [field: string]: unknown;
}

export interface ListMeta {
  readonly resourceVersion?: string;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ListMeta;
  readonly items: T[];
}

/** A kind as users write it. */
export interface GroupVersionKind {
  readonly apiVersion: string;
  readonly kind: string;
}

/** What discovery knows of a kind: where it is served and how. */
export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  /** The plural resource name used in URLs. */
  readonly resource: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  readonly subresources: readonly string[];
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key a controller reconciles. */
export type ObjectKey = string;

export function objectKey(obj: { metadata: ObjectMeta }): ObjectKey {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : `${name}`;
}

export function splitKey(key: ObjectKey): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** Splits `group/version` (or `v1`) into its parts. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}
