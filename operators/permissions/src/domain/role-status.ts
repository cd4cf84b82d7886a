/**
 * RoleStatus arithmetic for UserRoles and GroupRoles: the nested map
 * permission → cluster (or `platform`) → plugin → PluginObject, merged from one pass's
 * plugin results, cleared of what no plugin confirmed, summarised into `ready` and a
 * message, and compared with the live status so an unchanged status is never written.
 */
import type { PluginApplyStatus, PluginObject, RoleStatus } from '../api/role-status.ts';

/** The nested map of a RoleStatus. */
export type RolePermissions = NonNullable<RoleStatus['permissions']>;

/** One plugin's answer for one (permission, cluster). */
export interface PluginResult {
  readonly permission: string;
  readonly cluster: string;
  readonly plugin: string;
  readonly object: PluginObject;
}

/** Statuses that count as done: Skipped is a paused cluster, left alone on purpose. */
const DONE: readonly PluginApplyStatus[] = ['Applied', 'Skipped'];

/** How many unfinished entries the message names before it only counts the rest. */
export const MAX_ENTRIES_NAMED = 3;

type Mutable = Record<string, Record<string, Record<string, PluginObject>>>;

function copy(permissions: RolePermissions | undefined): Mutable {
  const out: Mutable = {};
  for (const [perm, clusters] of Object.entries(permissions ?? {})) {
    out[perm] = {};
    for (const [cluster, plugins] of Object.entries(clusters)) out[perm][cluster] = { ...plugins };
  }
  return out;
}

/**
 * Every entry of `previous` with status `Undefined` (its message and objects kept, so
 * whoever removes it still knows what was written): the start of a pass, after which
 * whatever no plugin answers for again is no longer wanted.
 */
export function markUndefined(previous: RolePermissions | undefined): RolePermissions {
  const out = copy(previous);
  for (const clusters of Object.values(out)) {
    for (const plugins of Object.values(clusters)) {
      for (const [plugin, obj] of Object.entries(plugins)) plugins[plugin] = { ...obj, status: 'Undefined' };
    }
  }
  return out;
}

/** `previous` with each result put in its place (a later result for the same place wins). Nothing is mutated. */
export function mergePluginResults(
  previous: RolePermissions | undefined,
  results: readonly PluginResult[],
): RolePermissions {
  const out = copy(previous);
  for (const r of results) {
    out[r.permission] ??= {};
    const clusters = out[r.permission] as Record<string, Record<string, PluginObject>>;
    clusters[r.cluster] ??= {};
    (clusters[r.cluster] as Record<string, PluginObject>)[r.plugin] = r.object;
  }
  return out;
}

/** Every entry that is still `Undefined`, as results (what the pass must delete). */
export function undefinedEntries(permissions: RolePermissions | undefined): PluginResult[] {
  const out: PluginResult[] = [];
  for (const [permission, clusters] of Object.entries(permissions ?? {})) {
    for (const [cluster, plugins] of Object.entries(clusters)) {
      for (const [plugin, object] of Object.entries(plugins)) {
        if (object.status === 'Undefined') out.push({ permission, cluster, plugin, object });
      }
    }
  }
  return out;
}

/**
 * The status without its `Undefined` entries, and without clusters and permissions left
 * empty by that: §5's "success clears the undefined plugin statuses". A status with no
 * map keeps having none.
 */
export function clearUndefined(status: RoleStatus): RoleStatus {
  if (status.permissions === undefined) return status;
  const out: Mutable = {};
  for (const [perm, clusters] of Object.entries(status.permissions)) {
    const keptClusters: Record<string, Record<string, PluginObject>> = {};
    for (const [cluster, plugins] of Object.entries(clusters)) {
      const kept = Object.fromEntries(Object.entries(plugins).filter(([, o]) => o.status !== 'Undefined'));
      if (Object.keys(kept).length > 0) keptClusters[cluster] = kept;
    }
    if (Object.keys(keptClusters).length > 0) out[perm] = keptClusters;
  }
  return { ...status, permissions: out };
}

/** Every (permission, cluster, plugin) in a fixed order: by permission, then cluster, then plugin. */
function entries(status: RoleStatus): PluginResult[] {
  const out: PluginResult[] = [];
  for (const permission of Object.keys(status.permissions ?? {}).sort()) {
    const clusters = status.permissions?.[permission] ?? {};
    for (const cluster of Object.keys(clusters).sort()) {
      const plugins = clusters[cluster] ?? {};
      for (const plugin of Object.keys(plugins).sort()) {
        const object = plugins[plugin];
        if (object) out.push({ permission, cluster, plugin, object });
      }
    }
  }
  return out;
}

/** Ready iff every PluginObject is Applied or Skipped (an empty map is ready: nothing is owed). */
export function roleReady(status: RoleStatus): boolean {
  return entries(status).every((e) => DONE.includes(e.object.status));
}

/**
 * The first unfinished entries, `<permission> in <cluster> (<plugin>): <status>[: message]`,
 * `; `-separated, then how many more; the empty string when everything is done.
 */
export function roleMessage(status: RoleStatus): string {
  const open = entries(status).filter((e) => !DONE.includes(e.object.status));
  const named = open
    .slice(0, MAX_ENTRIES_NAMED)
    .map(
      (e) =>
        `${e.permission} in ${e.cluster} (${e.plugin}): ${e.object.status}` +
        (e.object.message ? `: ${e.object.message}` : ''),
    );
  const more = open.length - named.length;
  return [...named, ...(more > 0 ? [`and ${more} more`] : [])].join('; ');
}

/** JSON with object keys sorted and undefined members dropped: equal for equal content. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  });
}

/**
 * Whether two statuses say the same thing: key order and undefined members do not
 * matter; list order does (plugins report their objects in a fixed order).
 */
export function sameRoleStatus(a: RoleStatus | undefined, b: RoleStatus | undefined): boolean {
  return canonical(a ?? {}) === canonical(b ?? {});
}
