/**
 * What the six configbutler.ai kinds share: the group, references, a label selector and
 * the status fields every kind carries. Each kind's file holds its types and its CRD
 * side by side, so that they cannot disagree.
 */
import type { Condition } from '@operators/kit';

export const GROUP = 'configbutler.ai';
export const VERSION = 'v1alpha3';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** An object in the referring object's own namespace, by name. */
export interface LocalObjectRef {
  readonly name: string;
}

/** An object in a named namespace (a cluster-scoped object referring to a namespaced one). */
export interface NamespacedObjectRef {
  readonly name: string;
  readonly namespace: string;
}

/** A key of a Secret; `key` absent means the field's documented default. */
export interface SecretKeyRef {
  readonly name: string;
  readonly key?: string;
}

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** metav1.LabelSelector: every matchLabels entry and every matchExpressions requirement must hold. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** The status fields of every kind. */
export interface CommonStatus {
  readonly conditions?: readonly Condition[];
  /** The generation last reconciled successfully: bumped only after a successful reconcile. */
  readonly observedGeneration?: number;
}
