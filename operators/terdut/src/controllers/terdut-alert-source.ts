/**
 * The TerdutAlertSource reconciler (DESIGN §4.5, §5): an integration's URL and key are
 * told once, by the create, and go straight into a Secret owned by the CR (never spec,
 * status, logs or Events). Rename is a PATCH; a kind change, or a key Secret deleted by
 * hand, is a delete and a create with a new key (a Warning Event, since senders must pick
 * up the new Secret). A same-named integration without a key on record (a create whose
 * answer was lost) cannot be adopted — its key is unknowable — so it is deleted and
 * created again: exactly one integration and a working Secret at the end.
 */
import {
  type Controller,
  controllerReference,
  EventType,
  type KubeObject,
  type Manager,
  type ReconcileContext,
} from '@operators/kit';
import {
  TERDUT_ALERT_SOURCE,
  type TerdutAlertSource,
  type TerdutAlertSourceStatus,
} from '../api/terdut-alert-source.ts';
import { isStatus, type NewIntegration, type TerdutApi, TerdutApiError } from '../client/terdut-api.ts';
import {
  FIELD_MANAGER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MANAGED_SELECTOR,
  WEBHOOK_KEYS,
  webhookSecretName,
} from '../domain/names.ts';
import { EventReason, Reason } from '../domain/reasons.ts';
import { addChildController, type SharedCaches } from './child-controller.ts';
import { errorMessage, secretData, secretValue, type TerdutControllerOptions } from './common.ts';
import { SECRET_GVK } from './finish.ts';

/** Writes the URL and key of a new integration into the CR's Secret: the first thing after the create. */
async function keep(src: TerdutAlertSource, made: NewIntegration, ctx: ReconcileContext): Promise<void> {
  await ctx.client.apply(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: webhookSecretName(src.metadata.name ?? ''),
        namespace: src.metadata.namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
        ownerReferences: [controllerReference(src as KubeObject)],
      },
      type: 'Opaque',
      data: secretData({
        [WEBHOOK_KEYS.url]: made.url,
        [WEBHOOK_KEYS.key]: made.key,
        [WEBHOOK_KEYS.integrationID]: String(made.id),
      }),
    },
    { fieldManager: FIELD_MANAGER, force: true },
  );
}

async function createKept(
  api: TerdutApi,
  teamID: number,
  src: TerdutAlertSource,
  ctx: ReconcileContext,
): Promise<NewIntegration> {
  const made = await api.createIntegration(teamID, { name: src.spec.name, kind: src.spec.kind });
  await keep(src, made, ctx);
  return made;
}

async function deleteQuietly(api: TerdutApi, teamID: number, id: number): Promise<void> {
  try {
    await api.deleteIntegration(teamID, id);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

export function addTerdutAlertSourceController(
  manager: Manager,
  shared: SharedCaches,
  opts: TerdutControllerOptions,
): Controller<TerdutAlertSource> {
  return addChildController<TerdutAlertSource>(manager, shared, opts, {
    name: 'terdutalertsource',
    gvk: TERDUT_ALERT_SOURCE,
    // Its Secret: one deleted by hand is put back by rotating.
    owns: [{ gvk: SECRET_GVK, labelSelector: MANAGED_SELECTOR }],
    hasServerSide: (src) => src.status?.integrationID !== undefined,

    async apply(src, { api, teamID }, ctx, tools) {
      const { recorder } = tools;
      const ns = src.metadata.namespace ?? '';
      const secretName = webhookSecretName(src.metadata.name ?? '');
      let secret = shared.secrets.store.get(`${ns}/${secretName}`) as KubeObject | undefined;
      // The cache may not have seen the Secret written a moment ago: ask the apiserver before
      // concluding it is gone (which would rotate the key).
      if (!secret && src.status?.integrationID !== undefined)
        secret = await ctx.client.find(SECRET_GVK, secretName, ns);
      const secretId = Number(secretValue(secret, WEBHOOK_KEYS.integrationID) ?? Number.NaN);
      const sameTeam = src.status?.teamID === teamID;
      let id = sameTeam ? src.status?.integrationID : undefined;
      let applied = sameTeam ? src.status?.applied : undefined;
      const current = { kind: src.spec.kind, name: src.spec.name };
      const warn = (note: string): void =>
        recorder.event(src, {
          type: EventType.Warning,
          reason: EventReason.Recreated,
          action: 'Recreate',
          note: `${note}; the new URL and key are in Secret ${secretName}`,
        });
      const ids = (): Partial<TerdutAlertSourceStatus> => ({
        teamID,
        integrationID: id,
        applied: id === undefined ? undefined : applied,
        webhookURLSecretRef: id === undefined ? undefined : { name: secretName },
      });
      /** Deletes `old` (if any) and creates the integration anew, its key kept first. */
      const replace = async (old: number | undefined): Promise<void> => {
        if (old !== undefined) await deleteQuietly(api, teamID, old);
        id = undefined;
        id = (await createKept(api, teamID, src, ctx)).id;
        applied = current;
      };
      /** The recorded integration, when the server no longer has it. */
      let gone: number | undefined;
      try {
        if (id !== undefined) {
          const old = id;
          const live = (await api.listIntegrations(teamID)).find((i) => i.id === old);
          if (!live) {
            // Deleted on the server, or replaced by this controller's previous reconcile whose
            // status write the cache has not shown yet: the name lookup below tells which.
            gone = old;
            id = undefined;
          } else if (applied?.kind !== src.spec.kind || live.kind !== src.spec.kind) {
            await replace(old);
            warn(
              `kind changed to ${src.spec.kind}: integration ${old} deleted and ${id} created, with a new key (senders using the old one are refused)`,
            );
          } else if (secretId !== old) {
            await replace(old);
            warn(`Secret ${secretName} was missing or held another key: integration ${old} rotated to ${id}`);
          } else if (live.name !== src.spec.name) {
            await api.renameIntegration(teamID, old, src.spec.name);
            applied = current;
            recorder.event(src, {
              type: EventType.Normal,
              reason: EventReason.Updated,
              action: 'Rename',
              note: `integration ${old} renamed to "${src.spec.name}"`,
            });
          }
        }
        if (id === undefined) {
          const existing = (await api.listIntegrations(teamID, src.spec.name)).find(
            (i) => i.name === src.spec.name,
          );
          // A cached Secret naming another integration may only be behind: ask the apiserver
          // before concluding the key is lost (which would rotate it).
          const keptId =
            existing && existing.id !== secretId
              ? Number(
                  secretValue(
                    await ctx.client.find(SECRET_GVK, secretName, ns),
                    WEBHOOK_KEYS.integrationID,
                  ) ?? Number.NaN,
                )
              : secretId;
          if (existing && existing.id === keptId && existing.kind === src.spec.kind) {
            // Our Secret already holds its key (the status write was lost, or not yet seen): adopt.
            id = existing.id;
            applied = current;
            recorder.event(src, {
              type: EventType.Normal,
              reason: EventReason.Adopted,
              action: 'Adopt',
              note: `integration ${id}, its key already in Secret ${secretName}`,
            });
          } else {
            const holder = existing && tools.holder(src, existing.id, teamID, (o) => o.status?.integrationID);
            if (existing && holder) {
              const message = `integration "${existing.name}" (${existing.id}) on team ${teamID} belongs to TerdutAlertSource ${holder.metadata.name}`;
              recorder.event(src, {
                type: EventType.Warning,
                reason: Reason.NameConflict,
                action: 'Create',
                note: message,
              });
              await tools.write(ctx, src, {}, { ok: false, reason: Reason.NameConflict, message });
              return { requeueAfterMs: tools.resyncMs };
            }
            await replace(existing?.id);
            if (existing) {
              warn(
                `integration "${existing.name}" (${existing.id}) had no key on record (a create whose answer was lost): replaced by ${id}`,
              );
            } else if (gone !== undefined) {
              warn(`integration ${gone} was gone from team ${teamID}: created again as ${id}`);
            } else {
              recorder.event(src, {
                type: EventType.Normal,
                reason: EventReason.Created,
                action: 'Create',
                note: `integration ${id} on team ${teamID}; URL and key in Secret ${secretName}`,
              });
            }
          }
        }
      } catch (err) {
        if (!(err instanceof TerdutApiError)) throw err;
        recorder.event(src, {
          type: EventType.Warning,
          reason: EventReason.SyncFailed,
          action: 'Sync',
          note: errorMessage(err),
        });
        await tools.write(ctx, src, ids(), {
          ok: false,
          reason: Reason.ServerError,
          message: errorMessage(err),
        });
        throw err;
      }
      await tools.write(ctx, src, ids(), {
        ok: true,
        reason: Reason.Synced,
        message: `integration ${id} on team ${teamID}; URL and key in Secret ${secretName}`,
      });
      return { requeueAfterMs: tools.resyncMs };
    },

    describe: (src) => `integration ${src.status?.integrationID}`,
    remove: (src, { api, teamID }) => api.deleteIntegration(teamID, src.status?.integrationID as number),
  });
}
