/**
 * The Kubernetes privileges weebo-link needs, derived from the rules (RFC 0002,
 * Sécurité: "un weebo-link compromis peut créer, verrouiller ou déverrouiller des comptes
 * dans mail", and nowhere else), by namespace:
 * - in each namespace a rule reads sources from: get/list/watch on its source kind;
 * - in each rule's target namespace: get/list/watch/create/patch on its target kind, and
 *   delete only where a rule says `then: Delete`;
 * - Events (create/patch) in both: refusals are reported on the source, departures on
 *   the target.
 * A rule whose `source.namespaces` is `["*"]` reads (and reports on) its sources in every
 * namespace: those grants go under the key `*` (`ALL_NAMESPACES`), a ClusterRole. Nothing else is
 * cluster-wide. weebo-link's own namespace (the rules ConfigMap, its Events, the Lease) is
 * the chart's fixed Role, not derived from the rules.
 *
 * The chart renders the same from its values; a test holds the two equal, and check-rules
 * prints this.
 */
import type { Rule } from './rules.ts';

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/**
 * Namespace → the rules of its Role (`*` → the ClusterRole's), in the
 * canonical form of {@link canonicalPolicyRules}.
 */
export type DerivedRbac = Readonly<Record<string, readonly PolicyRule[]>>;

const READ = ['get', 'list', 'watch'];
/** The kit's recorder creates an Event, then patches its series. */
const EVENT_WRITE = ['create', 'patch'];
const EVENTS = { apiVersion: 'events.k8s.io/v1', resource: 'events' };

/** The privileges the rules need, by namespace (see the module comment). */
export function derivePolicyRules(rules: readonly Rule[]): DerivedRbac {
  const byNamespace = new Map<string, PolicyRule[]>();
  const add = (namespace: string, apiVersion: string, resource: string, verbs: readonly string[]): void => {
    const group = apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '';
    const list = byNamespace.get(namespace) ?? [];
    list.push({ apiGroups: [group], resources: [resource], verbs });
    byNamespace.set(namespace, list);
  };
  for (const r of rules) {
    for (const ns of r.source.namespaces) {
      add(ns, r.source.apiVersion, r.source.resource, READ);
      add(ns, EVENTS.apiVersion, EVENTS.resource, EVENT_WRITE);
    }
    const write = [...READ, 'create', 'patch', ...(r.onRemoval.then === 'Delete' ? ['delete'] : [])];
    add(r.target.namespace, r.target.apiVersion, r.target.resource, write);
    add(r.target.namespace, EVENTS.apiVersion, EVENTS.resource, EVENT_WRITE);
  }
  return Object.fromEntries(
    [...byNamespace.keys()].sort().map((ns) => [ns, canonicalPolicyRules(byNamespace.get(ns) ?? [])]),
  );
}

/**
 * Any Role's or ClusterRole's rules in one canonical form, to compare a rendered chart
 * with {@link derivePolicyRules}: one entry per (group, resource), verbs merged and
 * sorted, entries sorted.
 */
export function canonicalPolicyRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const byResource = new Map<string, Set<string>>();
  for (const r of rules)
    for (const g of r.apiGroups)
      for (const res of r.resources) {
        const k = `${g}\u0000${res}`;
        const set = byResource.get(k) ?? new Set<string>();
        for (const v of r.verbs) set.add(v);
        byResource.set(k, set);
      }
  return [...byResource.entries()]
    .map(([k, verbs]) => {
      const [group, resource] = k.split('\u0000') as [string, string];
      return { apiGroups: [group], resources: [resource], verbs: [...verbs].sort() };
    })
    .sort((a, b) =>
      `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`),
    );
}

/**
 * The grants of rendered Roles and a ClusterRole named `name` (the chart's
 * `<release namespace>-weebo-link`), in {@link derivePolicyRules}'s form: by namespace,
 * `*` for the ClusterRole. What a test compares with the derivation.
 */
export function grantsOf(
  objects: readonly { kind?: string; metadata: { name?: string; namespace?: string }; rules?: unknown }[],
  name: string,
): DerivedRbac {
  const byNamespace = new Map<string, PolicyRule[]>();
  for (const o of objects) {
    if (o.metadata.name !== name || (o.kind !== 'Role' && o.kind !== 'ClusterRole')) continue;
    const ns = o.kind === 'ClusterRole' ? '*' : (o.metadata.namespace ?? '');
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), ...((o.rules ?? []) as PolicyRule[])]);
  }
  return Object.fromEntries(
    [...byNamespace.keys()].sort().map((ns) => [ns, canonicalPolicyRules(byNamespace.get(ns) ?? [])]),
  );
}
