/**
 * The admission webhooks on real planes: the management apiserver calls the operator's
 * TLS server (registered with failurePolicy Fail) for every UserRole, GroupRole and
 * Tenant write. The four bad cases of the issue are refused with a message naming the
 * problem (a Permission of another level than its Scope, a missing Permission or Scope,
 * a grantor without `bind`/`escalate`, a Tenant without people), the good ones admitted,
 * a metadata-only update admitted whoever makes it; and with the webhooks off
 * (ENABLE_WEBHOOKS=false: no server, no registration) the apiserver admits a bad role and
 * the operator reports the problem in its status instead; and with no replica answering,
 * a user's delete is refused (failurePolicy Fail) while the control plane's own deleters
 * pass the configuration's matchCondition. Issue 35's attacker paths: e2e-security.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isApiError, type KubeObject } from '@operators/kit';
import { webhookConfiguration } from '../src/webhooks/configuration.ts';
import { Harness, type Kind, type Obj, ROLE, ROLE_BINDING, until } from './support/harness.ts';
import { deniedBy, refusal } from './support/refusal.ts';

const h = Harness.forFile();

const GROUP = 'permissions.shturval.tech';
const VWC = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
} as const;

/** A namespace with a cluster-level and a namespace-level Permission and Scope. */
async function fixture(t: Parameters<Harness['namespace']>[0], prefix: string): Promise<string> {
  const ns = await h.namespace(t, prefix);
  await h.create('Permission', ns, 'viewer', {
    level: 'cluster',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
  });
  await h.create('Permission', ns, 'ns-editor', {
    level: 'namespace',
    granted_cluster_rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'update'] }],
  });
  await h.create('Scope', ns, 'prod', { level: 'cluster', clusters: { ids: [`${ns}/prod`] } });
  await h.create('Scope', ns, 'team', {
    level: 'namespace',
    clusters: { ids: [`${ns}/prod`] },
    namespaces: ['team-a'],
  });
  return ns;
}

/** Gives `user` a namespaced Role (and its RoleBinding) with `rules`, and waits until RBAC answers with it. */
async function grant(
  ns: string,
  user: string,
  name: string,
  rules: unknown[],
  probe: Record<string, string>,
): Promise<void> {
  await h.admin.create({ ...ROLE, metadata: { namespace: ns, name }, rules } as KubeObject);
  await h.admin.create({
    ...ROLE_BINDING,
    metadata: { namespace: ns, name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
  } as KubeObject);
  await until(`RBAC to let ${user} ${JSON.stringify(probe)}`, async () => {
    const review = (await h.admin.create({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: { user, resourceAttributes: { namespace: ns, group: GROUP, ...probe } },
    })) as unknown as { status?: { allowed?: boolean } };
    return review.status?.allowed === true ? true : undefined;
  });
}

const userRole = (ns: string, name: string, spec: Record<string, unknown>) =>
  ({
    apiVersion: `${GROUP}/v1beta1`,
    kind: 'UserRole',
    metadata: { namespace: ns, name },
    spec,
  }) as KubeObject;

test('a UserRole whose Permission level differs from its Scope level is refused, naming both levels', async (t) => {
  const ns = await fixture(t, 'wh-level');
  const r = await refusal(
    h.create('UserRole', ns, 'mixed', { user: 'alice', scope: 'team', permissions: ['viewer'] }),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('userroles'));
  assert.match(
    r.message,
    /UserRole "mixed": Permission "viewer" is level cluster, but Scope "team" is level namespace/,
  );
  const g = await refusal(
    h.create('GroupRole', ns, 'mixed', { group: 'devs', scope: 'prod', permissions: ['ns-editor'] }),
  );
  assert.match(g.message, deniedBy('grouproles'));
  assert.match(
    g.message,
    /GroupRole "mixed": Permission "ns-editor" is level namespace, but Scope "prod" is level cluster/,
  );
  assert.equal(await h.get('UserRole', ns, 'mixed'), undefined);
  assert.equal(await h.get('GroupRole', ns, 'mixed'), undefined);
});

test('a UserRole naming a missing Permission or a missing Scope is refused, naming what is missing', async (t) => {
  const ns = await fixture(t, 'wh-missing');
  const p = await refusal(
    h.create('UserRole', ns, 'ghostly', { user: 'alice', scope: 'prod', permissions: ['viewer', 'ghost'] }),
  );
  assert.equal(p.code, 403);
  assert.match(p.message, deniedBy('userroles'));
  assert.match(
    p.message,
    new RegExp(`UserRole "ghostly" names Permission\\(s\\) "ghost", which do not exist in namespace "${ns}"`),
  );
  const s = await refusal(
    h.create('UserRole', ns, 'lost', { user: 'alice', scope: 'nowhere', permissions: ['viewer'] }),
  );
  assert.match(s.message, deniedBy('userroles'));
  assert.match(
    s.message,
    new RegExp(`UserRole "lost" names Scope "nowhere", which does not exist in namespace "${ns}"`),
  );
  const g = await refusal(
    h.create('GroupRole', ns, 'ghostly', { group: 'devs', scope: 'prod', permissions: ['ghost'] }),
  );
  assert.match(g.message, deniedBy('grouproles'));
  assert.match(g.message, /GroupRole "ghostly" names Permission\(s\) "ghost"/);
});

test('a grantor with create on userroles but without bind on the Permission is refused naming the verb, and admitted once granted bind', async (t) => {
  const ns = await fixture(t, 'wh-grantor');
  await grant(
    ns,
    'bob',
    'userrole-writer',
    [{ apiGroups: [GROUP], resources: ['userroles'], verbs: ['create', 'get', 'list', 'update', 'patch'] }],
    { resource: 'userroles', verb: 'create' },
  );
  const bob = h.mgmt.as('bob');

  const r = await refusal(
    bob.create(userRole(ns, 'by-bob', { user: 'alice', scope: 'prod', permissions: ['viewer'] })),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('userroles'));
  assert.match(r.message, /user "bob" may not grant Permission\(s\) "viewer" through UserRole "by-bob"/);
  assert.match(
    r.message,
    /verb "bind" or "escalate" on permissions\.permissions\.shturval\.tech with resourceName "viewer"/,
  );
  assert.equal(await h.get('UserRole', ns, 'by-bob'), undefined);

  await grant(
    ns,
    'bob',
    'grant-viewer',
    [{ apiGroups: [GROUP], resources: ['permissions'], resourceNames: ['viewer'], verbs: ['bind'] }],
    { resource: 'permissions', verb: 'bind', name: 'viewer' },
  );
  const admitted = await bob.create(
    userRole(ns, 'by-bob', { user: 'alice', scope: 'prod', permissions: ['viewer'] }),
  );
  assert.equal(admitted.metadata.name, 'by-bob');
  // bind on "viewer" is not bind on "ns-editor": still refused for that one, by name.
  const other = await refusal(
    bob.create(userRole(ns, 'by-bob-2', { user: 'alice', scope: 'team', permissions: ['ns-editor'] })),
  );
  assert.match(other.message, /user "bob" may not grant Permission\(s\) "ns-editor"/);
});

test('an UPDATE that only changes metadata is admitted for a grantor without bind, while a spec change by the same user is refused', async (t) => {
  const ns = await fixture(t, 'wh-meta');
  await h.create('UserRole', ns, 'carol', { user: 'carol', scope: 'prod', permissions: ['viewer'] });
  await grant(
    ns,
    'bob',
    'userrole-writer',
    [{ apiGroups: [GROUP], resources: ['userroles'], verbs: ['get', 'update', 'patch'] }],
    { resource: 'userroles', verb: 'update' },
  );
  const bob = h.mgmt.as('bob');
  const labelled = await bob.patch({ apiVersion: `${GROUP}/v1beta1`, kind: 'UserRole' }, 'carol', ns, {
    type: 'merge',
    body: { metadata: { labels: { team: 'payments' } } },
  });
  assert.equal(labelled.metadata.labels?.team, 'payments');
  // The same through a full replace (PUT), the spec written back with its keys in another order.
  // The operator writes the role meanwhile (finalizer, owner reference, status): a PUT of
  // what was read may meet a 409, which says nothing about admission; read again and retry.
  const replaced = await until('a PUT that does not conflict with the operator', async () => {
    const live = (await bob.get({ apiVersion: `${GROUP}/v1beta1`, kind: 'UserRole' }, 'carol', ns)) as Obj;
    try {
      return await bob.replace({
        ...live,
        metadata: { ...live.metadata, labels: { ...live.metadata.labels, tier: 'gold' } },
        spec: { permissions: ['viewer'], scope: 'prod', user: 'carol' },
      });
    } catch (err) {
      if ((err as { code?: number }).code === 409) return undefined;
      throw err;
    }
  });
  assert.equal(replaced.metadata.labels?.tier, 'gold');
  const r = await refusal(
    bob.patch({ apiVersion: `${GROUP}/v1beta1`, kind: 'UserRole' }, 'carol', ns, {
      type: 'merge',
      body: { spec: { user: 'mallory' } },
    }),
  );
  assert.match(r.message, deniedBy('userroles'));
  assert.match(r.message, /user "bob" may not grant Permission\(s\) "viewer" through UserRole "carol"/);
  assert.equal((await h.get('UserRole', ns, 'carol'))?.spec?.user, 'carol');
});

test('a Tenant without members or admins is refused; a Tenant with them is admitted', async (t) => {
  const ns = await h.namespace(t, 'wh-tenant');
  const r = await refusal(
    h.create('Tenant', ns, 'empty', { namespaces: ['team-a'], admins: [], members: [] }),
  );
  assert.equal(r.code, 403);
  assert.match(r.message, deniedBy('tenants'));
  assert.match(r.message, /Tenant "empty" has neither admins nor members/);
  assert.match(r.message, /spec\.admins or spec\.members/);
  assert.equal(await h.get('Tenant', ns, 'empty'), undefined);

  const ok = await h.create('Tenant', ns, 'acme', { namespaces: ['team-a'], members: ['max'] });
  assert.equal(ok.metadata.name, 'acme');
});

test('the good cases are admitted: a UserRole and a GroupRole of matching levels over existing Permissions and Scopes', async (t) => {
  const ns = await fixture(t, 'wh-good');
  const ur = await h.create('UserRole', ns, 'alice', {
    user: 'alice',
    scope: 'prod',
    permissions: ['viewer'],
  });
  assert.equal(ur.metadata.name, 'alice');
  const gr = await h.create('GroupRole', ns, 'devs', {
    group: 'devs',
    scope: 'team',
    permissions: ['ns-editor'],
    members: ['dora', 'dan'],
  });
  assert.equal(gr.metadata.name, 'devs');
  // The operator's own writes to them (finalizer, owner reference, status) pass the webhook.
  const claimed = await h.waitFor(
    'UserRole',
    ns,
    'alice',
    'the finalizer and the Scope as owner',
    (o) =>
      (o.metadata.finalizers ?? []).includes('permissions.shturval.tech/finalizer') &&
      o.metadata.ownerReferences?.[0]?.name === 'prod',
  );
  assert.equal(claimed.spec?.user, 'alice');
});

test('with ENABLE_WEBHOOKS=false (no server, no registration) the apiserver admits a bad UserRole and the operator reports PermissionNotFound / LevelMismatch in its status', async (t) => {
  const ns = await fixture(t, 'wh-off');
  await h.stopOperator();
  t.after(async () => {
    // Back to the file's normal operator, webhooks registered.
    await h.stopOperator();
    await h.startOperator();
  });
  const op = await h.startOperator({ webhooks: undefined });
  assert.equal(op.webhooks, undefined, 'no webhook server runs');
  assert.equal(await h.admin.find(VWC, 'permissions.shturval.tech'), undefined, 'no webhook is registered');

  await h.create('UserRole', ns, 'ghostly', { user: 'alice', scope: 'prod', permissions: ['ghost'] });
  await h.create('UserRole', ns, 'mixed', { user: 'alice', scope: 'team', permissions: ['viewer'] });
  const reported = (kind: Kind, name: string, reason: string): Promise<Obj> =>
    h.waitFor(
      kind,
      ns,
      name,
      `status reporting ${reason}`,
      (o) => o.status?.ready === false && String(o.status?.message ?? '').includes(reason),
    );
  const ghostly = await reported('UserRole', 'ghostly', 'PermissionNotFound');
  assert.match(String(ghostly.status?.message), /Permission "ghost" does not exist in namespace/);
  const mixed = await reported('UserRole', 'mixed', 'LevelMismatch');
  assert.match(
    String(mixed.status?.message),
    /Permission "viewer" is level cluster, Scope "team" is level namespace/,
  );
});

test("with no replica answering (failurePolicy Fail, DELETE included), a user's delete of a UserRole is refused, while the garbage collector's and the namespace controller's deletes pass the matchCondition", async (t) => {
  const ns = await fixture(t, 'wh-down');
  await h.create('UserRole', ns, 'doomed', { user: 'alice', scope: 'prod', permissions: ['viewer'] });
  await h.create('UserRole', ns, 'doomed-too', { user: 'alice', scope: 'prod', permissions: ['viewer'] });
  await grant(
    ns,
    'bob',
    'userrole-deleter',
    [{ apiGroups: [GROUP], resources: ['userroles'], verbs: ['get', 'delete'] }],
    { resource: 'userroles', verb: 'delete' },
  );
  await h.stopOperator();
  t.after(async () => {
    await h.admin.delete(VWC, 'permissions.shturval.tech').catch(() => undefined);
    await h.startOperator();
  });
  // The configuration as the chart registers it, pointing at a server that is not there.
  await h.admin.apply(webhookConfiguration({ url: 'https://127.0.0.1:1', caBundle: '' }), {
    fieldManager: 'permissions-e2e',
    force: true,
  });
  const userRole = { apiVersion: `${GROUP}/v1beta1`, kind: 'UserRole' };
  const r = await until('the apiserver to call the unreachable webhook', async () => {
    try {
      await h.mgmt.as('bob').delete(userRole, 'doomed', ns);
      return undefined;
    } catch (err) {
      return isApiError(err) && /failed calling webhook/.test(err.message) ? err : undefined;
    }
  });
  assert.match(r.message, /failed calling webhook "userroles\.permissions\.shturval\.tech"/);
  assert.equal((await h.get('UserRole', ns, 'doomed'))?.metadata.deletionTimestamp, undefined, 'not deleted');
  // The control plane's own deleters never reach the webhook: cascades and namespace deletion go on.
  await h.mgmt.asServiceAccount('kube-system', 'generic-garbage-collector').delete(userRole, 'doomed', ns);
  await h.mgmt.asServiceAccount('kube-system', 'namespace-controller').delete(userRole, 'doomed-too', ns);
  for (const name of ['doomed', 'doomed-too']) {
    const o = await h.get('UserRole', ns, name);
    assert.ok(o === undefined || o.metadata.deletionTimestamp !== undefined, `${name} is being deleted`);
  }
});
