/** `UserRole`: a user bound to Permissions within a Scope of the same namespace. */
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
} from './schema.ts';

export const USER_ROLE = { apiVersion: API_VERSION, kind: 'UserRole' } as const;

export interface UserRoleSpec {
  /** The user name as the clusters' authenticator reports it (e.g. an OIDC email). */
  readonly user: string;
  /** A Scope in the same namespace. */
  readonly scope: string;
  /** Permission names in the same namespace. */
  readonly permissions: readonly string[];
}

export type UserRole = KubeObject & {
  readonly spec: UserRoleSpec;
  readonly status?: RoleStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = USER_ROLE.kind;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'A user, the Scope to grant in, and the Permissions to grant.',
  required: ['user', 'scope', 'permissions'],
  properties: {
    user: subjectSchema(
      'spec.user',
      'The user name as the authenticator of the clusters reports it, such as an OIDC email.',
    ),
    scope: roleScopeSchema(KIND),
    permissions: rolePermissionsSchema(),
  },
});

export const USER_ROLE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'userroles',
  singular: 'userrole',
  shortNames: ['ur'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: roleColumns('user'),
      schema: objectSchema(
        'Binds a user to Permissions within a Scope of the same namespace, through the plugins the Permissions feed.',
        specSchema(),
        roleStatusSchema(),
      ),
    },
  ],
};

export function userRoleCrd(): KubeObject {
  return customResourceDefinition(USER_ROLE_DEFINITION);
}
