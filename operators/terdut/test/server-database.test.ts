/**
 * resolveDatabase and passwordSecretName: the BYO and Zalando paths of DESIGN §8, every
 * DatabaseReason, and the Zalando naming conventions. Expectations are written out by
 * hand, never computed with the code under test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DatabaseReason,
  type DatabaseResolution,
  dsnCarriesPassword,
  passwordSecretName,
  resolveDatabase,
  type ZalandoPostgresql,
} from '../src/domain/server/index.ts';

const BYO_DSN = 'postgres://terdut@db.example.internal:5432/terdut?sslmode=require';

function cluster(over: {
  name?: string;
  databases?: Record<string, string>;
  users?: Record<string, string[]>;
  status?: string | undefined;
}): ZalandoPostgresql {
  return {
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: { name: over.name ?? 'terdut-postgres', namespace: 'oncall' },
    spec: {
      teamId: 'terdut',
      users: over.users ?? { terdut: [] },
      databases: over.databases ?? { terdut: 'terdut' },
    },
    ...('status' in over && over.status === undefined
      ? {}
      : { status: { PostgresClusterStatus: over.status ?? 'Running' } }),
  };
}

const ZALANDO_SECRET = 'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do';

function reasonOf(r: DatabaseResolution): string {
  return r.kind === 'Unresolved' ? r.reason : 'Resolved';
}

describe('resolveDatabase: bring-your-own', () => {
  it('resolves dsn with passwordSecretRef to the DSN and the Secret key', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { dsn: BYO_DSN, passwordSecretRef: { name: 'db-pass', key: 'pw' } },
      secret: { name: 'db-pass', data: { pw: 'c2VjcmV0' }, resourceVersion: '41' },
    });
    assert.deepEqual(r, {
      kind: 'Resolved',
      source: 'dsn',
      dsn: 'postgres://terdut@db.example.internal:5432/terdut?sslmode=require',
      password: { secretName: 'db-pass', key: 'pw' },
      secretResourceVersion: '41',
      message: 'Using spec.database.dsn, PGPASSWORD from key pw of Secret db-pass',
    });
  });

  it('defaults the key of passwordSecretRef to password', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { dsn: BYO_DSN, passwordSecretRef: { name: 'db-pass' } },
      secret: { name: 'db-pass', data: { password: 'c2VjcmV0' } },
    });
    assert.equal(r.kind, 'Resolved');
    assert.deepEqual(r.kind === 'Resolved' && r.password, { secretName: 'db-pass', key: 'password' });
    assert.equal(r.kind === 'Resolved' && 'secretResourceVersion' in r, false);
  });

  it('resolves without a password when passwordSecretRef is unset or has an empty name', () => {
    for (const database of [
      { dsn: BYO_DSN },
      { dsn: BYO_DSN, passwordSecretRef: { name: '', key: 'password' } },
    ]) {
      const r = resolveDatabase({ namespace: 'oncall', database });
      assert.deepEqual(r, {
        kind: 'Resolved',
        source: 'dsn',
        dsn: 'postgres://terdut@db.example.internal:5432/terdut?sslmode=require',
        message: 'Using spec.database.dsn without a password (spec.database.passwordSecretRef is not set)',
      });
    }
  });

  it('PasswordSecretNotFound when the Secret is absent or another one was passed', () => {
    const database = { dsn: BYO_DSN, passwordSecretRef: { name: 'db-pass', key: 'password' } };
    for (const secret of [undefined, { name: 'other', data: { password: 'eA==' } }]) {
      const r = resolveDatabase({ namespace: 'oncall', database, secret });
      assert.deepEqual(r, {
        kind: 'Unresolved',
        reason: 'PasswordSecretNotFound',
        message:
          'Secret db-pass (the password of spec.database.passwordSecretRef) not found: create it, or correct ' +
          'spec.database.passwordSecretRef.name',
      });
    }
  });

  it('PasswordKeyMissing when the key is absent or empty, naming the keys there are', () => {
    const database = { dsn: BYO_DSN, passwordSecretRef: { name: 'db-pass', key: 'password' } };
    const absent = resolveDatabase({
      namespace: 'oncall',
      database,
      secret: { name: 'db-pass', data: { username: 'dGVyZHV0', pass: 'eA==' } },
    });
    assert.deepEqual(absent, {
      kind: 'Unresolved',
      reason: 'PasswordKeyMissing',
      message:
        'Secret db-pass (the password of spec.database.passwordSecretRef) has no non-empty key password (it has ' +
        'keys pass, username): add the password under that key, or name the right key in ' +
        'spec.database.passwordSecretRef.key',
    });
    const empty = resolveDatabase({
      namespace: 'oncall',
      database,
      secret: { name: 'db-pass', data: { password: '' } },
    });
    assert.equal(reasonOf(empty), 'PasswordKeyMissing');
    const noData = resolveDatabase({ namespace: 'oncall', database, secret: { name: 'db-pass' } });
    assert.equal(reasonOf(noData), 'PasswordKeyMissing');
    assert.match(noData.message, /\(it has no keys\)/);
  });

  it('DsnCarriesPassword for a password in the URL or the keyword form, without quoting it', () => {
    for (const dsn of [
      'postgres://terdut:hunter2@db:5432/terdut',
      'postgresql://terdut:hunter2@db/terdut?sslmode=require',
      'postgres://terdut@db/terdut?sslmode=require&password=hunter2',
      'host=db user=terdut password=hunter2 dbname=terdut',
      'host=db password = hunter2',
    ]) {
      const r = resolveDatabase({ namespace: 'oncall', database: { dsn } });
      assert.equal(reasonOf(r), 'DsnCarriesPassword', dsn);
      assert.doesNotMatch(r.message, /hunter2/);
    }
  });

  it('dsnCarriesPassword is false for DSNs without one', () => {
    for (const dsn of [
      'postgres://terdut@db:5432/terdut?sslmode=require',
      'postgres://terdut:@db/terdut',
      'postgres://db/terdut',
      'postgres://terdut@db/we@ird:db',
      'host=db user=terdut dbname=terdut sslmode=require',
      'postgres://terdut@db/terdut?passwordless=1',
    ]) {
      assert.equal(dsnCarriesPassword(dsn), false, dsn);
    }
  });
});

describe('resolveDatabase: Zalando', () => {
  it('builds the DSN from the cluster, the first sorted database and its owner', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({ databases: { zeta: 'zed', terdut: 'terdut', alpha_db: 'app_owner' } }),
      secret: {
        name: 'app-owner.terdut-postgres.credentials.postgresql.acid.zalan.do',
        data: { username: 'YXBwX293bmVy', password: 'c2VjcmV0' },
        resourceVersion: '777',
      },
    });
    assert.deepEqual(r, {
      kind: 'Resolved',
      source: 'postgresCluster',
      dsn: 'postgres://app_owner@terdut-postgres.oncall.svc:5432/alpha_db?sslmode=require',
      password: {
        secretName: 'app-owner.terdut-postgres.credentials.postgresql.acid.zalan.do',
        key: 'password',
      },
      secretResourceVersion: '777',
      message:
        'Using postgresql terdut-postgres: database alpha_db as app_owner, PGPASSWORD from key password of Secret ' +
        'app-owner.terdut-postgres.credentials.postgresql.acid.zalan.do',
    });
  });

  it('resolves the plain terdut/terdut cluster of DESIGN §4.1', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({}),
      secret: { name: ZALANDO_SECRET, data: { username: 'dGVyZHV0', password: 'c2VjcmV0' } },
    });
    assert.deepEqual(r, {
      kind: 'Resolved',
      source: 'postgresCluster',
      dsn: 'postgres://terdut@terdut-postgres.oncall.svc:5432/terdut?sslmode=require',
      password: {
        secretName: 'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do',
        key: 'password',
      },
      message:
        'Using postgresql terdut-postgres: database terdut as terdut, PGPASSWORD from key password of Secret ' +
        'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do',
    });
  });

  it('resolves while the cluster is Updating (its master keeps serving)', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({ status: 'Updating' }),
      secret: { name: ZALANDO_SECRET, data: { password: 'c2VjcmV0' } },
    });
    assert.equal(r.kind, 'Resolved');
  });

  it('PostgresCrdAbsent says to install the postgres-operator or use dsn', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: 'CrdAbsent',
    });
    assert.deepEqual(r, {
      kind: 'Unresolved',
      reason: 'PostgresCrdAbsent',
      message:
        'spec.database.postgresClusterRef names postgresql terdut-postgres, but this cluster does not serve ' +
        'postgresql.acid.zalan.do: install the Zalando postgres-operator, or use spec.database.dsn with ' +
        'passwordSecretRef instead',
    });
  });

  it('PostgresClusterNotFound when absent, or when another cluster was passed', () => {
    for (const c of [undefined, cluster({ name: 'other' })]) {
      const r = resolveDatabase({
        namespace: 'oncall',
        database: { postgresClusterRef: { name: 'terdut-postgres' } },
        cluster: c,
      });
      assert.deepEqual(r, {
        kind: 'Unresolved',
        reason: 'PostgresClusterNotFound',
        message:
          'postgresql terdut-postgres not found in namespace oncall: create it, or correct ' +
          'spec.database.postgresClusterRef.name (the cluster must be in the TerdutServer namespace)',
      });
    }
  });

  it('PostgresClusterHasNoDatabase without databases, or when the first has no owner', () => {
    const cases: Record<string, string>[] = [{}, { a: '', b: 'terdut' }];
    for (const databases of cases) {
      const r = resolveDatabase({
        namespace: 'oncall',
        database: { postgresClusterRef: { name: 'terdut-postgres' } },
        cluster: cluster({ databases }),
      });
      assert.deepEqual(r, {
        kind: 'Unresolved',
        reason: 'PostgresClusterHasNoDatabase',
        message:
          'postgresql terdut-postgres declares no database with an owner in spec.databases: add one, e.g. ' +
          'spec.databases: {terdut: terdut} with spec.users: {terdut: []}',
      });
    }
    const noSpec: ZalandoPostgresql = { metadata: { name: 'terdut-postgres' } };
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: noSpec,
    });
    assert.equal(reasonOf(r), 'PostgresClusterHasNoDatabase');
  });

  it('PostgresClusterNotRunning for every status but Running and Updating, and for none', () => {
    for (const status of ['Creating', 'CreateFailed', 'UpdateFailed', 'SyncFailed', 'Invalid', '']) {
      const r = resolveDatabase({
        namespace: 'oncall',
        database: { postgresClusterRef: { name: 'terdut-postgres' } },
        cluster: cluster({ status }),
        secret: { name: ZALANDO_SECRET, data: { password: 'c2VjcmV0' } },
      });
      assert.equal(reasonOf(r), 'PostgresClusterNotRunning', status);
    }
    const creating = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({ status: 'Creating' }),
    });
    assert.equal(
      creating.message,
      'postgresql terdut-postgres is Creating, not Running: wait for the postgres-operator to bring it up; if it ' +
        "stays so, see kubectl describe postgresql terdut-postgres and the postgres-operator's log",
    );
    const none = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({ status: undefined }),
    });
    assert.equal(reasonOf(none), 'PostgresClusterNotRunning');
    assert.match(none.message, /^postgresql terdut-postgres has no status yet, not Running/);
  });

  it('PasswordSecretNotFound names the generated Secret and where it comes from', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({}),
    });
    assert.deepEqual(r, {
      kind: 'Unresolved',
      reason: 'PasswordSecretNotFound',
      message:
        'Secret terdut.terdut-postgres.credentials.postgresql.acid.zalan.do (the password of user terdut of ' +
        'postgresql terdut-postgres) not found: the postgres-operator creates it when it syncs the cluster: ' +
        "check that the user is in the postgresql's spec.users and see the postgres-operator's log",
    });
  });

  it('PasswordKeyMissing when the generated Secret lacks password', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({}),
      secret: { name: ZALANDO_SECRET, data: { username: 'dGVyZHV0' } },
    });
    assert.equal(reasonOf(r), 'PasswordKeyMissing');
    assert.match(r.message, /has no non-empty key password \(it has keys username\)/);
  });
});

describe('resolveDatabase: the spec is not one source', () => {
  it('DatabaseNotConfigured with neither dsn nor postgresClusterRef (empty strings count as unset)', () => {
    for (const database of [
      {},
      { dsn: '' },
      { postgresClusterRef: { name: '' } },
      { passwordSecretRef: { name: 'x' } },
    ]) {
      const r = resolveDatabase({ namespace: 'oncall', database });
      assert.deepEqual(r, {
        kind: 'Unresolved',
        reason: 'DatabaseNotConfigured',
        message:
          'spec.database names no database: set either dsn (with passwordSecretRef) for a database you run, or ' +
          'postgresClusterRef for a Zalando postgresql in this namespace',
      });
    }
  });

  it('DatabaseSourceAmbiguous with both dsn and postgresClusterRef', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { dsn: BYO_DSN, postgresClusterRef: { name: 'terdut-postgres' } },
      cluster: cluster({}),
    });
    assert.deepEqual(r, {
      kind: 'Unresolved',
      reason: 'DatabaseSourceAmbiguous',
      message:
        'spec.database sets both dsn and postgresClusterRef: keep dsn (and passwordSecretRef) for a database you ' +
        'run, or postgresClusterRef for a Zalando postgresql, not both',
    });
  });

  it('DatabaseSourceAmbiguous with passwordSecretRef beside postgresClusterRef', () => {
    const r = resolveDatabase({
      namespace: 'oncall',
      database: { postgresClusterRef: { name: 'terdut-postgres' }, passwordSecretRef: { name: 'db-pass' } },
      cluster: cluster({}),
    });
    assert.equal(reasonOf(r), 'DatabaseSourceAmbiguous');
    assert.match(r.message, /remove passwordSecretRef$/);
  });

  it('the reasons are exactly the nine tested above', () => {
    assert.deepEqual(Object.values(DatabaseReason).sort(), [
      'DatabaseNotConfigured',
      'DatabaseSourceAmbiguous',
      'DsnCarriesPassword',
      'PasswordKeyMissing',
      'PasswordSecretNotFound',
      'PostgresClusterHasNoDatabase',
      'PostgresClusterNotFound',
      'PostgresClusterNotRunning',
      'PostgresCrdAbsent',
    ]);
  });
});

describe('passwordSecretName', () => {
  it('BYO: the passwordSecretRef name, none when unset or empty', () => {
    assert.equal(
      passwordSecretName({ database: { dsn: BYO_DSN, passwordSecretRef: { name: 'db-pass' } } }),
      'db-pass',
    );
    assert.equal(passwordSecretName({ database: { dsn: BYO_DSN } }), undefined);
    assert.equal(
      passwordSecretName({ database: { dsn: BYO_DSN, passwordSecretRef: { name: '' } } }),
      undefined,
    );
  });

  it('Zalando: <owner>.<cluster>.credentials.postgresql.acid.zalan.do, _ written as -', () => {
    const database = { postgresClusterRef: { name: 'terdut-postgres' } };
    assert.equal(
      passwordSecretName({ database, cluster: cluster({}) }),
      'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do',
    );
    assert.equal(
      passwordSecretName({ database, cluster: cluster({ databases: { terdut: 'terdut_app' } }) }),
      'terdut-app.terdut-postgres.credentials.postgresql.acid.zalan.do',
    );
  });

  it('Zalando: none while the cluster, its CRD or its database is missing', () => {
    const database = { postgresClusterRef: { name: 'terdut-postgres' } };
    assert.equal(passwordSecretName({ database }), undefined);
    assert.equal(passwordSecretName({ database, cluster: 'CrdAbsent' }), undefined);
    assert.equal(passwordSecretName({ database, cluster: cluster({ name: 'other' }) }), undefined);
    assert.equal(passwordSecretName({ database, cluster: cluster({ databases: {} }) }), undefined);
  });

  it('none for a spec that is not one source', () => {
    assert.equal(passwordSecretName({ database: {} }), undefined);
    assert.equal(
      passwordSecretName({
        database: {
          dsn: BYO_DSN,
          postgresClusterRef: { name: 'terdut-postgres' },
          passwordSecretRef: { name: 'p' },
        },
        cluster: cluster({}),
      }),
      undefined,
    );
  });
});
