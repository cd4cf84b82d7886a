/**
 * weebo-link's metrics (RFC 0002, Exploitation), all prefixed `weebo_link_`:
 * - `weebo_link_links_targets{link,state}`: targets per rule and state, counted from the caches at scrape time;
 * - `weebo_link_links_rule_errors{link}`: 1 while a rule is refused (`(configmap)` for an unreadable document), else 0;
 * - `weebo_link_links_orphan_targets`: targets whose link label names no current rule;
 * - `weebo_link_links_problems_total{link,reason}`: refusals (Conflict, TargetExists, MappingFailed, SafeFailed, InvalidHeader);
 * and the kit's `leader_election_master_status`.
 */
import type { KubeObject, Store } from '@operators/kit';
import { Counter, Gauge, type Registry } from 'prom-client';
import { LINK_LABEL, STATE_LABEL } from '../domain/index.ts';

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
