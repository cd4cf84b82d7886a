/**
 * The operator's own key for a terdut-server (this project's answer to DESIGN §6 points 1,
 * 5 and 6, and §13): the real server has a repeatable path, users and their API keys.
 *
 * - A fresh server: `POST /api/bootstrap` (201) gives a one-time admin key. It is written
 *   into `<server>-operator-credentials` (as `adminKey`) before any other call, and every
 *   later step resumes from what that Secret holds: find or create the user
 *   `terdut-operator`, mint its key, write that key beside the admin key. The admin key is
 *   kept (the server's only admin credential; never mirrored). A Secret write that fails
 *   keeps the unsaved keys in this process (`PendingKeys`) and is retried before anything
 *   else on the next reconcile.
 * - A server bootstrapped by someone else (403 from bootstrap, a chart Job that won the
 *   race, a person): the admin key in `spec.credentials.adminKeySecretRef` does the same.
 * - Neither: Bootstrapped=False, AdminCredentialRequired, and a message saying what to do.
 * - Rotation (annotation, or `rotateEvery`): mint a new key with the current one, persist
 *   the old key's ID in status, swap the Secret, delete the old key. A crash at any step
 *   resumes from status and the Secret (there is no route that lists keys: an ID not
 *   written down is lost).
 */
import {
  ApiErrorReason,
  controllerReference,
  type EventRecorder,
  EventType,
  isApiError,
  type KubeClient,
  type KubeObject,
  parseDurationMs,
} from '@operators/kit';
import { TERDUT_SERVER, type TerdutServer, type TerdutServerStatus } from '../api/terdut-server.ts';
import { isStatus, type TerdutApi } from '../client/terdut-api.ts';
import { rotationDue } from '../domain/credentials.ts';
import {
  BOT_USERNAME,
  CREDENTIALS_KEYS,
  credentialsSecretName,
  FIELD_MANAGER,
  FINALIZER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ROTATE_ANNOTATION,
  SERVER_ANNOTATION,
  SERVER_LABEL,
  serverLabelValue,
} from '../domain/names.ts';
import { EventReason, Reason } from '../domain/reasons.ts';
import { errorMessage, SERVER_STATUS_WRITE, secretData, secretValue, writeStatus } from './common.ts';
import { SECRET_GVK } from './finish.ts';

/** What the credentials step concluded, for the Bootstrapped condition. */
export type CredentialsOutcome =
  | {
      readonly kind: 'Ready';
      readonly apiKey: string;
      readonly message: string;
      readonly nextRotationMs?: number;
    }
  | { readonly kind: 'NotReady'; readonly reason: string; readonly message: string };

export type OperatorCredentials = NonNullable<TerdutServerStatus['operatorCredentials']>;

/** The credentials Secret's data, decoded: the operator's key and, after its own bootstrap, the admin key. */
export type StoredKeys = Partial<Record<(typeof CREDENTIALS_KEYS)[keyof typeof CREDENTIALS_KEYS], string>>;

/**
 * Keys the server handed out whose Secret write failed, by TerdutServer UID: held for the
 * life of the process and written first on the next reconcile, so that a refused write
 * (an admission policy, an apiserver hiccup) does not lose a one-time secret.
 */
export type PendingKeys = Map<string, StoredKeys>;

export interface CredentialsDeps {
  readonly client: KubeClient;
  readonly recorder: EventRecorder;
  readonly now: () => number;
  readonly pending: PendingKeys;
}

const DEFAULT_ADMIN_KEY = 'apiKey';

/** A key's name on the server: who minted it and when, so a person listing keys in the UI knows. */
const keyName = (server: TerdutServer, now: number): string =>
  `terdut-operator ${server.metadata.namespace}/${server.metadata.name} ${new Date(now).toISOString()}`;

/** The Secret write failed: the keys stay in `PendingKeys`; the reconcile reports it and retries. */
class NotSaved extends Error {
  override readonly name = 'NotSaved';
}

export class Credentials {
  private readonly deps: CredentialsDeps;
  /** The server as this reconcile last wrote its status (each step starts from it). */
  private server: TerdutServer;
  private readonly api: TerdutApi;
  /** What the credentials Secret holds (as this reconcile last wrote it). */
  private stored: StoredKeys = {};

  constructor(deps: CredentialsDeps, server: TerdutServer, api: TerdutApi) {
    this.deps = deps;
    this.server = server;
    this.api = api;
  }

  get current(): TerdutServer {
    return this.server;
  }

  private get creds(): OperatorCredentials {
    return this.server.status?.operatorCredentials ?? {};
  }

  private get uid(): string {
    return this.server.metadata.uid ?? `${this.server.metadata.namespace}/${this.server.metadata.name}`;
  }

  private async setCreds(next: OperatorCredentials, extra: Partial<TerdutServerStatus> = {}): Promise<void> {
    const status: TerdutServerStatus = { ...this.server.status, ...extra, operatorCredentials: next };
    await writeStatus(this.deps.client, TERDUT_SERVER, this.server, status, SERVER_STATUS_WRITE);
    this.server = { ...this.server, status: JSON.parse(JSON.stringify(status)) as TerdutServerStatus };
  }

  private secretName(): string {
    return credentialsSecretName(this.server.metadata.name ?? '');
  }

  private async readSecret(): Promise<KubeObject | undefined> {
    return this.deps.client.find(SECRET_GVK, this.secretName(), this.server.metadata.namespace);
  }

  /**
   * Writes `add` on top of what the Secret holds, in one apply of the whole data (one field
   * manager: a field left out would be removed). On failure the new keys wait in `pending`.
   */
  private async save(add: StoredKeys): Promise<void> {
    const next: StoredKeys = { ...this.stored, ...this.deps.pending.get(this.uid), ...add };
    const server = this.server;
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(next)) if (v !== undefined) data[k] = v;
    try {
      await this.deps.client.apply(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: this.secretName(),
            namespace: server.metadata.namespace,
            labels: {
              [MANAGED_BY_LABEL]: MANAGED_BY,
              [SERVER_LABEL]: serverLabelValue(server.metadata.namespace ?? '', server.metadata.name ?? ''),
            },
            annotations: { [SERVER_ANNOTATION]: `${server.metadata.namespace}/${server.metadata.name}` },
            ownerReferences: [controllerReference(server as KubeObject)],
            // Kept readable until the server's last team has been deleted on the server (a
            // namespace deletion removes Secrets first): the server's finalizer lifts it.
            finalizers: [FINALIZER],
          },
          type: 'Opaque',
          data: secretData(data),
        },
        { fieldManager: FIELD_MANAGER, force: true },
      );
    } catch (err) {
      this.deps.pending.set(this.uid, { ...this.deps.pending.get(this.uid), ...add });
      // The apiserver's refusal names the object and the policy, never the data.
      throw new NotSaved(
        `writing Secret ${server.metadata.namespace}/${this.secretName()} failed (${errorMessage(err)}); ` +
          'the keys the server issued are held by the operator and written on the next attempt',
      );
    }
    this.deps.pending.delete(this.uid);
    this.stored = next;
  }

  /** The admin key named in spec, if any: undefined when unset; an error message when unreadable. */
  private async adminKey(): Promise<{ key?: string; problem?: string }> {
    const ref = this.server.spec.credentials?.adminKeySecretRef;
    if (!ref?.name) return {};
    const where = `Secret ${this.server.metadata.namespace}/${ref.name}`;
    let secret: KubeObject | undefined;
    try {
      secret = await this.deps.client.find(SECRET_GVK, ref.name, this.server.metadata.namespace);
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.Forbidden)) throw err;
      return { problem: `${where} (spec.credentials.adminKeySecretRef) cannot be read: ${String(err)}` };
    }
    const key = secretValue(secret, ref.key || DEFAULT_ADMIN_KEY);
    if (!secret) return { problem: `${where} (spec.credentials.adminKeySecretRef) does not exist` };
    if (!key) return { problem: `${where} has no key ${ref.key || DEFAULT_ADMIN_KEY}` };
    return { key: key.trim() };
  }

  /** The operator's user, found or created with an admin key. */
  private async botUser(admin: TerdutApi): Promise<number> {
    const found = (await admin.findUser(BOT_USERNAME)).find((u) => u.username === BOT_USERNAME);
    if (found) return found.id;
    try {
      return (await admin.createUser(BOT_USERNAME, `${BOT_USERNAME}@invalid`)).id;
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      const again = (await admin.findUser(BOT_USERNAME)).find((u) => u.username === BOT_USERNAME);
      if (!again) throw err;
      return again.id;
    }
  }

  /** Mints the operator's key with an admin key and keeps it (written the moment it is returned). */
  private async mintWith(admin: TerdutApi, how: string): Promise<CredentialsOutcome> {
    const now = this.deps.now();
    const userID = await this.botUser(admin);
    const minted = await admin.createApiKey(userID, keyName(this.server, now));
    await this.save({
      [CREDENTIALS_KEYS.apiKey]: minted.key,
      [CREDENTIALS_KEYS.keyID]: String(minted.id),
      [CREDENTIALS_KEYS.userID]: String(userID),
    });
    await this.setCreds(
      { userID, keyID: minted.id, mintedAt: new Date(now).toISOString(), ...this.rotateMark() },
      { operatorCredentialsSecretRef: { name: this.secretName() } },
    );
    this.deps.recorder.event(this.server, {
      type: EventType.Normal,
      reason: EventReason.CredentialsMinted,
      action: 'MintKey',
      note: `${how}: key ${minted.id} of user ${BOT_USERNAME} (${userID}) kept in Secret ${this.secretName()}`,
    });
    return { kind: 'Ready', apiKey: minted.key, message: `key ${minted.id} of user ${BOT_USERNAME}` };
  }

  /** The rotate annotation's value, recorded as acted on whenever a key is minted. */
  private rotateMark(): { rotateRequest?: string } {
    const a = this.server.metadata.annotations?.[ROTATE_ANNOTATION];
    return a ? { rotateRequest: a } : {};
  }

  /** Makes sure the operator holds a working key, minting or rotating one as needed. */
  async ensure(): Promise<CredentialsOutcome> {
    try {
      return await this.ensureKeys();
    } catch (err) {
      if (!(err instanceof NotSaved)) throw err;
      return { kind: 'NotReady', reason: Reason.CredentialsNotSaved, message: err.message };
    }
  }

  private async ensureKeys(): Promise<CredentialsOutcome> {
    const secret = await this.readSecret();
    for (const k of Object.values(CREDENTIALS_KEYS)) {
      const v = secretValue(secret, k);
      if (v !== undefined) this.stored[k] = v;
    }
    // 0. Keys a failed write left in memory go to the Secret before any call to the server.
    if (this.deps.pending.has(this.uid)) await this.save({});
    const apiKey = this.stored.apiKey;
    if (apiKey) {
      const keyed = this.api.withKey(apiKey);
      try {
        await keyed.checkKey(BOT_USERNAME);
        if (this.server.status?.operatorCredentialsSecretRef?.name !== this.secretName()) {
          await this.setCreds(this.creds, { operatorCredentialsSecretRef: { name: this.secretName() } });
        }
        return await this.rotateIfDue(keyed, apiKey);
      } catch (err) {
        if (!isStatus(err, 401)) throw err;
        // The key was deleted on the server (by a person, or a rotation whose Secret swap was lost).
      }
    }
    // 1. The admin key of this operator's own bootstrap, kept in the Secret: resume from it.
    const ownAdmin = this.stored.adminKey;
    if (ownAdmin) {
      try {
        return await this.mintWith(this.api.withKey(ownAdmin), 'with the admin key of its own bootstrap');
      } catch (err) {
        if (!isStatus(err, 401)) throw err;
        // Someone deleted that admin key on the server: an admin key from spec is the way left.
      }
    }
    const admin = await this.adminKey();
    if (admin.problem)
      return { kind: 'NotReady', reason: Reason.AdminCredentialRequired, message: admin.problem };
    if (admin.key)
      return this.mintWith(
        this.api.withKey(admin.key),
        'minted with the admin key of spec.credentials.adminKeySecretRef',
      );
    let boot: Awaited<ReturnType<TerdutApi['bootstrap']>>;
    try {
      boot = await this.api.bootstrap('admin');
    } catch (err) {
      if (!isStatus(err, 403)) throw err;
      return {
        kind: 'NotReady',
        reason: Reason.AdminCredentialRequired,
        message:
          (apiKey
            ? 'the key in Secret ' + this.secretName() + ' was refused (deleted on the server), and '
            : '') +
          "the server is already bootstrapped (by the chart's bootstrap Job, a person, or an earlier bootstrap of " +
          'this operator whose answer was lost), so the operator cannot mint its own key without an admin key: ' +
          'create a Secret holding an admin API key under "apiKey" and name it in spec.credentials.adminKeySecretRef',
      };
    }
    // 2. Written down before any other call: the one-time admin key exists nowhere else.
    await this.save({
      [CREDENTIALS_KEYS.adminKey]: boot.api_key.key,
      [CREDENTIALS_KEYS.adminKeyID]: String(boot.api_key.id),
      [CREDENTIALS_KEYS.adminUserID]: String(boot.user.id),
    });
    this.deps.recorder.event(this.server, {
      type: EventType.Normal,
      reason: EventReason.Bootstrapped,
      action: 'Bootstrap',
      note: `bootstrapped the server (admin user ${boot.user.id}, key ${boot.api_key.id}); the admin key is kept in Secret ${this.secretName()} under ${CREDENTIALS_KEYS.adminKey} and never mirrored`,
    });
    return this.mintWith(this.api.withKey(boot.api_key.key), 'after bootstrap');
  }

  private async rotateIfDue(keyed: TerdutApi, apiKey: string): Promise<CredentialsOutcome> {
    const creds = this.creds;
    const secretKeyID = Number(this.stored.keyID);
    const userID = Number(this.stored.userID ?? creds.userID);
    // A rotation interrupted after the Secret swap: finish it (status catches up with the Secret, the old key goes).
    if (creds.retiringKeyID !== undefined && creds.retiringKeyID !== secretKeyID) {
      await this.retire(keyed, userID, creds.retiringKeyID, secretKeyID);
      return { kind: 'Ready', apiKey, message: `key ${secretKeyID} of user ${BOT_USERNAME} (rotated)` };
    }
    if (creds.keyID !== secretKeyID && Number.isFinite(secretKeyID)) {
      await this.setCreds({ ...creds, keyID: secretKeyID, userID });
    }
    const everyText = this.server.spec.credentials?.rotateEvery;
    const everyMs = everyText ? parseDurationMs(everyText) : undefined;
    const now = this.deps.now();
    const due = rotationDue({
      ...(this.server.metadata.annotations?.[ROTATE_ANNOTATION]
        ? { annotation: this.server.metadata.annotations[ROTATE_ANNOTATION] }
        : {}),
      ...(this.creds.rotateRequest ? { actedOn: this.creds.rotateRequest } : {}),
      ...(everyMs ? { rotateEveryMs: everyMs } : {}),
      ...(this.creds.mintedAt ? { mintedAt: this.creds.mintedAt } : {}),
      now,
    });
    if (!due.due) {
      return {
        kind: 'Ready',
        apiKey,
        message: `key ${secretKeyID} of user ${BOT_USERNAME}`,
        ...(due.nextInMs === undefined ? {} : { nextRotationMs: due.nextInMs }),
      };
    }
    // 1. Write down the key being retired before anything else: a key ID never written is lost.
    await this.setCreds({ ...this.creds, retiringKeyID: secretKeyID });
    // 2. Mint, 3. swap the Secret, 4. status, 5. delete the old key.
    const minted = await keyed.createApiKey(userID, keyName(this.server, now));
    await this.save({
      [CREDENTIALS_KEYS.apiKey]: minted.key,
      [CREDENTIALS_KEYS.keyID]: String(minted.id),
      [CREDENTIALS_KEYS.userID]: String(userID),
    });
    await this.setCreds({
      ...this.creds,
      userID,
      keyID: minted.id,
      mintedAt: new Date(now).toISOString(),
      retiringKeyID: secretKeyID,
      ...this.rotateMark(),
    });
    await this.retire(keyed.withKey(minted.key), userID, secretKeyID, minted.id);
    this.deps.recorder.event(this.server, {
      type: EventType.Normal,
      reason: EventReason.KeyRotated,
      action: 'RotateKey',
      note: `key ${secretKeyID} replaced by ${minted.id} (${due.why === 'Annotation' ? `annotation ${ROTATE_ANNOTATION}` : 'spec.credentials.rotateEvery'}); the old key is deleted`,
    });
    return {
      kind: 'Ready',
      apiKey: minted.key,
      message: `key ${minted.id} of user ${BOT_USERNAME} (rotated)`,
    };
  }

  private async retire(
    api: TerdutApi,
    userID: number,
    oldKeyID: number,
    currentKeyID: number,
  ): Promise<void> {
    try {
      await api.deleteApiKey(userID, oldKeyID);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
    const { retiringKeyID: _, ...rest } = this.creds;
    await this.setCreds({ ...rest, keyID: currentKeyID, userID });
  }
}
