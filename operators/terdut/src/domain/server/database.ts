/**
 * How a TerdutServer reaches Postgres (DESIGN §4.1, §8): from `spec.database`, and what
 * the controller read for it, decide the DSN the server gets and the Secret key its
 * PGPASSWORD comes from, or say why it cannot and what to do about it. Pure.
 *
 * Two sources, exclusive (the CRD's CEL rule refuses both and neither; this checks again):
 *
 * - Bring-your-own: `dsn` (without a password) plus an optional `passwordSecretRef`, the
 *   chart's `database.dsn` / `database.passwordSecret` contract. Nothing is checked
 *   beyond the Secret key being there: the Deployment's readiness probe is the
 *   connectivity check.
 * - Zalando: `postgresClusterRef` names a `postgresql.acid.zalan.do` CR in the same
 *   namespace. Its master Service is named like the cluster and listens on 5432; the
 *   database is the first key (by code unit order) of `spec.databases` and the user is
 *   that database's owner; the password is key `password` of the Secret the
 *   postgres-operator generates for that user,
 *   `<user>.<cluster>.credentials.postgresql.acid.zalan.do`, with `_` in the user name
 *   written `-` (Secret names cannot hold `_`; the postgres-operator's
 *   `credentialSecretNameForCluster` does the same). An operator configured with another
 *   `secret_name_template` is not supported: use `dsn` and `passwordSecretRef` then.
 *
 * The password itself is never read here nor put anywhere: the Deployment refers to the
 * Secret key, so the kubelet reads it. A Secret's resourceVersion is reported back
 * (`secretResourceVersion`) for `status.databaseSecretVersion` only: a rotated password
 * must not restart the pods (§8, §13), so it never reaches the pod template.
 */
import type { KubeObject } from '@operators/kit';
import type { DatabaseSpec } from '../../api/terdut-server.ts';

/** The Zalando `postgresql` CR (acid.zalan.do/v1), the fields read here. */
export interface ZalandoPostgresql extends KubeObject {
  readonly spec?: {
    readonly teamId?: string;
    /** Role name -> role flags (`superuser`, `createdb`, ...). */
    readonly users?: Readonly<Record<string, readonly string[] | null>>;
    /** Database name -> owner role name. */
    readonly databases?: Readonly<Record<string, string>>;
  };
  readonly status?: {
    /** `Running`, `Creating`, `Updating`, `CreateFailed`, `UpdateFailed`, `SyncFailed`, `Invalid`, or empty. */
    readonly PostgresClusterStatus?: string;
  };
}

/** Why the database cannot be resolved. Each is the reason of `DatabaseReady: False`. */
export const DatabaseReason = {
  /** `spec.database` names neither `dsn` nor `postgresClusterRef` (the CRD refuses this too). */
  DatabaseNotConfigured: 'DatabaseNotConfigured',
  /**
   * `spec.database` names both `dsn` and `postgresClusterRef`, or `passwordSecretRef` with
   * `postgresClusterRef` (the CRD refuses these too): which database is meant is not clear.
   */
  DatabaseSourceAmbiguous: 'DatabaseSourceAmbiguous',
  /**
   * `dsn` holds a password (in the URL's user info, a `password` query parameter, or a
   * `password=` keyword). Belt and braces: the CRD refuses it too. A password belongs in a
   * Secret named by `passwordSecretRef`, never in a spec anyone with read access sees.
   */
  DsnCarriesPassword: 'DsnCarriesPassword',
  /**
   * `postgresClusterRef` is set but the cluster does not serve postgresql.acid.zalan.do:
   * the Zalando postgres-operator is not installed. Install it, or use `dsn`.
   */
  PostgresCrdAbsent: 'PostgresCrdAbsent',
  /** No `postgresql` of the `postgresClusterRef` name in the TerdutServer's namespace. */
  PostgresClusterNotFound: 'PostgresClusterNotFound',
  /** The `postgresql` declares no database in `spec.databases` (or the first one has no owner). */
  PostgresClusterHasNoDatabase: 'PostgresClusterHasNoDatabase',
  /**
   * The `postgresql` is not serving yet or its operator failed on it: its
   * `status.PostgresClusterStatus` is neither `Running` nor `Updating` (an existing cluster
   * taking a spec change, whose master keeps serving).
   */
  PostgresClusterNotRunning: 'PostgresClusterNotRunning',
  /** The password Secret (BYO `passwordSecretRef.name`, or the Zalando-generated one) does not exist. */
  PasswordSecretNotFound: 'PasswordSecretNotFound',
  /** The password Secret exists but lacks the key (or holds an empty value under it). */
  PasswordKeyMissing: 'PasswordKeyMissing',
} as const;
export type DatabaseReason = (typeof DatabaseReason)[keyof typeof DatabaseReason];

export type DatabaseResolution =
  | {
      readonly kind: 'Resolved';
      readonly source: 'dsn' | 'postgresCluster';
      /** The DSN for TERDUT_DATABASE_DSN: never a password in it. */
      readonly dsn: string;
      /** Where PGPASSWORD comes from; absent: no PGPASSWORD (BYO without `passwordSecretRef`). */
      readonly password?: { readonly secretName: string; readonly key: string };
      /**
       * The password Secret's resourceVersion when it was read, for
       * `status.databaseSecretVersion` (rotation detection, §8). Never for the pod template.
       */
      readonly secretResourceVersion?: string;
      readonly message: string;
    }
  | { readonly kind: 'Unresolved'; readonly reason: DatabaseReason; readonly message: string };

/** What `resolveDatabase` is told about the Secret it asked for (`passwordSecretName`). */
export interface PasswordSecret {
  readonly name: string;
  /** The Secret's `data`, as read (base64 values): only key presence is judged. */
  readonly data?: Readonly<Record<string, string>>;
  readonly resourceVersion?: string;
}

/** The cluster as the controller found it: undefined = not found; 'CrdAbsent' = the CRD is not served. */
export type ClusterLookup = ZalandoPostgresql | undefined | 'CrdAbsent';

export interface DatabaseInput {
  /** The TerdutServer's namespace (the Zalando cluster's too). */
  readonly namespace: string;
  readonly database: DatabaseSpec;
  /** The Zalando postgresql CR when postgresClusterRef is set: undefined = not found, 'CrdAbsent' = the cluster does not serve postgresql.acid.zalan.do */
  readonly cluster?: ClusterLookup;
  /** The password Secret (BYO passwordSecretRef, or the Zalando-generated one): undefined = not found */
  readonly secret?: PasswordSecret | undefined;
}

/** The Zalando master Service's port. */
export const ZALANDO_PORT = 5432;
/** The key of the password in a Zalando-generated credentials Secret (`username` holds the role). */
export const ZALANDO_PASSWORD_KEY = 'password';
/** The key of a BYO `passwordSecretRef` when it names none. */
export const DEFAULT_PASSWORD_KEY = 'password';
/** `status.PostgresClusterStatus` values under which the cluster's master serves. */
export const SERVING_CLUSTER_STATUSES: ReadonlySet<string> = new Set(['Running', 'Updating']);

/** The Secret the postgres-operator generates for `user` of `cluster` (with its default `secret_name_template`). */
export function zalandoCredentialsSecretName(user: string, cluster: string): string {
  return `${user.replaceAll('_', '-')}.${cluster}.credentials.postgresql.acid.zalan.do`;
}

/** The database terdut-server uses in a Zalando cluster: the first key of `spec.databases` and its owner. */
export function zalandoDatabase(cluster: ZalandoPostgresql): { database: string; owner: string } | undefined {
  const databases = cluster.spec?.databases ?? {};
  const first = Object.keys(databases).sort(byCodeUnit)[0];
  const owner = first === undefined ? undefined : databases[first];
  return first === undefined || !owner ? undefined : { database: first, owner };
}

/** The DSN of database `database` as `user` on the master Service of Zalando `cluster` in `namespace`. */
export function zalandoDsn(cluster: string, namespace: string, user: string, database: string): string {
  return (
    `postgres://${encodeURIComponent(user)}@${cluster}.${namespace}.svc:${ZALANDO_PORT}/` +
    `${encodeURIComponent(database)}?sslmode=require`
  );
}

/**
 * The Secret the controller must read (and watch) for PGPASSWORD, or undefined when there
 * is none to read: BYO without `passwordSecretRef.name` (no PGPASSWORD then), a spec that
 * is not one source, or a Zalando cluster not found yet or declaring no database (whose
 * user, and so whose Secret, is not known).
 */
export function passwordSecretName(input: {
  readonly database: DatabaseSpec;
  readonly cluster?: ClusterLookup;
}): string | undefined {
  const source = sourceOf(input.database);
  if (source.kind === 'dsn') return source.secretRef?.name;
  if (source.kind !== 'postgresCluster') return undefined;
  const { cluster } = input;
  if (cluster === undefined || cluster === 'CrdAbsent' || cluster.metadata.name !== source.clusterName) {
    return undefined;
  }
  const db = zalandoDatabase(cluster);
  return db === undefined ? undefined : zalandoCredentialsSecretName(db.owner, source.clusterName);
}

/** Resolves how the server reaches Postgres; see the module comment. */
export function resolveDatabase(input: DatabaseInput): DatabaseResolution {
  const source = sourceOf(input.database);
  switch (source.kind) {
    case 'none':
      return unresolved(
        DatabaseReason.DatabaseNotConfigured,
        'spec.database names no database: set either dsn (with passwordSecretRef) for a database you run, ' +
          'or postgresClusterRef for a Zalando postgresql in this namespace',
      );
    case 'ambiguous':
      return unresolved(DatabaseReason.DatabaseSourceAmbiguous, source.message);
    case 'dsn':
      return resolveDsn(source.dsn, source.secretRef, input.secret);
    case 'postgresCluster':
      return resolveCluster(source.clusterName, input.namespace, input.cluster, input.secret);
  }
}

type Source =
  | { kind: 'none' }
  | { kind: 'ambiguous'; message: string }
  | { kind: 'dsn'; dsn: string; secretRef?: { name: string; key: string } }
  | { kind: 'postgresCluster'; clusterName: string };

function sourceOf(database: DatabaseSpec): Source {
  const dsn = database.dsn ?? '';
  const clusterName = database.postgresClusterRef?.name ?? '';
  const secretName = database.passwordSecretRef?.name ?? '';
  if (dsn !== '' && clusterName !== '') {
    return {
      kind: 'ambiguous',
      message:
        'spec.database sets both dsn and postgresClusterRef: keep dsn (and passwordSecretRef) for a ' +
        'database you run, or postgresClusterRef for a Zalando postgresql, not both',
    };
  }
  if (clusterName !== '') {
    return secretName === ''
      ? { kind: 'postgresCluster', clusterName }
      : {
          kind: 'ambiguous',
          message:
            'spec.database sets passwordSecretRef with postgresClusterRef: the password of a Zalando postgresql ' +
            'comes from the Secret its operator generates; remove passwordSecretRef',
        };
  }
  if (dsn === '') return { kind: 'none' };
  if (secretName === '') return { kind: 'dsn', dsn };
  const key = database.passwordSecretRef?.key || DEFAULT_PASSWORD_KEY;
  return { kind: 'dsn', dsn, secretRef: { name: secretName, key } };
}

function resolveDsn(
  dsn: string,
  secretRef: { name: string; key: string } | undefined,
  secret: PasswordSecret | undefined,
): DatabaseResolution {
  if (dsnCarriesPassword(dsn)) {
    // The message must not quote the DSN: it holds the password.
    return unresolved(
      DatabaseReason.DsnCarriesPassword,
      'spec.database.dsn contains a password: remove it from the DSN, put it in a Secret and name that ' +
        'Secret in spec.database.passwordSecretRef (then rotate the password, as it has been in the spec)',
    );
  }
  if (secretRef === undefined) {
    return {
      kind: 'Resolved',
      source: 'dsn',
      dsn,
      message: 'Using spec.database.dsn without a password (spec.database.passwordSecretRef is not set)',
    };
  }
  const checked = checkSecret(secretRef.name, secretRef.key, secret, 'spec.database.passwordSecretRef', {
    notFound: 'create it, or correct spec.database.passwordSecretRef.name',
    keyMissing:
      'add the password under that key, or name the right key in spec.database.passwordSecretRef.key',
  });
  if (checked.kind === 'Unresolved') return checked;
  return {
    kind: 'Resolved',
    source: 'dsn',
    dsn,
    password: { secretName: secretRef.name, key: secretRef.key },
    ...versionOf(secret),
    message: `Using spec.database.dsn, PGPASSWORD from key ${secretRef.key} of Secret ${secretRef.name}`,
  };
}

function resolveCluster(
  clusterName: string,
  namespace: string,
  cluster: ClusterLookup,
  secret: PasswordSecret | undefined,
): DatabaseResolution {
  if (cluster === 'CrdAbsent') {
    return unresolved(
      DatabaseReason.PostgresCrdAbsent,
      `spec.database.postgresClusterRef names postgresql ${clusterName}, but this cluster does not serve ` +
        'postgresql.acid.zalan.do: install the Zalando postgres-operator, or use spec.database.dsn with ' +
        'passwordSecretRef instead',
    );
  }
  if (cluster === undefined || cluster.metadata.name !== clusterName) {
    return unresolved(
      DatabaseReason.PostgresClusterNotFound,
      `postgresql ${clusterName} not found in namespace ${namespace}: create it, or correct ` +
        'spec.database.postgresClusterRef.name (the cluster must be in the TerdutServer namespace)',
    );
  }
  const db = zalandoDatabase(cluster);
  if (db === undefined) {
    return unresolved(
      DatabaseReason.PostgresClusterHasNoDatabase,
      `postgresql ${clusterName} declares no database with an owner in spec.databases: add one, e.g. ` +
        'spec.databases: {terdut: terdut} with spec.users: {terdut: []}',
    );
  }
  const status = cluster.status?.PostgresClusterStatus ?? '';
  if (!SERVING_CLUSTER_STATUSES.has(status)) {
    const said = status === '' ? 'has no status yet' : `is ${status}`;
    return unresolved(
      DatabaseReason.PostgresClusterNotRunning,
      `postgresql ${clusterName} ${said}, not Running: wait for the postgres-operator to bring it up; if it ` +
        `stays so, see kubectl describe postgresql ${clusterName} and the postgres-operator's log`,
    );
  }
  const secretName = zalandoCredentialsSecretName(db.owner, clusterName);
  const checked = checkSecret(
    secretName,
    ZALANDO_PASSWORD_KEY,
    secret,
    `user ${db.owner} of postgresql ${clusterName}`,
    {
      notFound:
        'the postgres-operator creates it when it syncs the cluster: check that the user is in the ' +
        "postgresql's spec.users and see the postgres-operator's log",
      keyMissing:
        "the postgres-operator writes this Secret, so something else changed it: see the postgres-operator's " +
        'log and kubectl describe postgresql ' +
        clusterName,
    },
  );
  if (checked.kind === 'Unresolved') return checked;
  return {
    kind: 'Resolved',
    source: 'postgresCluster',
    dsn: zalandoDsn(clusterName, namespace, db.owner, db.database),
    password: { secretName, key: ZALANDO_PASSWORD_KEY },
    ...versionOf(secret),
    message:
      `Using postgresql ${clusterName}: database ${db.database} as ${db.owner}, PGPASSWORD from key ` +
      `${ZALANDO_PASSWORD_KEY} of Secret ${secretName}`,
  };
}

function checkSecret(
  name: string,
  key: string,
  secret: PasswordSecret | undefined,
  whose: string,
  hints: { readonly notFound: string; readonly keyMissing: string },
): { kind: 'Ok' } | Extract<DatabaseResolution, { kind: 'Unresolved' }> {
  if (secret === undefined || secret.name !== name) {
    return unresolved(
      DatabaseReason.PasswordSecretNotFound,
      `Secret ${name} (the password of ${whose}) not found: ${hints.notFound}`,
    );
  }
  const value = secret.data?.[key];
  if (value === undefined || value === '') {
    const keys = Object.keys(secret.data ?? {}).sort(byCodeUnit);
    const has = keys.length === 0 ? 'no keys' : `keys ${keys.join(', ')}`;
    return unresolved(
      DatabaseReason.PasswordKeyMissing,
      `Secret ${name} (the password of ${whose}) has no non-empty key ${key} (it has ${has}): ${hints.keyMissing}`,
    );
  }
  return { kind: 'Ok' };
}

/**
 * Whether a DSN holds a password: URL form (`postgres://user:secret@host/db`, or a
 * `password` query parameter), or libpq keyword/value form (`host=... password=...`).
 */
export function dsnCarriesPassword(dsn: string): boolean {
  const trimmed = dsn.trim();
  const scheme = /^postgres(?:ql)?:\/\//i.exec(trimmed);
  if (scheme === null) return /(?:^|\s)password\s*=/.test(trimmed);
  const rest = trimmed.slice(scheme[0].length);
  const queryAt = rest.search(/[?#]/);
  const query = queryAt < 0 ? '' : rest.slice(queryAt);
  if (/[?&]password=/.test(query)) return true;
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const at = authority.lastIndexOf('@');
  if (at < 0) return false;
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(':');
  return colon >= 0 && colon < userinfo.length - 1;
}

function versionOf(secret: PasswordSecret | undefined): { secretResourceVersion?: string } {
  return secret?.resourceVersion === undefined ? {} : { secretResourceVersion: secret.resourceVersion };
}

function unresolved(
  reason: DatabaseReason,
  message: string,
): Extract<DatabaseResolution, { kind: 'Unresolved' }> {
  return { kind: 'Unresolved', reason, message };
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
