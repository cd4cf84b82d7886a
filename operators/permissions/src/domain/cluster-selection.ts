/**
 * Which Cluster API clusters are client clusters, and which of them a Permission or a
 * Scope targets. Pure: Cluster objects in, ids out.
 *
 * Only clusters whose control plane is ready are selected: writing into a cluster that
 * is still being provisioned would fail, and it is picked up when it becomes ready (the
 * Cluster watch re-reconciles). Paused clusters are still selected here; skipping them
 * is the role controller's decision (§5), and it needs to know they are in the Scope.
 */
import { convertLabelSelector, type KubeObject, type SelectorConversion } from '@operators/kit';
import type { ClusterTargets } from '../api/common.ts';
import type { ClusterSelector } from '../api/permission.ts';

/** One condition of a Cluster's v1beta2 status (metav1.Condition). */
export interface CapiCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
}

/**
 * The fields of a Cluster API `Cluster` (`cluster.x-k8s.io/v1beta2`) this operator reads.
 * `controlPlaneReady` is the v1beta1 field: absent from v1beta2 objects, kept so that an
 * object shaped the old way is still read rightly.
 */
export type CapiCluster = KubeObject & {
  readonly spec?: {
    readonly paused?: boolean;
    readonly controlPlaneEndpoint?: { readonly host?: string; readonly port?: number };
  };
  readonly status?: {
    readonly conditions?: readonly CapiCondition[];
    readonly initialization?: {
      readonly controlPlaneInitialized?: boolean;
      readonly infrastructureProvisioned?: boolean;
    };
    readonly controlPlaneReady?: boolean;
    readonly phase?: string;
  };
};

/** The v1beta2 condition that says the control plane serves requests. */
export const CONTROL_PLANE_AVAILABLE = 'ControlPlaneAvailable';

/** `<namespace>/<name>`: how Scopes, statuses and the model name a client cluster. */
export function clusterId(cluster: KubeObject): string {
  return `${cluster.metadata.namespace ?? ''}/${cluster.metadata.name ?? ''}`;
}

/** The namespace and name of a cluster id, or undefined when `id` is not `<namespace>/<name>`. */
export function parseClusterId(id: string): { namespace: string; name: string } | undefined {
  const slash = id.indexOf('/');
  if (slash <= 0 || slash === id.length - 1 || id.indexOf('/', slash + 1) >= 0) return undefined;
  return { namespace: id.slice(0, slash), name: id.slice(slash + 1) };
}

/**
 * Whether the cluster's control plane accepts requests. The most specific signal present
 * decides: the v1beta2 `ControlPlaneAvailable` condition when it is True or False (so a
 * control plane that was initialised once and is down now is not ready); otherwise
 * `status.initialization.controlPlaneInitialized` (v1beta2; the condition may be missing
 * or Unknown while Cluster API has not looked yet); otherwise the v1beta1
 * `status.controlPlaneReady`.
 */
export function clusterReady(cluster: CapiCluster): boolean {
  const status = cluster.status;
  const available = status?.conditions?.find((c) => c.type === CONTROL_PLANE_AVAILABLE);
  if (available?.status === 'True') return true;
  if (available?.status === 'False') return false;
  const initialized = status?.initialization?.controlPlaneInitialized;
  if (initialized !== undefined) return initialized === true;
  return status?.controlPlaneReady === true;
}

/** `spec.paused`: Cluster API and this operator's UserRoles leave the cluster alone. */
export function clusterPaused(cluster: CapiCluster): boolean {
  return cluster.spec?.paused === true;
}

/**
 * A Permission's `clusterSelector` as a matcher. Unlike a bare metav1.LabelSelector,
 * an absent selector means every cluster (the Permission narrows nothing); `{}` also
 * means every cluster. A selector the apiserver would not convert is a refusal, with why.
 */
export function permissionClusterSelector(selector: ClusterSelector | undefined): SelectorConversion {
  return convertLabelSelector(selector ?? {});
}

export interface SelectOptions {
  /**
   * Match by labels only, ready or not: "does this cluster still belong to the
   * Permission?", so that a cluster going unready keeps what it holds.
   */
  readonly ignoreReadiness?: boolean;
}

/**
 * The clusters a Permission's `granted_cluster_rules` go to: ready clusters whose labels
 * match its selector, sorted by id. An unconvertible selector selects none (the
 * controller reports it: see {@link permissionClusterSelector}).
 */
export function selectForPermission(
  clusters: readonly CapiCluster[],
  selector: ClusterSelector | undefined,
  opts: SelectOptions = {},
): CapiCluster[] {
  const conversion = permissionClusterSelector(selector);
  if (!conversion.ok) return [];
  return clusters
    .filter(
      (c) => (opts.ignoreReadiness || clusterReady(c)) && conversion.selector.matches(c.metadata.labels),
    )
    .sort(byId);
}

/** What a Scope's cluster targets come to. */
export interface ScopeSelection {
  /** Ready clusters that are targets, by id, sorted. */
  readonly selected: string[];
  /** Ids the Scope names that have no Cluster object, in the Scope's order. */
  readonly unknown: string[];
  /** Ids the Scope names whose Cluster exists but is not ready, in the Scope's order. */
  readonly notReady: string[];
}

/**
 * The clusters of a Scope: ready clusters that are among `targets.ids` (when it names
 * any) and carry every one of `targets.annotations` with exactly that value (when it
 * has any). An empty list or map narrows nothing, as an absent one. Named ids that do
 * not exist or are not ready are returned apart, for the Scope's status.
 */
export function selectForScope(clusters: readonly CapiCluster[], targets: ClusterTargets): ScopeSelection {
  const ids = targets.ids && targets.ids.length > 0 ? new Set(targets.ids) : undefined;
  const wanted = Object.entries(targets.annotations ?? {});
  const byIdMap = new Map(clusters.map((c) => [clusterId(c), c]));
  const selected = [...byIdMap.entries()]
    .filter(([id, c]) => {
      if (ids && !ids.has(id)) return false;
      if (!carries(c, wanted)) return false;
      return clusterReady(c);
    })
    .map(([id]) => id)
    .sort();
  const unknown: string[] = [];
  const notReady: string[] = [];
  for (const id of ids ?? []) {
    const c = byIdMap.get(id);
    if (c === undefined) unknown.push(id);
    else if (!clusterReady(c)) notReady.push(id);
  }
  return { selected, unknown, notReady };
}

function carries(cluster: CapiCluster, wanted: readonly (readonly [string, string])[]): boolean {
  const annotations = cluster.metadata.annotations ?? {};
  return wanted.every(([k, v]) => Object.hasOwn(annotations, k) && annotations[k] === v);
}

function byId(a: CapiCluster, b: CapiCluster): number {
  const x = clusterId(a);
  const y = clusterId(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
