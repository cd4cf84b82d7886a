/**
 * What every reconciler of this operator is handed: the management client, the caches
 * it reads, the model, the client-cluster registry, the plugins, and the §5 intervals
 * (flags, so that tests run in seconds).
 */

import type { Clock, EventRecorder, KubeClient, KubeObject, Reflector } from '@operators/kit';
import type { GroupRole } from '../api/group-role.ts';
import type { Permission } from '../api/permission.ts';
import type { Scope } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import type { UserRole } from '../api/user-role.ts';
import type { ClusterRegistry } from '../clusters/registry.ts';
import type { CapiCluster } from '../domain/cluster-selection.ts';
import type { StorageEngine } from '../model/storage-engine.ts';
import type { Plugin } from '../plugins/plugin.ts';
import type { NamespacePresence } from './namespace-presence.ts';

/** The field manager of every write this operator makes (its server-side apply identity). */
export const FIELD_MANAGER = 'permissions.shturval.tech';

/** The retry and recheck intervals of §5. */
export interface Intervals {
  /** A deleting Permission still referenced by a UserRole or GroupRole is looked at again after this (§5: about a minute). */
  readonly permissionInUseRetryMs: number;
  /** A deleting Scope the model still holds users or groups for (§5: about 5 s). */
  readonly scopeInUseRetryMs: number;
  /** A deleting Tenant waiting for its Scope to go (§5: about 5 s). */
  readonly tenantScopeWaitMs: number;
  /** A namespace-level Scope rechecks that its namespaces exist (§5: about 5 min). */
  readonly scopeNamespaceRecheckMs: number;
  /** A cluster-level Scope recomputes its clusters (§5: up to about 30 min). */
  readonly scopeClusterRecheckMs: number;
  /**
   * Every Permission, UserRole, GroupRole and Tenant is reconciled again this often: a
   * binding or ClusterRole deleted or edited by hand in a client cluster sends us no
   * event, and an RBAC operator that never looks again would leave the drift in place.
   * A resync that finds everything in place writes nothing.
   */
  readonly resyncMs: number;
}

export const DEFAULT_INTERVALS: Intervals = {
  permissionInUseRetryMs: 60_000,
  scopeInUseRetryMs: 5_000,
  tenantScopeWaitMs: 5_000,
  scopeNamespaceRecheckMs: 5 * 60_000,
  scopeClusterRecheckMs: 30 * 60_000,
  resyncMs: 10 * 60_000,
};

export interface Caches {
  readonly permissions: Reflector<Permission>;
  readonly scopes: Reflector<Scope>;
  readonly userRoles: Reflector<UserRole>;
  readonly groupRoles: Reflector<GroupRole>;
  readonly tenants: Reflector<Tenant>;
  readonly clusters: Reflector<CapiCluster>;
}

export interface Deps {
  /** The management cluster, through the manager's client. */
  readonly client: KubeClient;
  readonly recorder: EventRecorder;
  readonly clock: Clock;
  readonly caches: Caches;
  readonly model: StorageEngine;
  readonly registry: ClusterRegistry;
  /** Namespace existence in client clusters, reused for a moment across a Scope's burst of passes. */
  readonly namespaces: NamespacePresence;
  readonly plugins: readonly Plugin[];
  readonly intervals: Intervals;
  /** Where Argo CD runs on the management cluster (its argocd-rbac-cm and AppProjects). */
  readonly argoCdNamespace: string;
}

/** Every object of a cache, or none before it has synced (a read before sync throws). */
export function listOf<T extends KubeObject>(r: Reflector<T>): readonly T[] {
  return r.store.hasSynced() ? (r.store.list() as T[]) : [];
}

/** One object of a cache by namespace and name. */
export function getOf<T extends KubeObject>(r: Reflector<T>, namespace: string, name: string): T | undefined {
  return r.store.hasSynced() ? (r.store.get(`${namespace}/${name}`) as T | undefined) : undefined;
}

export const keyOf = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
