/**
 * `WatchRule` (namespaced): which namespaced objects a GitTarget in the same namespace
 * mirrors, by default from the WatchRule's own namespace.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type CommonStatus, GROUP, type LocalObjectRef, VERSION } from './common.ts';
import { MAX_RULES, type ResourceRule, resourceRuleProperties } from './resource-rule.ts';
import {
  ageColumn,
  CATEGORIES,
  conditionColumn,
  conditionsSchema,
  DNS_LABEL_REGEX,
  localRefSchema,
  objectSchema,
  observedGenerationSchema,
} from './schema.ts';

export const WATCH_RULE = { apiVersion: API_VERSION, kind: 'WatchRule' } as const;

/** `sourceNamespace` meaning every namespace of the source cluster. */
export const ANY_SOURCE_NAMESPACE = '*';

/** The condition saying whether every item may watch the namespace it names. */
export const CONDITION_SOURCE_NAMESPACE_AUTHORIZED = 'SourceNamespaceAuthorized';

export interface WatchRuleItem extends ResourceRule {
  /** `*` or a namespace; absent: the WatchRule's own namespace. */
  readonly sourceNamespace?: string;
}

export interface WatchRuleSpec {
  /** A GitTarget in the same namespace. */
  readonly targetRef: LocalObjectRef;
  readonly rules: readonly WatchRuleItem[];
}

export interface WatchRuleStatus extends CommonStatus {
  /** A digest of what the rule watches, as last compiled. */
  readonly scopeFingerprint?: string;
}

export type WatchRule = KubeObject & {
  readonly spec: WatchRuleSpec;
  readonly status?: WatchRuleStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'The GitTarget to fill, and which objects go into it.',
  required: ['targetRef', 'rules'],
  properties: {
    targetRef: localRefSchema({
      field: 'spec.targetRef',
      description: 'The GitTarget the matching objects are written to, in the same namespace.',
      nameDescription: 'The name of a GitTarget in the same namespace.',
    }),
    rules: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RULES,
      description: `What to mirror: an object is mirrored when any item matches it. 1 to ${MAX_RULES} items.`,
      items: {
        type: 'object',
        required: ['apiGroups', 'resources'],
        description: 'Namespaced resources to mirror, from one namespace or all.',
        properties: {
          ...resourceRuleProperties(),
          sourceNamespace: {
            type: 'string',
            maxLength: 63,
            description:
              "The namespace of the source cluster to watch. Absent: the WatchRule's own namespace. Another " +
              "namespace, or * for every namespace, needs the GitTarget's ClusterProvider to set " +
              `spec.allowAnySourceNamespace; otherwise ${CONDITION_SOURCE_NAMESPACE_AUTHORIZED} is False and ` +
              'nothing is mirrored for the rule.',
            'x-kubernetes-validations': [
              {
                rule: `self == '*' || self.matches('${DNS_LABEL_REGEX}')`,
                message:
                  'spec.rules[].sourceNamespace must be a namespace name (lowercase letters, digits and ' +
                  "'-') or * for every namespace",
              },
            ],
          },
        },
      },
    },
  },
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema(
      `Ready, Reconciling, Stalled, GitTargetReady and ${CONDITION_SOURCE_NAMESPACE_AUTHORIZED}.`,
    ),
    observedGeneration: observedGenerationSchema(),
    scopeFingerprint: {
      type: 'string',
      // 64 items of `index=namespace;` with namespaces of up to 63 characters fit.
      maxLength: 8192,
      description:
        'The namespace each item was resolved to watch, as index=namespace joined by ; ' +
        '(0=team-a;1=team-a-shared); a * or a denied item renders as index= alone. It changes when the ' +
        'scope does.',
    },
  },
});

export const WATCH_RULE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: WATCH_RULE.kind,
  plural: 'watchrules',
  singular: 'watchrule',
  shortNames: ['wr'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Target', type: 'string', jsonPath: '.spec.targetRef.name' },
        conditionColumn(CONDITION_SOURCE_NAMESPACE_AUTHORIZED, 'SourceNSAuthorized'),
        ageColumn(),
      ],
      schema: objectSchema(
        'Which namespaced objects a GitTarget in the same namespace mirrors: by operation, API group, ' +
          "version and resource, from the WatchRule's own namespace unless an item names another.",
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function watchRuleCrd(): KubeObject {
  return customResourceDefinition(WATCH_RULE_DEFINITION);
}
