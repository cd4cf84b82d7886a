/**
 * The kinds exoledge writes but does not define: Cilium's (v2, cluster-scoped) and the
 * ConfigMaps the decider reads. Only the fields we set are typed; their names are exactly
 * those of the Cilium CRD schema, which validates our objects in the tests (field
 * validation is Strict, so a misspelt field is an error, not a silent no-op).
 */
import type { KubeObject } from '@operators/kit';
import type { LabelSelector } from './blocklist-source.ts';

export const CILIUM_CIDR_GROUP = { apiVersion: 'cilium.io/v2', kind: 'CiliumCIDRGroup' } as const;
export const CILIUM_CLUSTERWIDE_NETWORK_POLICY = {
  apiVersion: 'cilium.io/v2',
  kind: 'CiliumClusterwideNetworkPolicy',
} as const;
export const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

export type CiliumCidrGroup = KubeObject & {
  readonly spec: { readonly externalCIDRs: readonly string[] };
};

/** One `fromCIDRSet` entry: by the Cilium schema, exactly one of cidr, cidrGroupRef, cidrGroupSelector. */
export interface CidrRule {
  readonly cidrGroupSelector: LabelSelector;
}

/**
 * Whether the selected endpoints enter default-deny (Cilium ≥ 1.15). Unset, Cilium turns
 * it on for each direction the policy has rules in, `ingressDeny` included: a policy of
 * deny rules alone would then drop every packet no other policy allows.
 */
export interface DefaultDeny {
  readonly ingress?: boolean;
  readonly egress?: boolean;
}

export type CiliumClusterwideNetworkPolicy = KubeObject & {
  readonly spec: {
    readonly description?: string;
    readonly endpointSelector: LabelSelector;
    readonly enableDefaultDeny?: DefaultDeny;
    readonly ingressDeny: readonly { readonly fromCIDRSet: readonly CidrRule[] }[];
  };
};

export type ConfigMap = KubeObject & { readonly data?: Readonly<Record<string, string>> };
