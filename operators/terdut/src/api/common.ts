/**
 * What the five terdut.ryuvia.com kinds share: the group, references, a label selector
 * and the status fields every kind carries (DESIGN §7). Each kind's file holds its
 * types and its CRD side by side, so that they cannot disagree.
 */
import type { Condition } from '@operators/kit';

export const GROUP = 'terdut.ryuvia.com';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A key of a Secret in the object's own namespace. An empty `name` means unset (§4.1's `name: ""`). */
export interface SecretKeyRef {
  readonly name?: string;
  readonly key?: string;
}

/** A same-namespace reference by name. */
export interface LocalRef {
  readonly name: string;
}

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** metav1.LabelSelector. */
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
