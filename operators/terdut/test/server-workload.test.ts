/**
 * desiredDeployment, desiredService, serviceName and serviceUrl: the objects of DESIGN
 * §4.1/§7/§8, written out by hand for a BYO and a Zalando TerdutServer (the oracle never
 * calls the code under test), env omission and Secret wiring, and a property over random
 * specs: env values are present, names unique and sorted, and nothing of a Secret's
 * resourceVersion reaches the pod template.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { TerdutServer, TerdutServerSpec } from '../src/api/terdut-server.ts';
import {
  type Deployment,
  desiredDeployment,
  desiredService,
  type ResolvedDatabase,
  serviceName,
  serviceUrl,
} from '../src/domain/server/index.ts';

function server(spec: TerdutServerSpec, name = 'terdut', namespace = 'oncall'): TerdutServer {
  return {
    apiVersion: 'terdut.ryuvia.com/v1alpha1',
    kind: 'TerdutServer',
    metadata: {
      name,
      namespace,
      uid: '0b7c2f7e-5d7a-4a53-9a51-6f1c3f0e2d11',
      generation: 3,
      resourceVersion: '9',
    },
    spec,
  };
}

/** DESIGN §4.1's example, BYO, everything set, OIDC on. */
const BYO_SPEC: TerdutServerSpec = {
  image: { repository: 'registry.example.com/terdut-server', tag: 'v1.2.3' },
  replicas: 2,
  networking: { hostname: 'terdut.example.com', servicePort: 9090, gatewayListener: '' },
  database: {
    dsn: 'postgres://terdut@terdut-db:5432/terdut?sslmode=require',
    passwordSecretRef: { name: 'terdut-db', key: 'password' },
  },
  sweeper: { staleAfter: '6h', archiveAfter: '168h' },
  deadman: { matchers: 'alertname=Watchdog', timeout: '15m', severity: 'critical' },
  notify: {
    ntfyURL: 'http://ntfy.ntfy.svc.cluster.local',
    fallbackTopic: 'oncall',
    repeatEvery: '15m',
    tokenSecretRef: { name: 'ntfy', key: 'token' },
  },
  oidc: {
    enabled: true,
    issuer: 'https://sso.example.com/realms/main',
    clientID: 'terdut',
    clientSecretRef: { name: 'terdut-oidc', key: 'client-secret' },
    name: 'SSO',
    scopes: 'openid profile email',
    allowedGroups: ['oncall', 'sre'],
    adminGroup: 'terdut-admins',
    sessionMaxAge: '12h',
  },
  passwordLogin: false,
  allowedTeams: { namespaces: { from: 'All' } },
};

const BYO_DB: ResolvedDatabase = {
  kind: 'Resolved',
  source: 'dsn',
  dsn: 'postgres://terdut@terdut-db:5432/terdut?sslmode=require',
  password: { secretName: 'terdut-db', key: 'password' },
  secretResourceVersion: '1234',
  message: 'Using spec.database.dsn',
};

const OWNER = {
  apiVersion: 'terdut.ryuvia.com/v1alpha1',
  kind: 'TerdutServer',
  name: 'terdut',
  uid: '0b7c2f7e-5d7a-4a53-9a51-6f1c3f0e2d11',
  controller: true,
  blockOwnerDeletion: true,
};

const LABELS = {
  'app.kubernetes.io/name': 'terdut-server',
  'app.kubernetes.io/instance': 'terdut',
  'app.kubernetes.io/managed-by': 'terdut-operator',
};
const SELECTOR = { 'app.kubernetes.io/name': 'terdut-server', 'app.kubernetes.io/instance': 'terdut' };

const SECURITY = {
  runAsNonRoot: true,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
};
const POD_SECURITY = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };

describe('desiredDeployment', () => {
  it('builds the whole Deployment of a BYO server', () => {
    assert.deepEqual(desiredDeployment(server(BYO_SPEC), BYO_DB), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'terdut', namespace: 'oncall', labels: LABELS, ownerReferences: [OWNER] },
      spec: {
        replicas: 2,
        selector: { matchLabels: SELECTOR },
        template: {
          metadata: { labels: LABELS },
          spec: {
            securityContext: POD_SECURITY,
            containers: [
              {
                name: 'terdut-server',
                image: 'registry.example.com/terdut-server:v1.2.3',
                ports: [{ name: 'http', containerPort: 9090, protocol: 'TCP' }],
                env: [
                  { name: 'PGPASSWORD', valueFrom: { secretKeyRef: { name: 'terdut-db', key: 'password' } } },
                  {
                    name: 'TERDUT_DATABASE_DSN',
                    value: 'postgres://terdut@terdut-db:5432/terdut?sslmode=require',
                  },
                  { name: 'TERDUT_DEADMAN_MATCHERS', value: 'alertname=Watchdog' },
                  { name: 'TERDUT_DEADMAN_SEVERITY', value: 'critical' },
                  { name: 'TERDUT_DEADMAN_TIMEOUT', value: '15m' },
                  { name: 'TERDUT_LISTEN_ADDR', value: ':9090' },
                  { name: 'TERDUT_NTFY_FALLBACK_TOPIC', value: 'oncall' },
                  { name: 'TERDUT_NTFY_REPEAT_EVERY', value: '15m' },
                  { name: 'TERDUT_NTFY_TOKEN', valueFrom: { secretKeyRef: { name: 'ntfy', key: 'token' } } },
                  { name: 'TERDUT_NTFY_URL', value: 'http://ntfy.ntfy.svc.cluster.local' },
                  { name: 'TERDUT_OIDC_ADMIN_GROUP', value: 'terdut-admins' },
                  { name: 'TERDUT_OIDC_ALLOWED_GROUPS', value: 'oncall,sre' },
                  { name: 'TERDUT_OIDC_CLIENT_ID', value: 'terdut' },
                  {
                    name: 'TERDUT_OIDC_CLIENT_SECRET',
                    valueFrom: { secretKeyRef: { name: 'terdut-oidc', key: 'client-secret' } },
                  },
                  { name: 'TERDUT_OIDC_ENABLED', value: 'true' },
                  { name: 'TERDUT_OIDC_ISSUER', value: 'https://sso.example.com/realms/main' },
                  { name: 'TERDUT_OIDC_NAME', value: 'SSO' },
                  { name: 'TERDUT_OIDC_SCOPES', value: 'openid profile email' },
                  { name: 'TERDUT_OIDC_SESSION_MAX_AGE', value: '12h' },
                  { name: 'TERDUT_PASSWORD_LOGIN', value: 'false' },
                  { name: 'TERDUT_PUBLIC_URL', value: 'https://terdut.example.com' },
                  { name: 'TERDUT_SWEEPER_ARCHIVE_AFTER', value: '168h' },
                  { name: 'TERDUT_SWEEPER_STALE_AFTER', value: '6h' },
                ],
                readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                livenessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                securityContext: SECURITY,
              },
            ],
          },
        },
      },
    });
  });

  it('builds the whole Deployment of a minimal Zalando server, with every default', () => {
    const zalando = server({ database: { postgresClusterRef: { name: 'terdut-postgres' } } });
    const db: ResolvedDatabase = {
      kind: 'Resolved',
      source: 'postgresCluster',
      dsn: 'postgres://terdut@terdut-postgres.oncall.svc:5432/terdut?sslmode=require',
      password: {
        secretName: 'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do',
        key: 'password',
      },
      secretResourceVersion: '55',
      message: 'Using postgresql terdut-postgres',
    };
    assert.deepEqual(desiredDeployment(zalando, db), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'terdut', namespace: 'oncall', labels: LABELS, ownerReferences: [OWNER] },
      spec: {
        replicas: 1,
        selector: { matchLabels: SELECTOR },
        template: {
          metadata: { labels: LABELS },
          spec: {
            securityContext: POD_SECURITY,
            containers: [
              {
                name: 'terdut-server',
                image: 'git.ryuvia.com/niklas/terdut-server:v0.9.3',
                ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
                env: [
                  {
                    name: 'PGPASSWORD',
                    valueFrom: {
                      secretKeyRef: {
                        name: 'terdut.terdut-postgres.credentials.postgresql.acid.zalan.do',
                        key: 'password',
                      },
                    },
                  },
                  {
                    name: 'TERDUT_DATABASE_DSN',
                    value: 'postgres://terdut@terdut-postgres.oncall.svc:5432/terdut?sslmode=require',
                  },
                  { name: 'TERDUT_LISTEN_ADDR', value: ':8080' },
                ],
                readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                livenessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                securityContext: SECURITY,
              },
            ],
          },
        },
      },
    });
  });

  it('leaves out empty values, unnamed SecretKeyRefs, empty lists, and all of OIDC when it is off', () => {
    const spec: TerdutServerSpec = {
      image: { repository: '', tag: '' },
      networking: { hostname: '', servicePort: 8080, gatewayListener: '' },
      database: { dsn: 'postgres://terdut@db/terdut' },
      sweeper: { staleAfter: '', archiveAfter: '' },
      deadman: { matchers: '', timeout: '', severity: '' },
      notify: { ntfyURL: '', fallbackTopic: '', repeatEvery: '', tokenSecretRef: { name: '', key: 'token' } },
      oidc: {
        enabled: false,
        issuer: 'https://sso.example.com',
        clientID: 'terdut',
        clientSecretRef: { name: 'oidc', key: 'client-secret' },
        name: 'SSO',
        scopes: 'openid',
        allowedGroups: ['a'],
        adminGroup: 'admins',
        sessionMaxAge: '12h',
      },
    };
    const db: ResolvedDatabase = {
      kind: 'Resolved',
      source: 'dsn',
      dsn: 'postgres://terdut@db/terdut',
      message: '',
    };
    const d = desiredDeployment(server(spec), db);
    assert.deepEqual(containerOf(d).env, [
      { name: 'TERDUT_DATABASE_DSN', value: 'postgres://terdut@db/terdut' },
      { name: 'TERDUT_LISTEN_ADDR', value: ':8080' },
    ]);
    assert.equal(containerOf(d).image, 'git.ryuvia.com/niklas/terdut-server:v0.9.3');
  });

  it('with OIDC on, leaves out its empty fields and an empty allowedGroups, and defaults the Secret keys', () => {
    const spec: TerdutServerSpec = {
      database: { dsn: 'postgres://terdut@db/terdut' },
      notify: { tokenSecretRef: { name: 'ntfy' } },
      oidc: {
        enabled: true,
        issuer: '',
        clientSecretRef: { name: 'oidc', key: '' },
        allowedGroups: ['', ''],
      },
      passwordLogin: true,
    };
    const db: ResolvedDatabase = {
      kind: 'Resolved',
      source: 'dsn',
      dsn: 'postgres://terdut@db/terdut',
      message: '',
    };
    assert.deepEqual(containerOf(desiredDeployment(server(spec), db)).env, [
      { name: 'TERDUT_DATABASE_DSN', value: 'postgres://terdut@db/terdut' },
      { name: 'TERDUT_LISTEN_ADDR', value: ':8080' },
      { name: 'TERDUT_NTFY_TOKEN', valueFrom: { secretKeyRef: { name: 'ntfy', key: 'token' } } },
      {
        name: 'TERDUT_OIDC_CLIENT_SECRET',
        valueFrom: { secretKeyRef: { name: 'oidc', key: 'client-secret' } },
      },
      { name: 'TERDUT_OIDC_ENABLED', value: 'true' },
      { name: 'TERDUT_PASSWORD_LOGIN', value: 'true' },
    ]);
  });

  it('sets no PGPASSWORD when the database has no password', () => {
    const db: ResolvedDatabase = {
      kind: 'Resolved',
      source: 'dsn',
      dsn: 'postgres://terdut@db/terdut',
      message: '',
    };
    const names = containerOf(desiredDeployment(server(BYO_SPEC), db)).env.map((e) => e.name);
    assert.equal(names.includes('PGPASSWORD'), false);
    assert.equal(names.includes('TERDUT_DATABASE_DSN'), true);
  });

  it('keeps replicas: 0 and pins a sha256 tag as a digest', () => {
    const d = desiredDeployment(
      server({ ...BYO_SPEC, replicas: 0, image: { tag: 'sha256:0123abcd' } }),
      BYO_DB,
    );
    assert.equal(d.spec.replicas, 0);
    assert.equal(containerOf(d).image, 'git.ryuvia.com/niklas/terdut-server@sha256:0123abcd');
  });

  it('is deterministic and does not change with the password Secret resourceVersion', () => {
    const a = desiredDeployment(server(BYO_SPEC), BYO_DB);
    const b = desiredDeployment(server(BYO_SPEC), { ...BYO_DB, secretResourceVersion: '99999' });
    assert.deepEqual(a, b);
    assert.equal(JSON.stringify(a), JSON.stringify(b));
    assert.doesNotMatch(JSON.stringify(a), /1234/);
  });

  it('refuses a TerdutServer without uid, name or namespace', () => {
    const { uid: _uid, ...noUid } = server(BYO_SPEC).metadata;
    assert.throws(
      () => desiredDeployment({ ...server(BYO_SPEC), metadata: noUid }, BYO_DB),
      /lacks name, namespace or uid/,
    );
    const { namespace: _ns, ...noNs } = server(BYO_SPEC).metadata;
    assert.throws(
      () => desiredService({ ...server(BYO_SPEC), metadata: noNs }),
      /lacks name, namespace or uid/,
    );
  });
});

describe('desiredService, serviceName, serviceUrl', () => {
  it('builds the ClusterIP Service on the servicePort', () => {
    assert.deepEqual(desiredService(server(BYO_SPEC)), {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'terdut', namespace: 'oncall', labels: LABELS, ownerReferences: [OWNER] },
      spec: {
        type: 'ClusterIP',
        selector: SELECTOR,
        ports: [{ name: 'http', port: 9090, targetPort: 'http', protocol: 'TCP' }],
      },
    });
  });

  it('defaults the port to 8080', () => {
    const s = desiredService(server({ database: { dsn: 'postgres://x@y/z' } }, 'pager', 'team-a'));
    assert.deepEqual(s.spec.ports, [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
    assert.deepEqual(s.spec.selector, {
      'app.kubernetes.io/name': 'terdut-server',
      'app.kubernetes.io/instance': 'pager',
    });
  });

  it('names the Service like the server and gives its in-cluster URL', () => {
    assert.equal(serviceName(server(BYO_SPEC)), 'terdut');
    assert.equal(serviceUrl(server(BYO_SPEC)), 'http://terdut.oncall.svc:9090');
    assert.equal(
      serviceUrl(server({ database: { dsn: 'postgres://x@y/z' } }, 'pager', 'team-a')),
      'http://pager.team-a.svc:8080',
    );
  });
});

describe('desiredDeployment over random specs', () => {
  const text = fc.oneof(fc.constant(''), fc.string({ minLength: 1, maxLength: 12 }));
  const ref = fc.record({ name: text, key: text }, { requiredKeys: [] });
  const spec: fc.Arbitrary<TerdutServerSpec> = fc.record(
    {
      image: fc.record({ repository: text, tag: text }, { requiredKeys: [] }),
      replicas: fc.integer({ min: 0, max: 5 }),
      networking: fc.record(
        { hostname: text, servicePort: fc.integer({ min: 1, max: 65535 }), gatewayListener: text },
        { requiredKeys: [] },
      ),
      database: fc.constant({ dsn: 'postgres://terdut@db/terdut' }),
      sweeper: fc.record({ staleAfter: text, archiveAfter: text }, { requiredKeys: [] }),
      deadman: fc.record({ matchers: text, timeout: text, severity: text }, { requiredKeys: [] }),
      notify: fc.record(
        { ntfyURL: text, fallbackTopic: text, repeatEvery: text, tokenSecretRef: ref },
        { requiredKeys: [] },
      ),
      oidc: fc.record(
        {
          enabled: fc.boolean(),
          issuer: text,
          clientID: text,
          clientSecretRef: ref,
          name: text,
          scopes: text,
          allowedGroups: fc.array(text, { maxLength: 3 }),
          adminGroup: text,
          sessionMaxAge: text,
        },
        { requiredKeys: [] },
      ),
      passwordLogin: fc.boolean(),
    },
    { requiredKeys: ['database'] },
  );
  const db: fc.Arbitrary<ResolvedDatabase> = fc.record(
    {
      kind: fc.constant('Resolved' as const),
      source: fc.constantFrom('dsn' as const, 'postgresCluster' as const),
      dsn: fc.constantFrom('postgres://terdut@db/terdut', 'postgres://terdut@pg.oncall.svc:5432/terdut'),
      password: fc.record({
        secretName: fc.constantFrom('db-pass', 'terdut.pg.credentials'),
        key: fc.constant('password'),
      }),
      message: fc.constant('m'),
    },
    { requiredKeys: ['kind', 'source', 'dsn', 'message'] },
  );

  it('env values are non-empty strings or Secret keys, names unique and sorted; nothing follows the Secret version', () => {
    fc.assert(
      fc.property(
        spec,
        db,
        fc.stringMatching(/^rv[0-9a-f]{12}$/),
        fc.stringMatching(/^rv[0-9a-f]{12}$/),
        (s, d, v1, v2) => {
          const first = desiredDeployment(server(s), { ...d, secretResourceVersion: v1 });
          const env = containerOf(first).env;
          for (const e of env) {
            if ('value' in e) {
              assert.equal(typeof e.value, 'string');
              assert.notEqual(e.value, '', e.name);
            } else {
              assert.notEqual(e.valueFrom.secretKeyRef.name, '', e.name);
              assert.notEqual(e.valueFrom.secretKeyRef.key, '', e.name);
            }
          }
          const names = env.map((e) => e.name);
          assert.equal(new Set(names).size, names.length);
          assert.deepEqual(names, [...names].sort());
          // Another resourceVersion of the password Secret, or none: the same template, field for field.
          const second = desiredDeployment(server(s), { ...d, secretResourceVersion: v2 });
          const { secretResourceVersion: _, ...withoutVersion } = { ...d, secretResourceVersion: v1 };
          const third = desiredDeployment(server(s), withoutVersion);
          assert.deepEqual(second.spec.template, first.spec.template);
          assert.deepEqual(third.spec.template, first.spec.template);
          assert.equal(JSON.stringify(first).includes(v1), false);
          // Deterministic: the same input twice gives the same serialisation.
          assert.equal(
            JSON.stringify(desiredDeployment(server(s), { ...d, secretResourceVersion: v1 })),
            JSON.stringify(first),
          );
        },
      ),
    );
  });
});

function containerOf(d: Deployment) {
  const c = d.spec.template.spec.containers[0];
  assert.ok(c !== undefined);
  return c;
}
