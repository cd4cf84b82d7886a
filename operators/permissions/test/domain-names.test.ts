/**
 * Names and labels: the brief's formats written out by hand; the shortened forms checked
 * against a naive re-derivation here (sha256 through node:crypto, cut by hand), and the
 * validity of every label and label key against the Kubernetes patterns written here.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  aggregationId,
  aggregationLabelKey,
  bindingName,
  clientClusterRoleName,
  LABELS,
  labelSafe,
  MANAGED_BY,
  ownerLabels,
  platformClusterRoleName,
  platformRulesClusterRoleName,
  tenantEditRoleName,
  tenantGetRoleName,
  tenantScopeName,
} from '../src/domain/names.ts';

/** A label value, and a label key's name part, per the Kubernetes docs: ≤ 63, alphanumeric ends, [-_.] inside. */
const isLabelValue = (v: string): boolean =>
  v.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v);
const isLabelNamePart = (v: string): boolean => v.length >= 1 && isLabelValue(v);
/** A DNS subdomain (the name of a Scope). */
const isDnsSubdomain = (v: string): boolean =>
  v.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(v);

const sha10 = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 10);

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
const dnsSegment = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/);
/** A DNS subdomain, up to 253 characters. */
const dnsSubdomain = fc
  .array(dnsSegment, { minLength: 1, maxLength: 10 })
  .map((parts) => parts.join('.'))
  .filter((s) => s.length <= 253);
/** Names without dots (so `.` in a binding name separates only our parts). */
const dotless = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);

describe('ClusterRole, binding, Scope and Role names', () => {
  it('carry the namespace behind the prefixes of the brief', () => {
    assert.equal(platformClusterRoleName('team-a', 'viewer'), 'platform:team-a.viewer');
    assert.equal(platformRulesClusterRoleName('team-a', 'viewer'), 'platform:team-a.viewer:rules');
    assert.equal(clientClusterRoleName('team-a', 'viewer'), 'shturval:team-a.viewer');
    assert.equal(bindingName('UserRole', 'team-a', 'alice', 'viewer'), 'shturval:team-a.alice.viewer');
    assert.equal(bindingName('GroupRole', 'team-a', 'devs', 'viewer'), 'shturval:team-a.g.devs.viewer');
    assert.equal(tenantScopeName('team-a'), 'tenant-team-a');
    assert.equal(tenantGetRoleName('team-a'), 'tenant-get.team-a');
    assert.equal(tenantEditRoleName('team-a'), 'tenant-edit.team-a');
  });

  it('keep same-named Permissions of two namespaces apart', () => {
    assert.notEqual(platformClusterRoleName('team-a', 'viewer'), platformClusterRoleName('team-b', 'viewer'));
    assert.notEqual(clientClusterRoleName('team-a', 'viewer'), clientClusterRoleName('team-b', 'viewer'));
  });

  it('never meet for two different (namespace, name) pairs', () => {
    fc.assert(
      fc.property(dnsLabel, dnsSubdomain, dnsLabel, dnsSubdomain, (ns1, n1, ns2, n2) => {
        fc.pre(ns1 !== ns2 || n1 !== n2);
        assert.notEqual(clientClusterRoleName(ns1, n1), clientClusterRoleName(ns2, n2));
        assert.notEqual(platformClusterRoleName(ns1, n1), platformClusterRoleName(ns2, n2));
        assert.notEqual(platformRulesClusterRoleName(ns1, n1), platformRulesClusterRoleName(ns2, n2));
      }),
    );
  });

  it('are at most 253 characters, hash-shortened beyond', () => {
    const name = 'p'.repeat(253);
    const full = `shturval:team-a.${name}`;
    const expected = `${full.slice(0, 253 - 11)}-${sha10(full)}`;
    assert.equal(clientClusterRoleName('team-a', name), expected);
    assert.equal(expected.length, 253);
    fc.assert(
      fc.property(dnsLabel, dnsSubdomain, dotless, dnsSubdomain, (ns, role, perm, name) => {
        for (const n of [
          platformClusterRoleName(ns, name),
          platformRulesClusterRoleName(ns, name),
          clientClusterRoleName(ns, name),
          bindingName('UserRole', ns, role, perm),
          bindingName('GroupRole', ns, role, perm),
          tenantGetRoleName(name),
          tenantEditRoleName(name),
        ]) {
          assert.ok(n.length <= 253, n);
        }
      }),
    );
  });

  it('give a Tenant a Scope name that is a valid DNS subdomain, however long the tenant', () => {
    fc.assert(
      fc.property(dnsSubdomain, (t) => {
        assert.ok(isDnsSubdomain(tenantScopeName(t)), tenantScopeName(t));
      }),
    );
    const long = `${'a'.repeat(240)}.bcdefghijkl`;
    assert.equal(
      tenantScopeName(long),
      `${`tenant-${long}`.slice(0, 242).replace(/[.-]+$/, '')}-${sha10(`tenant-${long}`)}`,
    );
  });

  it('keep a user binding and a group binding apart for dot-free names', () => {
    fc.assert(
      fc.property(dotless, dotless, dotless, dotless, (r1, p1, r2, p2) => {
        assert.notEqual(bindingName('UserRole', 'ns', r1, p1), bindingName('GroupRole', 'ns', r2, p2));
        if (r1 !== r2 || p1 !== p2) {
          assert.notEqual(bindingName('UserRole', 'ns', r1, p1), bindingName('UserRole', 'ns', r2, p2));
          assert.notEqual(bindingName('GroupRole', 'ns', r1, p1), bindingName('GroupRole', 'ns', r2, p2));
        }
      }),
    );
  });
});

describe('aggregationId and its label key', () => {
  it('is <ns>.<name> when that fits 63 characters', () => {
    assert.equal(aggregationId('team-a', 'viewer'), 'team-a.viewer');
    assert.equal(
      aggregationLabelKey('team-a.viewer'),
      'aggregate-to.permissions.shturval.tech/team-a.viewer',
    );
    const exactly63 = `team-a.${'v'.repeat(56)}`;
    assert.equal(aggregationId('team-a', 'v'.repeat(56)), exactly63);
  });

  it('is the first 52 characters, a dash and 10 hex of sha256 beyond 63', () => {
    const name = 'v'.repeat(57);
    const id = `team-a.${name}`;
    assert.equal(aggregationId('team-a', name), `${id.slice(0, 52)}-${sha10(id)}`);
  });

  it('is always a valid label key name part, and distinct for distinct pairs', () => {
    fc.assert(
      fc.property(dnsLabel, dnsSubdomain, dnsLabel, dnsSubdomain, (ns1, n1, ns2, n2) => {
        const a = aggregationId(ns1, n1);
        assert.ok(isLabelNamePart(a), a);
        if (ns1 !== ns2 || n1 !== n2) assert.notEqual(a, aggregationId(ns2, n2));
      }),
    );
  });
});

describe('labelSafe', () => {
  it('leaves a valid label value as it is', () => {
    assert.equal(labelSafe('team-a'), 'team-a');
    assert.equal(labelSafe(''), '');
    assert.equal(labelSafe('0f4c7d2e-1b9a-4c1e-9a53-7f9d3c2b1a00'), '0f4c7d2e-1b9a-4c1e-9a53-7f9d3c2b1a00');
  });

  it('shortens a long name to 52 characters, a dash and 10 hex of sha256', () => {
    const long = `${'n'.repeat(70)}.x`;
    assert.equal(labelSafe(long), `${'n'.repeat(52)}-${sha10(long)}`);
  });

  it('replaces characters a label may not hold', () => {
    assert.equal(labelSafe('alice@example.com'), `alice-example.com-${sha10('alice@example.com')}`);
    assert.equal(labelSafe('@@@'), sha10('@@@'));
  });

  it('always yields a valid label value, the same for the same input, different for different inputs', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.string({ maxLength: 300 }), (a, b) => {
        assert.ok(isLabelValue(labelSafe(a)), labelSafe(a));
        assert.equal(labelSafe(a), labelSafe(a));
        if (a !== b) assert.notEqual(labelSafe(a), labelSafe(b));
      }),
    );
  });
});

describe('ownerLabels', () => {
  it('records managed-by, the owner kind, namespace, name and uid', () => {
    assert.equal(MANAGED_BY, 'permissions.shturval.tech');
    assert.deepEqual(
      ownerLabels({ kind: 'UserRole', namespace: 'team-a', name: 'alice', uid: '1234-abcd' }),
      {
        'app.kubernetes.io/managed-by': 'permissions.shturval.tech',
        'permissions.shturval.tech/owner-kind': 'UserRole',
        'permissions.shturval.tech/owner-namespace': 'team-a',
        'permissions.shturval.tech/owner-name': 'alice',
        'permissions.shturval.tech/owner-uid': '1234-abcd',
      },
    );
    assert.deepEqual(Object.values(LABELS).sort(), [
      'app.kubernetes.io/managed-by',
      'permissions.shturval.tech/owner-kind',
      'permissions.shturval.tech/owner-name',
      'permissions.shturval.tech/owner-namespace',
      'permissions.shturval.tech/owner-uid',
    ]);
  });

  it('keeps every value a valid label value, whatever the owner name', () => {
    fc.assert(
      fc.property(dnsLabel, dnsSubdomain, fc.uuid(), (namespace, name, uid) => {
        const labels = ownerLabels({ kind: 'Permission', namespace, name, uid });
        for (const v of Object.values(labels)) assert.ok(isLabelValue(v), v);
      }),
    );
  });
});
