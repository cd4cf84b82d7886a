/** Names the operator gives the objects it makes, one rule each, so that docs, chart and code agree. */

/** The operator's own credentials beside the TerdutServer (§6.2). */
export const credentialsSecretName = (serverName: string): string => `${serverName}-operator-credentials`;

/** A mirrored copy in a consuming namespace (§6.4): one per (server, namespace). */
export const mirrorSecretName = (serverName: string, serverNamespace: string): string =>
  `${serverName}.${serverNamespace}-terdut-credentials`;

/** An alert source's URL and key (§4.5), owned by the TerdutAlertSource. */
export const webhookSecretName = (alertSourceName: string): string => `${alertSourceName}-terdut-webhook`;

/** The operator's user on the server: one per terdut-server install, whoever minted it. */
export const BOT_USERNAME = 'terdut-operator';

/** Every object the operator makes carries this label (its caches select on it). */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'terdut-operator';
/** On credential Secrets and mirrors: `<namespace>.<name>` of the TerdutServer. */
export const SERVER_LABEL = 'terdut.ryuvia.com/server';
/** Annotation: set or change its value to rotate the operator's key now. */
export const ROTATE_ANNOTATION = 'terdut.ryuvia.com/rotate';
/** The finalizer on every kind with a server-side counterpart, and on credential Secrets in use. */
export const FINALIZER = 'terdut.ryuvia.com/finalizer';
/** The field manager of every write. */
export const FIELD_MANAGER = 'terdut-operator';

/** Secret data keys of the credentials and mirrors. */
export const CREDENTIALS_KEYS = { apiKey: 'apiKey', keyID: 'keyID', userID: 'userID' } as const;
/** Secret data keys of an alert source's Secret. */
export const WEBHOOK_KEYS = { url: 'url', key: 'key', integrationID: 'integrationID' } as const;
/** The label selector of the operator's own objects. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
