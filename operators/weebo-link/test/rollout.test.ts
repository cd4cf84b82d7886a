/**
 * RFC 0002's rollout test, step 3, on a real apiserver: creation, isActive: false,
 * removal in one change, return of the user, departure while weebo-link is stopped,
 * and a source recreated with a new UID.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { AUTHENTIK_USER, authentikUser, TEST_CRDS } from '../src/testkit/crds.ts';
import { STALWART_FINALIZER } from '../src/testkit/fake-stalwart.ts';
import {
  account,
  eventReasons,
  linkNamespaces,
  startLink,
  startStalwart,
  stateOf,
  waitState,
} from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

describe('the rollout test (RFC 0002, Exploitation, step 3)', () => {
  it('creation, lock, removal in one change, return, departure while stopped, recreated source', async (t) => {
    const { auth, mail, system } = await linkNamespaces(env, t);
    await startStalwart(env, t, mail);
    let link = await startLink(env, t, system);

    // Creation: Linked within seconds, with the RFC's headers; the operator makes it Ready.
    const started = Date.now();
    const alice = await env.admin.create(authentikUser('alice', auth));
    let a = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (x) => x.status?.conditions?.[0]?.status === 'True',
    );
    const linkedIn = Date.now() - started;
    assert.ok(linkedIn < 5_000, `Linked and Ready in ${linkedIn} ms`);
    assert.equal(a.metadata.labels?.['app.kubernetes.io/managed-by'], 'weebo-link');
    assert.equal(a.metadata.labels?.['link.weebo.io/link'], 'authentik-user-stalwart-account');
    assert.equal(
      a.metadata.annotations?.['link.weebo.io/source'],
      `authentik.weebo.io/AuthentikUser/${auth}/alice`,
    );
    assert.equal(a.metadata.annotations?.['link.weebo.io/source-uid'], alice.metadata.uid);
    assert.deepEqual(a.spec, {
      domainRef: { name: 'weebo.poc' },
      name: 'alice',
      state: 'Active',
      deletionPolicy: 'Orphan',
    });
    assert.ok(a.metadata.finalizers?.includes(STALWART_FINALIZER));
    assert.ok(
      a.metadata.managedFields?.some(
        (m) => m.manager === 'weebo-link/authentik-user-stalwart-account' && m.operation === 'Apply',
      ),
    );

    // isActive: false → state: Locked; the operator's finalizer and status are untouched.
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { spec: { isActive: false } },
    });
    a = await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Locked');
    assert.ok(a.metadata.finalizers?.includes(STALWART_FINALIZER), 'the finalizer survives the re-apply');
    await eventually('status follows the new generation', async () => {
      const x = await account(env, mail, 'alice');
      return x?.status?.observedGeneration === x?.metadata.generation ? true : undefined;
    });
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { spec: { isActive: true } },
    });
    await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Active');

    // Removal in one change: Detaching (Locked), then Detached once safe; the target is kept.
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    a = await waitState(env, mail, 'alice', 'Detached');
    assert.equal(a.spec?.state, 'Locked');
    assert.equal(a.spec?.name, 'alice', 'mapped fields are kept');
    assert.equal(
      a.metadata.annotations?.['link.weebo.io/source-uid'],
      alice.metadata.uid,
      'the trace of the source stays',
    );
    // The Events are recorded after the state they report is written, so they are awaited.
    await eventually('the Detaching and Detached Events, in order', async () => {
      const reasons = (await eventReasons(env.admin, mail, 'alice')).filter((r) => r !== 'Linked');
      return reasons.includes('Detached') ? reasons : undefined;
    }).then((reasons) => assert.deepEqual(reasons, ['Detaching', 'Detached']));

    // The user comes back: reattached automatically (RFC 0002, open question Q4), new source-uid, Active.
    const back = await env.admin.create(authentikUser('alice', auth));
    a = await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Active');
    assert.equal(a.metadata.annotations?.['link.weebo.io/source-uid'], back.metadata.uid);
    assert.notEqual(back.metadata.uid, alice.metadata.uid);

    // Only the header removed: also a departure; re-added, the same source reattaches.
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { metadata: { annotations: { 'link.weebo.io/stalwart': null } } },
    });
    await waitState(env, mail, 'alice', 'Detached');
    await env.admin.patch(AUTHENTIK_USER, 'alice', auth, {
      type: 'merge',
      body: { metadata: { annotations: { 'link.weebo.io/stalwart': 'enabled' } } },
    });
    await waitState(env, mail, 'alice', 'Linked', (x) => x.spec?.state === 'Active');

    // Departure while weebo-link is stopped: locked at restart.
    await link.stop();
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(
      stateOf(await account(env, mail, 'alice')),
      'Linked',
      'nothing happens while weebo-link is down',
    );
    link = await startLink(env, t, system);
    a = await waitState(env, mail, 'alice', 'Detached');
    assert.equal(a.spec?.state, 'Locked');

    // Back to Linked, then the source is recreated under the same name with a new UID while
    // weebo-link is stopped: the old link goes Detached first, then the new source reattaches.
    const third = await env.admin.create(authentikUser('alice', auth));
    await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (x) => x.metadata.annotations?.['link.weebo.io/source-uid'] === third.metadata.uid,
    );
    await link.stop();
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    const fourth = await env.admin.create(authentikUser('alice', auth));
    link = await startLink(env, t, system);
    a = await waitState(
      env,
      mail,
      'alice',
      'Linked',
      (x) => x.metadata.annotations?.['link.weebo.io/source-uid'] === fourth.metadata.uid,
    );
    assert.equal(a.spec?.state, 'Active');
    await eventually('the events tell the recreated source apart', async () => {
      const reasons = await eventReasons(env.admin, mail, 'alice');
      const tail = reasons.slice(reasons.lastIndexOf('Linked') + 1);
      return tail.join(',').endsWith('Detaching,Detached,Reattached') ? true : undefined;
    });
  });
});
