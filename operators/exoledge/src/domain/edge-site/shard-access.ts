/**
 * The decider's right to read the shards: a Role granting get, list and watch on
 * ConfigMaps in the shard namespace, bound to the site's decider ServiceAccount (which
 * lives in the site's namespace).
 *
 * Neither can carry an owner reference to the site: the garbage collector ignores a
 * namespaced owner in another namespace. They are labelled instead
 * (`edge.exoledge.io/site`, `edge.exoledge.io/site-namespace`, managed-by) and the
 * finalizer deletes them by that selector, as the seed does for objects a site cannot own.
 */
import type { KubeObject } from '@operators/kit';
import { API_VERSION, RBAC_GROUP, ShardKind } from './kinds.ts';
import { deciderName, shardAccessName, shardLabels } from './names.ts';
import type { SiteRef } from './owner.ts';

function shardObject<T extends Record<string, unknown>>(
  kind: ShardKind,
  site: SiteRef,
  shardNamespace: string,
  body: T,
): KubeObject & T {
  return {
    apiVersion: API_VERSION[kind],
    kind,
    metadata: {
      name: shardAccessName(site.namespace, site.name),
      namespace: shardNamespace,
      labels: shardLabels(site.namespace, site.name),
    },
    ...body,
  };
}

export function shardReaderRole(site: SiteRef, shardNamespace: string) {
  return shardObject(ShardKind.Role, site, shardNamespace, {
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
  });
}

export function shardReaderBinding(site: SiteRef, shardNamespace: string) {
  return shardObject(ShardKind.RoleBinding, site, shardNamespace, {
    roleRef: { apiGroup: RBAC_GROUP, kind: ShardKind.Role, name: shardAccessName(site.namespace, site.name) },
    subjects: [{ kind: 'ServiceAccount', name: deciderName(site.name), namespace: site.namespace }],
  });
}
