/**
 * `ClusterWatchRule` (cluster-scoped): which cluster-scoped objects (Namespaces,
 * ClusterRoles, CRDs...) a GitTarget in any namespace mirrors.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type CommonStatus, GROUP, type NamespacedObjectRef, VERSION } from './common.ts';
import { MAX_RULES, type ResourceRule, resourceRuleProperties } from './resource-rule.ts';
import {
  ageColumn,
  CATEGORIES,
  commonStatusSchema,
  conditionColumn,
  namespaceNameSchema,
  objectNameSchema,
  objectSchema,
} from './schema.ts';

export const CLUSTER_WATCH_RULE = { apiVersion: API_VERSION, kind: 'ClusterWatchRule' } as const;

/** The only `scope` a ClusterWatchRule item may be written with. */
export const CLUSTER_SCOPE = 'Cluster';

export interface ClusterWatchRuleItem extends ResourceRule {
  /**
   * Deprecated: only `Cluster` may be written. Any other string is what an older version
   * stored (`Namespaced`); the reconciler refuses it with reason ClusterScopeOnly.
   */
  readonly scope?: string;
}

export interface ClusterWatchRuleSpec {
  readonly targetRef: NamespacedObjectRef;
  readonly rules: readonly ClusterWatchRuleItem[];
}

export type ClusterWatchRuleStatus = CommonStatus;

export type ClusterWatchRule = KubeObject & {
  readonly spec: ClusterWatchRuleSpec;
  readonly status?: ClusterWatchRuleStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'The GitTarget to fill, and which cluster-scoped objects go into it.',
  required: ['targetRef', 'rules'],
  properties: {
    targetRef: {
      type: 'object',
      required: ['name', 'namespace'],
      description:
        "The GitTarget the matching objects are written to. Its namespace must be admitted by the GitTarget's " +
        'ClusterProvider (spec.accessFrom), as for any GitTarget.',
      properties: {
        name: objectNameSchema('spec.targetRef.name', 'The name of the GitTarget.'),
        namespace: namespaceNameSchema('spec.targetRef.namespace', 'The namespace of the GitTarget.'),
      },
    },
    rules: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RULES,
      description: `What to mirror: an object is mirrored when any item matches it. 1 to ${MAX_RULES} items.`,
      items: {
        type: 'object',
        required: ['apiGroups', 'resources'],
        description: 'Cluster-scoped resources to mirror.',
        properties: {
          ...resourceRuleProperties(),
          scope: {
            // A plain string, not an enum: an object an older version stored with
            // `Namespaced` must still be served, so the reconciler can say why it refuses it.
            type: 'string',
            maxLength: 32,
            description:
              'Deprecated: omit it. Only Cluster may be written; a ClusterWatchRule mirrors cluster-scoped ' +
              'resources only. An item an older version stored as Namespaced is refused by the operator ' +
              '(reason ClusterScopeOnly): mirror namespaced resources with a WatchRule.',
            'x-kubernetes-validations': [
              {
                rule: `self == '${CLUSTER_SCOPE}'`,
                message:
                  'spec.rules[].scope may only be Cluster: a ClusterWatchRule mirrors cluster-scoped resources ' +
                  'only; use a WatchRule for namespaced ones (and omit scope, which is deprecated)',
              },
            ],
          },
        },
      },
    },
  },
});

export const CLUSTER_WATCH_RULE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: CLUSTER_WATCH_RULE.kind,
  plural: 'clusterwatchrules',
  singular: 'clusterwatchrule',
  shortNames: ['cwr'],
  categories: CATEGORIES,
  scope: 'Cluster',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Target', type: 'string', jsonPath: '.spec.targetRef.name' },
        { name: 'TargetNamespace', type: 'string', jsonPath: '.spec.targetRef.namespace' },
        ageColumn(),
      ],
      schema: objectSchema(
        'Which cluster-scoped objects (Namespaces, ClusterRoles, CustomResourceDefinitions...) a GitTarget ' +
          'mirrors: by operation, API group, version and resource.',
        specSchema(),
        commonStatusSchema('Ready, Reconciling, Stalled and GitTargetReady.'),
      ),
    },
  ],
};

export function clusterWatchRuleCrd(): KubeObject {
  return customResourceDefinition(CLUSTER_WATCH_RULE_DEFINITION);
}
