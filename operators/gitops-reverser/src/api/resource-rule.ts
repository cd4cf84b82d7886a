/**
 * The resource rule WatchRule and ClusterWatchRule items share: which operations on which
 * resources of which API groups and versions are mirrored. Shaped like an admission
 * webhook's rule (operations, apiGroups, apiVersions, resources), with `*` wildcards.
 */
import type { JSONSchemaProps } from '@operators/kit';
import { DNS_LABEL_REGEX, DNS_SUBDOMAIN_REGEX } from './schema.ts';

/** An operation a rule mirrors. */
export const Operation = {
  Create: 'CREATE',
  Update: 'UPDATE',
  Delete: 'DELETE',
  All: '*',
} as const;
export type Operation = (typeof Operation)[keyof typeof Operation];

/** The wildcard of every list of a rule. */
export const ANY = '*';

/** The most items in a WatchRule's or ClusterWatchRule's `spec.rules`. */
export const MAX_RULES = 64;

/** The fields every rule item has. */
export interface ResourceRule {
  /** Filled by the apiserver (`['*']`). */
  readonly operations?: readonly Operation[];
  /** `""` is the core group. */
  readonly apiGroups: readonly string[];
  /** Filled by the apiserver (`['*']`). */
  readonly apiVersions?: readonly string[];
  /** Plural resource names, or `*`; never a subresource. */
  readonly resources: readonly string[];
}

/** The properties of a rule item (`spec.rules[]`) that both kinds share. */
export function resourceRuleProperties(): Record<string, JSONSchemaProps> {
  return {
    operations: {
      type: 'array',
      minItems: 1,
      maxItems: 4,
      'x-kubernetes-list-type': 'set',
      default: [ANY],
      description:
        'The operations mirrored: CREATE, UPDATE, DELETE, or * for all (default). A DELETE removes the ' +
        "object's file, as the GitTarget's prune.mode allows.",
      items: {
        type: 'string',
        enum: [Operation.Create, Operation.Update, Operation.Delete, Operation.All],
      },
    },
    apiGroups: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      'x-kubernetes-list-type': 'set',
      description: 'The API groups: "" for the core group (ConfigMaps, Services...), apps, * for any.',
      items: {
        type: 'string',
        maxLength: 253,
        'x-kubernetes-validations': [
          {
            rule: `self == '' || self == '*' || self.matches('${DNS_SUBDOMAIN_REGEX}')`,
            message: 'spec.rules[].apiGroups must be API groups such as apps, "" for the core group, or *',
          },
        ],
      },
    },
    apiVersions: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      'x-kubernetes-list-type': 'set',
      default: [ANY],
      description:
        'The API versions, such as v1 or v1beta1, or * for any (default). A filter on the version the ' +
        "operator reads, which is the group's preferred one: an item naming only another version matches " +
        'nothing.',
      items: {
        type: 'string',
        maxLength: 63,
        'x-kubernetes-validations': [
          {
            rule: `self == '*' || self.matches('${DNS_LABEL_REGEX}')`,
            message: 'spec.rules[].apiVersions must be API versions such as v1, or *',
          },
        ],
      },
    },
    resources: {
      type: 'array',
      minItems: 1,
      maxItems: 64,
      'x-kubernetes-list-type': 'set',
      description:
        'The resources, as lowercase plurals (configmaps, deployments), or * for every resource of the ' +
        'groups that can be listed and watched, Events excepted. A WatchRule matches namespaced resources ' +
        'only, a ClusterWatchRule cluster-scoped ones only; a named resource that matches nothing is ' +
        'reported (ResourceNotFound). Subresources (pods/log, deployments/scale) are not mirrored and are ' +
        'refused.',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        'x-kubernetes-validations': [
          {
            rule: "!self.contains('/')",
            message:
              'spec.rules[].resources must not name a subresource such as pods/log: subresources are not ' +
              'mirrored; name the resource itself, such as pods',
          },
          {
            rule: `self.contains('/') || self == '*' || self.matches('${DNS_LABEL_REGEX}')`,
            message:
              'spec.rules[].resources must be lowercase plural resource names such as deployments, or *',
          },
        ],
      },
    },
  };
}
