/**
 * The operator's own key for a terdut-server (this project's answer to DESIGN §6 points 1,
 * 5 and 6, and §13): the real server has a repeatable path, users and their API keys.
 *
 * - A fresh server: `POST /api/bootstrap` (201) gives a one-time admin key, used at once
 *   to create the operator's user `terdut-operator` and mint its key; only that key is
 *   kept, in `<server>-operator-credentials`.
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
  SERVER_LABEL,
} from '../domain/names.ts';
import { EventReason, Reason } from '../domain/reasons.ts';
import { secretData, secretValue, writeStatus } from './common.ts';
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

export interface CredentialsDeps {
  readonly client: KubeClient;
  readonly recorder: EventRecorder;
  readonly now: () => number;
}

const DEFAULT_ADMIN_KEY = 'apiKey';

/** A key's name on the server: who minted it and when, so a person listing keys in the UI knows. */
const keyName = (server: TerdutServer, now: number): string =>
  `terdut-operator ${server.metadata.namespace}/${server.metadata.name} ${new Date(now).toISOString()}`;

export class Credentials {
  private readonly deps: CredentialsDeps;
  /** The server as this reconcile last wrote its status (each step starts from it). */
  private server: TerdutServer;
  private readonly api: TerdutApi;

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

  private async setCreds(next: OperatorCredentials, extra: Partial<TerdutServerStatus> = {}): Promise<void> {
    const status: TerdutServerStatus = { ...this.server.status, ...extra, operatorCredentials: next };
    await writeStatus(this.deps.client, TERDUT_SERVER, this.server, status);
    this.server = { ...this.server, status: JSON.parse(JSON.stringify(status)) as TerdutServerStatus };
  }

  private secretName(): string {
    return credentialsSecretName(this.server.metadata.name ?? '');
  }

  private async readSecret(): Promise<KubeObject | undefined> {
    return this.deps.client.find(SECRET_GVK, this.secretName(), this.server.metadata.namespace);
  }

  private async writeSecret(key: { apiKey: string; keyID: number; userID: number }): Promise<void> {
    const server = this.server;
    await this.deps.client.apply(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: this.secretName(),
          namespace: server.metadata.namespace,
          labels: {
            [MANAGED_BY_LABEL]: MANAGED_BY,
            [SERVER_LABEL]: `${server.metadata.namespace}.${server.metadata.name}`,
          },
          ownerReferences: [controllerReference(server as KubeObject)],
          // Kept readable until the server's last team has been deleted on the server (a
          // namespace deletion removes Secrets first): the server's finalizer lifts it.
          finalizers: [FINALIZER],
        },
        type: 'Opaque',
        data: secretData({
          [CREDENTIALS_KEYS.apiKey]: key.apiKey,
          [CREDENTIALS_KEYS.keyID]: String(key.keyID),
          [CREDENTIALS_KEYS.userID]: String(key.userID),
        }),
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
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

  /** Mints the operator's key with an admin key and keeps it. */
  private async mintWith(admin: TerdutApi, how: string): Promise<CredentialsOutcome> {
    const now = this.deps.now();
    const userID = await this.botUser(admin);
    const minted = await admin.createApiKey(userID, keyName(this.server, now));
    await this.writeSecret({ apiKey: minted.key, keyID: minted.id, userID });
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
    const secret = await this.readSecret();
    const apiKey = secretValue(secret, CREDENTIALS_KEYS.apiKey);
    if (apiKey) {
      const keyed = this.api.withKey(apiKey);
      try {
        await keyed.me();
        if (this.server.status?.operatorCredentialsSecretRef?.name !== this.secretName()) {
          await this.setCreds(this.creds, { operatorCredentialsSecretRef: { name: this.secretName() } });
        }
        return await this.rotateIfDue(keyed, apiKey, secret);
      } catch (err) {
        if (!isStatus(err, 401)) throw err;
        // The key was deleted on the server (by a person, or a rotation whose Secret swap was lost).
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
    try {
      const boot = await this.api.bootstrap('admin');
      this.deps.recorder.event(this.server, {
        type: EventType.Normal,
        reason: EventReason.Bootstrapped,
        action: 'Bootstrap',
        note: `bootstrapped the server (admin user ${boot.user.id}); the admin key is used once and not kept`,
      });
      return await this.mintWith(this.api.withKey(boot.api_key.key), 'after bootstrap');
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
  }

  private async rotateIfDue(
    keyed: TerdutApi,
    apiKey: string,
    secret: KubeObject | undefined,
  ): Promise<CredentialsOutcome> {
    const creds = this.creds;
    const secretKeyID = Number(secretValue(secret, CREDENTIALS_KEYS.keyID));
    const userID = Number(secretValue(secret, CREDENTIALS_KEYS.userID) ?? creds.userID);
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
    await this.writeSecret({ apiKey: minted.key, keyID: minted.id, userID });
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
