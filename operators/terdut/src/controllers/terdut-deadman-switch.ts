/**
 * The TerdutDeadmanSwitch reconciler (DESIGN §4.4, §5): the server can only create and
 * delete a switch, so any change but the name is a delete and a create, decided against
 * what status says was applied (normalised: `15m` and `900s` agree). A create whose
 * answer was lost is adopted by name (409), unless another CR holds that ID. A switch
 * gone from the server (deleted there, or with its team) is created again.
 */
import { type Controller, EventType, type Manager } from '@operators/kit';
import {
  TERDUT_DEADMAN_SWITCH,
  type TerdutDeadmanSwitch,
  type TerdutDeadmanSwitchStatus,
} from '../api/terdut-deadman-switch.ts';
import { type DeadmanSwitch, isStatus, type TerdutApi, TerdutApiError } from '../client/terdut-api.ts';
import { desiredSwitch, planSwitch, type SwitchValues, sameSwitch, valuesOf } from '../domain/deadman.ts';
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
      try {
        const live =
          id === undefined ? undefined : (await api.listSwitches(teamID, name)).find((s) => s.id === id);
        const plan = planSwitch({
          desired,
          ...(applied ? { applied } : {}),
          ...(live ? { live } : {}),
          hasId: id !== undefined,
        });
        switch (plan.kind) {
          case 'InSync':
            break;
          case 'Missing': {
            const old = id;
            made(await create(api, teamID, name, desired));
            recorder.event(sw, {
              type: EventType.Warning,
              reason: EventReason.Recreated,
              action: 'Create',
              note: `switch ${old} was gone from team ${teamID}: created again as ${id}`,
            });
            break;
          }
          case 'Recreate': {
            const old = id;
            try {
              if (old !== undefined) await api.deleteSwitch(teamID, old);
            } catch (err) {
              if (!isStatus(err, 404)) throw err;
            }
            id = undefined;
            made(await create(api, teamID, name, desired));
            recorder.event(sw, {
              type: EventType.Normal,
              reason: EventReason.Recreated,
              action: 'Recreate',
              note: `switch ${old} ${plan.why === 'SpecChanged' ? 'differs from the spec' : 'was changed on the server'}: deleted and created again as ${id} (the server has no update verb)`,
            });
            break;
          }
          case 'Create': {
            try {
              made(await create(api, teamID, name, desired));
              recorder.event(sw, {
                type: EventType.Normal,
                reason: EventReason.Created,
                action: 'Create',
                note: `switch ${id} on team ${teamID}`,
              });
            } catch (err) {
              if (!isStatus(err, 409)) throw err;
              const found = (await api.listSwitches(teamID, name)).find((s) => s.name === name);
              if (!found) throw err;
              const holder = tools
                .siblings(sw)
                .find(
                  (o) =>
                    o.metadata.name !== sw.metadata.name &&
                    o.status?.switchID === found.id &&
                    o.status?.teamID === teamID,
                );
              if (holder) {
                const message = `switch "${name}" (${found.id}) on team ${teamID} belongs to TerdutDeadmanSwitch ${holder.metadata.name}`;
                recorder.event(sw, {
                  type: EventType.Warning,
                  reason: Reason.NameConflict,
                  action: 'Create',
                  note: message,
                });
                await tools.write(ctx, sw, {}, { ok: false, reason: Reason.NameConflict, message });
                return { requeueAfterMs: tools.resyncMs };
              }
              if (sameSwitch(valuesOf(found), desired)) {
                made(found);
                recorder.event(sw, {
                  type: EventType.Normal,
                  reason: EventReason.Adopted,
                  action: 'Adopt',
                  note: `switch ${found.id} already on team ${teamID} (an earlier create whose answer was lost)`,
                });
              } else {
                await api.deleteSwitch(teamID, found.id);
                made(await create(api, teamID, name, desired));
                recorder.event(sw, {
                  type: EventType.Normal,
                  reason: EventReason.Recreated,
                  action: 'Recreate',
                  note: `switch "${name}" on the server differed from the spec: replaced by ${id}`,
                });
              }
            }
            break;
          }
          default:
            return plan satisfies never;
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
