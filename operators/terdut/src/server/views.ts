/**
 * The terdut-server stand-in's wire shapes: snake_case, optional fields omitted rather
 * than null (only `last_used_at` is an explicit null until used), and secrets added only
 * by the create responses that are allowed to show them once.
 */
import type {
  ApiKeyRecord,
  DeadmanSwitchRecord,
  EscalationPolicyRecord,
  EscalationTarget,
  IntegrationRecord,
  TeamRecord,
  UserRecord,
} from './model.ts';

export interface UserView {
  id: number;
  username: string;
  email?: string;
  created_at: string;
}

export interface ApiKeyView {
  id: number;
  user_id: number;
  name: string;
  key?: string;
  created_at: string;
  last_used_at: string | null;
}

export interface TeamView {
  id: number;
  name: string;
  oidc_member_group?: string;
  oidc_owner_group?: string;
  created_at: string;
}

export type TargetView = { kind: 'oncall' } | { kind: 'user'; user_id: number };

export interface PolicyView {
  team_id: number;
  repeat_count: number;
  fallback_topic?: string;
  levels: { timeout_seconds: number; targets: TargetView[] }[];
}

export interface SwitchView {
  id: number;
  team_id: number;
  name: string;
  matcher: string;
  timeout_seconds: number;
  severity: string;
  created_at: string;
}

export interface IntegrationView {
  id: number;
  team_id: number;
  name: string;
  kind: string;
  created_at: string;
  url?: string;
  key?: string;
}

export function userView(u: UserRecord): UserView {
  return {
    id: u.id,
    username: u.username,
    ...(u.email !== undefined ? { email: u.email } : {}),
    created_at: u.createdAt,
  };
}

/** `secret` is passed by the create responses only: the key is never shown again. */
export function apiKeyView(k: ApiKeyRecord, secret?: string): ApiKeyView {
  return {
    id: k.id,
    user_id: k.userId,
    name: k.name,
    ...(secret !== undefined ? { key: secret } : {}),
    created_at: k.createdAt,
    last_used_at: k.lastUsedAt,
  };
}

export function teamView(t: TeamRecord): TeamView {
  return {
    id: t.id,
    name: t.name,
    ...(t.oidcMemberGroup !== undefined ? { oidc_member_group: t.oidcMemberGroup } : {}),
    ...(t.oidcOwnerGroup !== undefined ? { oidc_owner_group: t.oidcOwnerGroup } : {}),
    created_at: t.createdAt,
  };
}

function targetView(t: EscalationTarget): TargetView {
  return t.kind === 'user' ? { kind: 'user', user_id: t.userId } : { kind: 'oncall' };
}

export function policyView(p: EscalationPolicyRecord): PolicyView {
  return {
    team_id: p.teamId,
    repeat_count: p.repeatCount,
    ...(p.fallbackTopic !== undefined ? { fallback_topic: p.fallbackTopic } : {}),
    levels: p.levels.map((l) => ({ timeout_seconds: l.timeoutSeconds, targets: l.targets.map(targetView) })),
  };
}

export function switchView(s: DeadmanSwitchRecord): SwitchView {
  return {
    id: s.id,
    team_id: s.teamId,
    name: s.name,
    matcher: s.matcher,
    timeout_seconds: s.timeoutSeconds,
    severity: s.severity,
    created_at: s.createdAt,
  };
}

/** With `created`, the one response that carries the webhook URL and key. */
export function integrationView(
  i: IntegrationRecord,
  created?: { url: string; key: string },
): IntegrationView {
  return {
    id: i.id,
    team_id: i.teamId,
    name: i.name,
    kind: i.kind,
    created_at: i.createdAt,
    ...(created ? { url: created.url, key: created.key } : {}),
  };
}
