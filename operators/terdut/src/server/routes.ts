/**
 * The terdut-server stand-in's API: the route table and the dispatch that applies the
 * transport rules in one fixed order — route (404/405), then the bearer key (401), then
 * the JSON body (400), then the handler. (The real server's order is not public; this one
 * never reads a body for a caller it has not authenticated.) Everything here is synchronous, so a
 * request's effect on the store is atomic; the I/O around it lives in `stand-in.ts`.
 */
import { ApiError, MSG } from './errors.ts';
import {
  type JsonObject,
  oneOf,
  optionalString,
  parseJsonObject,
  positiveInteger,
  presentString,
  readPolicy,
  requiredString,
} from './input.ts';
import { INTEGRATION_KINDS, type UserRecord } from './model.ts';
import { type Params, Router } from './router.ts';
import { DEFAULT_BOOTSTRAP_USERNAME, type Store } from './store.ts';
import { atLeast, type ServerVersion } from './version.ts';
import { apiKeyView, integrationView, policyView, switchView, teamView, userView } from './views.ts';

export interface Reply {
  readonly status: number;
  /** Serialized as JSON; absent means an empty body (204). */
  readonly body?: unknown;
  /** Sent as text/plain instead of `body`: what Go's router answers for a route it does not have. */
  readonly text?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

interface Context {
  readonly store: Store;
  readonly params: Params;
  readonly query: URLSearchParams;
  readonly body: JsonObject;
  readonly bearer: string | undefined;
  readonly publicUrl: string;
}

interface AuthedContext extends Context {
  readonly actor: UserRecord;
}

type Endpoint = (
  | { readonly auth: 'key'; readonly run: (c: AuthedContext) => Reply }
  // `run` does its own checking: no auth at all, or (ingest) an integration's key.
  | { readonly auth: 'none'; readonly rawBody?: true; readonly run: (c: Context) => Reply }
) & {
  /** The first server version with this route; older versions do not have it (a plain 404). */
  readonly since?: ServerVersion;
};

const ok = (body: unknown): Reply => ({ status: 200, body });
const created = (body: unknown): Reply => ({ status: 201, body });
const noContent: Reply = { status: 204 };

const authed = (run: (c: AuthedContext) => Reply, since?: ServerVersion): Endpoint => ({
  auth: 'key',
  run,
  ...(since ? { since } : {}),
});

export const STATUS_OK = { status: 'ok' } as const;
export const STATUS_ACCEPTED = { status: 'accepted' } as const;

const router = new Router<Endpoint>([
  { pattern: '/healthz', methods: { GET: { auth: 'none', run: () => ok(STATUS_OK) } } },
  {
    pattern: '/api/bootstrap',
    methods: {
      POST: {
        auth: 'none',
        run: ({ store, body }) => {
          const username = optionalString(body, 'username') ?? DEFAULT_BOOTSTRAP_USERNAME;
          const { user, key } = store.bootstrap(username, optionalString(body, 'email'));
          return created({ user: userView(user), api_key: apiKeyView(key.record, key.secret) });
        },
      },
    },
  },
  // No passwords on the stand-in: the web UI's login is out of scope.
  {
    pattern: '/api/me',
    methods: {
      GET: authed(({ actor }) => ok({ user: userView(actor), has_password: false }), '0.10.2'),
    },
  },
  {
    pattern: '/api/users',
    methods: {
      GET: authed(({ store, query }) => ok(store.listUsers(query.get('username')).map(userView))),
      POST: authed(({ store, actor, body }) =>
        created(
          userView(store.createUser(actor, requiredString(body, 'username'), optionalString(body, 'email'))),
        ),
      ),
    },
  },
  {
    pattern: '/api/users/{userId}',
    methods: {
      DELETE: authed(({ store, actor, params }) => {
        store.deleteUser(actor, params.id('userId'));
        return noContent;
      }),
    },
  },
  // No GET: the real server has no key list route (a revoker must know the key id).
  {
    pattern: '/api/users/{userId}/api-keys',
    methods: {
      POST: authed(({ store, actor, params, body }) => {
        const key = store.createKey(actor, params.id('userId'), requiredString(body, 'name'));
        return created(apiKeyView(key.record, key.secret));
      }),
    },
  },
  {
    pattern: '/api/users/{userId}/api-keys/{keyId}',
    methods: {
      DELETE: authed(({ store, actor, params }) => {
        store.deleteKey(actor, params.id('userId'), params.id('keyId'));
        return noContent;
      }),
    },
  },
  {
    pattern: '/api/teams',
    methods: {
      GET: authed(({ store, query }) => ok(store.listTeams(query.get('name')).map(teamView))),
      POST: authed(({ store, body }) => created(teamView(store.createTeam(requiredString(body, 'name'))))),
    },
  },
  // Team-scoped writes look the team up before reading the body: a missing team is a 404
  // whatever was sent.
  {
    pattern: '/api/teams/{teamId}',
    methods: {
      GET: authed(({ store, params }) => ok(teamView(store.getTeam(params.id('teamId'))))),
      PUT: authed(({ store, params, body }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        return ok(teamView(store.renameTeam(teamId, requiredString(body, 'name'))));
      }),
      DELETE: authed(({ store, params }) => {
        store.deleteTeam(params.id('teamId'));
        return noContent;
      }),
    },
  },
  {
    pattern: '/api/teams/{teamId}/oidc-groups',
    methods: {
      PUT: authed(({ store, params, body }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        const member = presentString(body, 'member_group');
        const owner = presentString(body, 'owner_group');
        return ok(teamView(store.setOidcGroups(teamId, member, owner)));
      }),
    },
  },
  {
    pattern: '/api/teams/{teamId}/escalation',
    methods: {
      GET: authed(({ store, params }) => ok(policyView(store.getPolicy(params.id('teamId'))))),
      PUT: authed(({ store, params, body }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        return ok(policyView(store.putPolicy(teamId, readPolicy(body))));
      }),
    },
  },
  {
    pattern: '/api/teams/{teamId}/deadman-switches',
    methods: {
      GET: authed(({ store, params, query }) =>
        ok(store.listSwitches(params.id('teamId'), query.get('name')).map(switchView)),
      ),
      POST: authed(({ store, params, body }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        const sw = store.createSwitch(teamId, {
          name: requiredString(body, 'name'),
          matcher: requiredString(body, 'matcher'),
          timeoutSeconds: positiveInteger(body, 'timeout_seconds'),
          severity: requiredString(body, 'severity'),
        });
        return created(switchView(sw));
      }),
    },
  },
  // DELETE only: a switch has no update verb, so PUT/PATCH answer 405 (DESIGN §5).
  {
    pattern: '/api/teams/{teamId}/deadman-switches/{switchId}',
    methods: {
      DELETE: authed(({ store, params }) => {
        store.deleteSwitch(params.id('teamId'), params.id('switchId'));
        return noContent;
      }),
    },
  },
  {
    pattern: '/api/teams/{teamId}/integrations',
    methods: {
      GET: authed(({ store, params, query }) =>
        ok(store.listIntegrations(params.id('teamId'), query.get('name')).map((i) => integrationView(i))),
      ),
      POST: authed(({ store, params, body, publicUrl }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        const name = requiredString(body, 'name');
        const kind = oneOf(body, 'kind', INTEGRATION_KINDS);
        const { record, secret } = store.createIntegration(teamId, name, kind);
        return created(integrationView(record, { url: ingestUrl(publicUrl, record.id), key: secret }));
      }),
    },
  },
  {
    pattern: '/api/teams/{teamId}/integrations/{integrationId}',
    methods: {
      PATCH: authed(({ store, params, body }) => {
        const teamId = store.getTeam(params.id('teamId')).id;
        const renamed = store.renameIntegration(
          teamId,
          params.id('integrationId'),
          requiredString(body, 'name'),
        );
        return ok(integrationView(renamed));
      }),
      DELETE: authed(({ store, params }) => {
        store.deleteIntegration(params.id('teamId'), params.id('integrationId'));
        return noContent;
      }),
    },
  },
  // The alert payload is not read: the route exists to prove an integration's Secret works.
  {
    pattern: '/ingest/{integrationId}',
    methods: {
      POST: {
        auth: 'none',
        rawBody: true,
        run: ({ store, params, bearer }) => {
          store.ingest(params.id('integrationId'), bearer);
          return { status: 202, body: STATUS_ACCEPTED };
        },
      },
    },
  },
]);

/** Where an integration receives alerts: `<publicUrl>/ingest/<id>`. */
export function ingestUrl(publicUrl: string, integrationId: number): string {
  return `${publicUrl}/ingest/${integrationId}`;
}

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive), if any. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m?.[1];
}

export interface ApiRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly authorization: string | undefined;
  readonly body: string;
  readonly publicUrl: string;
  /** The release the stand-in plays (routes newer than it are unknown). */
  readonly version: ServerVersion;
  /**
   * A server that reserves teams to admins: every `/api/teams` route answers a non-admin
   * 403. The contract is silent on who may manage teams; this plays the strict reading.
   */
  readonly teamsAdminOnly?: boolean;
}

export interface ApiOutcome {
  readonly reply: Reply;
  /** The user whose key authenticated the request, for the request log. */
  readonly userId?: number;
}

const errorReply = (status: number, error: string, headers?: Record<string, string>): Reply => ({
  status,
  body: { error },
  ...(headers ? { headers } : {}),
});

/** Go's `http.NotFound`: the real router's answer to a path it has no route for, in every version. */
export const GO_NOT_FOUND = '404 page not found\n';
const noRoute: Reply = { status: 404, text: GO_NOT_FOUND };

export function dispatch(store: Store, req: ApiRequest): ApiOutcome {
  const m = router.match(req.method, req.path);
  if (m.kind === 'no-route') return { reply: noRoute };
  if (m.kind === 'found' && m.endpoint.since && !atLeast(req.version, m.endpoint.since)) {
    return { reply: noRoute };
  }
  if (m.kind === 'wrong-method') {
    return { reply: errorReply(405, MSG.methodNotAllowed, { allow: m.allow.join(', ') }) };
  }
  const { endpoint, params } = m;
  const bearer = bearerToken(req.authorization);
  let run: (c: Context) => Reply;
  let who: { userId?: number } = {};
  if (endpoint.auth === 'none') {
    run = endpoint.run;
  } else {
    const actor = store.authenticate(bearer);
    if (!actor) return { reply: errorReply(401, MSG.unauthorized) };
    who = { userId: actor.id };
    if (req.teamsAdminOnly && !actor.admin && req.path.startsWith('/api/teams')) {
      return { reply: errorReply(403, MSG.forbidden), ...who };
    }
    run = (c) => endpoint.run({ ...c, actor });
  }
  const rawBody = endpoint.auth === 'none' && endpoint.rawBody === true;
  try {
    const body = hasBody(req.method) && !rawBody ? parseJsonObject(req.body) : {};
    return {
      reply: run({ store, params, query: req.query, body, bearer, publicUrl: req.publicUrl }),
      ...who,
    };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { reply: errorReply(e.status, e.message), ...who };
  }
}

function hasBody(method: string): boolean {
  return method === 'POST' || method === 'PUT' || method === 'PATCH';
}
