/**
 * The five terdut.ryuvia.com CRDs: the committed YAML is exactly what the TypeScript
 * definitions generate, and the real apiserver refuses bad specs at admission with
 * messages that name the field and the fix, fills in the defaults, accepts the status
 * the types describe, and refuses changes to the immutable references.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it, type TestContext } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject, type Patch } from '@operators/kit';
import { CRD_FILES, generated, terdutCrds } from '../src/api/gen-crds.ts';
import {
  TERDUT_ALERT_SOURCE,
  type TerdutAlertSource,
  type TerdutAlertSourceStatus,
} from '../src/api/terdut-alert-source.ts';
import {
  TERDUT_DEADMAN_SWITCH,
  type TerdutDeadmanSwitch,
  type TerdutDeadmanSwitchStatus,
} from '../src/api/terdut-deadman-switch.ts';
import {
  TERDUT_ESCALATION_RULE,
  type TerdutEscalationRule,
  type TerdutEscalationRuleStatus,
} from '../src/api/terdut-escalation-rule.ts';
import { TERDUT_SERVER, type TerdutServer, type TerdutServerStatus } from '../src/api/terdut-server.ts';
import { TERDUT_TEAM, type TerdutTeam, type TerdutTeamStatus } from '../src/api/terdut-team.ts';

type Gvk = { readonly apiVersion: string; readonly kind: string };
type Spec = Record<string, unknown>;
/** What was tried, the spec, and the message the apiserver must answer with. */
type BadCase = readonly [string, Spec, RegExp];

describe('the committed CRDs', () => {
  it('are what gen-crds generates from src/api (run `npm run gen-crds -w @operators/terdut` after a change)', () => {
    for (const { path, text } of generated()) {
      assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale`);
    }
  });

  it('are namespaced, in the terdut category, with a status subresource and a Ready column', () => {
    const shortNames = ['tsrv', 'tteam', 'tesc', 'tdms', 'tas'];
    assert.equal(CRD_FILES.length, shortNames.length);
    for (const [i, crd] of terdutCrds().entries()) {
      const spec = crd.spec as {
        scope: string;
        group: string;
        names: { shortNames: string[]; categories: string[] };
        versions: {
          name: string;
          subresources?: { status?: object };
          additionalPrinterColumns: { name: string }[];
        }[];
      };
      assert.equal(spec.scope, 'Namespaced');
      assert.equal(spec.group, 'terdut.ryuvia.com');
      assert.deepEqual(spec.names.shortNames, [shortNames[i]]);
      assert.deepEqual(spec.names.categories, ['terdut']);
      assert.equal(spec.versions.length, 1);
      assert.equal(spec.versions[0]?.name, 'v1alpha1');
      assert.deepEqual(spec.versions[0]?.subresources, { status: {} });
      const columns = spec.versions[0]?.additionalPrinterColumns.map((c) => c.name) ?? [];
      assert.equal(columns[0], 'Ready');
      assert.equal(columns.at(-1), 'Age');
    }
  });
});

describe('admission of the terdut kinds', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds(terdutCrds());
  });

  const object = (gvk: Gvk, namespace: string, name: string, spec: Spec): KubeObject => ({
    ...gvk,
    metadata: { name, namespace },
    spec,
  });

  /** Every case is refused as Invalid, with its message; all at once, as dry runs. */
  async function refusesAll(gvk: Gvk, namespace: string, cases: readonly BadCase[]): Promise<void> {
    await Promise.all(
      cases.map(async ([what, spec, message], i) => {
        const err = await env.admin.create(object(gvk, namespace, `bad-${i}`, spec), { dryRun: true }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(isApiError(err, ApiErrorReason.Invalid), `${what}: expected Invalid, got ${String(err)}`);
        assert.match(err.message, message, what);
      }),
    );
  }

  /** Every spec is accepted (dry runs, all at once). */
  async function acceptsAll(gvk: Gvk, namespace: string, specs: readonly Spec[]): Promise<void> {
    await Promise.all(
      specs.map((spec, i) => env.admin.create(object(gvk, namespace, `good-${i}`, spec), { dryRun: true })),
    );
  }

  /** A merge patch of `spec`, its error (or undefined when it passed). */
  async function patchSpec(gvk: Gvk, namespace: string, name: string, spec: Spec): Promise<unknown> {
    const patch: Patch = { type: 'merge', body: { spec } };
    return env.admin.patch(gvk, name, namespace, patch).then(
      () => undefined,
      (e: unknown) => e,
    );
  }

  async function refusedUpdate(
    gvk: Gvk,
    namespace: string,
    name: string,
    spec: Spec,
    message: RegExp,
    what: string,
  ): Promise<void> {
    const err = await patchSpec(gvk, namespace, name, spec);
    assert.ok(isApiError(err, ApiErrorReason.Invalid), `${what}: expected Invalid, got ${String(err)}`);
    assert.match(err.message, message, what);
  }

  async function acceptedUpdate(gvk: Gvk, namespace: string, name: string, spec: Spec): Promise<void> {
    const err = await patchSpec(gvk, namespace, name, spec);
    assert.equal(err, undefined, `update ${JSON.stringify(spec)} was refused: ${String(err)}`);
  }

  const ns = (t: TestContext) => env.namespace(t, 'terdut-crds');

  // -------------------------------------------------------------------------------------
  describe('TerdutServer', () => {
    const byo = {
      dsn: 'postgres://terdut@terdut-postgres:5432/terdut?sslmode=require',
      passwordSecretRef: { name: 'terdut-db' },
    };
    const ok = { database: byo };
    const oidc = {
      enabled: true,
      issuer: 'https://dex.example.com',
      clientID: 'terdut',
      clientSecretRef: { name: 'terdut-oidc' },
    };
    const withDuration = (path: string, value: string): Spec => {
      const [group, field] = path.split('.') as [string, string];
      return { ...ok, [group]: { [field]: value } };
    };

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      const exactlyOne = /spec\.database.*exactly one of dsn and postgresClusterRef/;
      const password = /spec\.database\.dsn must not carry a password: put it in passwordSecretRef/;
      const duration = (f: string) => new RegExp(`spec\\.${f.replace('.', '\\.')} must be a Go duration`);
      const cases: BadCase[] = [
        ['no database', {}, /spec\.database: Required value/],
        ['empty database', { database: {} }, exactlyOne],
        [
          'dsn and postgresClusterRef',
          { database: { ...byo, postgresClusterRef: { name: 'pg' } } },
          exactlyOne,
        ],
        [
          'passwordSecretRef with postgresClusterRef',
          { database: { postgresClusterRef: { name: 'pg' }, passwordSecretRef: { name: 's' } } },
          /spec\.database\.passwordSecretRef.*goes only with dsn/,
        ],
        [
          'postgresClusterRef without a name',
          { database: { postgresClusterRef: {} } },
          /name: Required value/,
        ],
        ['password in the dsn', { database: { dsn: 'postgres://user:pw@host/terdut' } }, password],
        ['empty password in the dsn', { database: { dsn: 'postgresql://user:@host:5432/terdut' } }, password],
        [
          'password as a parameter',
          { database: { dsn: 'postgres://user@host/terdut?sslmode=require&password=pw' } },
          password,
        ],
        [
          'not a postgres URL',
          { database: { dsn: 'mysql://user@host/terdut' } },
          /spec\.database\.dsn must be a postgres:\/\/ or postgresql:\/\/ URL/,
        ],
        [
          'key=value dsn',
          { database: { dsn: 'host=db user=terdut' } },
          /spec\.database\.dsn must be a postgres/,
        ],
        [
          'bad Secret key',
          { database: { ...byo, passwordSecretRef: { name: 'db', key: 'pass word' } } },
          /spec\.database\.passwordSecretRef\.key must be a Secret key/,
        ],
        [
          'bad Secret name',
          { database: { ...byo, passwordSecretRef: { name: 'DB_Secret' } } },
          /spec\.database\.passwordSecretRef\.name must be the name of a Secret/,
        ],
        ['negative replicas', { ...ok, replicas: -1 }, /spec\.replicas/],
        ['port 0', { ...ok, networking: { servicePort: 0 } }, /spec\.networking\.servicePort/],
        ['port 65536', { ...ok, networking: { servicePort: 65_536 } }, /spec\.networking\.servicePort/],
        [
          'bad hostname',
          { ...ok, networking: { hostname: 'https://terdut.example.com' } },
          /spec\.networking\.hostname must be a lowercase DNS name/,
        ],
        ['empty image tag', { ...ok, image: { tag: '' } }, /spec\.image\.tag/],
        [
          'oidc without an issuer',
          { ...ok, oidc: { ...oidc, issuer: '' } },
          /spec\.oidc\.issuer is required when spec\.oidc\.enabled is true/,
        ],
        [
          'oidc without a clientID',
          { ...ok, oidc: { ...oidc, clientID: undefined } },
          /spec\.oidc\.clientID is required when spec\.oidc\.enabled is true/,
        ],
        [
          'oidc without a client secret',
          { ...ok, oidc: { ...oidc, clientSecretRef: { name: '' } } },
          /spec\.oidc\.clientSecretRef\.name is required when spec\.oidc\.enabled is true/,
        ],
        [
          'oidc issuer not a URL',
          { ...ok, oidc: { ...oidc, issuer: 'dex' } },
          /spec\.oidc\.issuer must be an absolute http/,
        ],
        [
          'ntfyURL not a URL',
          { ...ok, notify: { ntfyURL: 'ntfy.example.com' } },
          /spec\.notify\.ntfyURL must be an absolute http/,
        ],
        ['unknown severity', { ...ok, deadman: { severity: 'page' } }, /spec\.deadman\.severity/],
        [
          'Selector without a selector',
          { ...ok, allowedTeams: { namespaces: { from: 'Selector' } } },
          /spec\.allowedTeams\.namespaces\.selector is required when from is Selector/,
        ],
        [
          'a selector without Selector',
          { ...ok, allowedTeams: { namespaces: { from: 'All', selector: { matchLabels: { a: 'b' } } } } },
          /spec\.allowedTeams\.namespaces\.selector is only allowed when from is Selector/,
        ],
        [
          'a selector with from defaulted to None',
          { ...ok, allowedTeams: { namespaces: { selector: {} } } },
          /selector is only allowed when from is Selector/,
        ],
        [
          'unknown from',
          { ...ok, allowedTeams: { namespaces: { from: 'Everyone' } } },
          /spec\.allowedTeams\.namespaces\.from: Unsupported value/,
        ],
        [
          'In without values',
          {
            ...ok,
            allowedTeams: {
              namespaces: {
                from: 'Selector',
                selector: { matchExpressions: [{ key: 'team', operator: 'In' }] },
              },
            },
          },
          /In and NotIn need values/,
        ],
        [
          'bad label key',
          {
            ...ok,
            allowedTeams: { namespaces: { from: 'Selector', selector: { matchLabels: { 'a b': 'x' } } } },
          },
          /matchLabels keys must be label keys/,
        ],
        ['duration with a space', withDuration('sweeper.staleAfter', '5 m'), duration('sweeper.staleAfter')],
        ['empty duration', withDuration('sweeper.archiveAfter', ''), duration('sweeper.archiveAfter')],
        ['number without unit', withDuration('deadman.timeout', '15'), duration('deadman.timeout')],
        ['days', withDuration('notify.repeatEvery', '1d'), duration('notify.repeatEvery')],
        ['microseconds', withDuration('oidc.sessionMaxAge', '10us'), duration('oidc.sessionMaxAge')],
        ['negative', withDuration('sweeper.staleAfter', '-5m'), duration('sweeper.staleAfter')],
        ['fraction', withDuration('sweeper.staleAfter', '1.5h'), duration('sweeper.staleAfter')],
        ['unit first', withDuration('sweeper.staleAfter', 'h1'), duration('sweeper.staleAfter')],
        [
          'rotation under an hour',
          withDuration('credentials.rotateEvery', '59m59s'),
          /spec\.credentials\.rotateEvery must be at least 1h/,
        ],
        [
          'rotation not a duration',
          withDuration('credentials.rotateEvery', 'daily'),
          duration('credentials.rotateEvery'),
        ],
        [
          'a gateway listener (not implemented: refused rather than ignored)',
          { database: byo, networking: { gatewayListener: 'https' } },
          /spec\.networking\.gatewayListener is not implemented: leave it empty/,
        ],
      ];
      await refusesAll(TERDUT_SERVER, namespace, cases);
      // A name longer than a label value: it names the Service and is the pods' instance label.
      const long = await env.admin
        .create(object(TERDUT_SERVER, namespace, 's'.repeat(64), { database: byo }), { dryRun: true })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(isApiError(long, ApiErrorReason.Invalid), String(long));
      assert.match(long.message, /at most 63 characters/);
      await env.admin.create(object(TERDUT_SERVER, namespace, 's'.repeat(63), { database: byo }), {
        dryRun: true,
      });
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(TERDUT_SERVER, namespace, 'minimal', ok));
      const read = await env.admin.get<TerdutServer>(TERDUT_SERVER, 'minimal', namespace);
      assert.deepEqual(created.spec, read.spec);
      assert.deepEqual(read.spec, {
        image: { repository: 'git.ryuvia.com/niklas/terdut-server', tag: 'v0.9.3' },
        replicas: 1,
        networking: { servicePort: 8080 },
        database: { ...byo, passwordSecretRef: { name: 'terdut-db', key: 'password' } },
        passwordLogin: true,
        allowedTeams: { namespaces: { from: 'None' } },
      });

      const full: Spec = {
        image: { repository: 'registry.example/terdut', tag: 'v1.0.0' },
        replicas: 0,
        networking: { hostname: 'terdut.example.com', servicePort: 443, gatewayListener: '' },
        database: { postgresClusterRef: { name: 'terdut-postgres' } },
        sweeper: { staleAfter: '6h', archiveAfter: '168h' },
        deadman: { matchers: 'alertname=Watchdog', timeout: '15m', severity: 'warning' },
        notify: {
          ntfyURL: 'http://ntfy.ntfy.svc.cluster.local',
          fallbackTopic: 'oncall',
          repeatEvery: '1h30m',
          tokenSecretRef: { name: 'ntfy' },
        },
        oidc: {
          ...oidc,
          name: 'SSO',
          scopes: 'openid profile email',
          allowedGroups: ['oncall', 'sre'],
          adminGroup: 'sre',
          sessionMaxAge: '12h',
        },
        passwordLogin: false,
        allowedTeams: {
          namespaces: {
            from: 'Selector',
            selector: { matchLabels: { 'terdut.ryuvia.com/allowed': 'true' } },
          },
        },
        credentials: { adminKeySecretRef: { name: 'terdut-admin' }, rotateEvery: '168h' },
      };
      const fullRead = await env.admin.create(object(TERDUT_SERVER, namespace, 'full', full));
      const s = fullRead.spec as TerdutServer['spec'];
      assert.equal(s.notify?.tokenSecretRef?.key, 'token');
      assert.equal(s.oidc?.clientSecretRef?.key, 'client-secret');
      assert.equal(s.credentials?.adminKeySecretRef?.key, 'apiKey');
      assert.equal(s.replicas, 0);
      assert.equal(s.networking?.servicePort, 443);

      await acceptsAll(TERDUT_SERVER, namespace, [
        ...['5m', '1h30m', '300s', '168h', '1500ms', '0s', '1h0m0s'].map((d) =>
          withDuration('sweeper.staleAfter', d),
        ),
        ...['1h', '60m', '3600s', '2h'].map((d) => withDuration('credentials.rotateEvery', d)),
        { database: { dsn: 'postgresql://terdut@[::1]:5432/terdut' } },
        { database: { dsn: 'postgres://db.example:5432/terdut?user=terdut' } },
        { ...ok, oidc: { enabled: false } },
        { ...ok, oidc: { enabled: false, clientSecretRef: { name: '' } } },
        { ...ok, allowedTeams: { namespaces: { from: 'All' } } },
        { ...ok, allowedTeams: { namespaces: { from: 'Same' } } },
        {
          ...ok,
          allowedTeams: {
            namespaces: {
              from: 'Selector',
              selector: { matchExpressions: [{ key: 'example.com/tenant', operator: 'Exists' }] },
            },
          },
        },
      ]);
    });

    it('accepts the status the types describe', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TERDUT_SERVER, namespace, 'terdut', ok));
      const status: TerdutServerStatus = {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            observedGeneration: 1,
            lastTransitionTime: '2026-01-01T00:00:00Z',
            reason: 'Reconciled',
            message: '',
          },
        ],
        observedGeneration: 1,
        serviceName: 'terdut',
        operatorCredentialsSecretRef: { name: 'terdut-operator-credentials' },
        operatorCredentials: {
          userID: 1,
          keyID: 2,
          mintedAt: '2026-01-01T00:00:00.000Z',
          retiringKeyID: 1,
          rotateRequest: 'now',
        },
        mirroredCredentials: [
          { namespace: 'team-a', secretName: 'terdut.oncall-terdut-credentials' },
          { namespace: 'team-b', secretName: 'terdut.oncall-terdut-credentials' },
        ],
        databaseSecretVersion: '12345',
      };
      const written = await env.admin.patchStatus<TerdutServer>(TERDUT_SERVER, 'terdut', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
      const err = await env.admin
        .patchStatus(TERDUT_SERVER, 'terdut', namespace, {
          type: 'merge',
          body: {
            status: {
              mirroredCredentials: [
                { namespace: 'team-a', secretName: 'x' },
                { namespace: 'team-a', secretName: 'y' },
              ],
            },
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(isApiError(err, ApiErrorReason.Invalid), 'mirroredCredentials is a map keyed by namespace');
      assert.match(err.message, /Duplicate value/);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('TerdutTeam', () => {
    const ok = { serverRef: { name: 'terdut' }, displayName: 'Platform' };
    const immutable = /spec\.serverRef is immutable: delete and recreate the team/;

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      await refusesAll(TERDUT_TEAM, namespace, [
        ['no serverRef', { displayName: 'Platform' }, /spec\.serverRef: Required value/],
        ['serverRef without a name', { ...ok, serverRef: {} }, /spec\.serverRef\.name: Required value/],
        ['empty server name', { ...ok, serverRef: { name: '' } }, /spec\.serverRef\.name/],
        [
          'bad server name',
          { ...ok, serverRef: { name: 'Terdut Server' } },
          /spec\.serverRef\.name must be an object name/,
        ],
        [
          'bad namespace',
          { ...ok, serverRef: { name: 'terdut', namespace: 'platform.oncall' } },
          /spec\.serverRef\.namespace must be a namespace name/,
        ],
        ['no displayName', { serverRef: { name: 'terdut' } }, /spec\.displayName: Required value/],
        ['empty displayName', { ...ok, displayName: '' }, /spec\.displayName/],
        ['displayName of 129', { ...ok, displayName: 'x'.repeat(129) }, /spec\.displayName: Too long/],
        ['group not a string', { ...ok, oidc: { memberGroup: 7 } }, /spec\.oidc\.memberGroup/],
      ]);
    });

    it('accepts good specs', async (t) => {
      const namespace = await ns(t);
      await acceptsAll(TERDUT_TEAM, namespace, [
        ok,
        { ...ok, displayName: 'x'.repeat(128) },
        {
          serverRef: { name: 'terdut', namespace: 'platform-oncall' },
          displayName: 'Platform',
          oidc: { memberGroup: 'terdut-platform-members', ownerGroup: 'terdut-platform-owners' },
        },
      ]);
    });

    it('refuses a change of serverRef, and takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TERDUT_TEAM, namespace, 'same-ns', ok));
      await env.admin.create(
        object(TERDUT_TEAM, namespace, 'cross-ns', {
          ...ok,
          serverRef: { name: 'terdut', namespace: 'platform' },
        }),
      );
      await Promise.all([
        refusedUpdate(
          TERDUT_TEAM,
          namespace,
          'same-ns',
          { serverRef: { name: 'other' } },
          immutable,
          'rename',
        ),
        refusedUpdate(
          TERDUT_TEAM,
          namespace,
          'same-ns',
          { serverRef: { namespace: namespace } },
          immutable,
          'adding the (same) namespace',
        ),
        refusedUpdate(
          TERDUT_TEAM,
          namespace,
          'cross-ns',
          { serverRef: { namespace: 'elsewhere' } },
          immutable,
          'another namespace',
        ),
        refusedUpdate(
          TERDUT_TEAM,
          namespace,
          'cross-ns',
          { serverRef: { namespace: null } },
          immutable,
          'dropping the namespace',
        ),
      ]);
      await acceptedUpdate(TERDUT_TEAM, namespace, 'same-ns', {
        displayName: 'Platform SRE',
        oidc: { memberGroup: 'sre' },
      });
      await acceptedUpdate(TERDUT_TEAM, namespace, 'cross-ns', {
        serverRef: { name: 'terdut', namespace: 'platform' },
      });
      const status: TerdutTeamStatus = {
        observedGeneration: 2,
        teamID: 42,
        applied: { name: 'Platform SRE', memberGroup: 'sre', ownerGroup: '' },
        server: `${namespace}/terdut`,
      };
      const written = await env.admin.patchStatus<TerdutTeam>(TERDUT_TEAM, 'same-ns', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
      assert.equal(written.spec.displayName, 'Platform SRE');
    });
  });

  // -------------------------------------------------------------------------------------
  describe('TerdutEscalationRule', () => {
    const ok = {
      teamRef: { name: 'platform' },
      levels: [{ timeout: '5m', targets: [{ kind: 'oncall' }] }],
    };
    const level = (targets: readonly Spec[], timeout = '5m') => ({ timeout, targets });

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      await refusesAll(TERDUT_ESCALATION_RULE, namespace, [
        ['no teamRef', { levels: ok.levels }, /spec\.teamRef: Required value/],
        ['teamRef without a name', { ...ok, teamRef: {} }, /spec\.teamRef\.name: Required value/],
        [
          'bad team name',
          { ...ok, teamRef: { name: 'Platform' } },
          /spec\.teamRef\.name must be an object name/,
        ],
        ['no levels', { teamRef: ok.teamRef }, /spec\.levels: Required value/],
        ['no level', { ...ok, levels: [] }, /spec\.levels/],
        [
          '21 levels',
          { ...ok, levels: Array.from({ length: 21 }, () => level([{ kind: 'oncall' }])) },
          /spec\.levels: Too many/,
        ],
        [
          'level without targets',
          { ...ok, levels: [{ timeout: '5m' }] },
          /spec\.levels\[0\]\.targets: Required value/,
        ],
        [
          'level without timeout',
          { ...ok, levels: [{ targets: [{ kind: 'oncall' }] }] },
          /spec\.levels\[0\]\.timeout/,
        ],
        ['no target', { ...ok, levels: [level([])] }, /spec\.levels\[0\]\.targets/],
        [
          '21 targets',
          { ...ok, levels: [level(Array.from({ length: 21 }, () => ({ kind: 'oncall' })))] },
          /spec\.levels\[0\]\.targets: Too many/,
        ],
        [
          'unknown kind',
          { ...ok, levels: [level([{ kind: 'group' }])] },
          /spec\.levels\[0\]\.targets\[0\]\.kind/,
        ],
        [
          'user without username',
          { ...ok, levels: [level([{ kind: 'oncall' }]), level([{ kind: 'oncall' }, { kind: 'user' }])] },
          /spec\.levels\[1\]\.targets\[1\]\.username: Required value: .*username is required when kind is user/,
        ],
        [
          'oncall with username',
          { ...ok, levels: [level([{ kind: 'oncall', username: 'alice' }])] },
          /spec\.levels\[0\]\.targets\[0\]\.username: Forbidden: .*username is only for kind user/,
        ],
        ['empty username', { ...ok, levels: [level([{ kind: 'user', username: '' }])] }, /username/],
        [
          'timeout without unit',
          { ...ok, levels: [level([{ kind: 'oncall' }], '5')] },
          /spec\.levels\[0\]\.timeout: .*must be a Go duration/,
        ],
        ['negative repeatCount', { ...ok, repeatCount: -1 }, /spec\.repeatCount/],
        ['repeatCount of 101', { ...ok, repeatCount: 101 }, /spec\.repeatCount/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(TERDUT_ESCALATION_RULE, namespace, 'minimal', ok));
      assert.deepEqual(created.spec, { ...ok, repeatCount: 0 });
      await acceptsAll(TERDUT_ESCALATION_RULE, namespace, [
        {
          teamRef: { name: 'platform-team' },
          repeatCount: 2,
          fallbackTopic: 'platform-oncall',
          levels: [
            level([{ kind: 'oncall' }, { kind: 'user', username: 'alice' }]),
            level([{ kind: 'oncall' }], '15m'),
          ],
        },
        { ...ok, repeatCount: 100 },
        {
          ...ok,
          levels: Array.from({ length: 20 }, () =>
            level(Array.from({ length: 20 }, (_, i) => ({ kind: 'user', username: `user-${i}` }))),
          ),
        },
      ]);
    });

    it('refuses a change of teamRef, and takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TERDUT_ESCALATION_RULE, namespace, 'rule', ok));
      await refusedUpdate(
        TERDUT_ESCALATION_RULE,
        namespace,
        'rule',
        { teamRef: { name: 'other' } },
        /spec\.teamRef is immutable: delete and recreate the TerdutEscalationRule/,
        'teamRef',
      );
      await acceptedUpdate(TERDUT_ESCALATION_RULE, namespace, 'rule', {
        repeatCount: 3,
        fallbackTopic: 'x',
        levels: [level([{ kind: 'user', username: 'bob' }], '1h')],
      });
      const status: TerdutEscalationRuleStatus = { observedGeneration: 2, teamID: 42 };
      const written = await env.admin.patchStatus<TerdutEscalationRule>(
        TERDUT_ESCALATION_RULE,
        'rule',
        namespace,
        {
          type: 'merge',
          body: { status },
        },
      );
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('TerdutDeadmanSwitch', () => {
    const ok = {
      teamRef: { name: 'platform' },
      name: 'prod-watchdog',
      matcher: 'alertname=Watchdog,cluster=prod',
      timeout: '15m',
    };

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      const { name: _n, ...noName } = ok;
      const { matcher: _m, ...noMatcher } = ok;
      const { timeout: _t, ...noTimeout } = ok;
      const { teamRef: _r, ...noTeam } = ok;
      await refusesAll(TERDUT_DEADMAN_SWITCH, namespace, [
        ['no teamRef', noTeam, /spec\.teamRef: Required value/],
        ['no name', noName, /spec\.name: Required value/],
        ['empty name', { ...ok, name: '' }, /spec\.name/],
        ['name of 129', { ...ok, name: 'x'.repeat(129) }, /spec\.name: Too long/],
        ['no matcher', noMatcher, /spec\.matcher: Required value/],
        ['empty matcher', { ...ok, matcher: '' }, /spec\.matcher/],
        ['no timeout', noTimeout, /spec\.timeout: Required value/],
        ['timeout in words', { ...ok, timeout: '15 minutes' }, /spec\.timeout must be a Go duration/],
        ['unknown severity', { ...ok, severity: 'page' }, /spec\.severity: Unsupported value/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(TERDUT_DEADMAN_SWITCH, namespace, 'minimal', ok));
      assert.deepEqual(created.spec, { ...ok, severity: 'critical' });
      await acceptsAll(TERDUT_DEADMAN_SWITCH, namespace, [
        { ...ok, severity: 'warning' },
        { ...ok, severity: 'info', timeout: '1h30m', name: 'x'.repeat(128) },
      ]);
    });

    it('refuses a change of name or teamRef, and takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TERDUT_DEADMAN_SWITCH, namespace, 'switch', ok));
      await Promise.all([
        refusedUpdate(
          TERDUT_DEADMAN_SWITCH,
          namespace,
          'switch',
          { name: 'staging-watchdog' },
          /spec\.name is immutable: it is the switch's identity on the server/,
          'name',
        ),
        refusedUpdate(
          TERDUT_DEADMAN_SWITCH,
          namespace,
          'switch',
          { teamRef: { name: 'other' } },
          /spec\.teamRef is immutable: delete and recreate the TerdutDeadmanSwitch/,
          'teamRef',
        ),
      ]);
      await acceptedUpdate(TERDUT_DEADMAN_SWITCH, namespace, 'switch', {
        matcher: 'alertname=Watchdog',
        timeout: '30m',
        severity: 'warning',
      });
      const status: TerdutDeadmanSwitchStatus = {
        observedGeneration: 2,
        switchID: 7,
        teamID: 42,
        applied: { matcher: 'alertname=Watchdog', timeoutSeconds: 1800, severity: 'warning' },
      };
      const written = await env.admin.patchStatus<TerdutDeadmanSwitch>(
        TERDUT_DEADMAN_SWITCH,
        'switch',
        namespace,
        {
          type: 'merge',
          body: { status },
        },
      );
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('TerdutAlertSource', () => {
    const ok = { teamRef: { name: 'platform' }, name: 'prod-alertmanager' };

    it('says loudly that changing kind replaces the integration', () => {
      const crd = terdutCrds().find((c) => c.metadata.name === 'terdutalertsources.terdut.ryuvia.com');
      const text = JSON.stringify(crd);
      assert.match(
        text,
        /CHANGING kind DELETES THE INTEGRATION AND CREATES A NEW ONE, WITH A NEW WEBHOOK URL AND KEY/,
      );
    });

    it('refuses each bad spec with a message that names the field and the fix', async (t) => {
      const namespace = await ns(t);
      await refusesAll(TERDUT_ALERT_SOURCE, namespace, [
        ['no teamRef', { name: ok.name }, /spec\.teamRef: Required value/],
        ['teamRef without a name', { ...ok, teamRef: {} }, /spec\.teamRef\.name: Required value/],
        ['no name', { teamRef: ok.teamRef }, /spec\.name: Required value/],
        ['empty name', { ...ok, name: '' }, /spec\.name/],
        ['name of 129', { ...ok, name: 'x'.repeat(129) }, /spec\.name: Too long/],
        ['unknown kind', { ...ok, kind: 'slack' }, /spec\.kind: Unsupported value/],
      ]);
    });

    it('accepts good specs and fills the defaults', async (t) => {
      const namespace = await ns(t);
      const created = await env.admin.create(object(TERDUT_ALERT_SOURCE, namespace, 'minimal', ok));
      assert.deepEqual(created.spec, { ...ok, kind: 'alertmanager' });
      await acceptsAll(TERDUT_ALERT_SOURCE, namespace, [{ ...ok, kind: 'webhook', name: 'x'.repeat(128) }]);
    });

    it('refuses a change of teamRef, and takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TERDUT_ALERT_SOURCE, namespace, 'source', ok));
      await refusedUpdate(
        TERDUT_ALERT_SOURCE,
        namespace,
        'source',
        { teamRef: { name: 'other' } },
        /spec\.teamRef is immutable: delete and recreate the TerdutAlertSource/,
        'teamRef',
      );
      await acceptedUpdate(TERDUT_ALERT_SOURCE, namespace, 'source', { kind: 'webhook', name: 'renamed' });
      const status: TerdutAlertSourceStatus = {
        observedGeneration: 2,
        integrationID: 3,
        teamID: 42,
        applied: { kind: 'webhook', name: 'renamed' },
        webhookURLSecretRef: { name: 'source-terdut-webhook' },
      };
      const written = await env.admin.patchStatus<TerdutAlertSource>(
        TERDUT_ALERT_SOURCE,
        'source',
        namespace,
        {
          type: 'merge',
          body: { status },
        },
      );
      assert.deepEqual(written.status, status);
    });
  });
});
