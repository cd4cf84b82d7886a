/**
 * `Scope`: where grants land. A level and its target: client clusters by id or
 * annotation, namespaces of them, a tenant. UserRoles and GroupRoles name one.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import {
  API_VERSION,
  type ClusterTargets,
  GROUP,
  type Level,
  type LocalObjectRef,
  VERSION,
} from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  clusterTargetsSchema,
  immutableRule,
  levelColumn,
  levelSchema,
  localRefSchema,
  MAX_NAMES,
  messageColumn,
  namespaceNameSchema,
  nonEmpty,
  objectSchema,
  observedGenerationSchema,
  readyColumn,
} from './schema.ts';

export const SCOPE = { apiVersion: API_VERSION, kind: 'Scope' } as const;

export interface ScopeSpec {
  readonly level: Level;
  /** cluster and namespace levels: which client clusters. */
  readonly clusters?: ClusterTargets;
  /** Required at (and only at) the namespace level. */
  readonly namespaces?: readonly string[];
  /** Set on Scopes a Tenant generates. */
  readonly tenantRef?: LocalObjectRef;
  /** The enclosing Scope (a parent tenant's); used for paths. */
  readonly parentScope?: LocalObjectRef;
}

/** Whether one namespace of the Scope exists in one target cluster. */
export interface ObjectStatus {
  readonly cluster: string;
  readonly namespace: string;
  readonly exists: boolean;
  readonly message?: string;
}

export interface ScopeStatus {
  readonly ready?: boolean;
  /** The client clusters the Scope selects now (ids). */
  readonly clusters?: readonly string[];
  /** Permissions bound in this Scope by UserRoles and GroupRoles (names). */
  readonly permissions?: readonly string[];
  /** `/<tenant path>/<cluster>/<namespace>` for each target. */
  readonly paths?: readonly string[];
  readonly objectsStatus?: readonly ObjectStatus[];
  readonly message?: string;
  readonly observedGeneration?: number;
}

export type Scope = KubeObject & {
  readonly spec: ScopeSpec;
  readonly status?: ScopeStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = SCOPE.kind;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'A level and its target: the management cluster (platform), client clusters (cluster), or namespaces of ' +
    'client clusters (namespace).',
  required: ['level'],
  properties: {
    level: {
      ...levelSchema(
        'Where grants in this Scope land. Immutable: delete and recreate the Scope to change it.',
      ),
      'x-kubernetes-validations': [immutableRule('spec.level', KIND)],
    },
    clusters: clusterTargetsSchema(
      'spec.clusters',
      'Levels cluster and namespace: the client clusters, by id and/or annotations. Not for level platform.',
    ),
    namespaces: {
      type: 'array',
      maxItems: MAX_NAMES,
      'x-kubernetes-list-type': 'set',
      description:
        'Level namespace (required there, refused elsewhere): the namespaces, in every target cluster.',
      items: namespaceNameSchema('spec.namespaces', 'A namespace name.'),
    },
    tenantRef: localRefSchema({
      field: 'spec.tenantRef',
      description: 'The Tenant that generated this Scope; set by the operator on the Scopes it generates.',
      nameDescription: 'The name of a Tenant in the same namespace.',
    }),
    parentScope: localRefSchema({
      field: 'spec.parentScope',
      description: 'The enclosing Scope (a parent Tenant Scope), which the paths descend from.',
      nameDescription: 'The name of a Scope in the same namespace.',
    }),
  },
  'x-kubernetes-validations': [
    {
      rule: `self.level != 'namespace' || ${nonEmpty('namespaces')}`,
      message: 'spec.namespaces must name at least one namespace at level namespace',
      fieldPath: '.namespaces',
      reason: 'FieldValueRequired',
    },
    {
      rule: `self.level == 'namespace' || !has(self.namespaces)`,
      message: 'spec.namespaces is only for level namespace: remove it, or set level namespace',
      fieldPath: '.namespaces',
      reason: 'FieldValueForbidden',
    },
    {
      rule: `self.level != 'platform' || !has(self.clusters)`,
      message: 'spec.clusters is not for level platform: a platform Scope is the management cluster',
      fieldPath: '.clusters',
      reason: 'FieldValueForbidden',
    },
  ],
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'The clusters, permissions, paths and namespaces the operator found for this Scope.',
  properties: {
    ready: {
      type: 'boolean',
      description: 'True when the targets were computed and every namespace exists.',
    },
    clusters: {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      description: 'The ids (namespace/name) of the client clusters the Scope selects now.',
      items: { type: 'string', maxLength: 317 },
    },
    permissions: {
      type: 'array',
      'x-kubernetes-list-type': 'set',
      description: 'The Permissions bound in this Scope by UserRoles and GroupRoles.',
      items: { type: 'string', maxLength: 253 },
    },
    paths: {
      type: 'array',
      description: 'One path per target: /<tenant path>/<cluster>/<namespace>.',
      items: { type: 'string', maxLength: 4096 },
    },
    objectsStatus: {
      type: 'array',
      description: 'Level namespace: whether each namespace exists in each target cluster.',
      items: {
        type: 'object',
        required: ['cluster', 'namespace', 'exists'],
        properties: {
          cluster: { type: 'string', maxLength: 317, description: 'The cluster id.' },
          namespace: { type: 'string', maxLength: 63, description: 'The namespace.' },
          exists: { type: 'boolean', description: 'Whether the namespace exists there.' },
          message: {
            type: 'string',
            maxLength: 32768,
            description: 'Why it could not be checked, for humans.',
          },
        },
      },
    },
    message: { type: 'string', maxLength: 32768, description: 'Why not ready, for humans.' },
    observedGeneration: observedGenerationSchema(),
  },
});

export const SCOPE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'scopes',
  singular: 'scope',
  shortNames: ['scope'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        readyColumn(),
        levelColumn(),
        { name: 'Tenant', type: 'string', jsonPath: '.spec.tenantRef.name' },
        { name: 'Clusters', type: 'string', jsonPath: '.status.clusters', priority: 1 },
        messageColumn(),
        ageColumn(),
      ],
      schema: objectSchema(
        'Where grants land: a level and its target (client clusters by id or annotation, namespaces, a tenant). ' +
          'UserRoles and GroupRoles name one.',
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function scopeCrd(): KubeObject {
  return customResourceDefinition(SCOPE_DEFINITION);
}
