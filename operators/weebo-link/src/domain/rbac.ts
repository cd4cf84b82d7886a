/**
 * The Kubernetes privileges weebo-link needs, derived from the rules (RFC 0002,
 * Sécurité): read on source kinds; read, create and patch on target kinds, and delete
 * only where a rule says `then: Delete`. The chart renders the same from its values;
 * a test holds the two equal, and check-rules prints this list.
 */
import type { Rule } from './rules.ts';

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

const READ = ['get', 'list', 'watch'];

/** One entry per (group, resource), verbs merged and sorted, entries sorted: a canonical form. */
export function derivePolicyRules(rules: readonly Rule[]): PolicyRule[] {
  const byResource = new Map<string, Set<string>>();
  const add = (apiVersion: string, resource: string, verbs: readonly string[]): void => {
    const group = apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '';
    const k = `${group}\u0000${resource}`;
    const set = byResource.get(k) ?? new Set<string>();
    for (const v of verbs) set.add(v);
    byResource.set(k, set);
  };
  for (const r of rules) {
    add(r.source.apiVersion, r.source.resource, READ);
    add(r.target.apiVersion, r.target.resource, [...READ, 'create', 'patch']);
    if (r.onRemoval.then === 'Delete') add(r.target.apiVersion, r.target.resource, ['delete']);
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

/** Any ClusterRole's rules in the same canonical form, to compare a rendered chart with {@link derivePolicyRules}. */
export function canonicalPolicyRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const flat: PolicyRule[] = [];
  for (const r of rules)
    for (const g of r.apiGroups)
      for (const res of r.resources) flat.push({ apiGroups: [g], resources: [res], verbs: r.verbs });
  const byResource = new Map<string, Set<string>>();
  for (const r of flat) {
    const k = `${r.apiGroups[0]}\u0000${r.resources[0]}`;
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
