/** `GroupRole`: a group claim bound to Permissions within a Scope of the same namespace. */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, GROUP, VERSION } from './common.ts';
import type { RoleStatus } from './role-status.ts';
import {
  CATEGORIES,
  objectSchema,
  roleColumns,
  rolePermissionsSchema,
  roleScopeSchema,
  roleStatusSchema,
  subjectSchema,
  subjectsSchema,
} from './schema.ts';

export const GROUP_ROLE = { apiVersion: API_VERSION, kind: 'GroupRole' } as const;

export interface GroupRoleSpec {
  /** The group claim as the clusters' authenticator reports it. */
  readonly group: string;
  readonly scope: string;
  readonly permissions: readonly string[];
  /** The group's members, for plugins whose objects are per user (Kubeflow). */
  readonly members?: readonly string[];
}

export type GroupRole = KubeObject & {
  readonly spec: GroupRoleSpec;
  readonly status?: RoleStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = GROUP_ROLE.kind;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'A group claim, the Scope to grant in, and the Permissions to grant.',
  required: ['group', 'scope', 'permissions'],
  properties: {
    group: subjectSchema('spec.group', 'The group claim as the authenticator of the clusters reports it.'),
    scope: roleScopeSchema(KIND),
    permissions: rolePermissionsSchema(),
    members: subjectsSchema(
      'spec.members',
      'The members of the group, for plugins whose objects are per user (Kubeflow); others bind the group itself.',
    ),
  },
});

export const GROUP_ROLE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'grouproles',
  singular: 'grouprole',
  shortNames: ['gr'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: roleColumns('group'),
      schema: objectSchema(
        'Binds a group claim to Permissions within a Scope of the same namespace, through the plugins the Permissions feed.',
        specSchema(),
        roleStatusSchema(),
      ),
    },
  ],
};

export function groupRoleCrd(): KubeObject {
  return customResourceDefinition(GROUP_ROLE_DEFINITION);
}
