/**
 * `Permission`: a named set of rules. `platform_rules` become the aggregating
 * `platform:<ns>.<name>` ClusterRole on the management cluster; `granted_cluster_rules`
 * become `shturval:<ns>.<name>` ClusterRoles in the selected client clusters.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, GROUP, type Level, type PolicyRule, VERSION } from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  labelSelectorSchema,
  levelColumn,
  levelSchema,
  messageColumn,
  nonEmpty,
  objectNamesSchema,
  objectSchema,
  observedGenerationSchema,
  pluginsSchema,
  policyRulesSchema,
  readyColumn,
} from './schema.ts';

export const PERMISSION = { apiVersion: API_VERSION, kind: 'Permission' } as const;

/** metav1.LabelSelector over Cluster API Cluster labels. */
export interface ClusterSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values?: readonly string[];
  }[];
}

/** One Argo CD policy line's resource, action and object (`p, <subject>, resource, action, object, allow`). */
export interface ArgoCdPolicy {
  readonly resource: string;
  readonly action: string;
  readonly object: string;
}

/** A role in an Argo CD AppProject, granted to the subject. */
export interface ArgoCdProjectGrant {
  /** The AppProject's name (in the Argo CD namespace). */
  readonly project: string;
  /** Policies of the project role; objects are relative to the project (`<project>/<object>`). */
  readonly policies: readonly ArgoCdPolicy[];
}

export interface PermissionPlugins {
  /** RoleBindings / ClusterRoleBindings to this Permission's ClusterRole. Default on when `plugins` is absent. */
  readonly rbac?: Readonly<Record<string, never>>;
  readonly argocd?: {
    readonly policies?: readonly ArgoCdPolicy[];
    readonly projects?: readonly ArgoCdProjectGrant[];
  };
  /** Kubeflow's profile access: `kubeflow-<role>` ClusterRole and an Istio AuthorizationPolicy per user. */
  readonly kubeflow?: { readonly role: 'admin' | 'edit' | 'view' };
}

export interface PermissionSpec {
  /** The Scope level this Permission binds at. */
  readonly level: Level;
  readonly platform_rules?: readonly PolicyRule[];
  /** Other Permissions (same namespace) whose `platform:` ClusterRole aggregates these platform rules. */
  readonly aggregateTo?: readonly string[];
  readonly granted_cluster_rules?: readonly PolicyRule[];
  /** Narrows the client clusters that receive `shturval:` ClusterRoles; absent: every ready cluster. */
  readonly clusterSelector?: ClusterSelector;
  readonly plugins?: PermissionPlugins;
}

export interface PermissionStatus {
  readonly ready?: boolean;
  /** `platform` and the ids (`<ns>/<name>`) of the client clusters holding our ClusterRole. */
  readonly applied_to_clusters?: readonly string[];
  readonly message?: string;
  readonly observedGeneration?: number;
}

export type Permission = KubeObject & {
  readonly spec: PermissionSpec;
  readonly status?: PermissionStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = PERMISSION.kind;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'The rules of this Permission on the management cluster (platform_rules) and in client clusters ' +
    '(granted_cluster_rules), the Scope level it binds at, and the plugins it feeds.',
  required: ['level'],
  properties: {
    level: levelSchema('The level of the Scopes this Permission may be bound in.'),
    platform_rules: policyRulesSchema(
      'spec.platform_rules',
      'Rules on the management cluster: the labelled part of the aggregating ClusterRole platform:<namespace>.<name>. ' +
        'Required at level platform.',
    ),
    aggregateTo: objectNamesSchema(
      'spec.aggregateTo',
      'Other Permissions in the same namespace whose platform: ClusterRole also aggregates these platform_rules.',
      'The name of a Permission in the same namespace, not this one.',
    ),
    granted_cluster_rules: policyRulesSchema(
      'spec.granted_cluster_rules',
      'Rules in client clusters: the ClusterRole shturval:<namespace>.<name> written into each selected cluster. ' +
        'Required at levels cluster and namespace.',
    ),
    clusterSelector: labelSelectorSchema(
      'spec.clusterSelector',
      'Narrows the Cluster API clusters (by their labels) that receive the shturval: ClusterRole; absent: every ' +
        'cluster whose control plane is ready.',
    ),
    plugins: pluginsSchema(),
  },
  'x-kubernetes-validations': [
    {
      rule: `self.level != 'platform' || ${nonEmpty('platform_rules')}`,
      message: 'spec.platform_rules must hold at least one rule at level platform',
      fieldPath: '.platform_rules',
      reason: 'FieldValueRequired',
    },
    {
      rule: `self.level == 'platform' || ${nonEmpty('granted_cluster_rules')}`,
      message: 'spec.granted_cluster_rules must hold at least one rule at levels cluster and namespace',
      fieldPath: '.granted_cluster_rules',
      reason: 'FieldValueRequired',
    },
  ],
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator did: ready and where the ClusterRoles are (no conditions).',
  properties: {
    ready: {
      type: 'boolean',
      description:
        'True when the platform: ClusterRole and every selected client cluster hold this Permission.',
    },
    applied_to_clusters: {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      description:
        'platform and the ids (namespace/name) of the client clusters holding the shturval: ClusterRole.',
      items: { type: 'string', maxLength: 317 },
    },
    message: { type: 'string', maxLength: 32768, description: 'Why not ready, for humans.' },
    observedGeneration: observedGenerationSchema(),
  },
});

export const PERMISSION_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'permissions',
  singular: 'permission',
  shortNames: ['perm'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        readyColumn(),
        levelColumn(),
        { name: 'Clusters', type: 'string', jsonPath: '.status.applied_to_clusters', priority: 1 },
        messageColumn(),
        ageColumn(),
      ],
      schema: objectSchema(
        'A named set of RBAC rules: platform_rules aggregated into platform: ClusterRoles on the management ' +
          'cluster, granted_cluster_rules written as shturval: ClusterRoles into client clusters, bound by ' +
          'UserRoles and GroupRoles within a Scope of its level.',
        specSchema(),
        statusSchema(),
        [
          {
            rule: `!has(self.spec.aggregateTo) || !(self.metadata.name in self.spec.aggregateTo)`,
            message:
              'spec.aggregateTo must not name the Permission itself: its own platform: ClusterRole holds its platform_rules already',
            fieldPath: '.spec.aggregateTo',
          },
        ],
      ),
    },
  ],
};

export function permissionCrd(): KubeObject {
  return customResourceDefinition(PERMISSION_DEFINITION);
}
