/**
 * Our roles in an AppProject's spec.roles. Expected roles are written out by hand (the
 * hashes in role names were computed once with `sha256sum`); the property checks that
 * roles of others survive any sequence of merges, in order and unchanged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  mergeProjectRoles,
  type ProjectRole,
  projectRole,
  projectRoleName,
} from '../src/domain/plugins/appproject-roles.ts';
import type { PolicyOwner } from '../src/domain/plugins/argocd-policy-csv.ts';

const ALICE: PolicyOwner = { kind: 'UserRole', namespace: 'team-a', name: 'alice', permission: 'apps.view' };
const DEVS: PolicyOwner = { kind: 'GroupRole', namespace: 'team-a', name: 'devs', permission: 'apps.view' };

// printf %s team-a/UserRole/alice/apps.view | sha256sum | cut -c1-10
const ALICE_ROLE = 'shturval-2df376523f-apps-view';

const FOREIGN_ROLES: ProjectRole[] = [
  {
    name: 'ci',
    description: 'CI pipeline',
    policies: ['p, proj:shop:ci, applications, sync, shop/*, allow'],
  },
  { name: 'shturval-lookalike', description: 'written by hand', groups: ['ops'] },
];

describe('projectRole', () => {
  it('names the role after a hash of the owner and the permission, and grants the subject the policies', () => {
    assert.equal(projectRoleName(ALICE), ALICE_ROLE);
    assert.deepEqual(
      projectRole(ALICE, 'shop', 'alice@example.com', [
        { resource: 'applications', action: 'get', object: '*' },
        { resource: 'applications', action: 'sync', object: 'web' },
      ]),
      {
        kind: 'ok',
        role: {
          name: ALICE_ROLE,
          description: 'permissions.shturval.tech team-a/UserRole/alice/apps.view',
          policies: [
            `p, proj:shop:${ALICE_ROLE}, applications, get, shop/*, allow`,
            `p, proj:shop:${ALICE_ROLE}, applications, sync, shop/web, allow`,
          ],
          groups: ['alice@example.com'],
        },
      },
    );
  });

  it('refuses a policy field Argo CD would split in two', () => {
    const r = projectRole(ALICE, 'shop', 'alice', [
      { resource: 'applications', action: 'get', object: 'a,b' },
    ]);
    assert.deepEqual(r, {
      kind: 'invalid',
      message: 'Argo CD project shop policies[0].object "a,b" contains a comma or a quote',
    });
  });

  it('gives each owner and each permission its own role name', () => {
    const names = new Set([
      projectRoleName(ALICE),
      projectRoleName(DEVS),
      projectRoleName({ ...ALICE, permission: 'apps-view' }),
      projectRoleName({ ...ALICE, namespace: 'team-b' }),
    ]);
    assert.equal(names.size, 4);
    for (const n of names) assert.match(n, /^[a-zA-Z0-9]([-_a-zA-Z0-9]*[a-zA-Z0-9])?$/);
  });
});

const role = (owner: PolicyOwner, tag: string): ProjectRole => {
  const r = projectRole(owner, 'shop', tag, [{ resource: 'applications', action: tag, object: '*' }]);
  assert.equal(r.kind, 'ok');
  return (r as { role: ProjectRole }).role;
};

describe('mergeProjectRoles', () => {
  it('appends our role after the roles of others', () => {
    const mine = role(ALICE, 'get');
    assert.deepEqual(mergeProjectRoles(FOREIGN_ROLES, ALICE, mine), [...FOREIGN_ROLES, mine]);
  });

  it('replaces our role in place and removes it, leaving the others and another owner alone', () => {
    const devs = role(DEVS, 'get');
    const before = [
      FOREIGN_ROLES[0] as ProjectRole,
      role(ALICE, 'get'),
      devs,
      FOREIGN_ROLES[1] as ProjectRole,
    ];
    const updated = role(ALICE, 'sync');
    assert.deepEqual(mergeProjectRoles(before, ALICE, updated), [
      FOREIGN_ROLES[0],
      updated,
      devs,
      FOREIGN_ROLES[1],
    ]);
    assert.deepEqual(mergeProjectRoles(before, ALICE, undefined), [FOREIGN_ROLES[0], devs, FOREIGN_ROLES[1]]);
  });

  it('does not take a role with our prefix but a description that is not ours', () => {
    const copy: ProjectRole = { ...role(ALICE, 'get'), description: 'copied by hand' };
    assert.deepEqual(mergeProjectRoles([copy], ALICE, undefined), [copy]);
  });

  it('keeps the roles of others in order and unchanged through any sequence of merges', () => {
    const foreign = fc.array(
      fc.record({
        name: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constant('shturval-x')),
        description: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
        groups: fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
      }),
      { maxLength: 6 },
    );
    const step = fc.tuple(
      fc.boolean(),
      fc.option(fc.constantFrom('get', 'sync', 'delete'), { nil: undefined }),
    );
    fc.assert(
      fc.property(foreign, fc.array(step, { maxLength: 10 }), (others, steps) => {
        let roles: ProjectRole[] = [...others];
        for (const [alice, action] of steps) {
          const owner = alice ? ALICE : DEVS;
          roles = mergeProjectRoles(roles, owner, action ? role(owner, action) : undefined);
          const ourNames = new Set([projectRoleName(ALICE), projectRoleName(DEVS)]);
          assert.deepEqual(
            roles.filter(
              (r) => !ourNames.has(r.name) || !r.description?.startsWith('permissions.shturval.tech '),
            ),
            others,
          );
        }
        roles = mergeProjectRoles(mergeProjectRoles(roles, ALICE, undefined), DEVS, undefined);
        assert.deepEqual(roles, others);
      }),
    );
  });
});
