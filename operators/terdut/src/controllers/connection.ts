/**
 * How a TerdutTeam, and each child through its team, reaches terdut-server (DESIGN §5's
 * owner chain, resolved from caches, never by asking another controller):
 * serverRef → TerdutServer → consent (re-evaluated every time, §4.6) → the credentials
 * Secret: the server's own beside it for a same-namespace team, the mirror in the
 * team's namespace for a cross-namespace one (a team never reads a Secret in another
 * namespace, §6.4).
 */
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject, type Reflector } from '@operators/kit';
import { TERDUT_SERVER, type TerdutServer } from '../api/terdut-server.ts';
import type { ServerRef } from '../api/terdut-team.ts';
import { type CallRecord, TerdutApi } from '../client/terdut-api.ts';
import { consent, needsNamespaceLabels } from '../domain/consent.ts';
import { CREDENTIALS_KEYS, mirrorSecretName } from '../domain/names.ts';
import { Reason } from '../domain/reasons.ts';
import { serviceUrl } from '../domain/server/index.ts';
import { secretValue, type TerdutControllerOptions } from './common.ts';

export const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;

export type Link =
  | {
      readonly kind: 'Connected';
      readonly api: TerdutApi;
      readonly server: TerdutServer;
      /** `<namespace>/<name>` of the TerdutServer: what a team's status.server holds. */
      readonly serverKey: string;
      readonly crossNamespace: boolean;
    }
  | {
      readonly kind: 'Blocked';
      readonly reason: (typeof Reason)[keyof typeof Reason];
      readonly message: string;
      /** Whether the refusal is consent's (no call at all may be made). */
      readonly revoked: boolean;
    };

export interface ConnectDeps {
  readonly client: KubeClient;
  readonly servers: Reflector<TerdutServer>;
  /** The operator's labelled Secrets (credentials, mirrors, webhooks). */
  readonly secrets: Reflector<KubeObject>;
  readonly opts: TerdutControllerOptions;
  readonly controller: string;
}

/** The URL a server answers on: in-cluster Service DNS, unless the run maps it elsewhere. */
export function serverBaseUrl(server: TerdutServer, opts: TerdutControllerOptions): string {
  const inCluster = serviceUrl(server);
  return opts.serverUrl ? opts.serverUrl(server, inCluster) : inCluster;
}

export function apiFor(
  server: TerdutServer,
  deps: Pick<ConnectDeps, 'opts' | 'controller'>,
  signal: AbortSignal | undefined,
  apiKey?: string,
): TerdutApi {
  const onCall = deps.opts.onApiCall;
  return new TerdutApi({
    baseUrl: serverBaseUrl(server, deps.opts),
    ...(apiKey ? { apiKey } : {}),
    ...(deps.opts.apiTimeoutMs ? { timeoutMs: deps.opts.apiTimeoutMs } : {}),
    ...(signal ? { signal } : {}),
    ...(onCall ? { onCall: (c: CallRecord) => onCall({ ...c, controller: deps.controller }) } : {}),
  });
}

export async function connect(
  deps: ConnectDeps,
  teamNamespace: string,
  serverRef: ServerRef,
  signal: AbortSignal,
  /**
   * For a finalizer: skip consent. Revocation stops changes, not clean-up (§4.6): a
   * revoked team's deletion still deletes its server-side team, with the server's own key.
   */
  purpose: 'change' | 'cleanup' = 'change',
): Promise<Link> {
  const serverNamespace = serverRef.namespace || teamNamespace;
  const serverKey = `${serverNamespace}/${serverRef.name}`;
  const server = deps.servers.store.get(serverKey) as TerdutServer | undefined;
  if (!server) {
    return {
      kind: 'Blocked',
      reason: Reason.ServerNotFound,
      message: `no ${TERDUT_SERVER.kind} ${serverKey} (spec.serverRef)`,
      revoked: false,
    };
  }
  let labels: Readonly<Record<string, string>> | undefined;
  if (needsNamespaceLabels(teamNamespace, serverNamespace, server.spec.allowedTeams)) {
    // One Get of the team's own Namespace, never a List (§4.6): labels as they are now.
    try {
      const ns = await deps.client.get(NAMESPACE, teamNamespace);
      labels = ns.metadata.labels ?? {};
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
      labels = {};
    }
  }
  const decided = consent({
    teamNamespace,
    serverNamespace,
    serverName: serverRef.name,
    ...(server.spec.allowedTeams ? { allowedTeams: server.spec.allowedTeams } : {}),
    ...(labels ? { namespaceLabels: labels } : {}),
  });
  // A revoked team's finalizer: its namespace holds no copy any more (revocation deletes
  // it), so the deletion uses the server's own key, read from the operator's cache in the
  // server's namespace; no copy is written for it.
  const decision =
    purpose === 'cleanup'
      ? { permitted: true as const, crossNamespace: decided.permitted && teamNamespace !== serverNamespace }
      : decided;
  if (!decision.permitted) {
    return { kind: 'Blocked', reason: Reason.RefNotPermitted, message: decision.message, revoked: true };
  }
  const secretRef = server.status?.operatorCredentialsSecretRef?.name;
  if (!secretRef) {
    return {
      kind: 'Blocked',
      reason: Reason.CredentialsMissing,
      message: `${TERDUT_SERVER.kind} ${serverKey} has no operator credentials yet (its Bootstrapped condition says why)`,
      revoked: false,
    };
  }
  const secretKey = decision.crossNamespace
    ? `${teamNamespace}/${mirrorSecretName(serverRef.name, serverNamespace)}`
    : `${serverNamespace}/${secretRef}`;
  const apiKey = secretValue(
    deps.secrets.store.get(secretKey) as KubeObject | undefined,
    CREDENTIALS_KEYS.apiKey,
  );
  if (!apiKey) {
    return {
      kind: 'Blocked',
      reason: Reason.CredentialsMissing,
      message: decision.crossNamespace
        ? `the mirrored credentials Secret ${secretKey} is not there yet (the TerdutServer's controller writes it)`
        : `the credentials Secret ${secretKey} is missing or has no ${CREDENTIALS_KEYS.apiKey}`,
      revoked: false,
    };
  }
  return {
    kind: 'Connected',
    api: apiFor(server, deps, signal, apiKey),
    server,
    serverKey,
    crossNamespace: decision.crossNamespace,
  };
}
