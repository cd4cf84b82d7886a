/**
 * Mirrored credentials (DESIGN §6.4): the TerdutServer controller — the one holder of
 * cross-namespace Secret write — copies its key into each namespace where a permitted
 * TerdutTeam of another namespace references the server, on demand; it tracks them in
 * status (owner references cannot cross namespaces) and deletes them when no permitted
 * team there references the server: a revocation removes the copy at once, and a
 * rotation never writes one where consent is withdrawn. Each mirror carries a finalizer the server controller lifts,
 * so that a namespace being deleted keeps its mirror readable until its teams' own
 * finalizers have used it.
 */
import {
  ApiErrorReason,
  isApiError,
  jsonEqual,
  type KubeClient,
  type KubeObject,
  type Reflector,
  removeFinalizer,
} from '@operators/kit';
import type { MirroredCredentials, TerdutServer } from '../api/terdut-server.ts';
import type { TerdutTeam } from '../api/terdut-team.ts';
import { consent, needsNamespaceLabels } from '../domain/consent.ts';
import { mirrorNamespaces } from '../domain/credentials.ts';
import {
  FIELD_MANAGER,
  FINALIZER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MIRRORED_KEYS,
  mirrorSecretName,
  SERVER_ANNOTATION,
  SERVER_LABEL,
  serverLabelValue,
} from '../domain/names.ts';
import { NAMESPACE } from './connection.ts';
import { SECRET_GVK } from './finish.ts';

/** The little of a logger this module needs. */
export interface InfoLog {
  info(obj: object, msg: string): void;
}

const labelOf = (server: TerdutServer): string =>
  serverLabelValue(server.metadata.namespace ?? '', server.metadata.name ?? '');

/** The `<namespace>/<name>` of the TerdutServer a credentials Secret or mirror belongs to. */
export function serverKeyOfSecret(s: KubeObject): string | undefined {
  const whole = s.metadata.annotations?.[SERVER_ANNOTATION];
  if (whole) return whole;
  // Written before the annotation existed: the label was `<namespace>.<name>` unhashed.
  const label = s.metadata.labels?.[SERVER_LABEL];
  if (!label) return undefined;
  const dot = label.indexOf('.');
  return `${label.slice(0, dot)}/${label.slice(dot + 1)}`;
}

/** The mirrors of `server` the cache holds (any namespace but the server's). */
export function mirrorsOf(server: TerdutServer, secrets: Reflector<KubeObject>): KubeObject[] {
  const label = labelOf(server);
  const name = mirrorSecretName(server.metadata.name ?? '', server.metadata.namespace ?? '');
  return secrets.store
    .list()
    .filter(
      (s) =>
        s.metadata.labels?.[SERVER_LABEL] === label &&
        s.metadata.name === name &&
        s.metadata.namespace !== server.metadata.namespace,
    ) as KubeObject[];
}

export async function deleteMirror(client: KubeClient, mirror: KubeObject): Promise<void> {
  await removeFinalizer(client, mirror, FINALIZER);
  try {
    await client.delete(SECRET_GVK, mirror.metadata.name ?? '', mirror.metadata.namespace);
  } catch (err) {
    if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
  }
}

/**
 * Brings the mirrors in line: writes those needed (when `data` is known: the server holds
 * a key), deletes the others. Returns the mirrors that exist afterwards, for status.
 */
export async function syncMirrors(input: {
  readonly client: KubeClient;
  readonly server: TerdutServer;
  readonly teams: readonly TerdutTeam[];
  readonly secrets: Reflector<KubeObject>;
  /** The credentials Secret's data, base64 as stored; undefined while the server has no key. */
  readonly data: Readonly<Record<string, string>> | undefined;
  readonly log: InfoLog;
  /**
   * Told of each mirror created or deleted (for an Event on the server); `revoked` when a
   * team there still references the server but consent no longer admits its namespace.
   */
  readonly onChange?: (
    what: 'written' | 'deleted',
    namespace: string,
    name: string,
    revoked: boolean,
  ) => void;
}): Promise<MirroredCredentials[]> {
  const { client, server } = input;
  const serverNs = server.metadata.namespace ?? '';
  const serverName = server.metadata.name ?? '';
  const labels = new Map<string, Readonly<Record<string, string>>>();
  const judged: { namespace: string; permitted: boolean }[] = [];
  for (const team of input.teams) {
    const ns = team.metadata.namespace ?? '';
    if (ns === serverNs) continue;
    if (needsNamespaceLabels(ns, serverNs, server.spec.allowedTeams) && !labels.has(ns)) {
      try {
        labels.set(ns, (await client.get(NAMESPACE, ns)).metadata.labels ?? {});
      } catch (err) {
        if (!isApiError(err, ApiErrorReason.NotFound)) throw err;
        labels.set(ns, {});
      }
    }
    const c = consent({
      teamNamespace: ns,
      serverNamespace: serverNs,
      serverName,
      ...(server.spec.allowedTeams ? { allowedTeams: server.spec.allowedTeams } : {}),
      ...(labels.has(ns) ? { namespaceLabels: labels.get(ns) } : {}),
    });
    judged.push({ namespace: ns, permitted: c.permitted });
  }
  const wanted = new Set(mirrorNamespaces(judged));
  const referenced = new Set(judged.map((j) => j.namespace));
  // Only the operator's own key is copied: the admin key of its bootstrap stays home.
  const data = input.data
    ? Object.fromEntries(Object.entries(input.data).filter(([k]) => MIRRORED_KEYS.includes(k)))
    : undefined;
  const existing = new Map(mirrorsOf(server, input.secrets).map((s) => [s.metadata.namespace ?? '', s]));
  const name = mirrorSecretName(serverName, serverNs);
  const present: MirroredCredentials[] = [];
  for (const ns of [...wanted].sort()) {
    const live = existing.get(ns) as (KubeObject & { data?: Record<string, string> }) | undefined;
    if (data) {
      const upToDate =
        live?.data !== undefined &&
        jsonEqual(live.data, data) &&
        (live.metadata.finalizers ?? []).includes(FINALIZER);
      if (!upToDate) {
        try {
          await client.apply(
            {
              apiVersion: 'v1',
              kind: 'Secret',
              metadata: {
                name,
                namespace: ns,
                labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [SERVER_LABEL]: labelOf(server) },
                annotations: {
                  [SERVER_ANNOTATION]: `${serverNs}/${serverName}`,
                  'terdut.ryuvia.com/mirror-of': `${serverNs}/${server.status?.operatorCredentialsSecretRef?.name ?? ''}`,
                },
                finalizers: [FINALIZER],
              },
              type: 'Opaque',
              data: { ...data },
            },
            { fieldManager: FIELD_MANAGER, force: true },
          );
        } catch (err) {
          // A namespace being deleted refuses new objects: its teams then have no mirror to need.
          if (live || !isApiError(err, ApiErrorReason.Forbidden)) throw err;
          input.log.info({ namespace: ns, err: String(err) }, 'mirror not written: namespace refuses it');
          continue;
        }
        if (!live) input.onChange?.('written', ns, name, false);
      }
    }
    if (live || data) present.push({ namespace: ns, secretName: name });
  }
  for (const [ns, mirror] of existing) {
    if (!wanted.has(ns)) {
      await deleteMirror(client, mirror);
      input.onChange?.('deleted', ns, name, referenced.has(ns));
    }
  }
  return present;
}
