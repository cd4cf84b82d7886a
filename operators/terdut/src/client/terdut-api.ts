/**
 * The operator's client for terdut-server's REST API: the routes of docs/terdut.md, one
 * method each, bearer key, JSON in snake_case, 10 s per request (terdut-tui's budget).
 *
 * Failures come back as one error type whose `kind` says what a reconcile can do about
 * them: `Http` carries the status and the server's `{"error"}` message; `Unreachable`
 * and `Timeout` mean nothing was heard (the request may or may not have been carried
 * out: callers must be idempotent, DESIGN §5); `Malformed` is a 2xx whose body is not
 * the JSON the route promises. The API key is never part of a message.
 */

/** Why a call failed, for conditions: the kinds a reconcile tells apart. */
export const TerdutErrorKind = {
  /** The server answered 4xx or 5xx. */
  Http: 'Http',
  /** No connection, or the connection dropped before an answer: the call may have been carried out. */
  Unreachable: 'Unreachable',
  /** No answer within the timeout: the call may have been carried out. */
  Timeout: 'Timeout',
  /** A success whose body is not the JSON the route promises. */
  Malformed: 'Malformed',
} as const;
export type TerdutErrorKind = (typeof TerdutErrorKind)[keyof typeof TerdutErrorKind];

export class TerdutApiError extends Error {
  override readonly name = 'TerdutApiError';
  readonly kind: TerdutErrorKind;
  /** The HTTP status, for kind Http. */
  readonly status: number | undefined;
  /** The server's `{"error"}` message, when it sent one. */
  readonly serverMessage: string | undefined;
  constructor(kind: TerdutErrorKind, message: string, status?: number, serverMessage?: string) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.serverMessage = serverMessage;
  }
}

/** True when `err` is an HTTP answer with this status. */
export function isStatus(err: unknown, status: number): boolean {
  return err instanceof TerdutApiError && err.kind === TerdutErrorKind.Http && err.status === status;
}

export interface User {
  readonly id: number;
  readonly username: string;
  readonly email?: string;
  readonly created_at?: string;
}

export interface ApiKey {
  readonly id: number;
  readonly user_id: number;
  readonly name: string;
  /** Only in the create response. */
  readonly key?: string;
}

export interface Team {
  readonly id: number;
  readonly name: string;
  readonly oidc_member_group?: string;
  readonly oidc_owner_group?: string;
}

export type PolicyTarget = { readonly kind: 'oncall' } | { readonly kind: 'user'; readonly user_id: number };

export interface EscalationPolicy {
  readonly repeat_count: number;
  readonly fallback_topic?: string;
  readonly levels: readonly {
    readonly timeout_seconds: number;
    readonly targets: readonly PolicyTarget[];
  }[];
}

export interface DeadmanSwitch {
  readonly id: number;
  readonly team_id: number;
  readonly name: string;
  readonly matcher: string;
  readonly timeout_seconds: number;
  readonly severity: string;
}

export interface Integration {
  readonly id: number;
  readonly team_id: number;
  readonly name: string;
  readonly kind: string;
}

/** The create response of an integration: the only time its URL and key are told. */
export interface NewIntegration extends Integration {
  readonly url: string;
  readonly key: string;
}

export interface BootstrapResult {
  readonly user: User;
  readonly api_key: ApiKey & { readonly key: string };
}

/** One finished call, for metrics and tests: never the key, never a body. */
export interface CallRecord {
  readonly method: string;
  /** The path with numeric segments replaced by `{id}`, for bounded metric labels. */
  readonly route: string;
  /** The status, or the error kind when nothing was heard. */
  readonly outcome: string;
}

export interface TerdutApiOptions {
  readonly baseUrl: string;
  /** Absent only for `/healthz` and `/api/bootstrap`. */
  readonly apiKey?: string;
  readonly timeoutMs?: number;
  /** Aborts every call (the reconcile's signal). */
  readonly signal?: AbortSignal;
  readonly onCall?: (call: CallRecord) => void;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

const routeOf = (path: string): string => path.replace(/\?.*$/, '').replace(/\/\d+(?=\/|$)/g, '/{id}');

export class TerdutApi {
  readonly baseUrl: string;
  private readonly opts: TerdutApiOptions;

  constructor(opts: TerdutApiOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.opts = opts;
  }

  /** The same server with another key. */
  withKey(apiKey: string): TerdutApi {
    return new TerdutApi({ ...this.opts, apiKey });
  }

  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    expectBody = true,
    /** A success other than this status is a failure too (`/healthz` counts only 200). */
    exactly?: number,
  ): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.opts.apiKey && path.startsWith('/api/')) headers.authorization = `Bearer ${this.opts.apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const signal = this.opts.signal ? AbortSignal.any([this.opts.signal, timeout]) : timeout;
    const where = `${method} ${routeOf(path)}`;
    const record = (outcome: string): void => this.opts.onCall?.({ method, route: routeOf(path), outcome });
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
      text = await res.text();
    } catch (err) {
      if (timeout.aborted) {
        record(TerdutErrorKind.Timeout);
        throw new TerdutApiError(
          TerdutErrorKind.Timeout,
          `${where}: no answer within ${this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`,
        );
      }
      if (this.opts.signal?.aborted) throw err;
      record(TerdutErrorKind.Unreachable);
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new TerdutApiError(TerdutErrorKind.Unreachable, `${where}: ${cause}`);
    }
    record(String(res.status));
    if (res.status >= 400) {
      let serverMessage: string | undefined;
      try {
        const parsed: unknown = JSON.parse(text);
        if (parsed && typeof parsed === 'object' && 'error' in parsed && typeof parsed.error === 'string') {
          serverMessage = parsed.error;
        }
      } catch {
        // A body that is not JSON carries no message (as terdut-tui reads it).
      }
      throw new TerdutApiError(
        TerdutErrorKind.Http,
        `${where}: server returned ${res.status}${serverMessage ? `: ${serverMessage}` : ''}`,
        res.status,
        serverMessage,
      );
    }
    if (exactly !== undefined && res.status !== exactly) {
      throw new TerdutApiError(
        TerdutErrorKind.Http,
        `${where}: server returned ${res.status}, not ${exactly}`,
        res.status,
      );
    }
    if (!expectBody) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new TerdutApiError(
        TerdutErrorKind.Malformed,
        `${where}: server returned ${res.status} with a body that is not JSON (${text.length} bytes)`,
        res.status,
      );
    }
  }

  /** Exactly 200, or an error: the contract's health check counts no other status (§2.1). */
  async healthz(): Promise<void> {
    await this.call('GET', '/healthz', undefined, false, 200);
  }

  bootstrap(username: string): Promise<BootstrapResult> {
    return this.call('POST', '/api/bootstrap', { username });
  }

  /**
   * Whether this key is accepted: a 401 (as a TerdutApiError) if not. `GET /api/users?username=`
   * is served by every server version the operator supports; `GET /api/me`, the obvious
   * choice, exists only from v0.10.2 and older servers answer it with a plain 404.
   */
  async checkKey(username: string): Promise<void> {
    await this.findUser(username);
  }

  listUsers(): Promise<User[]> {
    return this.call('GET', '/api/users');
  }

  findUser(username: string): Promise<User[]> {
    return this.call('GET', `/api/users?username=${encodeURIComponent(username)}`);
  }

  createUser(username: string, email: string): Promise<User> {
    return this.call('POST', '/api/users', { username, email });
  }

  createApiKey(userId: number, name: string): Promise<ApiKey & { key: string }> {
    return this.call('POST', `/api/users/${userId}/api-keys`, { name });
  }

  deleteApiKey(userId: number, keyId: number): Promise<void> {
    return this.call('DELETE', `/api/users/${userId}/api-keys/${keyId}`, undefined, false);
  }

  listTeams(name?: string): Promise<Team[]> {
    return this.call('GET', `/api/teams${name === undefined ? '' : `?name=${encodeURIComponent(name)}`}`);
  }

  getTeam(id: number): Promise<Team> {
    return this.call('GET', `/api/teams/${id}`);
  }

  createTeam(name: string): Promise<Team> {
    return this.call('POST', '/api/teams', { name });
  }

  renameTeam(id: number, name: string): Promise<Team> {
    return this.call('PUT', `/api/teams/${id}`, { name });
  }

  setTeamOidcGroups(id: number, groups: { member_group: string; owner_group: string }): Promise<Team> {
    return this.call('PUT', `/api/teams/${id}/oidc-groups`, groups);
  }

  deleteTeam(id: number): Promise<void> {
    return this.call('DELETE', `/api/teams/${id}`, undefined, false);
  }

  getEscalation(teamId: number): Promise<EscalationPolicy> {
    return this.call('GET', `/api/teams/${teamId}/escalation`);
  }

  putEscalation(teamId: number, policy: EscalationPolicy): Promise<EscalationPolicy> {
    return this.call('PUT', `/api/teams/${teamId}/escalation`, policy);
  }

  listSwitches(teamId: number, name?: string): Promise<DeadmanSwitch[]> {
    const q = name === undefined ? '' : `?name=${encodeURIComponent(name)}`;
    return this.call('GET', `/api/teams/${teamId}/deadman-switches${q}`);
  }

  createSwitch(
    teamId: number,
    s: { name: string; matcher: string; timeout_seconds: number; severity: string },
  ): Promise<DeadmanSwitch> {
    return this.call('POST', `/api/teams/${teamId}/deadman-switches`, s);
  }

  deleteSwitch(teamId: number, id: number): Promise<void> {
    return this.call('DELETE', `/api/teams/${teamId}/deadman-switches/${id}`, undefined, false);
  }

  listIntegrations(teamId: number, name?: string): Promise<Integration[]> {
    const q = name === undefined ? '' : `?name=${encodeURIComponent(name)}`;
    return this.call('GET', `/api/teams/${teamId}/integrations${q}`);
  }

  createIntegration(teamId: number, i: { name: string; kind: string }): Promise<NewIntegration> {
    return this.call('POST', `/api/teams/${teamId}/integrations`, i);
  }

  renameIntegration(teamId: number, id: number, name: string): Promise<Integration> {
    return this.call('PATCH', `/api/teams/${teamId}/integrations/${id}`, { name });
  }

  deleteIntegration(teamId: number, id: number): Promise<void> {
    return this.call('DELETE', `/api/teams/${teamId}/integrations/${id}`, undefined, false);
  }
}
