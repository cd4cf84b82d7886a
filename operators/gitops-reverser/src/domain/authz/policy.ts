/**
 * `spec.accessFrom`: a ClusterProvider's explicit, deny-by-default admission of the
 * GitTarget namespaces permitted to mirror through it. Evaluated in memory against the
 * labels the caller read; no I/O here.
 */
import { convertLabelSelector, type LabelSelectorObject } from '@operators/kit';
import { ADMITTED, type Decision, denied } from './decision.ts';
import { ReasonNamespaceNotAuthorized } from './reasons.ts';

/** The part of a ClusterProvider the gate reads (the API type satisfies it). */
export interface ClusterProviderPolicy {
  readonly metadata?: { readonly name?: string };
  readonly spec?: {
    readonly accessFrom?: {
      readonly names?: readonly string[];
      readonly selector?: LabelSelectorObject;
    };
    readonly allowAnySourceNamespace?: boolean;
    readonly allowedNamespaces?: unknown;
    readonly allowSourceNamespaceOverride?: unknown;
  };
}

/**
 * The denial of a namespace `accessFrom` does not admit, spelled as upstream's `authz`
 * spells it. One message for every way of not being admitted (no policy, not named, labels
 * not matching): alerts written for the Go operator match on this exact string.
 */
export function notPermittedMessage(namespace: string, provider: string): string {
  return `namespace "${namespace}" is not permitted to reference ClusterProvider "${provider}" (spec.accessFrom)`;
}

/** The denial of a selector the apiserver stored but that does not convert (upstream's wording). */
export function invalidSelectorMessage(provider: string, why: string): string {
  return `ClusterProvider "${provider}" accessFrom selector is invalid: ${why}`;
}

/**
 * Whether `accessFrom` admits `namespace`, whose labels are `labels` (empty for a
 * Namespace that does not exist yet, so a `names` entry admits it and a selector does
 * not). Names are exact and checked first; names OR selector; `selector: {}` admits
 * every namespace; no accessFrom, or `{}`, admits none. An invalid selector denies,
 * unless a name already admitted the namespace.
 */
export function accessFromAdmits(
  provider: string,
  accessFrom: NonNullable<ClusterProviderPolicy['spec']>['accessFrom'],
  namespace: string,
  labels: Readonly<Record<string, string>>,
): Decision {
  if (accessFrom?.names?.includes(namespace)) return ADMITTED;
  if (accessFrom?.selector === undefined) {
    return denied(ReasonNamespaceNotAuthorized, notPermittedMessage(namespace, provider));
  }
  const conversion = convertLabelSelector(accessFrom.selector);
  if (!conversion.ok) {
    return denied(ReasonNamespaceNotAuthorized, invalidSelectorMessage(provider, conversion.message));
  }
  if (conversion.selector.matches(labels)) return ADMITTED;
  return denied(ReasonNamespaceNotAuthorized, notPermittedMessage(namespace, provider));
}
