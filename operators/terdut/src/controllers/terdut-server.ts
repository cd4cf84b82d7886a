/**
 * The TerdutServer reconciler (DESIGN §4.1, §6, §7, §8): the database wiring, the
 * Deployment and Service (applied only where they drifted), the server's health, the
 * operator's own key (credentials.ts), and the mirrored copies for cross-namespace teams
 * (mirrors.ts). Ready = Bootstrapped ∧ DatabaseReady ∧ /healthz 200. Deleting a
 * TerdutServer waits until its TerdutTeams are gone, so their finalizers never lose
 * their credentials mid-delete.
 */
import {
  type Condition,
  type ConditionUpdate,
  type Controller,
  EventType,
  hasDrifted,
  type KubeObject,
  type Manager,
  type ReconcileContext,
  type ReconcileResult,
  realClock,
  removeFinalizer,
} from '@operators/kit';
import { TERDUT_SERVER, type TerdutServer, type TerdutServerStatus } from '../api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam } from '../api/terdut-team.ts';
import { TerdutApiError } from '../client/terdut-api.ts';
import { credentialsSecretName, FIELD_MANAGER, FINALIZER, MANAGED_SELECTOR } from '../domain/names.ts';
import { ConditionType, EventReason, Reason } from '../domain/reasons.ts';
import {
  type ClusterLookup,
  type DatabaseResolution,
  DEPLOYMENT,
  desiredDeployment,
  desiredService,
  POSTGRESQL,
  passwordSecretName,
  resolveDatabase,
  SERVICE,
  serviceName,
  type ZalandoPostgresql,
} from '../domain/server/index.ts';
import type { SharedCaches } from './child-controller.ts';
import {
  announce,
  DEFAULT_RESYNC_MS,
  errorMessage,
  SERVER_STATUS_WRITE,
  type TerdutControllerOptions,
  Waiting,
  whenSynced,
  withConditions,
  writeStatus,
} from './common.ts';
import { apiFor } from './connection.ts';
import { Credentials, type CredentialsOutcome, type PendingKeys } from './credentials.ts';
import { reconcileWithFinalizer, SECRET_GVK } from './finish.ts';
import { deleteMirror, mirrorsOf, serverKeyOfSecret, syncMirrors } from './mirrors.ts';
import { TEAM_BY_SERVER, teamServerKey } from './terdut-team.ts';

const WAIT_MS = 5_000;
/** `kubectl rollout restart` stamps the pod template with this. */
const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';
/** Zalando labels the Secrets it generates with this (its default `cluster_labels`). */
const SPILO_SELECTOR = 'application=spilo';

export function addTerdutServerController(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
): Controller<TerdutServer> {
  const { client, recorder } = manager;
  const clock = opts.clock ?? realClock;
  const resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
  const deps = { opts, controller: 'terdutserver' };
  const owned = { labelSelector: MANAGED_SELECTOR };
  const deployments = manager.cache.informer(DEPLOYMENT, owned);
  const services = manager.cache.informer(SERVICE, owned);
  const pending: PendingKeys = new Map();
  const clusters = opts.zalando ? manager.cache.informer<ZalandoPostgresql>(POSTGRESQL) : undefined;

  async function resolveDb(server: TerdutServer): Promise<DatabaseResolution> {
    const ns = server.metadata.namespace ?? '';
    const ref = server.spec.database.postgresClusterRef?.name;
    let cluster: ClusterLookup;
    if (ref)
      cluster = clusters
        ? (clusters.store.get(`${ns}/${ref}`) as ZalandoPostgresql | undefined)
        : 'CrdAbsent';
    const secretName = passwordSecretName({ database: server.spec.database, ...(ref ? { cluster } : {}) });
    const secret = secretName ? await client.find(SECRET_GVK, secretName, ns) : undefined;
    return resolveDatabase({
      namespace: ns,
      database: server.spec.database,
      ...(ref ? { cluster } : {}),
      ...(secret
        ? {
            secret: {
              name: secret.metadata.name ?? '',
              data: (secret as { data?: Record<string, string> }).data ?? {},
              ...(secret.metadata.resourceVersion
                ? { resourceVersion: secret.metadata.resourceVersion }
                : {}),
            },
          }
        : {}),
    });
  }

  /** Applies `desired` only where the live object (from the cache) differs. */
  async function ensure(desired: KubeObject, live: KubeObject | undefined): Promise<boolean> {
    if (!hasDrifted(desired, live)) return false;
    await client.apply(desired, { fieldManager: FIELD_MANAGER, force: true });
    return true;
  }

  async function apply(server: TerdutServer, ctx: ReconcileContext): Promise<ReconcileResult> {
    const ns = server.metadata.namespace ?? '';
    const name = server.metadata.name ?? '';
    const now = new Date(clock.now());
    const conditions: ConditionUpdate[] = [];
    const generation = server.metadata.generation;
    let failed: unknown;

    // 1. Database and workload. An unresolved database leaves a running Deployment alone.
    const db = await resolveDb(server);
    await ensure(desiredService(server), services.store.get(`${ns}/${name}`) as KubeObject | undefined);
    const deployment = deployments.store.get(`${ns}/${name}`) as
      | (KubeObject & { spec?: { template?: { metadata?: { annotations?: Record<string, string> } } } })
      | undefined;
    if (db.kind === 'Resolved') await ensure(desiredDeployment(server, db), deployment);
    conditions.push(
      db.kind === 'Resolved'
        ? {
            type: ConditionType.DatabaseReady,
            status: 'True',
            reason: Reason.DatabaseResolved,
            message: db.message,
            observedGeneration: generation,
          }
        : {
            type: ConditionType.DatabaseReady,
            status: 'False',
            reason: db.reason,
            message: db.message,
            observedGeneration: generation,
          },
    );

    // 2. A rotated database password: said, never acted on (§8, §13: no automatic restart).
    const seenVersion = server.status?.databaseSecretVersion;
    const version = db.kind === 'Resolved' ? db.secretResourceVersion : undefined;
    const restart = restartCondition(
      server.status?.conditions,
      seenVersion,
      version,
      deployment?.spec?.template?.metadata?.annotations?.[RESTARTED_AT],
      name,
    );
    if (restart.event) {
      recorder.event(server, {
        type: EventType.Warning,
        reason: EventReason.KeyRotationNeeded,
        action: 'Rotate',
        note: restart.event,
      });
    }
    if (restart.condition) conditions.push({ ...restart.condition, observedGeneration: generation });

    // 3. Health, then the operator's key.
    const api = apiFor(server, deps, ctx.signal);
    let healthy: { ok: boolean; message: string };
    try {
      await api.healthz();
      healthy = { ok: true, message: `${api.baseUrl}/healthz answers 200` };
    } catch (err) {
      healthy = { ok: false, message: errorMessage(err) };
    }
    const creds = new Credentials(
      { client: ctx.client, recorder, now: () => clock.now(), pending },
      server,
      api,
    );
    let outcome: CredentialsOutcome | undefined;
    if (healthy.ok) {
      try {
        outcome = await creds.ensure();
      } catch (err) {
        if (!(err instanceof TerdutApiError)) throw err;
        failed = err;
        outcome = { kind: 'NotReady', reason: Reason.ServerError, message: errorMessage(err) };
      }
    }
    let current = creds.current;
    if (outcome) {
      conditions.push(
        outcome.kind === 'Ready'
          ? {
              type: ConditionType.Bootstrapped,
              status: 'True',
              reason: Reason.CredentialsReady,
              message: outcome.message,
              observedGeneration: generation,
            }
          : {
              type: ConditionType.Bootstrapped,
              status: 'False',
              reason: outcome.reason,
              message: outcome.message,
              observedGeneration: generation,
            },
      );
    } else if (!current.status?.conditions?.some((c) => c.type === ConditionType.Bootstrapped)) {
      conditions.push({
        type: ConditionType.Bootstrapped,
        status: 'False',
        reason: Reason.ServerNotHealthy,
        message: healthy.message,
        observedGeneration: generation,
      });
    }

    for (const c of conditions) {
      if (c.status === 'False' && c.type !== ConditionType.Ready)
        announce(recorder, server, c.type, c.reason, c.message ?? '');
    }

    // 4. Mirrors for cross-namespace teams.
    const teams = shared.teams.store.byIndex(TEAM_BY_SERVER, `${ns}/${name}`) as TerdutTeam[];
    const credsSecret = shared.secrets.store.get(`${ns}/${credentialsSecretName(name)}`) as
      | (KubeObject & { data?: Record<string, string> })
      | undefined;
    const mirrored = await syncMirrors({
      client: ctx.client,
      server: current,
      teams,
      secrets: shared.secrets,
      data: outcome?.kind === 'Ready' ? credsSecret?.data : undefined,
      log: ctx.log,
      onChange: (what, namespace, secret, revoked) =>
        recorder.event(server, {
          type: EventType.Normal,
          reason: what === 'written' ? EventReason.MirrorWritten : EventReason.MirrorDeleted,
          action: what === 'written' ? 'Mirror' : 'Unmirror',
          note: `Secret ${namespace}/${secret} ${
            what === 'written'
              ? 'written for a TerdutTeam there'
              : revoked
                ? 'deleted: spec.allowedTeams no longer admits namespace ' + namespace + ' (consent revoked)'
                : 'deleted: no TerdutTeam there needs it'
          }`,
        }),
    });

    // 5. Status.
    const bootstrapped = withConditions(current.status?.conditions, conditions, now).find(
      (c) => c.type === ConditionType.Bootstrapped,
    );
    const ready = db.kind === 'Resolved' && healthy.ok && bootstrapped?.status === 'True';
    conditions.push({
      type: ConditionType.Ready,
      status: ready ? 'True' : 'False',
      reason: ready
        ? Reason.Synced
        : db.kind !== 'Resolved'
          ? db.reason
          : !healthy.ok
            ? Reason.ServerNotHealthy
            : (bootstrapped?.reason ?? Reason.CredentialsMissing),
      message: ready
        ? `serving at ${api.baseUrl}`
        : db.kind !== 'Resolved'
          ? db.message
          : !healthy.ok
            ? `terdut-server does not answer: ${healthy.message}`
            : (bootstrapped?.message ?? ''),
      observedGeneration: generation,
    });
    const status: TerdutServerStatus = {
      ...current.status,
      serviceName: serviceName(server),
      mirroredCredentials: mirrored,
      ...(version ? { databaseSecretVersion: version } : {}),
      conditions: withConditions(current.status?.conditions, conditions, now),
      ...(failed === undefined ? { observedGeneration: generation } : {}),
    };
    await writeStatus(ctx.client, TERDUT_SERVER, current, status, SERVER_STATUS_WRITE);
    current = { ...current, status };
    if (failed !== undefined) throw failed;
    const next = outcome?.kind === 'Ready' ? outcome.nextRotationMs : undefined;
    return { requeueAfterMs: ready ? Math.min(resyncMs, next ?? resyncMs) : WAIT_MS };
  }

  async function cleanup(server: TerdutServer, ctx: ReconcileContext): Promise<void> {
    const ns = server.metadata.namespace ?? '';
    const name = server.metadata.name ?? '';
    const teams = shared.teams.store.byIndex(TEAM_BY_SERVER, `${ns}/${name}`);
    if (teams.length) {
      const list = teams
        .slice(0, 5)
        .map((t) => `${t.metadata.namespace}/${t.metadata.name}`)
        .join(', ');
      const message = `waiting for ${teams.length} TerdutTeam(s) referencing this server to be deleted first (${list}${teams.length > 5 ? ', …' : ''})`;
      await writeStatus(
        ctx.client,
        TERDUT_SERVER,
        server,
        {
          ...server.status,
          conditions: withConditions(
            server.status?.conditions,
            [{ type: ConditionType.Ready, status: 'False', reason: Reason.TeamsRemaining, message }],
            new Date(clock.now()),
          ),
        },
        SERVER_STATUS_WRITE,
      );
      throw new Waiting(message, WAIT_MS);
    }
    for (const mirror of mirrorsOf(server, shared.secrets)) await deleteMirror(ctx.client, mirror);
    const own = await ctx.client.find(SECRET_GVK, credentialsSecretName(name), ns);
    if (own) await removeFinalizer(ctx.client, own, FINALIZER);
  }

  const serversIn = (ns: string | undefined, match: (s: TerdutServer) => boolean): string[] =>
    !shared.servers.store.hasSynced()
      ? []
      : shared.servers.store
          .list()
          .filter((s) => s.metadata.namespace === ns && match(s as TerdutServer))
          .map((s) => `${s.metadata.namespace}/${s.metadata.name}`);

  let builder = manager
    .controller('terdutserver')
    .for<TerdutServer>(TERDUT_SERVER)
    .owns(DEPLOYMENT, owned)
    .owns(SERVICE, owned)
    // Its credentials Secret and its mirrors (a mirror deleted by hand comes back).
    .watches(
      SECRET_GVK,
      (s) => {
        const key = serverKeyOfSecret(s);
        return key ? [key] : [];
      },
      owned,
    )
    // Teams come and go: mirrors follow, and a deletion waiting on teams goes on.
    .watches(
      TERDUT_TEAM,
      whenSynced(shared.servers, (t: KubeObject) => {
        // Only teams of other namespaces (mirrors), or any team of a server being deleted
        // (which waits for them): a same-namespace team's status write concerns nobody here.
        const key = teamServerKey(t);
        const server = shared.servers.store.get(key);
        if (!server) return [];
        const crosses = t.metadata.namespace !== server.metadata.namespace;
        return crosses || server.metadata.deletionTimestamp ? [key] : [];
      }),
    );
  if (opts.zalando) {
    builder = builder
      .watches(POSTGRESQL, (c) =>
        serversIn(c.metadata.namespace, (s) => s.spec.database.postgresClusterRef?.name === c.metadata.name),
      )
      .watches(
        SECRET_GVK,
        (sec) =>
          serversIn(sec.metadata.namespace, (s) => {
            const cluster = s.spec.database.postgresClusterRef?.name;
            return cluster !== undefined && sec.metadata.labels?.['cluster-name'] === cluster;
          }),
        { labelSelector: SPILO_SELECTOR },
      );
  }
  return builder.withConcurrency(opts.concurrency ?? 2).reconcile(async (req, ctx) => {
    const server = req.object as TerdutServer | undefined;
    if (!server) return {};
    return reconcileWithFinalizer(
      ctx,
      server,
      (o) => apply(o, ctx),
      (o) => cleanup(o, ctx),
    );
  });
}

/**
 * The RestartNeeded condition: set when the password Secret's version moved under a
 * running Deployment (with a Warning Event, once), cleared when the pods were restarted
 * after it (`kubectl rollout restart` stamps the template).
 */
export function restartCondition(
  conditions: readonly Condition[] | undefined,
  seenVersion: string | undefined,
  version: string | undefined,
  restartedAt: string | undefined,
  deploymentName: string,
): { condition?: ConditionUpdate; event?: string } {
  const current = conditions?.find((c) => c.type === ConditionType.RestartNeeded);
  if (seenVersion && version && seenVersion !== version) {
    const message =
      `the database password Secret changed (resourceVersion ${seenVersion} → ${version}); the running pods still use ` +
      `the old password: restart them when the database accepts the new one (kubectl rollout restart deployment/${deploymentName})`;
    return {
      condition: {
        type: ConditionType.RestartNeeded,
        status: 'True',
        reason: Reason.KeyRotationNeeded,
        message,
      },
      event: message,
    };
  }
  if (
    current?.status === 'True' &&
    restartedAt &&
    Date.parse(restartedAt) >= Date.parse(current.lastTransitionTime)
  ) {
    return {
      condition: {
        type: ConditionType.RestartNeeded,
        status: 'False',
        reason: Reason.RestartedAfterRotation,
        message: `restarted at ${restartedAt}`,
      },
    };
  }
  return {};
}
