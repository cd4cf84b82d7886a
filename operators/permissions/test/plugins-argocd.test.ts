/**
 * The Argo CD plugin on the real apiserver with Argo CD's real AppProject CRD: what
 * others wrote in `argocd-rbac-cm` and in AppProject roles survives every change we make,
 * including an edit that lands between our read and our write (a real 409). Expected
 * texts and roles are written out here; role names are hashed here with node:crypto.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { KubeClient, type KubeObject, type WriteOptions } from '@operators/kit';
import type { Permission, PermissionPlugins } from '../src/api/permission.ts';
import { ArgoCdPlugin } from '../src/plugins/argocd.ts';
import type { PluginContext, Subject } from '../src/plugins/plugin.ts';

const CM = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
const PROJECT = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject' } as const;
type ConfigMap = KubeObject & { data?: Record<string, string> };
type AppProject = KubeObject & { spec: { roles?: Record<string, unknown>[]; [k: string]: unknown } };

const ALICE: Subject = { kind: 'User', name: 'alice@example.com' };
const DEVS: Subject = { kind: 'Group', name: 'oidc:devs' };

function ctx(
  client: KubeClient,
  argoCdNamespace: string,
  owner: { kind: 'UserRole' | 'GroupRole'; name: string },
  subject: Subject,
  argocd: PermissionPlugins['argocd'],
  permission = 'deployers',
): PluginContext {
  const p: Permission = {
    apiVersion: 'permissions.shturval.tech/v1beta1',
    kind: 'Permission',
    metadata: { name: permission, namespace: 'team-a' },
    spec: { level: 'platform', plugins: { argocd } },
  };
  return {
    owner: { ...owner, namespace: 'team-a', uid: `uid-${owner.name}` },
    subject,
    permission: p,
    scope: { metadata: { name: 'platform', namespace: 'team-a' }, spec: { level: 'platform' } },
    target: { cluster: 'platform', client, level: 'platform', namespaces: [] },
    fieldManager: 'permissions.shturval.tech',
    argoCdNamespace,
  };
}

/** A client whose next PUT is preceded by someone else's edit of the same object: our PUT then meets a real 409. */
class Interfering extends KubeClient {
  edits = 0;
  private pending: (() => Promise<void>) | undefined;

  constructor(base: KubeClient) {
    super(base.transport, base.discovery);
  }

  beforeNextReplace(edit: () => Promise<void>): void {
    this.pending = edit;
  }

  override async replace<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
    const edit = this.pending;
    this.pending = undefined;
    if (edit) {
      await edit();
      this.edits++;
    }
    return super.replace(obj, opts);
  }
}

const hash10 = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 10);
const policyOf = async (env: TestEnv, ns: string): Promise<string | undefined> =>
  (await env.admin.get<ConfigMap>(CM, 'argocd-rbac-cm', ns)).data?.['policy.csv'];

describe('Argo CD plugin (real apiserver, real AppProject CRD)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installThirdParty('argoCd');
  });

  it('Argo CD policy.csv lines written by others survive every change we make', async (t) => {
    const ns = await env.namespace(t, 'argocd-csv');
    const plugin = new ArgoCdPlugin();
    const foreign = 'p, role:ci, applications, sync, */*, allow\ng, ops@example.com, role:admin\n';
    await env.admin.create<ConfigMap>({
      ...CM,
      metadata: { name: 'argocd-rbac-cm', namespace: ns, labels: { 'app.kubernetes.io/part-of': 'argocd' } },
      data: { 'policy.csv': foreign, 'policy.default': 'role:readonly', scopes: '[groups, email]' },
    });

    const aliceGet = ctx(env.admin, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
      policies: [{ resource: 'applications', action: 'get', object: 'shop/*' }],
    });
    assert.deepEqual(await plugin.apply(aliceGet), {
      status: 'Applied',
      objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'argocd-rbac-cm' }],
    });
    const aliceBlock = (line: string) =>
      '# BEGIN permissions.shturval.tech team-a/UserRole/alice/deployers\n' +
      `${line}\n` +
      '# END permissions.shturval.tech team-a/UserRole/alice/deployers\n';
    assert.equal(
      await policyOf(env, ns),
      foreign + aliceBlock('p, alice@example.com, applications, get, shop/*, allow'),
    );

    // Someone adds lines before and after our block.
    const cm = await env.admin.get<ConfigMap>(CM, 'argocd-rbac-cm', ns);
    const edited = `p, role:first, clusters, get, *, allow\n${cm.data?.['policy.csv']}p, role:last, logs, get, */*, allow\n`;
    await env.admin.replace<ConfigMap>({ ...cm, data: { ...cm.data, 'policy.csv': edited } });

    // Our change: alice's policies change, devs gets its block.
    const aliceSync = ctx(env.admin, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
      policies: [{ resource: 'applications', action: 'sync', object: 'shop/*' }],
    });
    assert.equal((await plugin.apply(aliceSync)).status, 'Applied');
    const devs = ctx(env.admin, ns, { kind: 'GroupRole', name: 'devs' }, DEVS, {
      policies: [{ resource: 'logs', action: 'get', object: 'shop/*' }],
    });
    assert.equal((await plugin.apply(devs)).status, 'Applied');
    const devsBlock =
      '# BEGIN permissions.shturval.tech team-a/GroupRole/devs/deployers\n' +
      'p, oidc:devs, logs, get, shop/*, allow\n' +
      '# END permissions.shturval.tech team-a/GroupRole/devs/deployers\n';
    assert.equal(
      await policyOf(env, ns),
      'p, role:first, clusters, get, *, allow\n' +
        foreign +
        aliceBlock('p, alice@example.com, applications, sync, shop/*, allow') +
        'p, role:last, logs, get, */*, allow\n' +
        devsBlock,
    );

    // A concurrent edit between our read and our write: our PUT meets 409, we read and merge again.
    const racing = new Interfering(env.admin);
    racing.beforeNextReplace(async () => {
      const live = await env.admin.get<ConfigMap>(CM, 'argocd-rbac-cm', ns);
      await env.admin.replace<ConfigMap>({
        ...live,
        data: {
          ...live.data,
          'policy.csv': `${live.data?.['policy.csv']}p, role:racer, projects, get, *, allow\n`,
        },
      });
    });
    const aliceDelete = ctx(racing, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
      policies: [{ resource: 'applications', action: 'delete', object: 'shop/*' }],
    });
    assert.equal((await plugin.apply(aliceDelete)).status, 'Applied');
    assert.equal(racing.edits, 1, 'the foreign edit landed between our read and our write');
    assert.equal(
      await policyOf(env, ns),
      'p, role:first, clusters, get, *, allow\n' +
        foreign +
        aliceBlock('p, alice@example.com, applications, delete, shop/*, allow') +
        'p, role:last, logs, get, */*, allow\n' +
        devsBlock +
        'p, role:racer, projects, get, *, allow\n',
    );

    // Removing both owners gives back exactly what others wrote; other keys never change.
    assert.deepEqual(await plugin.delete(aliceDelete), { status: 'Applied', objects: [] });
    assert.deepEqual(await plugin.delete(devs), { status: 'Applied', objects: [] });
    assert.deepEqual(
      await plugin.delete(devs),
      { status: 'Applied', objects: [] },
      'a second delete is a no-op',
    );
    const after = await env.admin.get<ConfigMap>(CM, 'argocd-rbac-cm', ns);
    assert.deepEqual(after.data, {
      'policy.csv':
        'p, role:first, clusters, get, *, allow\n' +
        foreign +
        'p, role:last, logs, get, */*, allow\n' +
        'p, role:racer, projects, get, *, allow\n',
      'policy.default': 'role:readonly',
      scopes: '[groups, email]',
    });
    assert.deepEqual(after.metadata.labels, { 'app.kubernetes.io/part-of': 'argocd' });
  });

  it('creates argocd-rbac-cm holding only policy.csv when it does not exist', async (t) => {
    const ns = await env.namespace(t, 'argocd-new');
    const plugin = new ArgoCdPlugin();
    const c = ctx(env.admin, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
      policies: [{ resource: 'applications', action: 'get', object: '*/*' }],
    });
    assert.equal((await plugin.apply(c)).status, 'Applied');
    const created = await env.admin.get<ConfigMap>(CM, 'argocd-rbac-cm', ns);
    assert.deepEqual(created.metadata.labels, { 'app.kubernetes.io/part-of': 'argocd' });
    assert.deepEqual(created.data, {
      'policy.csv':
        '# BEGIN permissions.shturval.tech team-a/UserRole/alice/deployers\n' +
        'p, alice@example.com, applications, get, */*, allow\n' +
        '# END permissions.shturval.tech team-a/UserRole/alice/deployers\n',
    });
  });

  it('AppProject roles written by others survive', async (t) => {
    const ns = await env.namespace(t, 'argocd-proj');
    const plugin = new ArgoCdPlugin();
    const ciRole = {
      name: 'ci',
      description: 'CI pipeline',
      policies: ['p, proj:shop:ci, applications, sync, shop/*, allow'],
      groups: ['ci-bots'],
    };
    await env.admin.create<AppProject>({
      ...PROJECT,
      metadata: { name: 'shop', namespace: ns },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: 'https://kubernetes.default.svc', namespace: 'shop' }],
        roles: [ciRole],
      },
    });
    await env.admin.create<AppProject>({
      ...PROJECT,
      metadata: { name: 'other', namespace: ns },
      spec: { sourceRepos: ['*'] },
    });

    const alice = (action: string, project = 'shop') =>
      ctx(env.admin, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
        projects: [{ project, policies: [{ resource: 'applications', action, object: '*' }] }],
      });
    assert.deepEqual(await plugin.apply(alice('get')), {
      status: 'Applied',
      objects: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', namespace: ns, name: 'shop' }],
    });
    const aliceRole = `shturval-${hash10('team-a/UserRole/alice/deployers')}-deployers`;
    const ours = (action: string, project = 'shop') => ({
      name: aliceRole,
      description: 'permissions.shturval.tech team-a/UserRole/alice/deployers',
      policies: [`p, proj:${project}:${aliceRole}, applications, ${action}, ${project}/*, allow`],
      groups: ['alice@example.com'],
    });
    const rolesOf = async (name = 'shop') => (await env.admin.get<AppProject>(PROJECT, name, ns)).spec.roles;
    assert.deepEqual(await rolesOf(), [ciRole, ours('get')]);

    // Someone adds a role after ours; then ours changes while another edit races our write.
    const live = await env.admin.get<AppProject>(PROJECT, 'shop', ns);
    const auditRole = { name: 'audit', policies: ['p, proj:shop:audit, applications, get, shop/*, allow'] };
    await env.admin.replace<AppProject>({
      ...live,
      spec: { ...live.spec, roles: [...(live.spec.roles ?? []), auditRole] },
    });
    const racing = new Interfering(env.admin);
    const racerRole = { name: 'racer', groups: ['racers'] };
    racing.beforeNextReplace(async () => {
      const p = await env.admin.get<AppProject>(PROJECT, 'shop', ns);
      await env.admin.replace<AppProject>({
        ...p,
        spec: { ...p.spec, roles: [...(p.spec.roles ?? []), racerRole] },
      });
    });
    const syncCtx = { ...alice('sync'), target: { ...alice('sync').target, client: racing } };
    assert.equal((await plugin.apply(syncCtx)).status, 'Applied');
    assert.equal(racing.edits, 1);
    assert.deepEqual(await rolesOf(), [ciRole, ours('sync'), auditRole, racerRole]);

    // Moving the grant to another project takes our role out of the first.
    assert.equal((await plugin.apply(alice('get', 'other'))).status, 'Applied');
    assert.deepEqual(await rolesOf(), [ciRole, auditRole, racerRole]);
    assert.deepEqual(await rolesOf('other'), [ours('get', 'other')]);

    assert.deepEqual(await plugin.delete(alice('get', 'other')), { status: 'Applied', objects: [] });
    assert.deepEqual(await rolesOf(), [ciRole, auditRole, racerRole]);
    assert.equal(await rolesOf('other'), undefined);
  });

  it('a project the Permission names that does not exist is Failed, naming it', async (t) => {
    const ns = await env.namespace(t, 'argocd-missing');
    const plugin = new ArgoCdPlugin();
    const c = ctx(env.admin, ns, { kind: 'UserRole', name: 'alice' }, ALICE, {
      policies: [{ resource: 'logs', action: 'get', object: '*/*' }],
      projects: [
        { project: 'nowhere', policies: [{ resource: 'applications', action: 'get', object: '*' }] },
      ],
    });
    assert.deepEqual(await plugin.apply(c), {
      status: 'Failed',
      message: `AppProject ${ns}/nowhere not found: create it, or drop it from the Permission`,
      objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'argocd-rbac-cm' }],
    });
  });

  it('a subject Argo CD could not read is Failed before anything is written', async (t) => {
    const ns = await env.namespace(t, 'argocd-bad');
    const plugin = new ArgoCdPlugin();
    const c = ctx(
      env.admin,
      ns,
      { kind: 'UserRole', name: 'alice' },
      { kind: 'User', name: 'alice\nmallory' },
      {
        policies: [{ resource: 'logs', action: 'get', object: '*/*' }],
      },
    );
    assert.deepEqual(await plugin.apply(c), {
      status: 'Failed',
      message: 'Argo CD policy subject "alice\\nmallory" contains a line break or another control character',
    });
    assert.equal(await env.admin.find(CM, 'argocd-rbac-cm', ns), undefined);
  });
});
