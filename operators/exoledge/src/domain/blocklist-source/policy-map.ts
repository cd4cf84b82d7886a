/**
 * Cilium's policy map: 65,536 entries per endpoint, shared by every policy that selects
 * it. Each enforced source checks its own budget at admission (`maxEntries` ≤ 65,536),
 * but two enforced sources protecting the same endpoints share one map: together they
 * can overflow it, and Cilium then fails to enforce the policy for that endpoint.
 *
 * The rule, pure: enforced sources are grouped by their `podSelector`, normalised so that
 * one selector written two ways (`matchLabels` or `In` with one value, any order) is one
 * group. In a group, sources are ordered by creationTimestamp, then name: the older keep
 * their place. A source is admitted when its planned count plus the counts of the older
 * sources of its group fit in the map; otherwise it publishes nothing new.
 *
 * Caveat: selectors that overlap without being equal (`{}` and `app: gateway`, or two
 * selectors sharing a pod) are not summed: whether they select the same endpoints
 * depends on the pods' labels, which the operator does not read. Give the sources that
 * protect the same endpoints the same `podSelector`, so that they are counted together.
 */
import {
  type BlocklistSource,
  Channel,
  CILIUM_POLICY_MAP_ENTRIES,
  type LabelSelector,
} from '../../api/blocklist-source.ts';
import { resolveSpec } from './spec.ts';

/** One enforced source's claim on the policy map of the endpoints it protects. */
export interface PolicyMapClaim {
  readonly name: string;
  /** `metadata.creationTimestamp`, as the apiserver writes it (RFC 3339). */
  readonly createdAt: string;
  /** Entries it holds (others: published) or would hold (the source deciding: planned). */
  readonly entries: number;
}

export type PolicyMapDecision =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      /** The older sources of the group, oldest first, with what they hold. */
      readonly older: readonly PolicyMapClaim[];
      /** Their sum plus this source's planned entries. */
      readonly total: number;
      readonly limit: number;
    };

/** A claim without a creation time (never from the apiserver) is the youngest. */
function createdMs(c: PolicyMapClaim): number {
  const t = Date.parse(c.createdAt);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/** Whether `a` came before `b`: created earlier, or at the same second with a smaller name. */
export function olderThan(a: PolicyMapClaim, b: PolicyMapClaim): boolean {
  const ta = createdMs(a);
  const tb = createdMs(b);
  if (ta !== tb) return ta < tb;
  return a.name < b.name;
}

/**
 * Whether `self` fits in the map beside `peers` (the other sources of its group; the
 * caller groups them). Only the older peers count: a younger source never takes an
 * older one's place. Pure and deterministic.
 */
export function admitToPolicyMap(
  self: PolicyMapClaim,
  peers: readonly PolicyMapClaim[],
  limit: number = CILIUM_POLICY_MAP_ENTRIES,
): PolicyMapDecision {
  const older = peers.filter((p) => p.name !== self.name && olderThan(p, self));
  older.sort((a, b) => (olderThan(a, b) ? -1 : olderThan(b, a) ? 1 : 0));
  const total = older.reduce((sum, p) => sum + p.entries, self.entries);
  return total <= limit ? { admitted: true } : { admitted: false, older, total, limit };
}

/**
 * A selector as one canonical string: two selectors that are the same requirement
 * written differently get the same key. `matchLabels` become `In` with one value; the
 * `In` values of one key intersect, the `NotIn` values unite; an `Exists` implied by an
 * `In` on the same key goes; values and requirements are sorted.
 */
export function selectorKey(selector: LabelSelector): string {
  const inValues = new Map<string, Set<string>>();
  const notIn = new Map<string, Set<string>>();
  const exists = new Set<string>();
  const absent = new Set<string>();
  const addIn = (key: string, values: readonly string[]): void => {
    const held = inValues.get(key);
    inValues.set(key, held ? new Set(values.filter((v) => held.has(v))) : new Set(values));
  };
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) addIn(key, [value]);
  for (const e of selector.matchExpressions ?? []) {
    switch (e.operator) {
      case 'In':
        addIn(e.key, e.values ?? []);
        break;
      case 'NotIn': {
        const held = notIn.get(e.key) ?? new Set<string>();
        for (const v of e.values ?? []) held.add(v);
        notIn.set(e.key, held);
        break;
      }
      case 'Exists':
        exists.add(e.key);
        break;
      case 'DoesNotExist':
        absent.add(e.key);
        break;
      default:
        return e.operator satisfies never;
    }
  }
  const requirements: string[][] = [];
  const sorted = (values: Set<string>) => [...values].sort();
  for (const [key, values] of inValues) requirements.push([key, 'In', ...sorted(values)]);
  for (const [key, values] of notIn) requirements.push([key, 'NotIn', ...sorted(values)]);
  for (const key of exists) if (!inValues.has(key)) requirements.push([key, 'Exists']);
  for (const key of absent) requirements.push([key, 'DoesNotExist']);
  requirements.sort((a, b) => {
    const x = JSON.stringify(a);
    const y = JSON.stringify(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return JSON.stringify(requirements);
}

/** The policy-map group of a source: its selector key when it is enforced, else none. */
export function policyMapGroup(source: Pick<BlocklistSource, 'spec'>): string | undefined {
  const spec = resolveSpec(source.spec);
  return spec.channel === Channel.CiliumPolicy ? selectorKey(spec.podSelector) : undefined;
}

/**
 * The claims of the sources of group `group` other than `self`, as the cache shows them:
 * an enforced source whose status says its set is in the Cilium channel holds
 * `status.entries.published` entries; one not in force yet holds none.
 */
export function policyMapPeers(
  self: string,
  group: string,
  sources: readonly Pick<BlocklistSource, 'metadata' | 'spec' | 'status'>[],
): PolicyMapClaim[] {
  const peers: PolicyMapClaim[] = [];
  for (const s of sources) {
    const name = s.metadata.name ?? '';
    if (name === self || policyMapGroup(s) !== group) continue;
    peers.push({
      name,
      createdAt: s.metadata.creationTimestamp ?? '',
      entries: s.status?.channel === Channel.CiliumPolicy ? (s.status.entries?.published ?? 0) : 0,
    });
  }
  return peers;
}
