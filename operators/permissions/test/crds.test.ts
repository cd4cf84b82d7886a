/**
 * The five permissions.shturval.tech CRDs: the committed YAML is exactly what the
 * TypeScript definitions generate, they install on the real apiserver, and there each
 * CEL rule refuses a bad object with its message while good objects, the updates the
 * rules allow and the statuses the types describe are admitted.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it, type TestContext } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import { CRD_FILES, generated, permissionsCrds } from '../src/api/gen-crds.ts';
import { GROUP_ROLE, type GroupRole } from '../src/api/group-role.ts';
import { PERMISSION, type Permission, type PermissionStatus } from '../src/api/permission.ts';
import type { RoleStatus } from '../src/api/role-status.ts';
import { SCOPE, type Scope, type ScopeStatus } from '../src/api/scope.ts';
import { TENANT, type Tenant, type TenantStatus } from '../src/api/tenant.ts';
import { USER_ROLE, type UserRole } from '../src/api/user-role.ts';

type Gvk = { readonly apiVersion: string; readonly kind: string };
type Spec = Record<string, unknown>;
/** What was tried, the spec, and the message the apiserver must answer with. */
type BadCase = readonly [string, Spec, RegExp];

describe('the committed CRDs', () => {
  it('are what gen-crds generates from src/api (run `npm run gen-crds -w @operators/permissions` after a change)', () => {
    for (const { path, text } of generated()) {
      assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale`);
    }
  });

  it('are the five namespaced kinds of permissions.shturval.tech v1beta1, in category shturval, with a status subresource', () => {
    const expected = [
      { kind: 'Permission', plural: 'permissions', shortNames: ['perm'], first: 'Ready' },
      { kind: 'Scope', plural: 'scopes', shortNames: ['scope'], first: 'Ready' },
      { kind: 'UserRole', plural: 'userroles', shortNames: ['ur'], first: 'Ready' },
      { kind: 'GroupRole', plural: 'grouproles', shortNames: ['gr'], first: 'Ready' },
      { kind: 'Tenant', plural: 'tenants', shortNames: ['tenant'], first: 'Created' },
    ];
    const crds = permissionsCrds();
    assert.equal(crds.length, expected.length);
    for (const [i, crd] of crds.entries()) {
      const want = expected[i];
      assert.ok(want);
      const spec = crd.spec as {
        scope: string;
        group: string;
        names: { kind: string; plural: string; shortNames?: string[]; categories: string[] };
        versions: {
          name: string;
          subresources?: { status?: object };
          additionalPrinterColumns: { name: string }[];
        }[];
      };
      assert.equal(crd.metadata.name, `${want.plural}.permissions.shturval.tech`);
      assert.equal(CRD_FILES[i]?.file, `crds/${want.plural}.permissions.shturval.tech.yaml`);
      assert.equal(spec.names.kind, want.kind);
      assert.equal(spec.scope, 'Namespaced');
      assert.equal(spec.group, 'permissions.shturval.tech');
      assert.deepEqual(spec.names.shortNames, want.shortNames);
      assert.deepEqual(spec.names.categories, ['shturval']);
      assert.deepEqual(
        spec.versions.map((v) => v.name),
        ['v1beta1'],
      );
      assert.deepEqual(spec.versions[0]?.subresources, { status: {} });
      const columns = spec.versions[0]?.additionalPrinterColumns.map((c) => c.name) ?? [];
      assert.equal(columns[0], want.first);
      assert.equal(columns.at(-1), 'Age');
    }
  });
});

// ---------------------------------------------------------------------------------------

const object = (gvk: Gvk, namespace: string, name: string, spec: Spec): KubeObject => ({
  ...gvk,
  metadata: { name, namespace },
  spec,
});

function assertInvalid(err: unknown, message: RegExp, what: string): void {
  assert.ok(isApiError(err, ApiErrorReason.Invalid), `${what}: expected Invalid, got ${String(err)}`);
  assert.match(err.message, message, what);
}

/** A rule every Permission may hold. */
const READ_PODS = { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] };

describe('admission of the permissions kinds by the real apiserver', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds(permissionsCrds());
  });

  const ns = (t: TestContext) => env.namespace(t, 'perm-crds');

  const errorOf = (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );

  /** Every case is refused as Invalid with its message; all at once, as dry runs. */
  async function refusesAll(gvk: Gvk, namespace: string, cases: readonly BadCase[]): Promise<void> {
    await Promise.all(
      cases.map(async ([what, spec, message], i) => {
        const err = await errorOf(
          env.admin.create(object(gvk, namespace, `bad-${i}`, spec), { dryRun: true }),
        );
        assertInvalid(err, message, what);
      }),
    );
  }

  /** Every spec is admitted (dry runs, all at once). */
  async function admitsAll(gvk: Gvk, namespace: string, specs: readonly Spec[]): Promise<void> {
    await Promise.all(
      specs.map((spec, i) =>
        env.admin.create(object(gvk, namespace, `good-${i}`, spec), { dryRun: true }).catch((e: unknown) => {
          throw new Error(`${JSON.stringify(spec)} was refused: ${String(e)}`);
        }),
      ),
    );
  }

  /** A merge patch of `spec`; its error, or undefined when it was admitted. */
  const patchSpec = (gvk: Gvk, namespace: string, name: string, spec: Spec): Promise<unknown> =>
    errorOf(env.admin.patch(gvk, name, namespace, { type: 'merge', body: { spec } }));

  async function refusedUpdate(
    gvk: Gvk,
    namespace: string,
    name: string,
    spec: Spec,
    message: RegExp,
    what: string,
  ): Promise<void> {
    assertInvalid(await patchSpec(gvk, namespace, name, spec), message, what);
  }

  async function admittedUpdate(gvk: Gvk, namespace: string, name: string, spec: Spec): Promise<void> {
    const err = await patchSpec(gvk, namespace, name, spec);
    assert.equal(err, undefined, `update ${JSON.stringify(spec)} was refused: ${String(err)}`);
  }

  // -------------------------------------------------------------------------------------
  describe('Permission', () => {
    const platform = { level: 'platform', platform_rules: [READ_PODS] };
    const cluster = { level: 'cluster', granted_cluster_rules: [READ_PODS] };
    const withRule = (rule: Spec): Spec => ({ level: 'platform', platform_rules: [rule] });
    const eitherOr =
      /spec\.platform_rules\[0\]: Invalid value: .*spec\.platform_rules\[\] must name either resources or nonResourceURLs: one of them, not both/;

    it('refuses a level without its rules, a bad aggregateTo, and each malformed policy rule, with the message of the rule', async (t) => {
      const namespace = await ns(t);
      const platformRules =
        /spec\.platform_rules: Required value: spec\.platform_rules must hold at least one rule at level platform/;
      const grantedRules =
        /spec\.granted_cluster_rules: Required value: spec\.granted_cluster_rules must hold at least one rule at levels cluster and namespace/;
      await refusesAll(PERMISSION, namespace, [
        ['platform without platform_rules', { level: 'platform' }, platformRules],
        ['platform with no platform rule', { level: 'platform', platform_rules: [] }, platformRules],
        [
          'platform with granted_cluster_rules only',
          { level: 'platform', granted_cluster_rules: [READ_PODS] },
          platformRules,
        ],
        [
          'cluster without granted_cluster_rules',
          { level: 'cluster', platform_rules: [READ_PODS] },
          grantedRules,
        ],
        ['namespace with no granted rule', { level: 'namespace', granted_cluster_rules: [] }, grantedRules],
        ['an unknown level', { ...cluster, level: 'global' }, /spec\.level: Unsupported value: "global"/],
        ['no level', { granted_cluster_rules: [READ_PODS] }, /spec\.level: Required value/],
        [
          'aggregateTo a name with capitals',
          { ...platform, aggregateTo: ['Viewer'] },
          /spec\.aggregateTo must be an object name: lowercase letters, digits/,
        ],
        [
          'aggregateTo a name twice',
          { ...platform, aggregateTo: ['viewer', 'viewer'] },
          /spec\.aggregateTo\[1\]: Duplicate value: "viewer"/,
        ],
        [
          'a rule with no verb',
          withRule({ ...READ_PODS, verbs: [] }),
          /spec\.platform_rules\[\]\.verbs must name at least one verb/,
        ],
        [
          'a rule without verbs',
          withRule({ apiGroups: [''], resources: ['pods'] }),
          /spec\.platform_rules\[0\]\.verbs: Required value/,
        ],
        [
          'a rule with resources and nonResourceURLs',
          withRule({ ...READ_PODS, nonResourceURLs: ['/healthz'] }),
          eitherOr,
        ],
        [
          'a rule with neither resources nor nonResourceURLs',
          withRule({ apiGroups: [''], verbs: ['get'] }),
          eitherOr,
        ],
        [
          'a granted rule with neither',
          { level: 'cluster', granted_cluster_rules: [{ verbs: ['get'] }] },
          /spec\.granted_cluster_rules\[\] must name either resources or nonResourceURLs/,
        ],
        [
          'a resource rule without apiGroups',
          withRule({ resources: ['pods'], verbs: ['get'] }),
          /spec\.platform_rules\[\] names resources, so it must name their apiGroups: an empty string is the core group/,
        ],
        [
          'a non-resource rule with apiGroups',
          withRule({ apiGroups: [''], nonResourceURLs: ['/healthz'], verbs: ['get'] }),
          /spec\.platform_rules\[\] names nonResourceURLs, so it takes no apiGroups and no resourceNames/,
        ],
        [
          'a non-resource rule with resourceNames',
          withRule({ nonResourceURLs: ['/healthz'], resourceNames: ['x'], verbs: ['get'] }),
          /spec\.platform_rules\[\] names nonResourceURLs, so it takes no apiGroups and no resourceNames/,
        ],
        [
          'an empty verb',
          withRule({ ...READ_PODS, verbs: [''] }),
          /spec\.platform_rules\[0\]\.verbs\[0\]: Invalid value: "": .*at least 1 chars long/,
        ],
        [
          '129 rules',
          { level: 'platform', platform_rules: Array.from({ length: 129 }, () => READ_PODS) },
          /spec\.platform_rules: Too many: 129: must have at most 128 items/,
        ],
        [
          'an Argo CD object with a comma',
          {
            ...platform,
            plugins: {
              argocd: { policies: [{ resource: 'applications', action: 'get', object: 'a/*, allow' }] },
            },
          },
          /spec\.plugins\.argocd\.policies\[\]\.object must be one policy\.csv column: letters, digits and - _ \. \* \? \/ : @ only/,
        ],
        [
          'an Argo CD action with a line break',
          {
            ...platform,
            plugins: { argocd: { policies: [{ resource: 'applications', action: 'get\np', object: '*' }] } },
          },
          /spec\.plugins\.argocd\.policies\[\]\.action must be one policy\.csv column/,
        ],
        [
          'an AppProject role policy with a space',
          {
            ...platform,
            plugins: {
              argocd: {
                projects: [
                  {
                    project: 'team-a',
                    policies: [{ resource: 'applications', action: 'get', object: 'a b' }],
                  },
                ],
              },
            },
          },
          /spec\.plugins\.argocd\.projects\[\]\.policies\[\]\.object must be one policy\.csv column/,
        ],
        [
          'an AppProject named with capitals',
          { ...platform, plugins: { argocd: { projects: [{ project: 'Team', policies: [] }] } } },
          /spec\.plugins\.argocd\.projects\[\]\.project must be an object name/,
        ],
        [
          'a Kubeflow role that does not exist',
          { ...cluster, plugins: { kubeflow: { role: 'owner' } } },
          /spec\.plugins\.kubeflow\.role: Unsupported value: "owner"/,
        ],
        [
          'a cluster selector In without values',
          { ...cluster, clusterSelector: { matchExpressions: [{ key: 'env', operator: 'In' }] } },
          /spec\.clusterSelector\.matchExpressions: In and NotIn need values/,
        ],
      ]);
    });

    it('refuses aggregateTo naming the Permission itself', async (t) => {
      const namespace = await ns(t);
      const err = await errorOf(
        env.admin.create(
          object(PERMISSION, namespace, 'viewer', { ...platform, aggregateTo: ['admin', 'viewer'] }),
          {
            dryRun: true,
          },
        ),
      );
      assertInvalid(
        err,
        /spec\.aggregateTo: Invalid value: .*spec\.aggregateTo must not name the Permission itself: its own platform: ClusterRole holds its platform_rules already/,
        'aggregateTo itself',
      );
      await admitsAll(PERMISSION, namespace, [{ ...platform, aggregateTo: ['viewer', 'admin'] }]);
    });

    it('admits each level with its rules, the core group, non-resource URLs, selectors and every plugin', async (t) => {
      const namespace = await ns(t);
      await admitsAll(PERMISSION, namespace, [
        platform,
        cluster,
        { level: 'namespace', granted_cluster_rules: [READ_PODS] },
        {
          level: 'platform',
          platform_rules: [
            { nonResourceURLs: ['/healthz', '/api/*'], verbs: ['get'] },
            { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
          ],
          aggregateTo: ['admin', 'platform.viewer'],
          plugins: {
            rbac: {},
            argocd: {
              policies: [
                { resource: 'applications', action: 'action/apps/Deployment/restart', object: 'team-a/*' },
                { resource: 'clusters', action: 'get', object: 'https://kubernetes.default.svc' },
              ],
              projects: [
                { project: 'team-a', policies: [{ resource: 'applications', action: 'sync', object: '*' }] },
              ],
            },
          },
        },
        {
          level: 'cluster',
          platform_rules: [READ_PODS],
          granted_cluster_rules: [
            {
              apiGroups: ['apps'],
              resources: ['deployments', 'deployments/scale'],
              resourceNames: ['web'],
              verbs: ['get'],
            },
          ],
          clusterSelector: {
            matchLabels: { env: 'prod' },
            matchExpressions: [{ key: 'zone', operator: 'Exists' }],
          },
          plugins: { kubeflow: { role: 'view' } },
        },
        { level: 'platform', platform_rules: Array.from({ length: 128 }, () => READ_PODS) },
      ]);
    });

    it('takes its status as the types describe it', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(PERMISSION, namespace, 'viewer', cluster));
      const status: PermissionStatus = {
        ready: false,
        applied_to_clusters: ['platform', 'capi/prod-1'],
        message: 'capi/prod-2: connection refused',
        observedGeneration: 1,
      };
      const written = await env.admin.patchStatus<Permission>(PERMISSION, 'viewer', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('Scope', () => {
    const immutable = /spec\.level: Invalid value: .*spec\.level is immutable: delete and recreate the Scope/;

    it('refuses namespaces outside level namespace, none at level namespace, and clusters at level platform', async (t) => {
      const namespace = await ns(t);
      const required =
        /spec\.namespaces: Required value: spec\.namespaces must name at least one namespace at level namespace/;
      const onlyNamespace =
        /spec\.namespaces: Forbidden: spec\.namespaces is only for level namespace: remove it, or set level namespace/;
      await refusesAll(SCOPE, namespace, [
        ['level namespace without namespaces', { level: 'namespace' }, required],
        ['level namespace with no namespace', { level: 'namespace', namespaces: [] }, required],
        ['level cluster with namespaces', { level: 'cluster', namespaces: ['team-a'] }, onlyNamespace],
        ['level platform with namespaces', { level: 'platform', namespaces: ['team-a'] }, onlyNamespace],
        [
          'level platform with clusters',
          { level: 'platform', clusters: { ids: ['capi/prod-1'] } },
          /spec\.clusters: Forbidden: spec\.clusters is not for level platform: a platform Scope is the management cluster/,
        ],
        [
          'level platform with empty clusters',
          { level: 'platform', clusters: {} },
          /spec\.clusters is not for level platform/,
        ],
        [
          'a namespace with capitals',
          { level: 'namespace', namespaces: ['Team-A'] },
          /spec\.namespaces must be a namespace name: lowercase letters, digits and '-'/,
        ],
        [
          'a 64-character namespace',
          { level: 'namespace', namespaces: ['a'.repeat(64)] },
          /spec\.namespaces\[0\]: Too long/,
        ],
        [
          'a namespace twice',
          { level: 'namespace', namespaces: ['team-a', 'team-a'] },
          /spec\.namespaces\[1\]: Duplicate value: "team-a"/,
        ],
        [
          'a cluster id without namespace',
          { level: 'cluster', clusters: { ids: ['prod-1'] } },
          /spec\.clusters\.ids must be cluster ids: the namespace and name of a Cluster API Cluster, as namespace\/name/,
        ],
        [
          'a cluster id with two slashes',
          { level: 'cluster', clusters: { ids: ['capi/prod/1'] } },
          /spec\.clusters\.ids must be cluster ids/,
        ],
        [
          'a bad annotation key',
          { level: 'cluster', clusters: { annotations: { 'a b': 'x' } } },
          /spec\.clusters\.annotations keys must be annotation keys, such as zone or example\.com\/zone/,
        ],
        ['an unknown level', { level: 'global' }, /spec\.level: Unsupported value: "global"/],
        [
          'a tenantRef with a bad name',
          { level: 'cluster', tenantRef: { name: 'Team' } },
          /spec\.tenantRef\.name must be an object name/,
        ],
      ]);
    });

    it('admits each level with its target', async (t) => {
      const namespace = await ns(t);
      await admitsAll(SCOPE, namespace, [
        { level: 'platform' },
        { level: 'cluster' },
        {
          level: 'cluster',
          clusters: { ids: ['capi/prod-1', 'capi/prod.eu'], annotations: { 'shturval.tech/zone': 'msk' } },
        },
        {
          level: 'namespace',
          namespaces: ['team-a', 'a'.repeat(63)],
          clusters: { annotations: { zone: 'msk' } },
          tenantRef: { name: 'team-a' },
          parentScope: { name: 'tenant-org' },
        },
      ]);
    });

    it('refuses a change of level, takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(SCOPE, namespace, 'prod', { level: 'cluster' }));
      await refusedUpdate(
        SCOPE,
        namespace,
        'prod',
        { level: 'namespace', namespaces: ['team-a'] },
        immutable,
        'cluster to namespace',
      );
      await refusedUpdate(SCOPE, namespace, 'prod', { level: 'platform' }, immutable, 'cluster to platform');
      await admittedUpdate(SCOPE, namespace, 'prod', { clusters: { ids: ['capi/prod-1'] } });
      const status: ScopeStatus = {
        ready: false,
        clusters: ['capi/prod-1'],
        permissions: ['viewer'],
        paths: ['/org/capi/prod-1/team-a'],
        objectsStatus: [
          { cluster: 'capi/prod-1', namespace: 'team-a', exists: false, message: 'rechecked every 5m' },
        ],
        message: 'team-a is missing in capi/prod-1',
        observedGeneration: 2,
      };
      const written = await env.admin.patchStatus<Scope>(SCOPE, 'prod', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });

  // -------------------------------------------------------------------------------------
  /** A RoleStatus using every level of the nested map and every PluginApplyStatus. */
  const ROLE_STATUS: RoleStatus = {
    ready: false,
    message: 'viewer: kubeflow failed in capi/prod-1',
    permissions: {
      viewer: {
        'capi/prod-1': {
          rbac: {
            status: 'Applied',
            objects: [
              {
                apiVersion: 'rbac.authorization.k8s.io/v1',
                kind: 'RoleBinding',
                namespace: 'team-a',
                name: 'shturval:team.alice.viewer',
              },
            ],
          },
          kubeflow: { status: 'Failed', message: 'Istio CRD not installed' },
        },
        'capi/prod-2': { rbac: { status: 'Skipped', message: 'cluster paused' } },
        platform: { argocd: { status: 'Pending' }, tenant: { status: 'Undefined' } },
      },
      editor: { 'capi/prod-1': { rbac: { status: 'Deleting' } } },
    },
    observedGeneration: 3,
  };

  describe('UserRole', () => {
    const ok = { user: 'alice@example.com', scope: 'team-a', permissions: ['viewer'] };

    it('refuses an empty user, no permission, a permission twice and bad names', async (t) => {
      const namespace = await ns(t);
      await refusesAll(USER_ROLE, namespace, [
        ['an empty user', { ...ok, user: '' }, /spec\.user: Invalid value: "": spec\.user must not be empty/],
        ['no user', { scope: 'team-a', permissions: ['viewer'] }, /spec\.user: Required value/],
        [
          'no permission',
          { ...ok, permissions: [] },
          /spec\.permissions: Invalid value: .*spec\.permissions must name at least one Permission/,
        ],
        ['no permissions', { user: 'alice', scope: 'team-a' }, /spec\.permissions: Required value/],
        [
          'a permission twice',
          { ...ok, permissions: ['viewer', 'editor', 'viewer'] },
          /spec\.permissions\[2\]: Duplicate value: "viewer"/,
        ],
        [
          'a permission name with capitals',
          { ...ok, permissions: ['Viewer'] },
          /spec\.permissions must be an object name/,
        ],
        ['no scope', { user: 'alice', permissions: ['viewer'] }, /spec\.scope: Required value/],
        ['a scope name with a space', { ...ok, scope: 'team a' }, /spec\.scope must be an object name/],
      ]);
    });

    it('admits good specs', async (t) => {
      const namespace = await ns(t);
      await admitsAll(USER_ROLE, namespace, [
        ok,
        {
          user: 'system:serviceaccount:ci:deployer',
          scope: 'tenant-org.eu',
          permissions: ['viewer', 'editor'],
        },
      ]);
    });

    it('refuses a change of scope, takes a change of permissions and a RoleStatus with the nested map', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(USER_ROLE, namespace, 'alice', ok));
      await refusedUpdate(
        USER_ROLE,
        namespace,
        'alice',
        { scope: 'team-b' },
        /spec\.scope: Invalid value: .*spec\.scope is immutable: delete and recreate the UserRole/,
        'another scope',
      );
      await admittedUpdate(USER_ROLE, namespace, 'alice', {
        permissions: ['viewer', 'editor'],
        user: 'alice',
      });
      const written = await env.admin.patchStatus<UserRole>(USER_ROLE, 'alice', namespace, {
        type: 'merge',
        body: { status: ROLE_STATUS },
      });
      assert.deepEqual(written.status, ROLE_STATUS);
      const err = await errorOf(
        env.admin.patchStatus(USER_ROLE, 'alice', namespace, {
          type: 'merge',
          body: { status: { permissions: { viewer: { platform: { rbac: { status: 'Done' } } } } } },
        }),
      );
      assertInvalid(
        err,
        /status\.permissions\.viewer\.platform\.rbac\.status: Unsupported value: "Done"/,
        'an unknown PluginApplyStatus',
      );
    });
  });

  // -------------------------------------------------------------------------------------
  describe('GroupRole', () => {
    const ok = { group: 'oidc:team-a', scope: 'team-a', permissions: ['viewer'] };

    it('refuses an empty group or member, a member twice, and no permission', async (t) => {
      const namespace = await ns(t);
      await refusesAll(GROUP_ROLE, namespace, [
        [
          'an empty group',
          { ...ok, group: '' },
          /spec\.group: Invalid value: "": spec\.group must not be empty/,
        ],
        ['no group', { scope: 'team-a', permissions: ['viewer'] }, /spec\.group: Required value/],
        ['an empty member', { ...ok, members: ['alice', ''] }, /spec\.members entries must not be empty/],
        [
          'a member twice',
          { ...ok, members: ['alice', 'alice'] },
          /spec\.members\[1\]: Duplicate value: "alice"/,
        ],
        ['no permission', { ...ok, permissions: [] }, /spec\.permissions must name at least one Permission/],
        [
          'a permission twice',
          { ...ok, permissions: ['a', 'a'] },
          /spec\.permissions\[1\]: Duplicate value: "a"/,
        ],
      ]);
    });

    it('admits good specs, with and without members', async (t) => {
      const namespace = await ns(t);
      await admitsAll(GROUP_ROLE, namespace, [
        ok,
        { ...ok, members: ['alice@example.com', 'bob@example.com'] },
        { ...ok, members: [] },
      ]);
    });

    it('refuses a change of scope, takes a change of members and a RoleStatus', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(GROUP_ROLE, namespace, 'team', ok));
      await refusedUpdate(
        GROUP_ROLE,
        namespace,
        'team',
        { scope: 'team-b' },
        /spec\.scope: Invalid value: .*spec\.scope is immutable: delete and recreate the GroupRole/,
        'another scope',
      );
      await admittedUpdate(GROUP_ROLE, namespace, 'team', {
        members: ['alice'],
        permissions: ['viewer', 'editor'],
      });
      const written = await env.admin.patchStatus<GroupRole>(GROUP_ROLE, 'team', namespace, {
        type: 'merge',
        body: { status: ROLE_STATUS },
      });
      assert.deepEqual(written.status, ROLE_STATUS);
    });
  });

  // -------------------------------------------------------------------------------------
  describe('Tenant', () => {
    const immutable =
      /spec\.parent: Invalid value: .*spec\.parent is immutable: it cannot be added, removed or changed; delete and recreate the Tenant/;

    it('refuses a parent naming the Tenant itself, and bad names', async (t) => {
      const namespace = await ns(t);
      const err = await errorOf(
        env.admin.create(object(TENANT, namespace, 'team-a', { parent: 'team-a', members: ['bob'] }), {
          dryRun: true,
        }),
      );
      assertInvalid(
        err,
        /spec\.parent: Invalid value: .*spec\.parent must not name the Tenant itself/,
        'parent itself',
      );
      await refusesAll(TENANT, namespace, [
        ['a parent with capitals', { parent: 'Org' }, /spec\.parent must be an object name/],
        ['a namespace with a dot', { namespaces: ['team.a'] }, /spec\.namespaces must be a namespace name/],
        ['a member twice', { members: ['bob', 'bob'] }, /spec\.members\[1\]: Duplicate value: "bob"/],
        ['an empty admin', { admins: [''] }, /spec\.admins entries must not be empty/],
        ['a bad cluster id', { clusters: { ids: ['prod'] } }, /spec\.clusters\.ids must be cluster ids/],
      ]);
    });

    it('admits a tenant without members: refusing that is the webhook job, which must see it', async (t) => {
      const namespace = await ns(t);
      await admitsAll(TENANT, namespace, [
        {},
        { admins: ['alice'] },
        {
          parent: 'org',
          clusters: { ids: ['capi/prod-1'], annotations: { 'shturval.tech/zone': 'msk' } },
          namespaces: ['team-a', 'team-b'],
          admins: ['alice@example.com'],
          members: ['bob@example.com'],
        },
      ]);
    });

    it('refuses adding, removing or changing the parent, and namespaces flipping between none and some; takes other updates and its status', async (t) => {
      const namespace = await ns(t);
      await env.admin.create(object(TENANT, namespace, 'root', { members: ['bob'] }));
      await env.admin.create(
        object(TENANT, namespace, 'child', { parent: 'root', members: ['bob'], namespaces: ['team-a'] }),
      );
      await refusedUpdate(TENANT, namespace, 'root', { parent: 'other' }, immutable, 'adding a parent');
      await refusedUpdate(TENANT, namespace, 'child', { parent: null }, immutable, 'removing the parent');
      await refusedUpdate(TENANT, namespace, 'child', { parent: 'other' }, immutable, 'changing the parent');
      await admittedUpdate(TENANT, namespace, 'child', {
        members: ['bob', 'carol'],
        namespaces: ['team-a', 'team-b'],
      });
      const levelFlip =
        /spec\.namespaces: Invalid value: .*spec\.namespaces cannot change between none and some: the Tenant Scope level/;
      await refusedUpdate(
        TENANT,
        namespace,
        'root',
        { namespaces: ['team-a'] },
        levelFlip,
        'none to some namespaces',
      );
      await refusedUpdate(
        TENANT,
        namespace,
        'child',
        { namespaces: null },
        levelFlip,
        'some to no namespaces',
      );
      await admittedUpdate(TENANT, namespace, 'root', { admins: ['alice'] });
      const status: TenantStatus = {
        conditions: [
          {
            type: 'TenantCreated',
            status: 'True',
            observedGeneration: 2,
            lastTransitionTime: '2026-01-01T00:00:00Z',
            reason: 'Created',
            message: '',
          },
        ],
        scopeRef: { name: 'tenant-child' },
        roles: { get: 'tenant-get.child', edit: 'tenant-edit.child' },
        observedGeneration: 2,
      };
      const written = await env.admin.patchStatus<Tenant>(TENANT, 'child', namespace, {
        type: 'merge',
        body: { status },
      });
      assert.deepEqual(written.status, status);
    });
  });
});
