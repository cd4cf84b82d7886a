/**
 * `then: Delete` end to end on a real apiserver (RFC 0002, lifecycle: « then: Delete →
 * suppression (la deletionPolicy de la cible s'applique) »): weebo-link runs as its own
 * service account with exactly the RBAC the chart renders for a Delete rule, and the fake
 * Stalwart plays the target operator (its finalizer, its status, its mailboxes and its
 * `deletionPolicy`).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import { exampleRules } from '../src/example-rules.ts';
import { AUTHENTIK_USER, authentikUser, STALWART_ACCOUNT, TEST_CRDS } from '../src/testkit/crds.ts';
import {
  type FakeStalwart,
  fakeStalwartRbac,
  type Mailbox,
  STALWART_SERVICE_ACCOUNT,
  startFakeStalwart,
} from '../src/testkit/fake-stalwart.ts';
import { account, applyChartRbac, eventsAbout, quiet, startLink, waitState, writeRules } from './harness.ts';

let env: TestEnv;
let helm: string;
before(async () => {
  env = await testEnv();
  await env.installCrds(TEST_CRDS);
  helm = (await resolveBinaries(() => {})).helm;
});

/** A request weebo-link's client sent, as it went on the wire. */
interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

describe('then: Delete on a real apiserver', () => {
  it('a departed source’s target is Locked, then deleted once safe, with its UID as precondition; the target’s deletionPolicy decides the mailbox', async (t) => {
    const auth = await env.namespace(t, 'auth');
    const mail = await env.namespace(t, 'mail');
    const system = await env.namespace(t, 'weebo-link');
    // A Delete rule whose target deletionPolicy comes from the source: bob's account is
    // Delete (the operator removes the mailbox), alice's Orphan (the mailbox stays).
    const rulesYaml = exampleRules({ sourceNamespace: auth, targetNamespace: mail })
      .replace('then: Keep', 'then: Delete')
      .replace(
        'deletionPolicy: Orphan',
        `deletionPolicy: { cel: 'source.spec.username == "bob" ? "Delete" : "Orphan"' }`,
      );
    assert.ok(rulesYaml.includes('then: Delete') && rulesYaml.includes('"bob" ? "Delete"'));

    // The chart's RBAC for these rules, whatever it renders today (one ClusterRole or
    // namespaced Roles), applied as is: weebo-link gets exactly that.
    const rbac = await applyChartRbac(env, t, helm, system, rulesYaml);
    type PolicyRule = { resources?: string[]; verbs?: string[] };
    assert.ok(
      rbac.some((o) =>
        ((o.rules ?? []) as PolicyRule[]).some(
          (r) => r.resources?.includes('stalwartaccounts') && r.verbs?.includes('delete'),
        ),
      ),
      'the chart grants delete on the target kind for a Delete rule',
    );
    await writeRules(env.admin, system, rulesYaml);

    // weebo-link as its service account; every request it sends is recorded.
    const client = env.asServiceAccount(system, 'weebo-link');
    const sent: Sent[] = [];
    const request = client.transport.request.bind(client.transport);
    client.transport.request = (<T>(o: Parameters<typeof request>[0]): Promise<T> => {
      sent.push({ method: o.method, path: o.path, body: JSON.parse(JSON.stringify(o.body ?? null)) });
      return request<T>(o);
    }) as typeof request;
    const deletes = (): Sent[] => sent.filter((r) => r.method === 'DELETE');

    for (const o of fakeStalwartRbac()) await env.admin.apply(o, { fieldManager: 'tests', force: true });
    const operatorClient = env.asServiceAccount(
      STALWART_SERVICE_ACCOUNT.namespace,
      STALWART_SERVICE_ACCOUNT.name,
    );
    // The mail store outlives the operator's restarts, as Stalwart's does.
    const mailboxes = new Map<string, Mailbox>();
    const operator = { client: operatorClient, namespace: mail, logger: quiet, mailboxes };
    let stalwart: FakeStalwart = await startFakeStalwart(operator);
    t.after(() => stalwart.stop());
    await startLink(env, t, system, { client });

    await env.admin.create(authentikUser('alice', auth));
    await env.admin.create(authentikUser('bob', auth));
    const ready = (a: { metadata: KubeObject['metadata']; status?: { observedGeneration?: number } }) =>
      a.status?.observedGeneration === a.metadata.generation;
    const alice = await waitState(env, mail, 'alice', 'Linked', ready);
    const bob = await waitState(env, mail, 'bob', 'Linked', ready);
    assert.equal(alice.spec?.deletionPolicy, 'Orphan');
    assert.equal(bob.spec?.deletionPolicy, 'Delete');
    assert.deepEqual(
      [...mailboxes.values()].sort((x, y) => x.address.localeCompare(y.address)),
      [
        { address: 'alice@weebo.poc', state: 'Active' },
        { address: 'bob@weebo.poc', state: 'Active' },
      ],
    );

    // The operator is down: the safe state cannot be confirmed (no fresh status).
    await stalwart.stop();
    await env.admin.delete(AUTHENTIK_USER, 'alice', auth);
    await env.admin.delete(AUTHENTIK_USER, 'bob', auth);
    const unconfirmed = (a: { metadata: KubeObject['metadata']; spec?: { state?: string } }) =>
      a.spec?.state === 'Locked' && a.metadata.labels?.['link.weebo.io/state'] === 'Detaching';
    for (const name of ['alice', 'bob']) {
      const detaching = await waitState(env, mail, name, 'Detaching', unconfirmed);
      assert.notEqual(detaching.status?.observedGeneration, detaching.metadata.generation, 'safe is false');
      await eventually(`${name} Detaching Event`, async () =>
        (await eventsAbout(env.admin, mail, name)).some((e) => e.reason === 'Detaching') ? true : undefined,
      );
    }
    assert.deepEqual(deletes(), [], 'nothing deleted while safe is false');

    // The operator is back: it confirms Locked (status for the new generation), safe
    // holds, weebo-link deletes, the operator's finalizer applies the deletionPolicy.
    stalwart = await startFakeStalwart(operator);
    for (const name of ['alice', 'bob'])
      await eventually(`${name} deleted`, async () =>
        (await account(env, mail, name)) === undefined ? true : undefined,
      );

    const path = (name: string): string =>
      `/apis/stalwart.weebo.io/v1alpha1/namespaces/${mail}/stalwartaccounts/${name}`;
    const body = (uid: string | undefined) => ({
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid },
    });
    assert.deepEqual(
      deletes().sort((x, y) => x.path.localeCompare(y.path)),
      [
        { method: 'DELETE', path: path('alice'), body: body(alice.metadata.uid) },
        { method: 'DELETE', path: path('bob'), body: body(bob.metadata.uid) },
      ],
      'one DELETE per target, each with that target’s UID as its precondition',
    );
    assert.deepEqual(mailboxes.get('alice@weebo.poc'), { address: 'alice@weebo.poc', state: 'Locked' });
    assert.equal(mailboxes.get('bob@weebo.poc'), undefined, 'deletionPolicy Delete: mailbox removed');

    // A target replaced under the same name (another UID) between the decision and the
    // DELETE: the very request weebo-link sent for alice is refused (409), nothing deleted.
    const replaced = await env.admin.create({
      ...STALWART_ACCOUNT,
      metadata: { name: 'alice', namespace: mail },
      spec: { domainRef: { name: 'weebo.poc' }, name: 'alice', state: 'Active', deletionPolicy: 'Orphan' },
    });
    assert.notEqual(replaced.metadata.uid, alice.metadata.uid);
    const aliceDelete = deletes().find((r) => r.path === path('alice'));
    assert.ok(aliceDelete);
    await assert.rejects(
      request({ method: 'DELETE', path: aliceDelete.path, body: aliceDelete.body }),
      (err) => isApiError(err, ApiErrorReason.Conflict),
    );
    const still = await account(env, mail, 'alice');
    assert.equal(still?.metadata.uid, replaced.metadata.uid);
    assert.equal(still?.metadata.deletionTimestamp, undefined, 'the replacement is not being deleted');
  });
});
