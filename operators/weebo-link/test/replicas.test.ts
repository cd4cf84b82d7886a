/** Two replicas: one acts, the other takes over when the first stops. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { startWeeboLink } from '../src/app.ts';
import { authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import { linkNamespaces, metricValue, quiet, startStalwart, waitState } from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

describe('two replicas', () => {
  it('one acts; the other takes over when the first stops', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    const election = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };
    const one = await startWeeboLink({
      client: env.admin,
      namespace: system,
      logger: quiet,
      leaderElection: { ...election, identity: 'one' },
    });
    const two = await startWeeboLink({
      client: env.admin,
      namespace: system,
      logger: quiet,
      leaderElection: { ...election, identity: 'two' },
    });
    t.after(() => Promise.all([one.stop(), two.stop()]));
    await eventually('a leader', async () =>
      one.manager.isLeader || two.manager.isLeader ? true : undefined,
    );
    const [leader, standby] = one.manager.isLeader ? [one, two] : [two, one];
    assert.equal(standby.manager.isLeader, false, 'only one acts');
    assert.equal(
      await metricValue(standby.manager, 'leader_election_master_status', { name: 'weebo-link' }),
      0,
    );

    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    assert.equal(standby.rules.rules.size, 0, 'the standby runs no rule');

    await leader.stop();
    await eventually('the standby leads', async () => (standby.manager.isLeader ? true : undefined), 10_000);
    await env.admin.create(authentikUser('bob', auth));
    await waitState(env, mail, 'bob', 'Linked');
    await env.admin.delete(
      { apiVersion: 'authentik.weebo.io/v1alpha1', kind: 'AuthentikUser' },
      'alice',
      auth,
    );
    await waitState(env, mail, 'alice', 'Detached');
  });
});
