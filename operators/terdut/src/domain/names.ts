import { createHash } from 'node:crypto';

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
/** On credential Secrets and mirrors: `<namespace>.<name>` of the TerdutServer, fitted by `serverLabelValue`. */
export const SERVER_LABEL = 'terdut.ryuvia.com/server';
/**
 * On the same Secrets: `<namespace>/<name>` of the TerdutServer, whole. Watches map a
 * Secret to its server from this, since the label may be hashed to fit.
 */
export const SERVER_ANNOTATION = 'terdut.ryuvia.com/server';
/** Annotation: set or change its value to rotate the operator's key now. */
export const ROTATE_ANNOTATION = 'terdut.ryuvia.com/rotate';
/** The finalizer on every kind with a server-side counterpart, and on credential Secrets in use. */
export const FINALIZER = 'terdut.ryuvia.com/finalizer';
/** The field manager of every write. */
export const FIELD_MANAGER = 'terdut-operator';

/**
 * Secret data keys of the credentials. A mirror gets only `MIRRORED_KEYS`: the admin key
 * of the operator's own bootstrap never leaves the server's namespace.
 */
export const CREDENTIALS_KEYS = {
  apiKey: 'apiKey',
  keyID: 'keyID',
  userID: 'userID',
  adminKey: 'adminKey',
  adminKeyID: 'adminKeyID',
  adminUserID: 'adminUserID',
} as const;
/** What a mirror in a consuming namespace holds: the operator's key, nothing else. */
export const MIRRORED_KEYS: readonly string[] = [
  CREDENTIALS_KEYS.apiKey,
  CREDENTIALS_KEYS.keyID,
  CREDENTIALS_KEYS.userID,
];
/** Secret data keys of an alert source's Secret. */
export const WEBHOOK_KEYS = { url: 'url', key: 'key', integrationID: 'integrationID' } as const;
/** The label selector of the operator's own objects. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;

/** A label value's limit (Kubernetes: 63 characters). */
export const LABEL_VALUE_MAX = 63;
const HASH_CHARS = 10;

/**
 * The SERVER_LABEL value: `<namespace>.<name>` when it fits in 63 characters; otherwise a
 * readable prefix of it, `-`, and the first 10 hex characters of its SHA-256, so that two
 * long names sharing a prefix still differ. Stable: the same server always gets the same value.
 */
export function serverLabelValue(namespace: string, name: string): string {
  const whole = `${namespace}.${name}`;
  if (whole.length <= LABEL_VALUE_MAX) return whole;
  const hash = createHash('sha256').update(whole).digest('hex').slice(0, HASH_CHARS);
  // The prefix must end in an alphanumeric (a label value's rule) before the `-`.
  const prefix = whole.slice(0, LABEL_VALUE_MAX - HASH_CHARS - 1).replace(/[^A-Za-z0-9]+$/, '');
  return `${prefix}-${hash}`;
}
