/**
 * Deleting whole namespaces leaves no stuck finalizer, on a PRIVATE plane running
 * kube-controller-manager (its namespace controller deletes everything in a namespace,
 * Secrets included, in no particular order), against the terdut-server STAND-IN
 * (contract-faithful, not the real server): a namespace holding a server, a team and one
 * of each child; and a consuming namespace holding a cross-namespace team and its
 * children. The credentials Secret and the mirror stay readable (our finalizer) until the
 * teams' finalizers have deleted their teams on the server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import type { StandIn } from '../src/server/stand-in.ts';
import { Harness, KINDS } from './support/harness.ts';

let env: TestEnv;
let h: Harness;
before(async () => {
  env = await privateTestEnv({ controllerManager: true });
  h = await Harness.start({}, env);
});
after(async () => {
  await h?.close();
  await env?.close();
});

const NAMESPACE = { apiVersion: 'v1', kind: 'Namespace' } as const;

async function children(ns: string, team: string): Promise<void> {
  await h.create(KINDS.escalation, ns, `${team}-esc`, {
    teamRef: { name: team },
    levels: [{ timeout: '5m', targets: [{ kind: 'oncall' }] }],
  });
  await h.create(KINDS.deadman, ns, `${team}-wd`, {
    teamRef: { name: team },
    name: `${team}-wd`,
    matcher: 'alertname=Watchdog',
    timeout: '5m',
  });
  await h.create(KINDS.alertSource, ns, `${team}-am`, {
    teamRef: { name: team },
    kind: 'alertmanager',
    name: `${team}-am`,
  });
  for (const [gvk, name] of [
    [KINDS.escalation, `${team}-esc`],
    [KINDS.deadman, `${team}-wd`],
    [KINDS.alertSource, `${team}-am`],
  ] as const) {
    await h.ready(gvk, ns, name, 30_000);
  }
}

async function namespaceGone(ns: string): Promise<void> {
  await eventually(
    `namespace ${ns} gone`,
    async () => ((await h.admin.find(NAMESPACE, ns)) ? undefined : true),
    90_000,
  );
}

describe('deleting namespaces, against the terdut-server stand-in (contract-faithful, not the real server)', () => {
  let serverNs: string;
  let tenantNs: string;
  let standIn: StandIn;

  it('deleting a consuming namespace deletes its team and children on the server and removes the namespace', async (t) => {
    serverNs = await h.namespace(t, 'terdut-host');
    tenantNs = await h.namespace(t, 'terdut-guest');
    standIn = await h.server(serverNs, 'terdut', { allowedTeams: { namespaces: { from: 'All' } } });
    await h.ready(KINDS.server, serverNs, 'terdut');
    await h.create(KINDS.team, serverNs, 'home', { serverRef: { name: 'terdut' }, displayName: 'Home' });
    await h.create(KINDS.team, tenantNs, 'guest', {
      serverRef: { name: 'terdut', namespace: serverNs },
      displayName: 'Guest',
    });
    await h.ready(KINDS.team, serverNs, 'home', 30_000);
    await h.ready(KINDS.team, tenantNs, 'guest', 30_000);
    await children(serverNs, 'home');
    await children(tenantNs, 'guest');
    assert.deepEqual(
      standIn
        .snapshot()
        .teams.map((x) => x.name)
        .sort(),
      ['Guest', 'Home'],
    );

    await h.admin.delete(NAMESPACE, tenantNs);
    await namespaceGone(tenantNs);
    const snap = standIn.snapshot();
    assert.deepEqual(
      snap.teams.map((x) => x.name),
      ['Home'],
    );
    assert.deepEqual(
      snap.switches.map((x) => x.name),
      ['home-wd'],
    );
    assert.deepEqual(
      snap.integrations.map((x) => x.name),
      ['home-am'],
    );
  });

  it('deleting the server’s own namespace deletes everything on the server and removes the namespace', async () => {
    await h.admin.delete(NAMESPACE, serverNs);
    await namespaceGone(serverNs);
    const snap = standIn.snapshot();
    assert.deepEqual([snap.teams, snap.switches, snap.integrations], [[], [], []]);
  });
});
