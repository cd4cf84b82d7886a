/**
 * A real OPA (built from its Go module) polling our BundleServer every 1–2 s and
 * evaluating the sample policy `support/policy/authz.rego`: the answer to "may alice
 * get pods in fleet/c1" flips within one polling period after the model gains or
 * loses her UserRole; the policy's answers over users, groups, wildcards and
 * namespace-level Scopes are those written out here; and an OPA started while the
 * model is still being rebuilt (503) activates the bundle once it is ready.
 *
 * The engine is fed directly (no apiserver): the operator-level path from the API to
 * the model is tested elsewhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BundleServer } from '../src/model/bundle-server.ts';
import { StorageEngine } from '../src/model/storage-engine.ts';
import { groupRole, permission, scope, userRole } from './support/model-objects.ts';
import { type Opa, startOpa } from './support/opa.ts';

/** OPA's max polling delay in these tests, and what a download and activation may add. */
const MAX_DELAY_S = 2;
const SLACK_MS = 3000;

interface Question {
  readonly user: string;
  readonly groups?: readonly string[];
  readonly verb: string;
  readonly resource: string;
  readonly apiGroup: string;
  readonly cluster: string;
  readonly namespace?: string;
}

const ALICE_GETS_PODS: Question = {
  user: 'alice',
  verb: 'get',
  resource: 'pods',
  apiGroup: '',
  cluster: 'fleet/c1',
};

async function allowed(opa: Opa, q: Question): Promise<boolean> {
  const result = await opa.query('authz/allow', q);
  assert.equal(typeof result, 'boolean', `authz.allow is defined for ${JSON.stringify(q)}`);
  return result as boolean;
}

/** Polls until OPA answers `want`; resolves with how long that took. */
async function answersWithin(opa: Opa, q: Question, want: boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if ((await allowed(opa, q)) === want) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) {
      throw new Error(
        `OPA still answers ${!want} after ${timeoutMs} ms for ${JSON.stringify(q)}\n${opa.log()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function baseModel(): StorageEngine {
  const e = new StorageEngine();
  e.upsertPermission(
    permission('team', 'view', {
      granted_cluster_rules: [{ apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list'] }],
    }),
  );
  e.upsertPermission(
    permission('team', 'deployer', {
      granted_cluster_rules: [{ apiGroups: ['apps'], resources: ['*'], verbs: ['*'] }],
    }),
  );
  e.upsertPermission(
    permission('team', 'metrics', {
      granted_cluster_rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    }),
  );
  e.upsertScope(scope('team', 'c1'), { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
  e.upsertScope(scope('team', 'ns-a', { level: 'namespace', namespaces: ['team-a'] }), {
    clusters: ['fleet/c1', 'fleet/c2'],
    paths: ['/fleet/c1/team-a', '/fleet/c2/team-a'],
  });
  return e;
}

describe('real OPA polling the bundle', () => {
  let engine: StorageEngine;
  let server: BundleServer;
  let opa: Opa;

  before(async () => {
    engine = baseModel();
    engine.markReady();
    server = new BundleServer({ engine, host: '127.0.0.1', port: 0 });
    await server.start(new AbortController().signal);
    opa = await startOpa({
      serviceUrl: `http://127.0.0.1:${server.address()?.port}`,
      minDelaySeconds: 1,
      maxDelaySeconds: MAX_DELAY_S,
    });
  });
  after(async () => {
    await opa?.stop();
    await server?.stop();
  });

  it('real OPA answers false, true within one polling period after a UserRole is added, and false after removal', async (t) => {
    assert.equal(await opa.activeRevision(), engine.revision());
    assert.equal(await allowed(opa, ALICE_GETS_PODS), false);

    engine.upsertRole('UserRole', userRole('team', 'alice-view', 'alice', 'c1', ['view']));
    const granted = await answersWithin(opa, ALICE_GETS_PODS, true, 20_000);
    assert.ok(granted < MAX_DELAY_S * 1000 + SLACK_MS, `granted after ${granted} ms`);
    assert.equal(await opa.activeRevision(), engine.revision());

    engine.removeRole('UserRole', 'team', 'alice-view');
    const revoked = await answersWithin(opa, ALICE_GETS_PODS, false, 20_000);
    assert.ok(revoked < MAX_DELAY_S * 1000 + SLACK_MS, `revoked after ${revoked} ms`);
    t.diagnostic(`granted after ${granted} ms, revoked after ${revoked} ms (polling 1-${MAX_DELAY_S} s)`);
    assert.equal(await opa.activeRevision(), engine.revision());
  });

  it('real OPA answers the sample policy over users, groups, wildcards and namespace-level Scopes as written here', async () => {
    engine.upsertRole('UserRole', userRole('team', 'carol-view', 'carol', 'c1', ['view']));
    engine.upsertRole('GroupRole', groupRole('team', 'deployers', 'deployers', 'ns-a', ['deployer', 'view']));
    engine.upsertRole('UserRole', userRole('team', 'dan-metrics', 'dan', 'c1', ['metrics']));
    engine.upsertRole('UserRole', userRole('team', 'erin-ghost', 'erin', 'no-such-scope', ['view']));
    engine.upsertRole('UserRole', userRole('team', 'frank-ghost', 'frank', 'c1', ['no-such-permission']));
    const revision = engine.revision();
    const t0 = Date.now();
    while ((await opa.activeRevision()) !== revision) {
      assert.ok(Date.now() - t0 < 20_000, `OPA did not activate ${revision}\n${opa.log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const pods = { verb: 'get', resource: 'pods', apiGroup: '' };
    const deploy = { verb: 'patch', resource: 'deployments', apiGroup: 'apps' };
    const table: [Question, boolean][] = [
      [{ user: 'carol', ...pods, cluster: 'fleet/c1' }, true],
      [{ user: 'carol', ...pods, cluster: 'fleet/c1', namespace: 'anything' }, true],
      [{ user: 'carol', ...pods, cluster: 'fleet/c2' }, false],
      [{ user: 'carol', verb: 'delete', resource: 'pods', apiGroup: '', cluster: 'fleet/c1' }, false],
      [{ user: 'carol', verb: 'get', resource: 'pods', apiGroup: 'apps', cluster: 'fleet/c1' }, false],
      [{ user: 'carol', verb: 'list', resource: 'services', apiGroup: '', cluster: 'fleet/c1' }, true],
      // A group's binding, at namespace level: only in its namespaces, in each of its clusters.
      [{ user: 'gina', groups: ['deployers'], ...deploy, cluster: 'fleet/c2', namespace: 'team-a' }, true],
      [
        { user: 'gina', groups: ['others', 'deployers'], ...pods, cluster: 'fleet/c1', namespace: 'team-a' },
        true,
      ],
      [{ user: 'gina', groups: ['deployers'], ...deploy, cluster: 'fleet/c2', namespace: 'team-b' }, false],
      [{ user: 'gina', groups: ['deployers'], ...deploy, cluster: 'fleet/c2' }, false],
      [{ user: 'gina', groups: ['deployers'], ...deploy, cluster: 'fleet/c3', namespace: 'team-a' }, false],
      [
        {
          user: 'gina',
          groups: ['deployers'],
          verb: 'get',
          resource: 'pods',
          apiGroup: 'apps',
          cluster: 'fleet/c1',
          namespace: 'team-a',
        },
        true,
      ],
      [{ user: 'gina', ...deploy, cluster: 'fleet/c2', namespace: 'team-a' }, false],
      // The group name is not a user name.
      [{ user: 'deployers', ...deploy, cluster: 'fleet/c2', namespace: 'team-a' }, false],
      // A rule without resources grants no resource.
      [{ user: 'dan', verb: 'get', resource: 'metrics', apiGroup: '', cluster: 'fleet/c1' }, false],
      // Bindings to a Scope or Permission the model does not hold grant nothing.
      [{ user: 'erin', ...pods, cluster: 'fleet/c1' }, false],
      [{ user: 'frank', ...pods, cluster: 'fleet/c1' }, false],
      [{ user: 'nobody', ...pods, cluster: 'fleet/c1' }, false],
    ];
    for (const [q, want] of table) assert.equal(await allowed(opa, q), want, JSON.stringify(q));
  });
});

describe('real OPA against a model still being rebuilt', () => {
  it('real OPA activates the bundle only once the model is ready (503 before)', async () => {
    const engine = baseModel();
    engine.upsertRole('UserRole', userRole('team', 'alice-view', 'alice', 'c1', ['view']));
    const server = new BundleServer({ engine, host: '127.0.0.1', port: 0, retryAfterSeconds: 1 });
    await server.start(new AbortController().signal);
    const opa = await startOpa({
      serviceUrl: `http://127.0.0.1:${server.address()?.port}`,
      waitForBundle: false,
    });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(await opa.healthy(), false, 'no bundle is activated while /bundle answers 503');
      assert.equal(await opa.activeRevision(), undefined);
      assert.equal(await opa.query('authz/allow', ALICE_GETS_PODS), false);

      engine.markReady();
      const t0 = Date.now();
      while (!(await opa.healthy())) {
        assert.ok(Date.now() - t0 < 20_000, `OPA did not activate the bundle\n${opa.log()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(await opa.activeRevision(), engine.revision());
      assert.equal(await allowed(opa, ALICE_GETS_PODS), true);
    } finally {
      await opa.stop();
      await server.stop();
    }
  });
});
