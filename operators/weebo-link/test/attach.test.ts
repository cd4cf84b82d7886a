/**
 * Attaching an existing target by hand (RFC 0002, Exploitation: « Rattacher une cible
 * existante »): a target created before its link is refused (`TargetExists`) until an
 * admin gives it the link label and the source annotation; weebo-link then adopts it
 * (records the source's UID, state Linked, the mapping applied) without deleting or
 * locking it, and from then on it departs like any linked target.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  account,
  eventReasons,
  linkNamespaces,
  startLink,
  startStalwart,
  stateOf,
  waitState,
  writeRules,
} from './harness.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
});

describe('attaching an existing target by hand', () => {
  for (const then of ['Keep', 'Delete'] as const) {
    it(`then: ${then}: refused until labelled, then adopted (Linked, UID recorded), and departs as a linked target`, async (t) => {
      const { auth, mail, system, rule } = await linkNamespaces(env, t);
      await writeRules(
        env.admin,
        system,
        exampleRules({ sourceNamespace: auth, targetNamespace: mail, then }),
      );
      await startStalwart(env, t, mail);
      // A box created by hand before any link: its own values, no link header.
      const created = await env.admin.create({
        ...STALWART_ACCOUNT,
        metadata: { name: 'alice', namespace: mail },
        spec: { domainRef: { name: 'old.example' }, name: 'alice', state: 'Locked', quota: 5 },
      });
      await startLink(env, t, system);
      const source = await env.admin.create(authentikUser('alice', auth));

      // Never adopted on its own: refused on the source, the target untouched.
      await eventually('TargetExists on the source', async () =>
        (await eventReasons(env.admin, auth, 'alice')).includes('TargetExists') ? true : undefined,
      );
      const refused = await account(env, mail, 'alice');
      assert.equal(refused?.metadata.labels?.['link.weebo.io/link'], undefined);
      assert.equal(refused?.spec?.state, 'Locked');

      // The admin's gesture: the link label and the source annotation, no source-uid.
      await env.admin.patch(STALWART_ACCOUNT, 'alice', mail, {
        type: 'merge',
        body: {
          metadata: {
            labels: { 'link.weebo.io/link': rule },
            annotations: { 'link.weebo.io/source': `authentik.weebo.io/AuthentikUser/${auth}/alice` },
          },
        },
      });
      const linked = await waitState(
        env,
        mail,
        'alice',
        'Linked',
        (a) => a.metadata.annotations?.['link.weebo.io/source-uid'] === source.metadata.uid,
      );
      assert.equal(linked.metadata.uid, created.metadata.uid, 'the same object: never deleted and recreated');
      // The mapping's values (written literally), and the hand-set field it does not map kept.
      assert.deepEqual(linked.spec, {
        domainRef: { name: 'weebo.poc' },
        name: 'alice',
        state: 'Active',
        deletionPolicy: 'Orphan',
        quota: 5,
      });
      assert.equal(linked.metadata.labels?.['app.kubernetes.io/managed-by'], 'weebo-link');
      await eventually('Event Attached on the target', async () =>
        (await eventReasons(env.admin, mail, 'alice')).includes('Attached') ? true : undefined,
      );
      const reasons = await eventReasons(env.admin, mail, 'alice');
      assert.ok(!reasons.includes('Detaching'), `never a departure: ${reasons.join(', ')}`);

      // From now on a linked target: the source leaves, the rule's departure follows.
      await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
      if (then === 'Keep') {
        const kept = await waitState(env, mail, 'alice', 'Detached');
        assert.equal(kept.metadata.uid, created.metadata.uid);
        assert.equal(kept.spec?.state, 'Locked');
      } else {
        await eventually(
          'the target deleted',
          async () => ((await account(env, mail, 'alice')) === undefined ? true : undefined),
          20_000,
        );
      }
      await eventually('Event Detaching on the target', async () =>
        (await eventReasons(env.admin, mail, 'alice')).includes('Detaching') ? true : undefined,
      );
      if (then === 'Keep') assert.equal(stateOf(await account(env, mail, 'alice')), 'Detached');
    });
  }
});
