/**
 * The StorageEngine on its own: data.json and its revision for a fixed model written
 * out by hand (the revision is the sha256 of that hand-written text, not of the
 * engine's own serialisation), the queries the controllers ask, change notification
 * only on real changes, and a revision that depends on the content alone (insertion
 * order, list order and duplicates, a second engine).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalJson, type Json } from '../src/model/canonical-json.ts';
import { StorageEngine } from '../src/model/storage-engine.ts';
import { fillModel, groupRole, permission, scope, tenant, userRole } from './support/model-objects.ts';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const VIEW = permission('team', 'view', {
  granted_cluster_rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }],
});
const DEV = scope('team', 'dev');
const ALICE = userRole('team', 'alice-view', 'alice', 'dev', ['view']);

/** The fixed model. */
function small(): StorageEngine {
  const e = new StorageEngine();
  e.upsertPermission(VIEW);
  e.upsertScope(DEV, { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
  e.upsertRole('UserRole', ALICE);
  return e;
}

/** data.json of the fixed model: keys sorted at every level, no whitespace. */
const SMALL_JSON =
  '{"shturval":{"groups":{},' +
  '"permissions":{"team/view":{"granted_cluster_rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}],' +
  '"level":"cluster","platform_rules":[],"plugins":null}},' +
  '"scopes":{"team/dev":{"clusters":["fleet/c1"],"level":"cluster","namespaces":[],"paths":["/fleet/c1"],"tenant":null}},' +
  '"tenants":{},' +
  '"users":{"alice":[{"permissions":["team/view"],"role":"team/alice-view","scope":"team/dev"}]}}}';

describe('StorageEngine data.json and revision', () => {
  it('writes the fixed model as the canonical text written out here', () => {
    assert.equal(small().dataJson(), SMALL_JSON);
    assert.deepEqual(small().snapshot(), JSON.parse(SMALL_JSON));
  });

  it('has as revision the sha256 of that text, the same in a second engine', () => {
    const expected = sha256(SMALL_JSON);
    assert.match(expected, /^[0-9a-f]{64}$/);
    assert.equal(small().revision(), expected);
    assert.equal(small().revision(), expected);
  });

  it('starts empty, with every collection present', () => {
    const empty = '{"shturval":{"groups":{},"permissions":{},"scopes":{},"tenants":{},"users":{}}}';
    assert.equal(new StorageEngine().dataJson(), empty);
    assert.equal(new StorageEngine().revision(), sha256(empty));
  });

  it('carries tenants, tenant-generated and namespace-level scopes, and group bindings with members', () => {
    const e = new StorageEngine();
    e.upsertTenant(tenant('t', 'org', { admins: ['root'], members: ['zed', 'amy', 'zed'] }));
    e.upsertTenant(tenant('t', 'team-a', { parent: 'org', members: ['bob'] }));
    e.upsertScope(
      scope('t', 'tenant-team-a', { level: 'namespace', namespaces: ['b', 'a'], tenant: 'team-a' }),
      {
        clusters: ['fleet/c2', 'fleet/c1'],
        paths: ['/org/team-a/fleet/c1/a'],
        tenant: 'team-a',
      },
    );
    e.upsertRole(
      'GroupRole',
      groupRole('t', 'devs', 'developers', 'tenant-team-a', ['edit', 'view'], ['joe', 'ann']),
    );
    assert.deepEqual(JSON.parse(e.dataJson()), {
      shturval: {
        groups: {
          developers: [
            {
              members: ['ann', 'joe'],
              permissions: ['t/edit', 't/view'],
              role: 't/devs',
              scope: 't/tenant-team-a',
            },
          ],
        },
        permissions: {},
        scopes: {
          't/tenant-team-a': {
            clusters: ['fleet/c1', 'fleet/c2'],
            level: 'namespace',
            namespaces: ['a', 'b'],
            paths: ['/org/team-a/fleet/c1/a'],
            tenant: 't/team-a',
          },
        },
        tenants: {
          't/org': { admins: ['root'], members: ['amy', 'zed'], parent: null, scope: 't/tenant-org' },
          't/team-a': { admins: [], members: ['bob'], parent: 't/org', scope: 't/tenant-team-a' },
        },
        users: {},
      },
    });
  });

  it('lists a Scope under a tenant only when the feed says that Tenant controls it, never for a bare tenantRef', () => {
    const e = new StorageEngine();
    e.upsertTenant(tenant('t', 'victim', { admins: ['vic'] }));
    // A hand-written Scope naming the victim's tenant: the feed found no control (domain/tenant.ts scopeTenant).
    e.upsertScope(scope('t', 'mine', { level: 'cluster', tenant: 'victim' }), {
      clusters: [],
      paths: [],
      tenant: null,
    });
    e.upsertScope(scope('t', 'also-mine', { level: 'cluster', tenant: 'victim' }), {
      clusters: [],
      paths: [],
    });
    e.upsertScope(scope('t', 'tenant-victim', { level: 'cluster', tenant: 'victim' }), {
      clusters: [],
      paths: [],
      tenant: 'victim',
    });
    const scopes = e.snapshot().shturval.scopes;
    assert.equal(scopes['t/mine']?.tenant, null);
    assert.equal(scopes['t/also-mine']?.tenant, null);
    assert.equal(scopes['t/tenant-victim']?.tenant, 't/victim');
  });

  it('lists a user holding two roles once, with both bindings sorted by role', () => {
    const e = small();
    e.upsertRole('UserRole', userRole('team', 'a-first', 'alice', 'dev', ['view']));
    const users = e.snapshot().shturval.users;
    assert.deepEqual(Object.keys(users), ['alice']);
    assert.deepEqual(
      users.alice?.map((b) => b.role),
      ['team/a-first', 'team/alice-view'],
    );
  });

  it('does not depend on the order of insertion, of list elements, or on duplicates', () => {
    const e = new StorageEngine();
    e.upsertRole('UserRole', userRole('team', 'alice-view', 'alice', 'dev', ['view', 'view']));
    e.upsertScope(DEV, { clusters: ['fleet/c1', 'fleet/c1'], paths: ['/fleet/c1'] });
    e.upsertPermission(VIEW);
    assert.equal(e.revision(), sha256(SMALL_JSON));
  });

  it('assembles at scale the same text canonicalJson writes for the parsed snapshot', () => {
    const e = new StorageEngine();
    fillModel(e);
    e.upsertRole('GroupRole', groupRole('perms', 'g', 'ops', 'fleet', ['perm-3'], ['b', 'a']));
    const text = e.dataJson();
    assert.equal(canonicalJson(JSON.parse(text) as Json), text);
    assert.equal(Object.keys(e.snapshot().shturval.users).length, 1000);
  });

  it('returns to the earlier revision when a change is undone', () => {
    const e = small();
    const before = e.revision();
    e.upsertRole('UserRole', userRole('team', 'bob', 'bob', 'dev', ['view']));
    assert.notEqual(e.revision(), before);
    e.removeRole('UserRole', 'team', 'bob');
    assert.equal(e.revision(), before);
  });

  it('gives the same revision for any insertion order of the same objects (property)', () => {
    type Op = (e: StorageEngine) => void;
    const ops: Op[] = [
      (e) => e.upsertPermission(VIEW),
      (e) =>
        e.upsertPermission(
          permission('team', 'edit', { granted_cluster_rules: [{ verbs: ['*'], resources: ['*'] }] }),
        ),
      (e) => e.upsertScope(DEV, { clusters: ['fleet/c1'], paths: ['/fleet/c1'] }),
      (e) => e.upsertRole('UserRole', ALICE),
      (e) => e.upsertRole('UserRole', userRole('team', 'carol', 'carol', 'dev', ['edit', 'view'])),
      (e) => e.upsertRole('GroupRole', groupRole('team', 'alice-view', 'ops', 'dev', ['edit'])),
      (e) => e.upsertTenant(tenant('team', 'x', { members: ['m'] })),
    ];
    const reference = new StorageEngine();
    for (const op of ops) op(reference);
    fc.assert(
      fc.property(fc.shuffledSubarray(ops, { minLength: ops.length, maxLength: ops.length }), (order) => {
        const e = new StorageEngine();
        for (const op of order) op(e);
        return e.revision() === reference.revision() && e.dataJson() === reference.dataJson();
      }),
    );
  });
});

describe('StorageEngine change notification', () => {
  it('calls listeners once per change, and not for an upsert of equal content or a removal of nothing', () => {
    const e = small();
    let calls = 0;
    e.onChange(() => calls++);
    const before = e.revision();
    e.upsertPermission(structuredClone(VIEW));
    e.upsertScope(DEV, { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
    e.upsertRole('UserRole', { ...ALICE, metadata: { ...ALICE.metadata, resourceVersion: '99' } });
    e.removeRole('GroupRole', 'team', 'alice-view'); // a GroupRole of that name never was
    e.removePermission('team', 'nope');
    e.removeScope('other', 'dev');
    e.removeTenant('team', 'none');
    assert.equal(calls, 0);
    assert.equal(e.revision(), before);

    e.upsertScope(DEV, { clusters: ['fleet/c1', 'fleet/c2'], paths: ['/fleet/c1'] });
    assert.equal(calls, 1);
    e.removePermission('team', 'view');
    assert.equal(calls, 2);
  });

  it('has the new revision in place when the listener runs, and stops calling after unsubscribe', () => {
    const e = small();
    const seen: string[] = [];
    const off = e.onChange(() => seen.push(e.revision()));
    e.removeRole('UserRole', 'team', 'alice-view');
    assert.deepEqual(seen, [e.revision()]);
    assert.notEqual(seen[0], sha256(SMALL_JSON));
    off();
    e.upsertRole('UserRole', ALICE);
    assert.equal(seen.length, 1);
  });

  it('calls every listener even when one throws, and then throws its error', () => {
    const e = new StorageEngine();
    let second = 0;
    e.onChange(() => {
      throw new Error('listener failed');
    });
    e.onChange(() => second++);
    assert.throws(() => e.upsertPermission(VIEW), /listener failed/);
    assert.equal(second, 1);
    assert.ok(e.snapshot().shturval.permissions['team/view']);
  });
});

describe('StorageEngine queries', () => {
  function model(): StorageEngine {
    const e = small();
    e.upsertRole('UserRole', userRole('team', 'alice-edit', 'alice', 'dev', ['edit']));
    e.upsertRole('UserRole', userRole('team', 'bob', 'bob', 'prod', ['view']));
    e.upsertRole('GroupRole', groupRole('team', 'bob', 'ops', 'dev', ['view', 'admin']));
    e.upsertRole('UserRole', userRole('other', 'alice-view', 'alice', 'dev', ['view']));
    e.upsertTenant(tenant('team', 'org', {}));
    e.upsertTenant(tenant('team', 'b-child', { parent: 'org' }));
    e.upsertTenant(tenant('team', 'a-child', { parent: 'org' }));
    e.upsertTenant(tenant('other', 'c-child', { parent: 'org' }));
    return e;
  }

  it('rolesReferencingPermission: kind-qualified keys of the roles in that namespace naming it, sorted', () => {
    const e = model();
    assert.deepEqual(e.rolesReferencingPermission('team', 'view'), [
      'GroupRole/team/bob',
      'UserRole/team/alice-view',
      'UserRole/team/bob',
    ]);
    assert.deepEqual(e.rolesReferencingPermission('team', 'edit'), ['UserRole/team/alice-edit']);
    assert.deepEqual(e.rolesReferencingPermission('team', 'unused'), []);
    assert.deepEqual(e.rolesReferencingPermission('other', 'view'), ['UserRole/other/alice-view']);
  });

  it('subjectsInScope: distinct users and groups with a role in the Scope', () => {
    const e = model();
    // alice (two roles) and the group ops; the user bob is in prod; other/alice-view is another namespace.
    assert.equal(e.subjectsInScope('team', 'dev'), 2);
    assert.equal(e.subjectsInScope('team', 'prod'), 1);
    assert.equal(e.subjectsInScope('team', 'empty'), 0);
    e.removeRole('UserRole', 'team', 'alice-view');
    e.removeRole('UserRole', 'team', 'alice-edit');
    e.removeRole('GroupRole', 'team', 'bob');
    assert.equal(e.subjectsInScope('team', 'dev'), 0);
  });

  it('subjectsInScope counts a user and a group of the same name as two subjects', () => {
    const e = new StorageEngine();
    e.upsertRole('UserRole', userRole('n', 'a', 'same', 's', ['p']));
    e.upsertRole('GroupRole', groupRole('n', 'a', 'same', 's', ['p']));
    assert.equal(e.subjectsInScope('n', 's'), 2);
  });

  it('permissionsInScope: the names granted in the Scope, sorted, each once', () => {
    const e = model();
    assert.deepEqual(e.permissionsInScope('team', 'dev'), ['admin', 'edit', 'view']);
    assert.deepEqual(e.permissionsInScope('team', 'prod'), ['view']);
    assert.deepEqual(e.permissionsInScope('team', 'none'), []);
  });

  it('childTenants: the names of the Tenants in the namespace whose parent it is, sorted', () => {
    const e = model();
    assert.deepEqual(e.childTenants('team', 'org'), ['a-child', 'b-child']);
    assert.deepEqual(e.childTenants('other', 'org'), ['c-child']);
    assert.deepEqual(e.childTenants('team', 'a-child'), []);
    e.removeTenant('team', 'a-child');
    assert.deepEqual(e.childTenants('team', 'org'), ['b-child']);
  });

  it('follows a role moved to another Scope and Permission set', () => {
    const e = small();
    e.upsertRole('UserRole', userRole('team', 'alice-view', 'alice', 'prod', ['edit']));
    assert.equal(e.subjectsInScope('team', 'dev'), 0);
    assert.deepEqual(e.permissionsInScope('team', 'prod'), ['edit']);
    assert.deepEqual(e.rolesReferencingPermission('team', 'view'), []);
  });
});

describe('StorageEngine readiness and isolation', () => {
  it('is not ready until markReady, and whenReady resolves then', async () => {
    const e = new StorageEngine();
    let resolved = false;
    const waiting = e.whenReady().then(() => {
      resolved = true;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(e.isReady(), false);
    assert.equal(resolved, false);
    e.markReady();
    e.markReady();
    await waiting;
    assert.equal(e.isReady(), true);
    await e.whenReady();
  });

  it('markReady changes no revision and calls no listener', () => {
    const e = small();
    let calls = 0;
    e.onChange(() => calls++);
    e.markReady();
    assert.equal(calls, 0);
    assert.equal(e.revision(), sha256(SMALL_JSON));
  });

  it('hands out a frozen snapshot and leaves the caller’s objects unfrozen and unshared', () => {
    const verbs = ['get'];
    const p = permission('team', 'view', {
      granted_cluster_rules: [{ verbs, apiGroups: [''], resources: ['pods'] }],
    });
    const e = new StorageEngine();
    e.upsertPermission(p);
    const snap = e.snapshot();
    assert.ok(Object.isFrozen(snap.shturval.permissions['team/view']?.granted_cluster_rules[0]?.verbs));
    assert.equal(Object.isFrozen(verbs), false);
    verbs.push('delete');
    assert.deepEqual(e.snapshot().shturval.permissions['team/view']?.granted_cluster_rules[0]?.verbs, [
      'get',
    ]);
  });
});
