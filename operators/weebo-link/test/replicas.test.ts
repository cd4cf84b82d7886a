/** Two replicas: one acts, the other takes over when the first stops. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { startWeeboLink } from '../src/app.ts';
import { authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import { linkNamespaces, metricSample, quiet, startStalwart, waitState } from './harness.ts';

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
    // The series exists on both replicas (a missing one reads undefined, not 0): the
    // "no leader" alert is "no series at 1", so the standby must say 0, not nothing.
    const leaderGauge = (w: typeof one): Promise<number | undefined> =>
      metricSample(w.manager, 'leader_election_master_status', { name: 'weebo-link' });
    // Set once the Lease is acquired, a step after isLeader turns true.
    const reportsLeading = (w: typeof one): Promise<true> =>
      eventually(`${w === one ? 'one' : 'two'} reports 1`, async () =>
        (await leaderGauge(w)) === 1 ? true : undefined,
      );
    await reportsLeading(leader);
    assert.equal(await leaderGauge(standby), 0, 'the standby reports 0');

    await env.admin.create(authentikUser('alice', auth));
    await waitState(env, mail, 'alice', 'Linked');
    assert.equal(standby.rules.rules.size, 0, 'the standby runs no rule');

    await leader.stop();
    await eventually('the standby leads', async () => (standby.manager.isLeader ? true : undefined), 10_000);
    await reportsLeading(standby);
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
