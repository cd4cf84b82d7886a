/**
 * The records the terdut-server stand-in keeps, in TypeScript's camelCase. They are the
 * stand-in's own representation: the snake_case wire shapes are made from them in
 * `views.ts`, and `snapshot()` hands out deep copies of them (never a key's secret).
 */

export interface UserRecord {
  readonly id: number;
  readonly username: string;
  /** Absent rather than empty: the wire omits optional fields. */
  readonly email?: string;
  /** The bootstrap user is admin; users created over POST /api/users are not. */
  readonly admin: boolean;
  readonly createdAt: string;
}

/** An API key without its secret: the secret lives only in the store's private index. */
export interface ApiKeyRecord {
  readonly id: number;
  readonly userId: number;
  readonly name: string;
  readonly createdAt: string;
  /** Null until the key is first used. */
  lastUsedAt: string | null;
}

export interface TeamRecord {
  readonly id: number;
  name: string;
  oidcMemberGroup?: string;
  oidcOwnerGroup?: string;
  readonly createdAt: string;
}

export type EscalationTarget =
  | { readonly kind: 'oncall' }
  | { readonly kind: 'user'; readonly userId: number };

export interface EscalationLevel {
  readonly timeoutSeconds: number;
  readonly targets: readonly EscalationTarget[];
}

/** One per team at most; a team that never had one PUT reads as the empty default. */
export interface EscalationPolicyRecord {
  readonly teamId: number;
  readonly repeatCount: number;
  readonly fallbackTopic?: string;
  readonly levels: readonly EscalationLevel[];
}

export interface DeadmanSwitchRecord {
  readonly id: number;
  readonly teamId: number;
  readonly name: string;
  readonly matcher: string;
  readonly timeoutSeconds: number;
  readonly severity: string;
  readonly createdAt: string;
}

export const INTEGRATION_KINDS = ['alertmanager', 'webhook'] as const;
export type IntegrationKind = (typeof INTEGRATION_KINDS)[number];

/** An integration without its key: like API keys, the key is shown once and kept aside. */
export interface IntegrationRecord {
  readonly id: number;
  readonly teamId: number;
  name: string;
  readonly kind: IntegrationKind;
  readonly createdAt: string;
}

/** A key as `snapshot()` shows it: everything but the secret. */
export interface KeySnapshot {
  readonly id: number;
  readonly userId: number;
  readonly name: string;
  readonly lastUsedAt: string | null;
}

/** Deep copies of the whole state, for tests to assert on (served as GET /_standin/state). */
export interface StandInSnapshot {
  readonly users: UserRecord[];
  readonly keys: KeySnapshot[];
  readonly teams: TeamRecord[];
  readonly policies: EscalationPolicyRecord[];
  readonly switches: DeadmanSwitchRecord[];
  readonly integrations: IntegrationRecord[];
}
