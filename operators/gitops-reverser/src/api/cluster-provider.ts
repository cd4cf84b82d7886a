/**
 * `ClusterProvider` (cluster-scoped): a source cluster the operator mirrors from, and the
 * policy of which namespaces' GitTargets may mirror through it.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import {
  API_VERSION,
  type CommonStatus,
  GROUP,
  type LabelSelector,
  type SecretKeyRef,
  VERSION,
} from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  commonStatusSchema,
  conditionColumn,
  labelSelectorSchema,
  namespaceNameSchema,
  objectNameSchema,
  objectSchema,
  secretKeySchema,
  supersededDescription,
  supersededRules,
} from './schema.ts';

export const CLUSTER_PROVIDER = { apiVersion: API_VERSION, kind: 'ClusterProvider' } as const;

/** The Secret keys tried, in order, when `spec.kubeConfig.secretRef.key` is absent. */
export const DEFAULT_KUBECONFIG_KEYS: readonly string[] = ['value', 'value.yaml'];

export interface ClusterProviderSpec {
  /** Immutable (cannot be added, removed or changed). Absent: the operator's own cluster. */
  readonly kubeConfig?: { readonly secretRef: SecretKeyRef };
  /** Which namespaces' GitTargets may use this provider; absent or empty: none. */
  readonly accessFrom?: {
    readonly names?: readonly string[];
    readonly selector?: LabelSelector;
  };
  /** Filled by the apiserver (default false). */
  readonly allowAnySourceNamespace?: boolean;
  readonly qps?: number;
  readonly burst?: number;
  /** Superseded by `accessFrom`; refused on write, tolerated only when stored by an older version. */
  readonly allowedNamespaces?: readonly string[];
  /** Superseded by `allowAnySourceNamespace`; refused on write. A stored `false` was the old default. */
  readonly allowSourceNamespaceOverride?: boolean;
}

export type ClusterProviderStatus = CommonStatus;

export type ClusterProvider = KubeObject & {
  readonly spec: ClusterProviderSpec;
  readonly status?: ClusterProviderStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  // So that `spec: {}`, or no spec at all, gets allowAnySourceNamespace: false written out.
  default: {},
  description:
    "Where the cluster is and who may mirror from it. An empty spec is the operator's own cluster, " +
    'usable by no namespace until accessFrom admits some.',
  properties: {
    kubeConfig: {
      type: 'object',
      required: ['secretRef'],
      description:
        'A remote cluster, reached with a kubeconfig. Absent: the cluster the operator runs in, with the ' +
        "operator's own service account. Immutable: it cannot be added, removed or changed once the " +
        'ClusterProvider exists, because what every GitTarget mirrored through it means depends on which ' +
        'cluster it is; delete and recreate the ClusterProvider to point it elsewhere.',
      properties: {
        secretRef: {
          type: 'object',
          required: ['name'],
          description:
            "A Secret in the operator's own namespace holding the kubeconfig: connection material of the " +
            'operator, not of a team. The kubeconfig needs a current-context whose cluster has a server, and ' +
            'inline credentials only (exec, auth-provider and file references are refused; use the *-data ' +
            'fields and token); otherwise Ready is False with reason KubeConfigInvalid.',
          properties: {
            name: objectNameSchema(
              'spec.kubeConfig.secretRef.name',
              "The Secret, in the operator's namespace.",
            ),
            key: secretKeySchema(
              'spec.kubeConfig.secretRef.key',
              `The key holding the kubeconfig. Absent: ${DEFAULT_KUBECONFIG_KEYS.join(', then ')} (the Cluster API convention), the first present.`,
            ),
          },
        },
      },
    },
    accessFrom: {
      type: 'object',
      description:
        'Which namespaces may mirror through this provider: a GitTarget (spec.clusterProviderRef) in a ' +
        'namespace listed in names, or whose labels match selector. Deny by default: absent, or with ' +
        'neither names nor selector, no namespace may; a GitTarget in a namespace not admitted has Ready ' +
        'False with reason NamespaceNotAuthorized. Checked on every reconcile, so tightening it revokes ' +
        'GitTargets already running.',
      properties: {
        names: {
          type: 'array',
          maxItems: 256,
          'x-kubernetes-list-type': 'set',
          description: 'Namespaces admitted by name, exactly (no wildcards).',
          items: namespaceNameSchema('spec.accessFrom.names', 'A namespace name.'),
        },
        selector: labelSelectorSchema(
          'spec.accessFrom.selector',
          "Namespaces admitted by their labels (in the operator's cluster).",
        ),
      },
    },
    allowAnySourceNamespace: {
      type: 'boolean',
      default: false,
      description:
        "Whether a WatchRule item may watch a namespace other than the WatchRule's own (its " +
        'sourceNamespace: a name, or * for all). Default false: every WatchRule mirrors only its own ' +
        'namespace. The credential of this provider still bounds what can be read: its RBAC decides.',
    },
    qps: {
      type: 'number',
      minimum: 0,
      exclusiveMinimum: true,
      description:
        "Sustained requests per second to a remote cluster's apiserver, above 0. Remote clusters only: the " +
        "operator's own cluster uses its own client. Absent: the client's default.",
    },
    burst: {
      type: 'integer',
      format: 'int32',
      minimum: 1,
      description:
        'Requests a remote cluster may get in a burst, at least 1. Absent: the ceiling of qps × 1.5.',
    },
    allowedNamespaces: {
      type: 'array',
      items: { type: 'string' },
      description: supersededDescription('spec.accessFrom.names and spec.accessFrom.selector'),
    },
    allowSourceNamespaceOverride: {
      type: 'boolean',
      description: supersededDescription('spec.allowAnySourceNamespace'),
    },
  },
  'x-kubernetes-validations': [
    {
      // Also refuses `kubeConfig: null` after create: has() is false for it.
      rule:
        'has(self.kubeConfig) == has(oldSelf.kubeConfig) && ' +
        '(!has(self.kubeConfig) || self.kubeConfig == oldSelf.kubeConfig)',
      message:
        'spec.kubeConfig is immutable: it cannot be added, removed or changed; delete and recreate the ' +
        'ClusterProvider to mirror from another cluster',
      fieldPath: '.kubeConfig',
    },
    ...supersededRules({
      name: 'allowedNamespaces',
      path: 'spec.allowedNamespaces',
      instead: 'list the namespaces in spec.accessFrom.names or match them with spec.accessFrom.selector',
    }),
    ...supersededRules({
      name: 'allowSourceNamespaceOverride',
      path: 'spec.allowSourceNamespaceOverride',
      instead: 'set spec.allowAnySourceNamespace instead',
    }),
  ],
});

export const CLUSTER_PROVIDER_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: CLUSTER_PROVIDER.kind,
  plural: 'clusterproviders',
  singular: 'clusterprovider',
  shortNames: ['cp'],
  categories: CATEGORIES,
  scope: 'Cluster',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Kubeconfig', type: 'string', jsonPath: '.spec.kubeConfig.secretRef.name' },
        { name: 'AnySourceNS', type: 'boolean', jsonPath: '.spec.allowAnySourceNamespace' },
        ageColumn(),
      ],
      schema: objectSchema(
        "A cluster to mirror from (the operator's own, or a remote one through a kubeconfig), and which " +
          'namespaces may mirror through it. GitTargets name it in spec.clusterProviderRef ("default" when ' +
          'omitted); the operator never creates one.',
        specSchema(),
        commonStatusSchema('Ready, Reconciling and Stalled.'),
      ),
    },
  ],
};

export function clusterProviderCrd(): KubeObject {
  return customResourceDefinition(CLUSTER_PROVIDER_DEFINITION);
}
