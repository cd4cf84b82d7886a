/**
 * The admission decisions: each refusal's reason and message written out by hand, the
 * good cases admitted; for generated facts, a naive decision table written here (the
 * first failing check in the documented order decides).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Level } from '../src/api/common.ts';
import type { Permission } from '../src/api/permission.ts';
import type { Scope } from '../src/api/scope.ts';
import type { Tenant, TenantSpec } from '../src/api/tenant.ts';
import {
  type RoleAdmission,
  validateRole,
  validateScope,
  validateTenant,
  validateTenantChecks,
} from '../src/domain/admission.ts';
import {
  MAX_RULE_QUESTIONS,
  type PermissionAdmission,
  questionKey,
  ruleQuestions,
  validatePermission,
} from '../src/domain/permission-admission.ts';

const NS = 'team-a';

const scope = (name: string, level: Level): Scope => ({
  apiVersion: 'permissions.shturval.tech/v1beta1',
  kind: 'Scope',
  metadata: { name, namespace: NS },
  spec: level === 'namespace' ? { level, namespaces: ['apps'] } : { level },
});

const permission = (name: string, level: Level): Permission => ({
  apiVersion: 'permissions.shturval.tech/v1beta1',
  kind: 'Permission',
  metadata: { name, namespace: NS },
  spec: { level, granted_cluster_rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }] },
});

function roleInput(overrides: Partial<RoleAdmission> = {}): RoleAdmission {
  return {
    kind: 'UserRole',
    namespace: NS,
    name: 'alice-viewer',
    spec: { user: 'alice@example.com', scope: 'prod', permissions: ['viewer'] },
    scope: scope('prod', 'cluster'),
    permissions: new Map([['viewer', permission('viewer', 'cluster')]]),
    grantorMay: new Map([['viewer', true]]),
    user: 'bob@example.com',
    ...overrides,
  };
}

describe('validateRole', () => {
  it('admits a role whose Scope and Permissions exist, agree on the level, and whose grantor may bind them', () => {
    assert.deepEqual(validateRole(roleInput()), { allowed: true });
    assert.deepEqual(
      validateRole(
        roleInput({
          kind: 'GroupRole',
          spec: { group: 'devs', scope: 'prod', permissions: ['viewer', 'viewer'], members: ['a'] },
        }),
      ),
      { allowed: true },
    );
  });

  it('refuses a missing Scope', () => {
    assert.deepEqual(validateRole(roleInput({ scope: undefined })), {
      allowed: false,
      reason: 'ScopeNotFound',
      message:
        'UserRole "alice-viewer" names Scope "prod", which does not exist in namespace "team-a": ' +
        'create the Scope first, or set spec.scope to an existing one',
    });
  });

  it('refuses missing Permissions, naming each', () => {
    assert.deepEqual(
      validateRole(
        roleInput({
          name: undefined,
          spec: { user: 'alice@example.com', scope: 'prod', permissions: ['viewer', 'ghost', 'phantom'] },
          permissions: new Map([
            ['viewer', permission('viewer', 'cluster')],
            ['ghost', undefined],
          ]),
        }),
      ),
      {
        allowed: false,
        reason: 'PermissionNotFound',
        message:
          'this UserRole names Permission(s) "ghost", "phantom", which do not exist in namespace "team-a": ' +
          'create them first, or remove them from spec.permissions',
      },
    );
  });

  it('refuses a level mismatch, naming the Permission and both levels', () => {
    assert.deepEqual(
      validateRole(
        roleInput({
          scope: scope('prod', 'namespace'),
          permissions: new Map([['viewer', permission('viewer', 'cluster')]]),
        }),
      ),
      {
        allowed: false,
        reason: 'LevelMismatch',
        message:
          'UserRole "alice-viewer": Permission "viewer" is level cluster, but Scope "prod" is level namespace; ' +
          'a Permission binds only in a Scope of its own level: choose a Scope of that level, or Permissions of level namespace',
      },
    );
  });

  it('refuses a grantor who may not bind, naming the user, the Permission and the verb and resource needed', () => {
    assert.deepEqual(validateRole(roleInput({ grantorMay: new Map([['viewer', false]]) })), {
      allowed: false,
      reason: 'BindForbidden',
      message:
        'user "bob@example.com" may not grant Permission(s) "viewer" through UserRole "alice-viewer": granting needs, for each, ' +
        'verb "bind" or "escalate" on permissions.permissions.shturval.tech with resourceName "viewer" in namespace "team-a" ' +
        '(a Role rule {apiGroups: [permissions.shturval.tech], resources: [permissions], resourceNames: [viewer], verbs: [bind]}); ' +
        'ask an administrator of namespace "team-a" for it',
    });
    assert.equal(validateRole(roleInput({ grantorMay: new Map() })).allowed, false);
  });

  it('decides as a naive table does: Scope, then existence, then level, then the grantor', () => {
    const names = ['p1', 'p2', 'p3'];
    const level = fc.constantFrom<Level>('platform', 'cluster', 'namespace');
    fc.assert(
      fc.property(
        fc.option(level, { nil: undefined }),
        fc.subarray(names, { minLength: 1 }),
        fc.tuple(
          fc.option(level, { nil: undefined }),
          fc.option(level, { nil: undefined }),
          fc.option(level, { nil: undefined }),
        ),
        fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
        (scopeLevel, wanted, levels, may) => {
          const permissions = new Map(
            names.map(
              (n, i) => [n, levels[i] === undefined ? undefined : permission(n, levels[i] as Level)] as const,
            ),
          );
          const grantorMay = new Map(names.map((n, i) => [n, may[i] as boolean] as const));
          const d = validateRole(
            roleInput({
              spec: { user: 'alice', scope: 's', permissions: wanted },
              scope: scopeLevel === undefined ? undefined : scope('s', scopeLevel),
              permissions,
              grantorMay,
            }),
          );
          const idx = (n: string): number => names.indexOf(n);
          let expected: string | undefined;
          if (scopeLevel === undefined) expected = 'ScopeNotFound';
          else if (wanted.some((n) => levels[idx(n)] === undefined)) expected = 'PermissionNotFound';
          else if (wanted.some((n) => levels[idx(n)] !== scopeLevel)) expected = 'LevelMismatch';
          else if (wanted.some((n) => !may[idx(n)])) expected = 'BindForbidden';
          assert.equal(d.allowed ? undefined : d.reason, expected);
          if (!d.allowed && expected !== 'ScopeNotFound') {
            for (const n of wanted) {
              const offends =
                (expected === 'PermissionNotFound' && levels[idx(n)] === undefined) ||
                (expected === 'LevelMismatch' && levels[idx(n)] !== scopeLevel) ||
                (expected === 'BindForbidden' && !may[idx(n)]);
              if (offends) assert.ok(d.message.includes(`"${n}"`), d.message);
            }
          }
        },
      ),
    );
  });
});

const tenant = (name: string, spec: TenantSpec): Tenant => ({
  apiVersion: 'permissions.shturval.tech/v1beta1',
  kind: 'Tenant',
  metadata: { name, namespace: 'tenants' },
  spec,
});

describe('validateTenant', () => {
  const org = tenant('org', { namespaces: ['n1', 'n2'], admins: ['root'] });

  it('admits a tenant with members, an existing parent it stays within, and a grantor who may bind it', () => {
    assert.deepEqual(
      validateTenant({
        tenant: tenant('t', { members: ['bob'] }),
        parent: undefined,
        grantorMay: true,
        user: 'root',
      }),
      {
        allowed: true,
      },
    );
    assert.deepEqual(
      validateTenant({
        tenant: tenant('t', { parent: 'org', namespaces: ['n1'], admins: ['a'] }),
        parent: org,
        grantorMay: true,
        user: 'root',
      }),
      { allowed: true },
    );
  });

  it('refuses a tenant without admins and members', () => {
    assert.deepEqual(
      validateTenant({
        tenant: tenant('t', { admins: [], namespaces: ['n1'] }),
        parent: undefined,
        grantorMay: true,
        user: 'root',
      }),
      {
        allowed: false,
        reason: 'TenantWithoutMembers',
        message:
          'Tenant "t" has neither admins nor members, so nobody could use or manage it: list at least one user in spec.admins or spec.members',
      },
    );
  });

  it('refuses a named parent that does not exist', () => {
    assert.deepEqual(
      validateTenant({
        tenant: tenant('t', { parent: 'org', members: ['b'] }),
        parent: undefined,
        grantorMay: true,
        user: 'root',
      }),
      {
        allowed: false,
        reason: 'ParentTenantNotFound',
        message:
          'Tenant "t" names parent Tenant "org", which does not exist in namespace "tenants": create the parent first, or fix spec.parent',
      },
    );
  });

  it('refuses a tenant outside its parent', () => {
    const d = validateTenant({
      tenant: tenant('t', { parent: 'org', namespaces: ['n3'], members: ['b'] }),
      parent: org,
      grantorMay: true,
      user: 'root',
    });
    assert.equal(d.allowed ? undefined : d.reason, 'OutsideParentTenant');
    assert.match(
      d.allowed ? '' : d.message,
      /^Tenant "t" reaches outside its parent Tenant "org": namespaces n3/,
    );
  });

  it('refuses a grantor who may not bind or escalate the tenant, naming the user and what is needed', () => {
    assert.deepEqual(
      validateTenant({
        tenant: tenant('t', { members: ['b'] }),
        parent: undefined,
        grantorMay: false,
        user: 'eve',
      }),
      {
        allowed: false,
        reason: 'BindForbidden',
        message:
          'user "eve" may not grant Tenant "t", which binds its admins and members to its roles: that needs ' +
          'verb "bind" or "escalate" on tenants.permissions.shturval.tech with resourceName "t" in namespace "tenants" ' +
          '(a Role rule {apiGroups: [permissions.shturval.tech], resources: [tenants], resourceNames: [t], verbs: [bind]}); ' +
          'ask an administrator of namespace "tenants" for it',
      },
    );
  });

  it('decides as a naive table does: members, then the parent, then containment, then the grantor', () => {
    fc.assert(
      fc.property(
        fc.subarray(['a1']),
        fc.subarray(['m1']),
        fc.constantFrom('none', 'missing', 'present'),
        fc.subarray(['n1', 'n2', 'n3']),
        fc.boolean(),
        (admins, members, parentState, namespaces, grantorMay) => {
          const spec: TenantSpec = {
            admins,
            members,
            namespaces,
            ...(parentState === 'none' ? {} : { parent: 'org' }),
          };
          const d = validateTenant({
            tenant: tenant('t', spec),
            parent: parentState === 'present' ? org : undefined,
            grantorMay,
            user: 'u',
          });
          let expected: string | undefined;
          if (admins.length === 0 && members.length === 0) expected = 'TenantWithoutMembers';
          else if (parentState === 'missing') expected = 'ParentTenantNotFound';
          else if (
            parentState === 'present' &&
            (namespaces.length === 0 || namespaces.some((n) => !['n1', 'n2'].includes(n)))
          )
            expected = 'OutsideParentTenant';
          else if (!grantorMay) expected = 'BindForbidden';
          assert.equal(d.allowed ? undefined : d.reason, expected);
        },
      ),
    );
  });
});

describe('tenant walls (validateTenantChecks, and in validateRole and validateScope)', () => {
  const foreign = { tenant: 'b', because: 'Scope "tenant-b" belongs to Tenant "b"', mayManage: false };

  it('admits with no tenant reached, or every tenant managed', () => {
    assert.deepEqual(validateTenantChecks('ann', 'create UserRole "x"', NS, []), { allowed: true });
    assert.deepEqual(
      validateTenantChecks('ann', 'create UserRole "x"', NS, [{ ...foreign, mayManage: true }]),
      {
        allowed: true,
      },
    );
  });

  it('refuses a tenant the user may not manage, naming it, why, and the rule to grant', () => {
    assert.deepEqual(validateTenantChecks('ann', 'delete UserRole "ben"', NS, [foreign]), {
      allowed: false,
      reason: 'TenantForbidden',
      message:
        'user "ann" may not delete UserRole "ben": Scope "tenant-b" belongs to Tenant "b", and acting inside a tenant needs ' +
        'verb "manage" on tenants.permissions.shturval.tech with resourceName "b" in namespace "team-a" ' +
        "(the Role tenant-edit.b gives it to the tenant's admins; or a Role rule {apiGroups: [permissions.shturval.tech], " +
        'resources: [tenants], resourceNames: [b], verbs: [manage]}); ask an admin of that tenant, or a platform administrator',
    });
  });

  it('validateRole checks the wall right after the Scope, before the Permissions', () => {
    const d = validateRole(
      roleInput({
        tenantChecks: [foreign],
        permissions: new Map(),
        grantorMay: new Map(),
        operation: 'create',
      }),
    );
    assert.equal(d.allowed ? undefined : d.reason, 'TenantForbidden');
    assert.match(
      d.allowed ? '' : d.message,
      /^user "bob@example.com" may not create UserRole "alice-viewer": /,
    );
  });

  it('validateScope refuses a missing parentScope first, then a tenant not managed; a Scope of no tenant is admitted', () => {
    const s: Scope = {
      ...scope('mine', 'cluster'),
      spec: { level: 'cluster', parentScope: { name: 'gone' } },
    };
    const base = { scope: s, operation: 'create' as const, user: 'm', tenantChecks: [foreign] };
    assert.equal(
      (validateScope({ ...base, parentMissing: true }) as { reason: string }).reason,
      'ScopeNotFound',
    );
    assert.equal(
      (validateScope({ ...base, parentMissing: false }) as { reason: string }).reason,
      'TenantForbidden',
    );
    assert.deepEqual(validateScope({ ...base, parentMissing: false, tenantChecks: [] }), { allowed: true });
    // A delete never asks for the parent.
    assert.equal(
      (validateScope({ ...base, operation: 'delete', parentMissing: true }) as { reason: string }).reason,
      'TenantForbidden',
    );
  });
});

describe("validatePermission (RBAC's escalation rule)", () => {
  const perm = (spec: Permission['spec'], name = 'p'): Permission => ({
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name, namespace: NS },
    spec,
  });
  const input = (p: Permission, o: Partial<PermissionAdmission> = {}): PermissionAdmission => ({
    permission: p,
    user: 'mallory',
    mayEscalate: false,
    mayEscalateTargets: new Map(),
    holds: new Map(),
    ...o,
  });
  const star = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];

  it('asks one question per group, resource (subresource apart), verb and name; wildcards literally', () => {
    const { questions, tooMany } = ruleQuestions([
      {
        apiGroups: ['', 'apps'],
        resources: ['pods/log', 'deployments'],
        verbs: ['get'],
        resourceNames: ['a'],
      },
      { nonResourceURLs: ['/healthz/*'], verbs: ['get'] },
      ...star,
    ]);
    assert.equal(tooMany, false);
    assert.deepEqual(questions.map(questionKey), [
      'res get /pods/log a',
      'res get /deployments a',
      'res get apps/pods/log a',
      'res get apps/deployments a',
      'url get /healthz/*',
      'res * */*',
    ]);
    assert.deepEqual(questions[0], {
      resourceAttributes: { group: '', resource: 'pods', subresource: 'log', verb: 'get', name: 'a' },
    });
    const many = Array.from({ length: MAX_RULE_QUESTIONS + 1 }, (_, i) => `r${i}`);
    assert.equal(ruleQuestions([{ apiGroups: [''], resources: many, verbs: ['get'] }]).tooMany, true);
  });

  it('admits rules the writer holds, or anything with escalate; refuses the rest naming each missing rule and escalate', () => {
    const p = perm({ level: 'platform', platform_rules: star });
    assert.deepEqual(validatePermission(input(p, { holds: new Map([['res * */*', true]]) })), {
      allowed: true,
    });
    assert.deepEqual(validatePermission(input(p, { mayEscalate: true })), { allowed: true });
    assert.deepEqual(validatePermission(input(p)), {
      allowed: false,
      reason: 'EscalateForbidden',
      message:
        'user "mallory" may not write Permission "p": its platform_rules grant what they do not hold on the management cluster ' +
        '(verb "*" on "*" in group "*"); write only rules you hold cluster-wide, or get verb "escalate" on ' +
        'permissions.permissions.shturval.tech with resourceName "p" in namespace "team-a" (a Role rule ' +
        '{apiGroups: [permissions.shturval.tech], resources: [permissions], resourceNames: [p], verbs: [escalate]})',
    });
  });

  it('asks escalate for what the management cluster cannot judge: client rules, Argo CD, Kubeflow', () => {
    const client = perm({
      level: 'cluster',
      granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    });
    const d = validatePermission(input(client));
    assert.equal(d.allowed ? undefined : d.reason, 'EscalateForbidden');
    assert.match(d.allowed ? '' : d.message, /granted_cluster_rules are written into client clusters/);
    assert.deepEqual(validatePermission(input(client, { mayEscalate: true })), { allowed: true });
    const argo = perm({
      level: 'platform',
      platform_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      plugins: { argocd: { policies: [] } },
    });
    assert.match(
      (validatePermission(input(argo, { holds: new Map([['res get /pods', true]]) })) as { message: string })
        .message,
      /argocd plugin/,
    );
  });

  it('refuses aggregateTo into a Permission the writer may not escalate, whatever they hold; a Permission without platform_rules aggregates nothing', () => {
    const p = perm({ level: 'platform', platform_rules: star, aggregateTo: ['viewer', 'p'] });
    const d = validatePermission(input(p, { mayEscalate: true }));
    assert.equal(d.allowed ? undefined : d.reason, 'AggregateForbidden');
    assert.match(
      d.allowed ? '' : d.message,
      /^user "mallory" may not aggregate the platform_rules of Permission "p" into Permission\(s\) "viewer": .*resourceName "viewer"/,
    );
    assert.deepEqual(
      validatePermission(input(p, { mayEscalate: true, mayEscalateTargets: new Map([['viewer', true]]) })),
      { allowed: true },
    );
    const empty = perm({ level: 'cluster', granted_cluster_rules: star, aggregateTo: ['viewer'] });
    assert.deepEqual(validatePermission(input(empty, { mayEscalate: true })), { allowed: true });
  });
});
