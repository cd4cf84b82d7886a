/**
 * Which resources a rule's items name that the source cluster does not serve in the
 * rule's scope: what the WatchRule and ClusterWatchRule reconcilers report as
 * ResourceNotFound. Read against the cluster the target's ClusterProvider reaches; when
 * that cluster cannot be reached yet, nothing is reported here (the GitTarget says why).
 */
import type { ClusterProvider } from '../api/cluster-provider.ts';
import type { GitTarget } from '../api/git-target.ts';
import { clusterProviderName } from '../domain/authz/index.ts';
import { type AdmittedItem, planStreams } from '../domain/streams.ts';
import type { CompileReads } from '../mirror/compile.ts';

export async function unmatchedResources(
  reads: CompileReads,
  target: GitTarget,
  items: readonly AdmittedItem[],
): Promise<readonly string[]> {
  const provider = (await reads.authz.clusterProvider(clusterProviderName(target))) as
    | ClusterProvider
    | undefined;
  const source = provider ? await reads.sourceClient(provider) : undefined;
  if (!source?.ok) return [];
  return planStreams(items, await reads.catalogue(source.client)).unmatched;
}
