/**
 * The TerdutDeadmanSwitch reconciler (DESIGN §4.4, §5): the server can only create and
 * delete a switch, so any change but the name is a delete and a create, decided against
 * what status says was applied (normalised: `15m` and `900s` agree). Every create goes
 * through `place`: a 409 (a create whose answer was lost, or a status read from a cache
 * older than this controller's last write) is adopted by name, unless another CR holds
 * that ID. A switch gone from the server (deleted there, or with its team) is created again.
 */
import { type Controller, type EventInput, EventType, type Manager } from '@operators/kit';
import {
  TERDUT_DEADMAN_SWITCH,
  type TerdutDeadmanSwitch,
  type TerdutDeadmanSwitchStatus,
} from '../api/terdut-deadman-switch.ts';
import { type DeadmanSwitch, isStatus, type TerdutApi, TerdutApiError } from '../client/terdut-api.ts';
import {
  desiredSwitch,
  planSwitch,
  type SwitchPlan,
  type SwitchValues,
  sameSwitch,
  valuesOf,
} from '../domain/deadman.ts';
import { EventReason, Reason } from '../domain/reasons.ts';
import { addChildController, type SharedCaches } from './child-controller.ts';
import { errorMessage, type TerdutControllerOptions } from './common.ts';

const create = (api: TerdutApi, teamID: number, name: string, v: SwitchValues): Promise<DeadmanSwitch> =>
  api.createSwitch(teamID, {
    name,
    matcher: v.matcher,
    timeout_seconds: v.timeoutSeconds,
    severity: v.severity,
  });

/** What creating a switch came to (see `place`). */
type Placed =
  | { readonly kind: 'Created' }
  | { readonly kind: 'Adopted' }
  | { readonly kind: 'Replaced'; readonly old: number }
  | { readonly kind: 'Held'; readonly message: string };

export function addTerdutDeadmanSwitchController(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
): Controller<TerdutDeadmanSwitch> {
  return addChildController<TerdutDeadmanSwitch>(manager, shared, opts, {
    name: 'terdutdeadmanswitch',
    gvk: TERDUT_DEADMAN_SWITCH,
    hasServerSide: (sw) => sw.status?.switchID !== undefined,

    async apply(sw, { api, teamID }, ctx, tools) {
      const { recorder } = tools;
      const desired = desiredSwitch(sw.spec);
      if (!desired) {
        const message = `spec.timeout: "${sw.spec.timeout}" is not a positive duration such as 15m`;
        await tools.write(ctx, sw, {}, { ok: false, reason: Reason.ServerError, message });
        return { requeueAfterMs: tools.resyncMs };
      }
      // A switch of another team ID died with that team (a team recreated on the server).
      const sameTeam = sw.status?.teamID === teamID;
      let id = sameTeam ? sw.status?.switchID : undefined;
      let applied = sameTeam ? sw.status?.applied : undefined;
      const ids = (): Partial<TerdutDeadmanSwitchStatus> => ({
        switchID: id,
        applied: id === undefined ? undefined : applied,
        teamID,
      });
      const made = (s: DeadmanSwitch): void => {
        id = s.id;
        applied = valuesOf(s);
      };
      const name = sw.spec.name;
      /**
       * Creates the switch. A 409 means a switch of its name is on the team already: a
       * create whose answer was lost, or the switch this controller made in its previous
       * reconcile when this one reads a status older than that reconcile's write (the
       * cache lags its own writes). It is adopted when its values are the spec's, replaced
       * when not, and left alone when another CR holds it.
       */
      const place = async (): Promise<Placed> => {
        let taken: unknown;
        try {
          made(await create(api, teamID, name, desired));
          return { kind: 'Created' };
        } catch (err) {
          if (!isStatus(err, 409)) throw err;
          taken = err;
        }
        const found = (await api.listSwitches(teamID, name)).find((s) => s.name === name);
        if (!found) throw taken; // Deleted meanwhile: the retry finds the name free.
        const holder = tools.holder(sw, found.id, teamID, (o) => o.status?.switchID);
        if (holder) {
          return {
            kind: 'Held',
            message: `switch "${name}" (${found.id}) on team ${teamID} belongs to TerdutDeadmanSwitch ${holder.metadata.name}`,
          };
        }
        if (sameSwitch(valuesOf(found), desired)) {
          made(found);
          return { kind: 'Adopted' };
        }
        await api.deleteSwitch(teamID, found.id);
        made(await create(api, teamID, name, desired));
        return { kind: 'Replaced', old: found.id };
      };
      /** The Event for what `place` did, as part of `plan`; `old` is the switch the plan replaces. */
      const placedEvent = (
        placed: Exclude<Placed, { kind: 'Held' }>,
        plan: Exclude<SwitchPlan, { kind: 'InSync' }>,
        old: number | undefined,
      ): EventInput => {
        if (placed.kind === 'Adopted') {
          return {
            type: EventType.Normal,
            reason: EventReason.Adopted,
            action: 'Adopt',
            note: `switch ${id} of the same name and values already on team ${teamID}: adopted`,
          };
        }
        if (placed.kind === 'Replaced') {
          return {
            type: EventType.Normal,
            reason: EventReason.Recreated,
            action: 'Recreate',
            note: `switch "${name}" (${placed.old}) on the server differed from the spec: replaced by ${id}`,
          };
        }
        switch (plan.kind) {
          case 'Missing':
            return {
              type: EventType.Warning,
              reason: EventReason.Recreated,
              action: 'Create',
              note: `switch ${old} was gone from team ${teamID}: created again as ${id}`,
            };
          case 'Recreate':
            return {
              type: EventType.Normal,
              reason: EventReason.Recreated,
              action: 'Recreate',
              note: `switch ${old} ${plan.why === 'SpecChanged' ? 'differs from the spec' : 'was changed on the server'}: deleted and created again as ${id} (the server has no update verb)`,
            };
          case 'Create':
            return {
              type: EventType.Normal,
              reason: EventReason.Created,
              action: 'Create',
              note: `switch ${id} on team ${teamID}`,
            };
          default:
            return plan satisfies never;
        }
      };
      try {
        const live =
          id === undefined ? undefined : (await api.listSwitches(teamID, name)).find((s) => s.id === id);
        const plan = planSwitch({
          desired,
          ...(applied ? { applied } : {}),
          ...(live ? { live } : {}),
          hasId: id !== undefined,
        });
        if (plan.kind !== 'InSync') {
          const old = id;
          if (plan.kind === 'Recreate' && old !== undefined) {
            try {
              await api.deleteSwitch(teamID, old);
            } catch (err) {
              if (!isStatus(err, 404)) throw err;
            }
          }
          id = undefined;
          const placed = await place();
          if (placed.kind === 'Held') {
            recorder.event(sw, {
              type: EventType.Warning,
              reason: Reason.NameConflict,
              action: 'Create',
              note: placed.message,
            });
            await tools.write(ctx, sw, ids(), {
              ok: false,
              reason: Reason.NameConflict,
              message: placed.message,
            });
            return { requeueAfterMs: tools.resyncMs };
          }
          recorder.event(sw, placedEvent(placed, plan, old));
        }
      } catch (err) {
        if (!(err instanceof TerdutApiError)) throw err;
        recorder.event(sw, {
          type: EventType.Warning,
          reason: EventReason.SyncFailed,
          action: 'Sync',
          note: errorMessage(err),
        });
        await tools.write(ctx, sw, ids(), {
          ok: false,
          reason: Reason.ServerError,
          message: errorMessage(err),
        });
        throw err;
      }
      await tools.write(ctx, sw, ids(), {
        ok: true,
        reason: Reason.Synced,
        message: `switch ${id} on team ${teamID}`,
      });
      return { requeueAfterMs: tools.resyncMs };
    },

    describe: (sw) => `switch ${sw.status?.switchID}`,
    remove: (sw, { api, teamID }) => api.deleteSwitch(teamID, sw.status?.switchID as number),
  });
}
