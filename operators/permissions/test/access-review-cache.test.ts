/**
 * The webhooks' SubjectAccessReview cache, on a real apiserver whose RBAC answers every
 * question: it saves repeated reviews (one per namespace for a user who may act on every
 * object there, not one per object) and never lets a cached answer widen a user's rights
 * or outlive its TTL. The oracle is the apiserver: the same questions asked as plain
 * SubjectAccessReviews, and the count of reviews the reviewer sent.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { AdmissionUserInfo, KubeObject } from '@operators/kit';
import { GROUP } from '../src/api/common.ts';
import { AccessReviewer } from '../src/webhooks/access.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
});

const ROLE = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' } as const;
const ROLE_BINDING = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' } as const;

/** `user` may `verb` the Permissions of `namespace`, all of them or only `names`. */
async function grant(namespace: string, user: string, verb: string, names?: string[]): Promise<string> {
  const name = `${user}-${verb}-${names ? names.join('-') : 'all'}`;
  await env.admin.create({
    ...ROLE,
    metadata: { name, namespace },
    rules: [
      {
        apiGroups: [GROUP],
        resources: ['permissions'],
        verbs: [verb],
        ...(names ? { resourceNames: names } : {}),
      },
    ],
  });
  await env.admin.create({
    ...ROLE_BINDING,
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  return name;
}

function bindQuestion(name: string, namespace: string) {
  return { resourceAttributes: { group: GROUP, resource: 'permissions', verb: 'bind', name, namespace } };
}

/** The apiserver's own answer, asked directly: the oracle. */
async function apiserverSays(user: string, name: string, namespace: string): Promise<boolean> {
  const review: KubeObject & { spec: object; status?: { allowed?: boolean } } = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: { user, groups: ['system:authenticated'], ...bindQuestion(name, namespace) },
  };
  return (await env.admin.create(review)).status?.allowed === true;
}

const who = (username: string): AdmissionUserInfo => ({ username, groups: ['system:authenticated'] });

describe('the webhooks SubjectAccessReview cache (real apiserver RBAC)', () => {
  it('asks once per namespace for a user who may bind every Permission there, not once per Permission', async (t) => {
    const ns = await env.namespace(t, 'sar-broad');
    await grant(ns, 'broad', 'bind');
    const reviewer = new AccessReviewer(env.admin);
    const names = Array.from({ length: 50 }, (_, i) => `perm-${i}`);
    await eventually('RBAC sees the binding', async () =>
      (await apiserverSays('broad', 'x', ns)) ? true : undefined,
    );
    const answers = await Promise.all(
      names.map((n) => reviewer.allowedForObject(who('broad'), bindQuestion(n, ns))),
    );
    assert.deepEqual(
      answers,
      names.map(() => true),
    );
    assert.deepEqual(reviewer.stats(), { hits: 49, misses: 1 });
  });

  it('answers as the apiserver does for a user limited to named Permissions, and a fresh grant counts at once', async (t) => {
    const ns = await env.namespace(t, 'sar-named');
    await grant(ns, 'narrow', 'bind', ['perm-a']);
    await eventually('RBAC sees the binding', async () =>
      (await apiserverSays('narrow', 'perm-a', ns)) ? true : undefined,
    );
    const reviewer = new AccessReviewer(env.admin);
    for (const name of ['perm-a', 'perm-b', 'perm-a', 'perm-b']) {
      assert.equal(
        await reviewer.allowedForObject(who('narrow'), bindQuestion(name, ns)),
        await apiserverSays('narrow', name, ns),
        name,
      );
    }
    // The refusals of perm-b were not kept: once granted, perm-b is admitted on the next ask,
    // although the nameless question's refusal is still cached.
    await grant(ns, 'narrow', 'bind', ['perm-b']);
    await eventually('RBAC sees the second binding', async () =>
      (await apiserverSays('narrow', 'perm-b', ns)) ? true : undefined,
    );
    assert.equal(await reviewer.allowedForObject(who('narrow'), bindQuestion('perm-b', ns)), true);
    // Never more than the user holds: another user, or another verb, is not answered from it.
    assert.equal(await reviewer.allowedForObject(who('other'), bindQuestion('perm-a', ns)), false);
    assert.equal(
      await reviewer.allowedForObject(who('narrow'), {
        resourceAttributes: {
          group: GROUP,
          resource: 'permissions',
          verb: 'escalate',
          name: 'perm-a',
          namespace: ns,
        },
      }),
      false,
    );
  });

  it('forgets an approval after its TTL: a revoked right is refused once the TTL has passed', async (t) => {
    const ns = await env.namespace(t, 'sar-revoke');
    const binding = await grant(ns, 'revoked', 'bind');
    await eventually('RBAC sees the binding', async () =>
      (await apiserverSays('revoked', 'p', ns)) ? true : undefined,
    );
    const reviewer = new AccessReviewer(env.admin, { ttlMs: 300 });
    assert.equal(await reviewer.allowedForObject(who('revoked'), bindQuestion('p', ns)), true);
    await env.admin.delete(ROLE_BINDING, binding, ns);
    await eventually('RBAC sees the revocation', async () =>
      (await apiserverSays('revoked', 'p', ns)) ? undefined : true,
    );
    await eventually('the cached approval expired', async () =>
      (await reviewer.allowedForObject(who('revoked'), bindQuestion('p', ns))) ? undefined : true,
    );
  });
});
