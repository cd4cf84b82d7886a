/**
 * A team's escalation policy (DESIGN §4.3, §5): one TerdutEscalationRule per team, the
 * whole policy PUT only when it differs from what the server holds. Usernames are
 * resolved to IDs at apply time; durations become seconds, so `5m` and `300s` agree.
 */

import { durationSeconds } from '@operators/kit';
import type { TerdutEscalationRuleSpec } from '../api/terdut-escalation-rule.ts';
import type { EscalationPolicy, PolicyTarget, User } from '../client/terdut-api.ts';

/** What deleting a rule leaves: no levels, no repeats (§5: deleting the CR PUTs an empty policy). */
export const EMPTY_POLICY: EscalationPolicy = { repeat_count: 0, levels: [] };

export type DesiredPolicy =
  | { readonly kind: 'Policy'; readonly policy: EscalationPolicy }
  | { readonly kind: 'UnknownUsers'; readonly usernames: readonly string[] }
  | { readonly kind: 'InvalidDuration'; readonly level: number; readonly timeout: string };

export function desiredPolicy(spec: TerdutEscalationRuleSpec, users: readonly User[]): DesiredPolicy {
  const ids = new Map(users.map((u) => [u.username, u.id]));
  const unknown = new Set<string>();
  const levels: EscalationPolicy['levels'][number][] = [];
  for (const [i, level] of spec.levels.entries()) {
    const seconds = durationSeconds(level.timeout);
    if (seconds === undefined || seconds <= 0)
      return { kind: 'InvalidDuration', level: i, timeout: level.timeout };
    const targets: PolicyTarget[] = [];
    for (const t of level.targets) {
      if (t.kind === 'oncall') {
        targets.push({ kind: 'oncall' });
        continue;
      }
      const id = ids.get(t.username ?? '');
      if (id === undefined) unknown.add(t.username ?? '');
      else targets.push({ kind: 'user', user_id: id });
    }
    levels.push({ timeout_seconds: seconds, targets });
  }
  if (unknown.size) return { kind: 'UnknownUsers', usernames: [...unknown].sort() };
  return {
    kind: 'Policy',
    policy: {
      repeat_count: spec.repeatCount ?? 0,
      ...(spec.fallbackTopic ? { fallback_topic: spec.fallbackTopic } : {}),
      levels,
    },
  };
}

/** Equal as policies: an absent and an empty fallback topic are the same; order of levels and targets counts. */
export function samePolicy(a: EscalationPolicy, b: EscalationPolicy): boolean {
  if (a.repeat_count !== b.repeat_count || (a.fallback_topic ?? '') !== (b.fallback_topic ?? ''))
    return false;
  if (a.levels.length !== b.levels.length) return false;
  return a.levels.every((la, i) => {
    const lb = b.levels[i];
    if (!lb || la.timeout_seconds !== lb.timeout_seconds || la.targets.length !== lb.targets.length)
      return false;
    return la.targets.every((ta, j) => {
      const tb = lb.targets[j];
      if (!tb || ta.kind !== tb.kind) return false;
      return ta.kind === 'oncall' || (tb.kind === 'user' && ta.user_id === tb.user_id);
    });
  });
}

export interface RuleIdentity {
  readonly name: string;
  readonly teamRef: string;
  readonly createdAt: string;
  readonly deleting: boolean;
}

/**
 * The rule that sets a team's policy when several name it: the oldest by creation, then
 * by name; a rule being deleted yields to the others (it only empties the policy when no
 * other rule holds it). Undefined when none qualifies.
 */
export function policyHolder(team: string, rules: readonly RuleIdentity[]): string | undefined {
  const live = rules.filter((r) => r.teamRef === team && !r.deleting);
  live.sort((a, b) =>
    a.createdAt === b.createdAt ? a.name.localeCompare(b.name) : a.createdAt < b.createdAt ? -1 : 1,
  );
  return live[0]?.name;
}
