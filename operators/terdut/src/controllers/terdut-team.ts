/**
 * The TerdutTeam reconciler (DESIGN §4.2, §4.6, §5): resolve the server and its consent,
 * then make the server's team match the spec — POST once (a 409 after a lost answer is
 * adopted by name, unless another TerdutTeam holds that ID), PUT a rename, PUT the OIDC
 * groups, only where the server differs. A refused reference makes no call at all and
 * deletes nothing. Deleting the CR deletes the server's team (finalizer).
 */
import {
  type Controller,
  EventType,
  type KubeObject,
  type Manager,
  type ReconcileContext,
  type ReconcileResult,
  realClock,
} from '@operators/kit';
import { TERDUT_SERVER } from '../api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam, type TerdutTeamStatus } from '../api/terdut-team.ts';
import { isStatus, type Team, TerdutApiError } from '../client/terdut-api.ts';
import { FINALIZER, MANAGED_SELECTOR } from '../domain/names.ts';
import { ConditionType, EventReason, Reason } from '../domain/reasons.ts';
import { teamCallRefusal } from '../domain/server-refusal.ts';
import { adoptable, teamUpdates } from '../domain/team.ts';
import type { SharedCaches } from './child-controller.ts';
import {
  announce,
  DEFAULT_RESYNC_MS,
  errorMessage,
  markDegraded,
  type TerdutControllerOptions,
  Waiting,
  whenSynced,
  withConditions,
  writeStatus,
} from './common.ts';
import { connect } from './connection.ts';
import { reconcileWithFinalizer, SECRET_GVK } from './finish.ts';
import { serverKeyOfSecret } from './mirrors.ts';

export const TEAM_BY_SERVER = 'terdut.serverKey';

/** `<namespace>/<name>` of the server a team references. */
export function teamServerKey(t: KubeObject): string {
  const team = t as TerdutTeam;
  return `${team.spec?.serverRef?.namespace || team.metadata.namespace}/${team.spec?.serverRef?.name}`;
}

/** How long a team waits for something outside its control (a server, credentials) before looking again. */
const WAIT_MS = 5_000;

export function addTerdutTeamController(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
): Controller<TerdutTeam> {
  const { client, recorder } = manager;
  const clock = opts.clock ?? realClock;
  const resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
  const teams = manager.cache.informer<TerdutTeam>(TERDUT_TEAM);
  teams.store.addIndex(TEAM_BY_SERVER, (t) => [teamServerKey(t)]);
  const deps = { client, servers: shared.servers, secrets: shared.secrets, opts, controller: 'terdutteam' };

  const status = (
    team: TerdutTeam,
    patch: Partial<TerdutTeamStatus>,
    ready: { ok: boolean; reason: string; message: string },
    generation?: number,
  ): TerdutTeamStatus => ({
    ...team.status,
    ...patch,
    conditions: withConditions(
      team.status?.conditions,
      [
        {
          type: ConditionType.Ready,
          status: ready.ok ? 'True' : 'False',
          reason: ready.reason,
          message: ready.message,
          observedGeneration: team.metadata.generation,
        },
      ],
      new Date(clock.now()),
    ),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  });

  async function apply(team: TerdutTeam, ctx: ReconcileContext): Promise<ReconcileResult> {
    const ns = team.metadata.namespace ?? '';
    const link = await connect(deps, ns, team.spec.serverRef, ctx.signal);
    if (link.kind === 'Blocked') {
      announce(recorder, team, ConditionType.Ready, link.reason, link.message);
      await writeStatus(
        ctx.client,
        TERDUT_TEAM,
        team,
        status(team, {}, { ok: false, reason: link.reason, message: link.message }),
      );
      // A revocation is re-checked at the resync (a Namespace label change sends no event here).
      return { requeueAfterMs: link.revoked ? resyncMs : WAIT_MS };
    }
    const { api, serverKey } = link;
    let id = team.status?.server === serverKey ? team.status?.teamID : undefined;
    let live: Team | undefined;
    try {
      if (id !== undefined) {
        try {
          live = await api.getTeam(id);
        } catch (err) {
          if (!isStatus(err, 404)) throw err;
          recorder.event(team, {
            type: EventType.Warning,
            reason: EventReason.Recreated,
            action: 'Create',
            note: `team ${id} is gone from ${serverKey}: creating it again (its children follow)`,
          });
          id = undefined;
        }
      }
      if (!live) {
        try {
          live = await api.createTeam(team.spec.displayName);
          recorder.event(team, {
            type: EventType.Normal,
            reason: EventReason.Created,
            action: 'Create',
            note: `team ${live.id} "${live.name}" on ${serverKey}`,
          });
        } catch (err) {
          if (!isStatus(err, 409)) throw err;
          const found = (await api.listTeams(team.spec.displayName)).find(
            (t) => t.name === team.spec.displayName,
          );
          if (!found) throw err;
          const others = teams.store.byIndex(TEAM_BY_SERVER, serverKey).map((t) => ({
            namespace: t.metadata.namespace ?? '',
            name: t.metadata.name ?? '',
            server: t.status?.server,
            teamID: t.status?.teamID,
          }));
          const verdict = adoptable(
            found.id,
            { namespace: ns, name: team.metadata.name ?? '' },
            others,
            serverKey,
          );
          if (!verdict.adopt) {
            const message = `team "${found.name}" (${found.id}) on ${serverKey} belongs to TerdutTeam ${verdict.holder}: choose another displayName`;
            recorder.event(team, {
              type: EventType.Warning,
              reason: Reason.NameConflict,
              action: 'Create',
              note: message,
            });
            await writeStatus(
              ctx.client,
              TERDUT_TEAM,
              team,
              status(team, {}, { ok: false, reason: Reason.NameConflict, message }),
            );
            return { requeueAfterMs: resyncMs };
          }
          live = found;
          recorder.event(team, {
            type: EventType.Normal,
            reason: EventReason.Adopted,
            action: 'Adopt',
            note: `team ${found.id} "${found.name}" already on ${serverKey} (an earlier create whose answer was lost)`,
          });
        }
      }
      id = live.id;
      const updates = teamUpdates(team.spec, live);
      if (updates.rename !== undefined) {
        try {
          live = await api.renameTeam(id, updates.rename);
        } catch (err) {
          if (!isStatus(err, 409)) throw err;
          const message = `cannot rename team ${id} to "${updates.rename}": another team on ${serverKey} has that name`;
          await writeStatus(
            ctx.client,
            TERDUT_TEAM,
            team,
            status(
              team,
              { teamID: id, server: serverKey },
              { ok: false, reason: Reason.NameConflict, message },
            ),
          );
          return { requeueAfterMs: resyncMs };
        }
        recorder.event(team, {
          type: EventType.Normal,
          reason: EventReason.Updated,
          action: 'Rename',
          note: `renamed to "${updates.rename}"`,
        });
      }
      if (updates.oidcGroups) {
        live = await api.setTeamOidcGroups(id, updates.oidcGroups);
        recorder.event(team, {
          type: EventType.Normal,
          reason: EventReason.Updated,
          action: 'SetOidcGroups',
          note: 'OIDC groups set',
        });
      }
    } catch (err) {
      if (!(err instanceof TerdutApiError)) throw err;
      const refusal = teamCallRefusal({ status: err.status, message: errorMessage(err), serverKey });
      // The Event first: what the server answered is said even when the status write below
      // is refused as stale (a guarded write) and the reconcile runs again.
      recorder.event(team, {
        type: EventType.Warning,
        reason: refusal.reason === Reason.ServerError ? EventReason.SyncFailed : refusal.reason,
        action: 'Sync',
        note: refusal.message,
      });
      // An ID learned before the failure is kept: the next reconcile must not create a second team.
      await writeStatus(
        ctx.client,
        TERDUT_TEAM,
        team,
        status(team, id === undefined ? {} : { teamID: id, server: serverKey }, {
          ok: false,
          reason: refusal.reason,
          message: refusal.message,
        }),
      );
      // A missing right is not a transient failure: look again at the resync, not in a backoff loop.
      if (refusal.reason === Reason.TeamPermissionDenied) return { requeueAfterMs: resyncMs };
      throw err;
    }
    await writeStatus(
      ctx.client,
      TERDUT_TEAM,
      team,
      status(
        team,
        {
          teamID: id,
          server: serverKey,
          applied: {
            name: live.name,
            ...(live.oidc_member_group ? { memberGroup: live.oidc_member_group } : {}),
            ...(live.oidc_owner_group ? { ownerGroup: live.oidc_owner_group } : {}),
          },
        },
        { ok: true, reason: Reason.Synced, message: `team ${id} on ${serverKey}` },
        team.metadata.generation,
      ),
    );
    return { requeueAfterMs: resyncMs };
  }

  async function cleanup(team: TerdutTeam, ctx: ReconcileContext): Promise<void> {
    const id = team.status?.teamID;
    if (id === undefined) return;
    const ns = team.metadata.namespace ?? '';
    const link = await connect(deps, ns, team.spec.serverRef, ctx.signal, 'cleanup');
    const degraded = (reason: string, message: string): Promise<void> =>
      markDegraded(ctx.client, recorder, TERDUT_TEAM, team, reason, message, clock);
    if (link.kind === 'Blocked') {
      const message = `cannot delete team ${id} on the server yet: ${link.message} (the finalizer ${FINALIZER} stays; remove it by hand only if the server is gone for good)`;
      await degraded(link.reason, message);
      throw new Waiting(message, WAIT_MS);
    }
    try {
      await link.api.deleteTeam(id);
    } catch (err) {
      if (!isStatus(err, 404)) {
        await degraded(
          Reason.DeleteFailed,
          `deleting team ${id} on ${link.serverKey} failed: ${errorMessage(err)}; retrying`,
        );
        throw err;
      }
    }
    recorder.event(team, {
      type: EventType.Normal,
      reason: EventReason.Deleted,
      action: 'Delete',
      note: `team ${id} deleted on ${link.serverKey}`,
    });
  }

  /** Secrets labelled with a server key → the teams of that server in the Secret's namespace (its mirror) or all (its own). */
  const teamsOfSecret = (s: KubeObject): string[] => {
    const key = serverKeyOfSecret(s);
    if (!key) return [];
    return teams.store.byIndex(TEAM_BY_SERVER, key).map((t) => `${t.metadata.namespace}/${t.metadata.name}`);
  };

  return manager
    .controller('terdutteam')
    .for<TerdutTeam>(TERDUT_TEAM)
    .watches(
      TERDUT_SERVER,
      whenSynced(teams, (s: KubeObject) =>
        teams.store
          .byIndex(TEAM_BY_SERVER, `${s.metadata.namespace}/${s.metadata.name}`)
          .map((t) => `${t.metadata.namespace}/${t.metadata.name}`),
      ),
    )
    .watches(SECRET_GVK, whenSynced(teams, teamsOfSecret), { labelSelector: MANAGED_SELECTOR })
    .withConcurrency(opts.concurrency ?? 4)
    .reconcile(async (req, ctx) => {
      const team = req.object as TerdutTeam | undefined;
      if (!team) return {};
      return reconcileWithFinalizer(
        ctx,
        team,
        (o) => apply(o, ctx),
        (o) => cleanup(o, ctx),
      );
    });
}
