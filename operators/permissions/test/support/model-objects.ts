/**
 * Objects of the five kinds as the model tests and the /bundle bench feed them to the
 * StorageEngine directly (no apiserver): small builders with the fields the model
 * reads, and `fillModel`, the 1,000-role model of the performance target.
 */
import type { Level, PolicyRule } from '../../src/api/common.ts';
import type { GroupRole } from '../../src/api/group-role.ts';
import type { Permission, PermissionPlugins } from '../../src/api/permission.ts';
import type { Scope } from '../../src/api/scope.ts';
import type { Tenant, TenantSpec } from '../../src/api/tenant.ts';
import type { UserRole } from '../../src/api/user-role.ts';
import type { StorageEngine } from '../../src/model/storage-engine.ts';

const API_VERSION = 'permissions.shturval.tech/v1beta1';

function meta(namespace: string, name: string) {
  return { namespace, name, uid: `uid-${namespace}-${name}` };
}

export function permission(
  namespace: string,
  name: string,
  spec: {
    level?: Level;
    granted_cluster_rules?: PolicyRule[];
    platform_rules?: PolicyRule[];
    plugins?: PermissionPlugins;
  },
): Permission {
  return {
    apiVersion: API_VERSION,
    kind: 'Permission',
    metadata: meta(namespace, name),
    spec: { level: 'cluster', ...spec },
  };
}

export function scope(
  namespace: string,
  name: string,
  spec: { level?: Level; namespaces?: string[]; tenant?: string } = {},
): Scope {
  return {
    apiVersion: API_VERSION,
    kind: 'Scope',
    metadata: meta(namespace, name),
    spec: {
      level: spec.level ?? 'cluster',
      ...(spec.namespaces ? { namespaces: spec.namespaces } : {}),
      ...(spec.tenant ? { tenantRef: { name: spec.tenant } } : {}),
    },
  };
}

export function userRole(
  namespace: string,
  name: string,
  user: string,
  scopeName: string,
  permissions: string[],
): UserRole {
  return {
    apiVersion: API_VERSION,
    kind: 'UserRole',
    metadata: meta(namespace, name),
    spec: { user, scope: scopeName, permissions },
  };
}

export function groupRole(
  namespace: string,
  name: string,
  group: string,
  scopeName: string,
  permissions: string[],
  members?: string[],
): GroupRole {
  return {
    apiVersion: API_VERSION,
    kind: 'GroupRole',
    metadata: meta(namespace, name),
    spec: { group, scope: scopeName, permissions, ...(members ? { members } : {}) },
  };
}

export function tenant(namespace: string, name: string, spec: TenantSpec): Tenant {
  return { apiVersion: API_VERSION, kind: 'Tenant', metadata: meta(namespace, name), spec };
}

/** The scale: 1,000 UserRoles over 100 Permissions and 2 client clusters. */
export const SCALE = { roles: 1000, permissions: 100, clusters: 2 } as const;

/**
 * Fills `engine` with `roles` UserRoles (each granting three Permissions in one of
 * two Scopes), `permissions` Permissions of two rules each, and Scopes over
 * `clusters` client clusters (one cluster-level, one namespace-level).
 */
export function fillModel(engine: StorageEngine, size: typeof SCALE = SCALE): void {
  const ns = 'perms';
  const clusters = Array.from({ length: size.clusters }, (_, i) => `fleet/c${i + 1}`);
  for (let i = 0; i < size.permissions; i++) {
    engine.upsertPermission(
      permission(ns, `perm-${i}`, {
        granted_cluster_rules: [
          {
            apiGroups: [''],
            resources: ['pods', 'services', `things-${i}`],
            verbs: ['get', 'list', 'watch'],
          },
          { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'update'] },
        ],
      }),
    );
  }
  engine.upsertScope(scope(ns, 'fleet'), { clusters, paths: clusters.map((c) => `/${c}`) });
  engine.upsertScope(scope(ns, 'teams', { level: 'namespace', namespaces: ['team-a', 'team-b'] }), {
    clusters,
    paths: clusters.flatMap((c) => [`/${c}/team-a`, `/${c}/team-b`]),
  });
  for (let i = 0; i < size.roles; i++) {
    const perms = [0, 1, 2].map((k) => `perm-${(i * 7 + k * 31) % size.permissions}`);
    engine.upsertRole(
      'UserRole',
      userRole(ns, `user-${i}`, `user-${i}@example.com`, i % 2 ? 'teams' : 'fleet', perms),
    );
  }
}
