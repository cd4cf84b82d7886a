/**
 * The terdut-server stand-in's state and the rules it enforces, in memory. It belongs to
 * the server object, not to any client, so it outlives operator restarts within a test
 * (and survives `stop()`/`start()`). Every method is synchronous: Node runs one at a time,
 * which makes each call atomic, so two concurrent bootstraps see exactly one winner (the
 * race DESIGN §6 point 1 expects a client to handle).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError, MSG, unknownUser } from './errors.ts';
import type {
  ApiKeyRecord,
  DeadmanSwitchRecord,
  EscalationLevel,
  EscalationPolicyRecord,
  IntegrationKind,
  IntegrationRecord,
  StandInSnapshot,
  TeamRecord,
  UserRecord,
} from './model.ts';

/** The bootstrap user's name when the body names none. */
export const DEFAULT_BOOTSTRAP_USERNAME = 'admin';

/** 32 random bytes as 64 lowercase hex characters: the shape of terdut-server's keys. */
function newSecret(): string {
  return randomBytes(32).toString('hex');
}

function now(): string {
  return new Date().toISOString();
}

/** A secret comparison that takes the same time whatever the guess, as a server should. */
function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface IssuedKey {
  readonly record: ApiKeyRecord;
  readonly secret: string;
}

export interface IssuedIntegration {
  readonly record: IntegrationRecord;
  readonly secret: string;
}

export interface SwitchInput {
  readonly name: string;
  readonly matcher: string;
  readonly timeoutSeconds: number;
  readonly severity: string;
}

export interface PolicyInput {
  readonly repeatCount: number;
  readonly fallbackTopic?: string;
  readonly levels: readonly EscalationLevel[];
}

export class Store {
  // Per-table counters, like Postgres sequences: ids start at 1 and are never reused.
  private readonly next = { user: 1, key: 1, team: 1, switch: 1, integration: 1 };
  private readonly users = new Map<number, UserRecord>();
  private readonly keys = new Map<number, ApiKeyRecord>();
  private readonly keyIdBySecret = new Map<string, number>();
  private readonly secretByKeyId = new Map<number, string>();
  private readonly teams = new Map<number, TeamRecord>();
  private readonly policies = new Map<number, EscalationPolicyRecord>();
  private readonly switches = new Map<number, DeadmanSwitchRecord>();
  private readonly integrations = new Map<number, IntegrationRecord>();
  private readonly integrationSecrets = new Map<number, string>();
  // Every secret ever handed out, deleted or not, so tests can prove none leaked into logs.
  private readonly issued: string[] = [];

  // ---- users and keys ----

  /** Single-shot per install: gated on the user count, whoever asks (DESIGN §6 point 1). */
  bootstrap(username: string, email: string | undefined): { user: UserRecord; key: IssuedKey } {
    if (this.users.size > 0) throw new ApiError(403, MSG.alreadyBootstrapped);
    const user = this.insertUser(username, email, true);
    return { user, key: this.insertKey(user.id, 'bootstrap') };
  }

  /** The user behind a bearer key, marking the key used; undefined for an unknown or deleted key. */
  authenticate(secret: string | undefined): UserRecord | undefined {
    if (secret === undefined) return undefined;
    const keyId = this.keyIdBySecret.get(secret);
    const key = keyId === undefined ? undefined : this.keys.get(keyId);
    if (!key) return undefined;
    key.lastUsedAt = now();
    return this.users.get(key.userId);
  }

  /** The user behind a live key, without marking it used (for tests asking whose key a Secret holds). */
  authenticateQuietly(secret: string): UserRecord | undefined {
    const keyId = this.keyIdBySecret.get(secret);
    const key = keyId === undefined ? undefined : this.keys.get(keyId);
    return key ? this.users.get(key.userId) : undefined;
  }

  listUsers(username: string | null): UserRecord[] {
    return [...this.users.values()].filter((u) => username === null || u.username === username);
  }

  createUser(actor: UserRecord, username: string, email: string | undefined): UserRecord {
    if (!actor.admin) throw new ApiError(403, MSG.forbidden);
    return this.insertUser(username, email, false);
  }

  /** Admin only; the user's keys die with it, and so do escalation targets naming it. */
  deleteUser(actor: UserRecord, id: number): void {
    if (!actor.admin) throw new ApiError(403, MSG.forbidden);
    if (!this.users.delete(id)) throw new ApiError(404, MSG.userNotFound);
    for (const key of [...this.keys.values()]) if (key.userId === id) this.removeKey(key.id);
    for (const [teamId, policy] of this.policies) {
      const levels = policy.levels.map((l) => ({
        timeoutSeconds: l.timeoutSeconds,
        targets: l.targets.filter((t) => t.kind !== 'user' || t.userId !== id),
      }));
      this.policies.set(teamId, { ...policy, levels });
    }
  }

  /** The admin, or the key's own user. */
  createKey(actor: UserRecord, userId: number, name: string): IssuedKey {
    this.mayManageKeysOf(actor, userId);
    return this.insertKey(userId, name);
  }

  deleteKey(actor: UserRecord, userId: number, keyId: number): void {
    this.mayManageKeysOf(actor, userId);
    const key = this.keys.get(keyId);
    if (!key || key.userId !== userId) throw new ApiError(404, MSG.apiKeyNotFound);
    this.removeKey(keyId);
  }

  // ---- teams ----

  listTeams(name: string | null): TeamRecord[] {
    return [...this.teams.values()].filter((t) => name === null || t.name === name);
  }

  createTeam(name: string): TeamRecord {
    this.teamNameFree(name, undefined);
    const team: TeamRecord = { id: this.next.team++, name, createdAt: now() };
    this.teams.set(team.id, team);
    return team;
  }

  getTeam(id: number): TeamRecord {
    const team = this.teams.get(id);
    if (!team) throw new ApiError(404, MSG.teamNotFound);
    return team;
  }

  renameTeam(id: number, name: string): TeamRecord {
    const team = this.getTeam(id);
    this.teamNameFree(name, id);
    team.name = name;
    return team;
  }

  /** "" clears a group, which the wire then omits. */
  setOidcGroups(id: number, memberGroup: string, ownerGroup: string): TeamRecord {
    const team = this.getTeam(id);
    if (memberGroup === '') delete team.oidcMemberGroup;
    else team.oidcMemberGroup = memberGroup;
    if (ownerGroup === '') delete team.oidcOwnerGroup;
    else team.oidcOwnerGroup = ownerGroup;
    return team;
  }

  /** Cascades to the team's policy, switches and integrations, as ON DELETE CASCADE on team_id would. */
  deleteTeam(id: number): void {
    this.getTeam(id);
    this.teams.delete(id);
    this.policies.delete(id);
    for (const s of [...this.switches.values()]) if (s.teamId === id) this.switches.delete(s.id);
    for (const i of [...this.integrations.values()]) {
      if (i.teamId === id) {
        this.integrations.delete(i.id);
        this.integrationSecrets.delete(i.id);
      }
    }
  }

  // ---- escalation policy ----

  /** The stored policy, or the empty default for a team that never had one. */
  getPolicy(teamId: number): EscalationPolicyRecord {
    this.getTeam(teamId);
    return this.policies.get(teamId) ?? { teamId, repeatCount: 0, levels: [] };
  }

  /** Whole-policy replace; every user target must name an existing user. */
  putPolicy(teamId: number, input: PolicyInput): EscalationPolicyRecord {
    this.getTeam(teamId);
    input.levels.forEach((level, i) => {
      level.targets.forEach((t, j) => {
        if (t.kind === 'user' && !this.users.has(t.userId)) {
          throw new ApiError(400, unknownUser(`levels[${i}].targets[${j}]`, t.userId));
        }
      });
    });
    const policy: EscalationPolicyRecord = {
      teamId,
      repeatCount: input.repeatCount,
      ...(input.fallbackTopic ? { fallbackTopic: input.fallbackTopic } : {}),
      levels: input.levels,
    };
    this.policies.set(teamId, policy);
    return policy;
  }

  // ---- dead man's switches (no update verb: the operator deletes and recreates) ----

  listSwitches(teamId: number, name: string | null): DeadmanSwitchRecord[] {
    this.getTeam(teamId);
    return [...this.switches.values()].filter(
      (s) => s.teamId === teamId && (name === null || s.name === name),
    );
  }

  createSwitch(teamId: number, input: SwitchInput): DeadmanSwitchRecord {
    if (this.listSwitches(teamId, input.name).length > 0) throw new ApiError(409, MSG.switchNameTaken);
    const sw: DeadmanSwitchRecord = { id: this.next.switch++, teamId, ...input, createdAt: now() };
    this.switches.set(sw.id, sw);
    return sw;
  }

  deleteSwitch(teamId: number, switchId: number): void {
    this.getTeam(teamId);
    const sw = this.switches.get(switchId);
    if (!sw || sw.teamId !== teamId) throw new ApiError(404, MSG.switchNotFound);
    this.switches.delete(switchId);
  }

  // ---- integrations ----

  listIntegrations(teamId: number, name: string | null): IntegrationRecord[] {
    this.getTeam(teamId);
    return [...this.integrations.values()].filter(
      (i) => i.teamId === teamId && (name === null || i.name === name),
    );
  }

  /** The key is returned here once and never again (only ingest compares against it). */
  createIntegration(teamId: number, name: string, kind: IntegrationKind): IssuedIntegration {
    if (this.listIntegrations(teamId, name).length > 0) throw new ApiError(409, MSG.integrationNameTaken);
    const record: IntegrationRecord = { id: this.next.integration++, teamId, name, kind, createdAt: now() };
    const secret = newSecret();
    this.integrations.set(record.id, record);
    this.integrationSecrets.set(record.id, secret);
    this.issued.push(secret);
    return { record, secret };
  }

  renameIntegration(teamId: number, integrationId: number, name: string): IntegrationRecord {
    const integration = this.teamIntegration(teamId, integrationId);
    const taken = this.listIntegrations(teamId, name).some((i) => i.id !== integrationId);
    if (taken) throw new ApiError(409, MSG.integrationNameTaken);
    integration.name = name;
    return integration;
  }

  deleteIntegration(teamId: number, integrationId: number): void {
    this.teamIntegration(teamId, integrationId);
    this.integrations.delete(integrationId);
    this.integrationSecrets.delete(integrationId);
  }

  /** An alert arriving at an integration's URL: it must carry that integration's key. */
  ingest(integrationId: number, secret: string | undefined): void {
    const expected = this.integrationSecrets.get(integrationId);
    if (expected === undefined) throw new ApiError(404, MSG.integrationNotFound);
    if (secret === undefined || !sameSecret(secret, expected)) throw new ApiError(401, MSG.unauthorized);
  }

  // ---- observation ----

  snapshot(): StandInSnapshot {
    return structuredClone({
      users: [...this.users.values()],
      keys: [...this.keys.values()].map((k) => ({
        id: k.id,
        userId: k.userId,
        name: k.name,
        lastUsedAt: k.lastUsedAt,
      })),
      teams: [...this.teams.values()],
      policies: [...this.policies.values()],
      switches: [...this.switches.values()],
      integrations: [...this.integrations.values()],
    });
  }

  issuedSecrets(): readonly string[] {
    return [...this.issued];
  }

  // ---- internals ----

  private insertUser(username: string, email: string | undefined, admin: boolean): UserRecord {
    if (this.listUsers(username).length > 0) throw new ApiError(409, MSG.usernameTaken);
    const user: UserRecord = {
      id: this.next.user++,
      username,
      ...(email ? { email } : {}),
      admin,
      createdAt: now(),
    };
    this.users.set(user.id, user);
    return user;
  }

  private insertKey(userId: number, name: string): IssuedKey {
    const record: ApiKeyRecord = { id: this.next.key++, userId, name, createdAt: now(), lastUsedAt: null };
    const secret = newSecret();
    this.keys.set(record.id, record);
    this.keyIdBySecret.set(secret, record.id);
    this.secretByKeyId.set(record.id, secret);
    this.issued.push(secret);
    return { record, secret };
  }

  /** Removing the secret from the index is what refuses a deleted key at once. */
  private removeKey(keyId: number): void {
    const secret = this.secretByKeyId.get(keyId);
    if (secret !== undefined) this.keyIdBySecret.delete(secret);
    this.secretByKeyId.delete(keyId);
    this.keys.delete(keyId);
  }

  /** Forbidden before not-found, so a non-admin learns nothing about other users' ids. */
  private mayManageKeysOf(actor: UserRecord, userId: number): void {
    if (!actor.admin && actor.id !== userId) throw new ApiError(403, MSG.forbidden);
    if (!this.users.has(userId)) throw new ApiError(404, MSG.userNotFound);
  }

  private teamNameFree(name: string, exceptId: number | undefined): void {
    if (this.listTeams(name).some((t) => t.id !== exceptId)) throw new ApiError(409, MSG.teamNameTaken);
  }

  private teamIntegration(teamId: number, integrationId: number): IntegrationRecord {
    this.getTeam(teamId);
    const integration = this.integrations.get(integrationId);
    if (!integration || integration.teamId !== teamId) throw new ApiError(404, MSG.integrationNotFound);
    return integration;
  }
}
