/**
 * How the controllers and the mirror read: the gate LIVE (a GET of the ClusterProvider
 * and of the Namespace, so a revocation is decided on the apiserver's current answer and
 * a failed read is an error, never a stale "allowed"), Secrets live (no cluster-wide
 * Secret cache), everything else from the manager's caches.
 */
import { BY_NAMESPACE, type KubeClient, type Reflector } from '@operators/kit';
import { CLUSTER_PROVIDER, type ClusterProvider } from '../api/cluster-provider.ts';
import type { ClusterWatchRule } from '../api/cluster-watch-rule.ts';
import type { GitProvider } from '../api/git-provider.ts';
import type { GitTarget } from '../api/git-target.ts';
import type { WatchRule } from '../api/watch-rule.ts';
import type { AuthzReader } from '../domain/authz/index.ts';
import type { CatalogueEntry } from '../domain/streams.ts';
import type { CompileReads } from '../mirror/compile.ts';
import type { SourceClients } from '../mirror/source-clients.ts';

export const NAMESPACE_GVK = { apiVersion: 'v1', kind: 'Namespace' } as const;
export const SECRET_GVK = { apiVersion: 'v1', kind: 'Secret' } as const;

export interface Caches {
  readonly targets: Reflector<GitTarget>;
  readonly gitProviders: Reflector<GitProvider>;
  readonly watchRules: Reflector<WatchRule>;
  readonly clusterWatchRules: Reflector<ClusterWatchRule>;
}

/** The gate's reader: live GETs in the control cluster. */
export function liveAuthzReader(client: KubeClient): AuthzReader {
  return {
    clusterProvider: (name) => client.find<ClusterProvider>(CLUSTER_PROVIDER, name),
    async namespaceLabels(name) {
      const ns = await client.find(NAMESPACE_GVK, name);
      return ns ? (ns.metadata.labels ?? {}) : undefined;
    },
  };
}

export function compileReads(client: KubeClient, caches: Caches, sources: SourceClients): CompileReads {
  return {
    authz: liveAuthzReader(client),
    gitProvider: (namespace, name) =>
      caches.gitProviders.store.get(`${namespace}/${name}`) as GitProvider | undefined,
    gitTargets: () => caches.targets.store.list() as GitTarget[],
    watchRules: (namespace) => caches.watchRules.store.byIndex(BY_NAMESPACE, namespace) as WatchRule[],
    clusterWatchRules: () => caches.clusterWatchRules.store.list() as ClusterWatchRule[],
    secret: (namespace, name) => client.find(SECRET_GVK, name, namespace),
    sourceClient: (provider) => sources.forProvider(provider),
    catalogue: async (c): Promise<readonly CatalogueEntry[]> =>
      (await c.discovery.preferredResources()).resources,
  };
}
