/**
 * `Tenant`: a slice of clusters and namespaces with admins and members. It owns a
 * generated Scope and the tenant-get / tenant-edit Roles; child tenants (spec.parent)
 * get child Scopes.
 */
import {
  type Condition,
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type ClusterTargets, GROUP, type LocalObjectRef, VERSION } from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  clusterTargetsSchema,
  conditionColumn,
  conditionsSchema,
  localRefSchema,
  MAX_NAMES,
  namespaceNameSchema,
  objectNameSchema,
  objectSchema,
  observedGenerationSchema,
  subjectsSchema,
} from './schema.ts';

export const TENANT = { apiVersion: API_VERSION, kind: 'Tenant' } as const;

/** The condition a Tenant carries: True once its Scope, roles and model entry exist. */
export const TENANT_CREATED = 'TenantCreated';

export interface TenantSpec {
  /** A parent Tenant in the same namespace. */
  readonly parent?: string;
  readonly clusters?: ClusterTargets;
  readonly namespaces?: readonly string[];
  /** Bound to tenant-edit. */
  readonly admins?: readonly string[];
  /** Bound to tenant-get. */
  readonly members?: readonly string[];
}

export interface TenantStatus {
  readonly conditions?: readonly Condition[];
  readonly scopeRef?: LocalObjectRef;
  readonly roles?: { readonly get: string; readonly edit: string };
  readonly observedGeneration?: number;
}

export type Tenant = KubeObject & {
  readonly spec: TenantSpec;
  readonly status?: TenantStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = TENANT.kind;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'The clusters and namespaces of the tenant, its admins and members, and its parent. Whether it has ' +
    'members is checked by the admission webhook.',
  properties: {
    parent: objectNameSchema(
      'spec.parent',
      'A parent Tenant in the same namespace, whose Scope encloses this one. Immutable: delete and recreate ' +
        'the Tenant to move it.',
    ),
    clusters: clusterTargetsSchema(
      'spec.clusters',
      'The client clusters of the tenant, by id and/or annotations.',
    ),
    namespaces: {
      type: 'array',
      maxItems: MAX_NAMES,
      'x-kubernetes-list-type': 'set',
      description: 'The namespaces of the tenant, in every one of its clusters.',
      items: namespaceNameSchema('spec.namespaces', 'A namespace name.'),
    },
    admins: subjectsSchema('spec.admins', 'Users bound to the tenant-edit role of the tenant.'),
    members: subjectsSchema('spec.members', 'Users bound to the tenant-get role of the tenant.'),
  },
  'x-kubernetes-validations': [
    {
      // On the spec rather than on parent, so that adding or removing a parent is refused too.
      rule: 'has(self.parent) == has(oldSelf.parent) && (!has(self.parent) || self.parent == oldSelf.parent)',
      message:
        'spec.parent is immutable: it cannot be added, removed or changed; delete and recreate the Tenant',
      fieldPath: '.parent',
    },
    {
      // The generated Scope's level follows from whether the tenant has namespaces, and a
      // Scope's level is immutable: flipping between none and some could never be applied.
      rule: '(has(self.namespaces) && size(self.namespaces) > 0) == (has(oldSelf.namespaces) && size(oldSelf.namespaces) > 0)',
      message:
        'spec.namespaces cannot change between none and some: the Tenant Scope level (cluster or namespace) would change, and a Scope level is immutable; delete and recreate the Tenant',
      fieldPath: '.namespaces',
    },
  ],
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator created for the tenant.',
  properties: {
    conditions: conditionsSchema(
      `${TENANT_CREATED}: its Scope, roles and model entry exist.`,
      TENANT_CREATED,
    ),
    scopeRef: localRefSchema({
      field: 'status.scopeRef',
      description: 'The Scope generated for the tenant.',
      nameDescription: 'The name of the Scope, in the same namespace.',
    }),
    roles: {
      type: 'object',
      required: ['get', 'edit'],
      description: 'The Roles created for the tenant, in its namespace.',
      properties: {
        get: { type: 'string', maxLength: 253, description: 'The tenant-get Role, bound to the members.' },
        edit: { type: 'string', maxLength: 253, description: 'The tenant-edit Role, bound to the admins.' },
      },
    },
    observedGeneration: observedGenerationSchema(),
  },
});

export const TENANT_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'tenants',
  singular: 'tenant',
  shortNames: ['tenant'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn(TENANT_CREATED, 'Created'),
        { name: 'Parent', type: 'string', jsonPath: '.spec.parent' },
        { name: 'Scope', type: 'string', jsonPath: '.status.scopeRef.name' },
        ageColumn(),
      ],
      schema: objectSchema(
        'A slice of clusters and namespaces with admins and members. It owns a generated Scope and the ' +
          'tenant-get and tenant-edit Roles; child tenants get child Scopes.',
        specSchema(),
        statusSchema(),
        [
          {
            rule: '!has(self.spec.parent) || self.spec.parent != self.metadata.name',
            message: 'spec.parent must not name the Tenant itself',
            fieldPath: '.spec.parent',
          },
        ],
      ),
    },
  ],
};

export function tenantCrd(): KubeObject {
  return customResourceDefinition(TENANT_DEFINITION);
}
