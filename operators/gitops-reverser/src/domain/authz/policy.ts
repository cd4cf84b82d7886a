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

/** The message head every namespace denial starts with (the current product's wording). */
export function notPermittedMessage(namespace: string, provider: string): string {
  return `namespace "${namespace}" is not permitted to reference ClusterProvider "${provider}" (spec.accessFrom)`;
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
  const head = notPermittedMessage(namespace, provider);
  if (accessFrom?.names?.includes(namespace)) return ADMITTED;
  if (accessFrom?.selector === undefined) {
    const names = accessFrom?.names ?? [];
    return denied(
      ReasonNamespaceNotAuthorized,
      names.length === 0
        ? `${head}: the provider admits no namespace (accessFrom is empty; admission is deny by default)`
        : `${head}: it is not among spec.accessFrom.names and the provider has no selector`,
    );
  }
  const conversion = convertLabelSelector(accessFrom.selector);
  if (!conversion.ok) {
    return denied(
      ReasonNamespaceNotAuthorized,
      `${head}: spec.accessFrom.selector is invalid: ${conversion.message}`,
    );
  }
  if (conversion.selector.matches(labels)) return ADMITTED;
  return denied(
    ReasonNamespaceNotAuthorized,
    `${head}: its labels do not match spec.accessFrom.selector and it is not among spec.accessFrom.names`,
  );
}
