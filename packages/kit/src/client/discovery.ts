/**
 * Discovery: apiVersion/kind → resource, scope, verbs. One group-version is read the
 * first time one of its kinds is asked for and cached; an unknown kind refreshes that
 * group-version (a CRD may have been installed since), at most once per
 * {@link REFRESH_MIN_INTERVAL_MS} so a typo in a rule cannot hammer the apiserver.
 */
import { ApiError, ApiErrorReason, isApiError } from './errors.ts';
import type { Transport } from './transport.ts';
import { type GroupVersionKind, parseApiVersion, type ResourceInfo } from './types.ts';

const REFRESH_MIN_INTERVAL_MS = 500;

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
}

interface GroupVersionEntry {
  readonly fetchedAt: number;
  readonly kinds: ReadonlyMap<string, ResourceInfo>;
}

export class Discovery {
  private readonly transport: Transport;
  private readonly cache = new Map<string, GroupVersionEntry>();
  private readonly inflight = new Map<string, Promise<GroupVersionEntry>>();

  constructor(transport: Transport) {
    this.transport = transport;
  }

  /**
   * Resolves a kind. Throws an ApiError with reason NotFound, naming the kind, when the
   * server does not serve it (CRD absent or not yet established).
   */
  async resolve(gvk: GroupVersionKind): Promise<ResourceInfo> {
    let entry = this.cache.get(gvk.apiVersion);
    if (!entry) entry = await this.fetch(gvk.apiVersion);
    let info = entry.kinds.get(gvk.kind);
    if (!info && Date.now() - entry.fetchedAt >= REFRESH_MIN_INTERVAL_MS) {
      entry = await this.fetch(gvk.apiVersion);
      info = entry.kinds.get(gvk.kind);
    }
    if (!info) {
      throw new ApiError(
        ApiErrorReason.NotFound,
        404,
        `the server does not serve kind ${gvk.kind} in ${gvk.apiVersion}; is its CRD installed and established?`,
        `discovery ${gvk.apiVersion}/${gvk.kind}`,
      );
    }
    return info;
  }

  /**
   * Every resource the server serves at each group's PREFERRED version (the core group's
   * `v1` included), subresources left out: what a rule naming resources by plural
   * (`apiGroups`, `resources`, `*`) expands against. Reads `/api` and `/apis` each call
   * (a CRD may have been installed since) and each group-version once per cache life.
   * A group-version that fails to answer (an aggregated API down) is left out rather
   * than failing the whole answer, and named in `unavailable`.
   */
  async preferredResources(): Promise<{ resources: ResourceInfo[]; unavailable: string[] }> {
    const core = await this.transport.request<{ versions?: string[] }>({ method: 'GET', path: '/api' });
    const groups = await this.transport.request<{
      groups?: {
        name: string;
        preferredVersion?: { groupVersion: string };
        versions?: { groupVersion: string }[];
      }[];
    }>({ method: 'GET', path: '/apis' });
    const apiVersions = [
      ...(core.versions?.includes('v1') ? ['v1'] : (core.versions ?? []).slice(0, 1)),
      ...(groups.groups ?? []).flatMap((g) => {
        const v = g.preferredVersion?.groupVersion ?? g.versions?.[0]?.groupVersion;
        return v ? [v] : [];
      }),
    ];
    const resources: ResourceInfo[] = [];
    const unavailable: string[] = [];
    await Promise.all(
      apiVersions.map(async (apiVersion) => {
        try {
          const entry = this.cache.get(apiVersion) ?? (await this.fetch(apiVersion));
          resources.push(...entry.kinds.values());
        } catch {
          unavailable.push(apiVersion);
        }
      }),
    );
    resources.sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource));
    return { resources, unavailable: unavailable.sort() };
  }

  /** Forgets everything; the next resolve reads the server again. */
  invalidate(apiVersion?: string): void {
    if (apiVersion) this.cache.delete(apiVersion);
    else this.cache.clear();
  }

  private fetch(apiVersion: string): Promise<GroupVersionEntry> {
    const running = this.inflight.get(apiVersion);
    if (running) return running;
    const p = this.load(apiVersion).finally(() => this.inflight.delete(apiVersion));
    this.inflight.set(apiVersion, p);
    return p;
  }

  private async load(apiVersion: string): Promise<GroupVersionEntry> {
    const { group, version } = parseApiVersion(apiVersion);
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    let resources: ApiResource[] = [];
    try {
      const list = await this.transport.request<{ resources: ApiResource[] }>({ method: 'GET', path });
      resources = list.resources ?? [];
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
    }
    const subresources = new Map<string, string[]>();
    for (const r of resources) {
      const slash = r.name.indexOf('/');
      if (slash > 0) {
        const base = r.name.slice(0, slash);
        subresources.set(base, [...(subresources.get(base) ?? []), r.name.slice(slash + 1)]);
      }
    }
    const kinds = new Map<string, ResourceInfo>();
    for (const r of resources) {
      if (r.name.includes('/')) continue;
      kinds.set(r.kind, {
        group,
        version,
        apiVersion,
        kind: r.kind,
        resource: r.name,
        namespaced: r.namespaced,
        verbs: r.verbs,
        subresources: subresources.get(r.name) ?? [],
      });
    }
    const entry = { fetchedAt: Date.now(), kinds };
    this.cache.set(apiVersion, entry);
    return entry;
  }
}

/** The URL path of a resource collection, or of one object when `name` is given. */
export function resourcePath(
  info: ResourceInfo,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  let p = base;
  if (info.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${info.resource}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}
