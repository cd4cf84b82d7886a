/**
 * A team's in-place updates (DESIGN §5: PUT rename, PUT oidc-groups), against the team as
 * the server holds it now, so that a change made on the server directly is undone (the CR
 * wins): a rename when the live name differs, an OIDC-groups PUT when either group differs,
 * an absent group and "" being the same. And adoption (§5, idempotent create): a same-named
 * team on the server is adopted unless another TerdutTeam of the same server holds its ID.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Team } from '../src/client/terdut-api.ts';
import { adoptable, type TeamUpdates, teamUpdates } from '../src/domain/team.ts';

type TeamSpec = Parameters<typeof teamUpdates>[0];

const displayName = fc.constantFrom('Platform', 'platform', 'Infra', 'Platform ');
/** A group: absent, empty, or named. */
const group = fc.option(fc.constantFrom('', 'terdut-platform-members', 'terdut-platform-owners'), {
  nil: undefined,
});

const spec: fc.Arbitrary<TeamSpec> = fc.record(
  {
    displayName,
    oidc: fc.record({ memberGroup: group, ownerGroup: group }, { requiredKeys: [] }),
  },
  { requiredKeys: ['displayName'] },
);
const live: fc.Arbitrary<Team> = fc.record(
  { id: fc.constant(42), name: displayName, oidc_member_group: group, oidc_owner_group: group },
  { requiredKeys: ['id', 'name'] },
);

describe('a team’s updates', () => {
  const platform: TeamSpec = {
    displayName: 'Platform',
    oidc: { memberGroup: 'terdut-platform-members', ownerGroup: 'terdut-platform-owners' },
  };
  const onServer: Team = {
    id: 42,
    name: 'Platform',
    oidc_member_group: 'terdut-platform-members',
    oidc_owner_group: 'terdut-platform-owners',
  };

  it('is nothing when the server holds what the spec says', () => {
    assert.deepEqual(teamUpdates(platform, onServer), {});
  });

  it('renames back a team renamed on the server directly', () => {
    assert.deepEqual(teamUpdates(platform, { ...onServer, name: 'Renamed by hand' }), { rename: 'Platform' });
  });

  it('takes a change of case in the name for a rename', () => {
    assert.deepEqual(teamUpdates(platform, { ...onServer, name: 'platform' }), { rename: 'Platform' });
  });

  it('puts both groups when only one differs', () => {
    assert.deepEqual(teamUpdates(platform, { ...onServer, oidc_owner_group: 'someone-else' }), {
      oidcGroups: { member_group: 'terdut-platform-members', owner_group: 'terdut-platform-owners' },
    });
  });

  it('clears a group with "" when the spec drops it', () => {
    assert.deepEqual(
      teamUpdates({ displayName: 'Platform', oidc: { memberGroup: 'terdut-platform-members' } }, onServer),
      {
        oidcGroups: { member_group: 'terdut-platform-members', owner_group: '' },
      },
    );
    assert.deepEqual(teamUpdates({ displayName: 'Platform' }, onServer), {
      oidcGroups: { member_group: '', owner_group: '' },
    });
  });

  it('takes an absent group and "" as the same', () => {
    assert.deepEqual(teamUpdates({ displayName: 'Platform' }, { id: 1, name: 'Platform' }), {});
    assert.deepEqual(teamUpdates({ displayName: 'Platform', oidc: {} }, { id: 1, name: 'Platform' }), {});
    assert.deepEqual(
      teamUpdates(
        { displayName: 'Platform', oidc: { memberGroup: '', ownerGroup: '' } },
        { id: 1, name: 'Platform', oidc_member_group: '', oidc_owner_group: '' },
      ),
      {},
    );
    assert.deepEqual(
      teamUpdates(
        { displayName: 'Platform', oidc: { memberGroup: '' } },
        { id: 1, name: 'Platform', oidc_owner_group: '' },
      ),
      {},
    );
  });

  it('renames and puts groups in one go when both differ', () => {
    assert.deepEqual(teamUpdates(platform, { id: 42, name: 'Old' }), {
      rename: 'Platform',
      oidcGroups: { member_group: 'terdut-platform-members', owner_group: 'terdut-platform-owners' },
    });
  });

  it('renames iff the names differ and puts the groups iff either differs', () => {
    fc.assert(
      fc.property(spec, live, (s, l) => {
        const member = s.oidc?.memberGroup === undefined ? '' : s.oidc.memberGroup;
        const owner = s.oidc?.ownerGroup === undefined ? '' : s.oidc.ownerGroup;
        const liveMember = l.oidc_member_group === undefined ? '' : l.oidc_member_group;
        const liveOwner = l.oidc_owner_group === undefined ? '' : l.oidc_owner_group;
        const expected: { rename?: string; oidcGroups?: { member_group: string; owner_group: string } } = {};
        if (s.displayName !== l.name) expected.rename = s.displayName;
        if (member !== liveMember || owner !== liveOwner) {
          expected.oidcGroups = { member_group: member, owner_group: owner };
        }
        const got: TeamUpdates = teamUpdates(s, l);
        assert.deepEqual(got, expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('adopting a same-named team on the server', () => {
  const SERVER = 'platform-oncall/terdut';
  const self = { namespace: 'team-a', name: 'platform' };

  it('adopts when no other TerdutTeam holds the ID', () => {
    assert.deepEqual(adoptable(42, self, [], SERVER), { adopt: true });
    assert.deepEqual(
      adoptable(42, self, [{ namespace: 'team-b', name: 'infra', server: SERVER, teamID: 43 }], SERVER),
      { adopt: true },
    );
  });

  it('refuses, naming the holder, when another TerdutTeam of the same server holds the ID', () => {
    assert.deepEqual(
      adoptable(42, self, [{ namespace: 'team-b', name: 'platform', server: SERVER, teamID: 42 }], SERVER),
      { adopt: false, holder: 'team-b/platform' },
    );
    assert.deepEqual(
      adoptable(42, self, [{ namespace: 'team-a', name: 'platform-2', server: SERVER, teamID: 42 }], SERVER),
      { adopt: false, holder: 'team-a/platform-2' },
    );
  });

  it('is not blocked by a team of another server with the same ID (IDs are per server)', () => {
    assert.deepEqual(
      adoptable(
        42,
        self,
        [{ namespace: 'team-b', name: 'platform', server: 'other/terdut', teamID: 42 }],
        SERVER,
      ),
      { adopt: true },
    );
  });

  it('is not blocked by the team itself holding the ID (after a crash between POST and status)', () => {
    assert.deepEqual(
      adoptable(42, self, [{ namespace: 'team-a', name: 'platform', server: SERVER, teamID: 42 }], SERVER),
      { adopt: true },
    );
  });

  it('is not blocked by teams without an ID or without a server', () => {
    assert.deepEqual(
      adoptable(
        42,
        self,
        [
          { namespace: 'team-b', name: 'platform', server: SERVER },
          { namespace: 'team-c', name: 'platform', teamID: 42 },
        ],
        SERVER,
      ),
      { adopt: true },
    );
  });

  it('refuses exactly when some other team of the same server holds the ID, and names one of them', () => {
    const other = fc.record(
      {
        namespace: fc.constantFrom('team-a', 'team-b'),
        name: fc.constantFrom('platform', 'infra'),
        server: fc.constantFrom(SERVER, 'other/terdut'),
        teamID: fc.constantFrom(41, 42),
      },
      { requiredKeys: ['namespace', 'name'] },
    );
    fc.assert(
      fc.property(fc.array(other, { maxLength: 5 }), fc.constantFrom(41, 42), (others, id) => {
        const holders: string[] = [];
        for (const o of others) {
          const isSelf = o.namespace === self.namespace && o.name === self.name;
          if (!isSelf && o.server === SERVER && o.teamID === id) holders.push(`${o.namespace}/${o.name}`);
        }
        const got = adoptable(id, self, others, SERVER);
        if (holders.length === 0) assert.deepEqual(got, { adopt: true });
        else {
          assert.equal(got.adopt, false);
          if (!got.adopt)
            assert.ok(holders.includes(got.holder), `${got.holder} is one of ${holders.join(' ')}`);
        }
      }),
      { numRuns: 500 },
    );
  });
});
