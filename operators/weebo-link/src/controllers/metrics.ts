/**
 * weebo-link's metrics (RFC 0002, Exploitation), all prefixed `weebo_link_`:
 * - `weebo_link_links_targets{link,state}`: targets per rule and state, counted from the caches at scrape time;
 * - `weebo_link_links_detaching_oldest_seconds{link}`: age of the rule's oldest Detaching target (0: none), what
 *   the alert "a target Detaching for more than 10 minutes" reads (see {@link detachingSince});
 * - `weebo_link_links_rule_errors{link}`: 1 while a rule is refused (`(configmap)` for an unreadable document), else 0;
 * - `weebo_link_links_orphan_targets`: targets whose link label names no current rule;
 * - `weebo_link_links_problems_total{link,reason}`: refusals (Conflict, TargetExists, MappingFailed, SafeFailed, InvalidHeader);
 * and the kit's `leader_election_master_status`.
 */
import type { KubeObject, Store } from '@operators/kit';
import { Counter, Gauge, type Registry } from 'prom-client';
import { fieldManagerOf, LINK_LABEL, LinkState, STATE_LABEL } from '../domain/index.ts';

export interface LinkMetrics {
  readonly ruleErrors: Gauge<'link'>;
  readonly problems: Counter<'link' | 'reason'>;
}

/** `stores()`: the target caches (one per target kind); `rules()`: the names of the current rules. */
export function linkMetrics(
  registry: Registry,
  stores: () => Iterable<Store<KubeObject>>,
  rules: () => ReadonlySet<string>,
): LinkMetrics {
  new Gauge({
    name: 'weebo_link_links_targets',
    help: 'Targets per link rule and state (Linked, Detaching, Detached).',
    labelNames: ['link', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      const current = rules();
      const counts = new Map<string, number>();
      for (const store of stores())
        for (const t of store.list()) {
          const link = t.metadata.labels?.[LINK_LABEL];
          if (!link || !current.has(link)) continue;
          const k = `${link}\u0000${t.metadata.labels?.[STATE_LABEL] ?? ''}`;
          counts.set(k, (counts.get(k) ?? 0) + 1);
        }
      for (const [k, n] of counts) {
        const [link, state] = k.split('\u0000') as [string, string];
        this.labels(link, state).set(n);
      }
    },
  });
  // When this process first saw each Detaching target (by UID): the fallback when the
  // cache holds no managedFields, and a floor that a later re-apply cannot move.
  const seenDetaching = new Map<string, number>();
  new Gauge({
    name: 'weebo_link_links_detaching_oldest_seconds',
    help: 'Age in seconds of the oldest Detaching target per link rule (0: none), counted from when weebo-link set Detaching.',
    labelNames: ['link'],
    registers: [registry],
    collect() {
      this.reset();
      const now = Date.now();
      const oldest = new Map<string, number>();
      for (const link of rules()) oldest.set(link, now);
      const still = new Set<string>();
      for (const store of stores())
        for (const t of store.list()) {
          const link = t.metadata.labels?.[LINK_LABEL];
          if (!link || !oldest.has(link) || t.metadata.labels?.[STATE_LABEL] !== LinkState.Detaching)
            continue;
          const uid = t.metadata.uid ?? `${t.metadata.namespace}/${t.metadata.name}`;
          still.add(uid);
          if (!seenDetaching.has(uid)) seenDetaching.set(uid, now);
          const since = detachingSince(t, link, seenDetaching.get(uid) ?? now);
          oldest.set(link, Math.min(oldest.get(link) ?? now, since));
        }
      for (const uid of seenDetaching.keys()) if (!still.has(uid)) seenDetaching.delete(uid);
      for (const [link, since] of oldest) this.labels(link).set(Math.max(0, now - since) / 1000);
    },
  });
  new Gauge({
    name: 'weebo_link_links_orphan_targets',
    help: 'Targets whose link.weebo.io/link label names no current rule (a rule was removed).',
    registers: [registry],
    collect() {
      const current = rules();
      let n = 0;
      for (const store of stores())
        for (const t of store.list()) {
          const link = t.metadata.labels?.[LINK_LABEL];
          if (link && !current.has(link)) n++;
        }
      this.set(n);
    },
  });
  return {
    ruleErrors: new Gauge({
      name: 'weebo_link_links_rule_errors',
      help: '1 while a link rule is refused at load (see the Events on the rules ConfigMap), else 0.',
      labelNames: ['link'],
      registers: [registry],
    }),
    problems: new Counter({
      name: 'weebo_link_links_problems_total',
      help: 'Refusals per link rule and reason (Conflict, TargetExists, MappingFailed, SafeFailed, InvalidHeader).',
      labelNames: ['link', 'reason'],
      registers: [registry],
    }),
  };
}

/**
 * Since when (epoch ms) a Detaching target has been Detaching, as well as weebo-link can
 * know it after a restart or a failover: the `time` of its rule's field manager entry in
 * `managedFields` (the apiserver moves it when that manager's apply changes a field, and
 * the apply that set `Detaching` did), or the moment this process first saw the target
 * Detaching, whichever is earlier: a later re-apply of the safe-state patch (someone
 * undid it) moves the entry but not the count. Without managedFields in the cache, a
 * restart restarts the count: the alert comes late, never early.
 */
export function detachingSince(target: KubeObject, link: string, firstSeenMs: number): number {
  const manager = fieldManagerOf(link);
  const entry = target.metadata.managedFields?.find(
    (e) => e.manager === manager && e.operation === 'Apply' && !e.subresource,
  );
  const t = entry?.time ? Date.parse(entry.time) : Number.NaN;
  return Number.isNaN(t) ? firstSeenMs : Math.min(t, firstSeenMs);
}
