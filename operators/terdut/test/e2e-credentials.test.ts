/**
 * The operator's own key (our answer to DESIGN §6 and §13), on the real apiserver
 * against terdut-server STAND-INS (contract-faithful, not the real server): a fresh
 * server bootstrapped by the operator, the bootstrap race lost to someone else, a
 * bootstrap whose answer was lost, rotation by annotation (the old key refused
 * afterwards, everything keeps working), and an operator restarted mid-way that
 * duplicates nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { SERVER_VERSIONS } from '../src/server/stand-in.ts';
import {
  condition,
  credsOf,
  Harness,
  KINDS,
  MovableClock,
  serverCall,
  serverGet,
} from './support/harness.ts';

const h = Harness.forFile();

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
type Secret = KubeObject & { data?: Record<string, string> };
const decoded = (s: Secret | undefined, k: string): string | undefined =>
  s?.data?.[k] === undefined ? undefined : Buffer.from(s.data[k], 'base64').toString('utf8');

describe('the operator’s credentials, against terdut-server stand-ins (contract-faithful, not the real server)', () => {
  it('on a fresh server the operator bootstraps, keeps the admin key and its own user’s key, and says so in Events; a name too long for a label is hashed to fit', async (t) => {
    const ns = await h.namespace(t, 'terdut-fresh');
    // `<namespace>.<name>` is over 63 characters: the Secret's server label must be fitted.
    const name = 'terdut-with-a-name-long-enough-to-overflow-a-label';
    assert.ok(`${ns}.${name}`.length > 63);
    const standIn = await h.server(ns, name);
    const server = await h.ready(KINDS.server, ns, name);
    assert.equal(condition(server, 'Bootstrapped')?.reason, 'CredentialsReady');
    const key = await h.operatorKey(ns, name);
    assert.equal(standIn.keyOwner(key), 'terdut-operator');
    const secret = await h.admin.get<Secret>(SECRET, `${name}-operator-credentials`, ns);
    assert.equal(
      standIn.keyOwner(decoded(secret, 'adminKey') ?? ''),
      'admin',
      'the bootstrap’s admin key is kept',
    );
    const label = secret.metadata.labels?.['terdut.ryuvia.com/server'] ?? '';
    assert.ok(label.length <= 63 && label.startsWith(`${ns}.terdut-with`), label);
    assert.equal(secret.metadata.annotations?.['terdut.ryuvia.com/server'], `${ns}/${name}`);
    const users = standIn.snapshot().users.map((u) => [u.username, u.admin]);
    assert.deepEqual(users, [
      ['admin', true],
      ['terdut-operator', false],
    ]);
    assert.equal(credsOf(server)?.userID, 2);
    const booted = await h.eventWith(ns, name, 'Bootstrapped');
    assert.match(booted.message ?? '', /admin key is kept in Secret .* never mirrored/);
    await h.eventWith(ns, name, 'CredentialsMinted');
    assert.equal(
      (await serverCall(standIn, 'POST', '/api/bootstrap', undefined, {})).status,
      403,
      'bootstrap is spent',
    );
  });

  it('a server someone else bootstrapped first: AdminCredentialRequired saying what to do, then the admin key Secret works', async (t) => {
    const ns = await h.namespace(t, 'terdut-race');
    const standIn = await h.standIn(ns, 'terdut');
    // The chart's Job wins the race.
    const boot = await serverCall(standIn, 'POST', '/api/bootstrap', undefined, { username: 'chart-job' });
    assert.equal(boot.status, 201);
    await h.server(ns);
    const waiting = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'AdminCredentialRequired',
      (o) => condition(o, 'Bootstrapped')?.reason === 'AdminCredentialRequired',
    );
    assert.match(condition(waiting, 'Bootstrapped')?.message ?? '', /spec\.credentials\.adminKeySecretRef/);
    assert.equal(condition(waiting, 'Ready')?.status, 'False');
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'admin-key', namespace: ns },
      stringData: { apiKey: (boot.json as { api_key: { key: string } }).api_key.key },
    } as KubeObject);
    await h.patchSpec(KINDS.server, ns, 'terdut', {
      credentials: { adminKeySecretRef: { name: 'admin-key' } },
    });
    await h.ready(KINDS.server, ns, 'terdut');
    assert.equal(standIn.keyOwner(await h.operatorKey(ns)), 'terdut-operator');
  });

  it('a bootstrap committed but never answered leaves the admin key lost: AdminCredentialRequired, and the message says why', async (t) => {
    const ns = await h.namespace(t, 'terdut-lostboot');
    const standIn = await h.standIn(ns, 'terdut');
    standIn.dropAfterCommitNext(1, { method: 'POST', path: /^\/api\/bootstrap$/ });
    await h.server(ns);
    const waiting = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'AdminCredentialRequired',
      (o) => condition(o, 'Bootstrapped')?.reason === 'AdminCredentialRequired',
    );
    assert.match(condition(waiting, 'Bootstrapped')?.message ?? '', /answer was lost/);
    assert.equal(standIn.snapshot().users.length, 1, 'the lost bootstrap made its one admin, nothing more');
  });

  for (const version of SERVER_VERSIONS) {
    it(`the rotate annotation mints a new key, swaps the Secret, deletes the old key on the server, and the operator keeps working (stand-in as v${version})`, async (t) => {
      const ns = await h.namespace(t, `terdut-rotate-${version.replaceAll('.', '-')}`);
      const standIn = await h.server(ns, 'terdut', {}, { version });
      await h.ready(KINDS.server, ns, 'terdut');
      await h.create(KINDS.team, ns, 'before', { serverRef: { name: 'terdut' }, displayName: 'Before' });
      await h.ready(KINDS.team, ns, 'before');
      const oldKey = await h.operatorKey(ns);
      const oldId = credsOf(await h.get(KINDS.server, ns, 'terdut'))?.keyID;
      await h.admin.patch(KINDS.server, 'terdut', ns, {
        type: 'merge',
        body: { metadata: { annotations: { 'terdut.ryuvia.com/rotate': 'now' } } },
      });
      const rotated = await h.until(KINDS.server, ns, 'terdut', 'a new key', (o) => {
        const c = credsOf(o);
        return c?.keyID !== oldId && c?.retiringKeyID === undefined && c?.rotateRequest === 'now';
      });
      const newKey = await h.operatorKey(ns);
      assert.notEqual(newKey, oldKey);
      assert.equal(
        (await serverCall(standIn, 'GET', '/api/teams', oldKey)).status,
        401,
        'the old key is refused',
      );
      assert.equal(standIn.keyOwner(newKey), 'terdut-operator');
      assert.deepEqual(
        standIn
          .snapshot()
          .keys.filter((k) => k.userId === credsOf(rotated)?.userID)
          .map((k) => k.id),
        [credsOf(rotated)?.keyID],
        'one key left for the operator',
      );
      await h.eventWith(ns, 'terdut', 'KeyRotated');
      await h.create(KINDS.team, ns, 'after', { serverRef: { name: 'terdut' }, displayName: 'After' });
      await h.ready(KINDS.team, ns, 'after');
      await h.patchSpec(KINDS.team, ns, 'before', { displayName: 'Before Renamed' });
      await h.ready(KINDS.team, ns, 'before');
      const names = (await serverGet<{ name: string }[]>(standIn, '/api/teams', newKey))
        .map((x) => x.name)
        .sort();
      assert.deepEqual(names, ['After', 'Before Renamed']);
    });
  }

  it('spec.credentials.rotateEvery rotates the key once the period has passed since it was minted', async (t) => {
    const ns = await h.namespace(t, 'terdut-period');
    const clock = new MovableClock();
    await h.stopOperator();
    await h.startOperator({ clock });
    const standIn = await h.server(ns, 'terdut', { credentials: { rotateEvery: '24h' } });
    const first = await h.ready(KINDS.server, ns, 'terdut');
    const firstKey = await h.operatorKey(ns);
    clock.offset = 25 * 3_600_000;
    // The next resync (3 s here) sees the period passed.
    const rotated = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'rotated',
      (o) => credsOf(o).keyID !== credsOf(first).keyID && credsOf(o).retiringKeyID === undefined,
    );
    assert.equal(standIn.keyOwner(firstKey), undefined, 'the old key is deleted on the server');
    assert.ok(
      Date.parse(credsOf(rotated).mintedAt ?? '') >
        Date.parse(credsOf(first).mintedAt ?? '') + 24 * 3_600_000,
    );
    await h.stopOperator();
    await h.startOperator();
  });

  it('an operator restarted while creating leaves no duplicate anywhere', async (t) => {
    const ns = await h.namespace(t, 'terdut-restart');
    const standIn = await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    standIn.setLatency(300);
    for (const i of [1, 2, 3]) {
      await h.create(KINDS.team, ns, `team-${i}`, {
        serverRef: { name: 'terdut' },
        displayName: `Team ${i}`,
      });
      await h.create(KINDS.deadman, ns, `wd-${i}`, {
        teamRef: { name: `team-${i}` },
        name: `wd-${i}`,
        matcher: 'alertname=Watchdog',
        timeout: '5m',
      });
      await h.create(KINDS.alertSource, ns, `am-${i}`, {
        teamRef: { name: `team-${i}` },
        name: `am-${i}`,
        kind: 'alertmanager',
      });
    }
    await new Promise((r) => setTimeout(r, 900));
    await h.stopOperator(); // mid-way: some creates answered, some in flight, some not sent
    standIn.setLatency(0);
    await h.startOperator();
    for (const i of [1, 2, 3]) {
      await h.ready(KINDS.team, ns, `team-${i}`, 30_000);
      await h.ready(KINDS.deadman, ns, `wd-${i}`, 30_000);
      await h.ready(KINDS.alertSource, ns, `am-${i}`, 30_000);
    }
    const snap = standIn.snapshot();
    assert.deepEqual(snap.teams.map((x) => x.name).sort(), ['Team 1', 'Team 2', 'Team 3']);
    assert.deepEqual(snap.switches.map((x) => x.name).sort(), ['wd-1', 'wd-2', 'wd-3']);
    assert.deepEqual(snap.integrations.map((x) => x.name).sort(), ['am-1', 'am-2', 'am-3']);
    assert.deepEqual(
      snap.users.map((u) => u.username),
      ['admin', 'terdut-operator'],
      'one operator user',
    );
  });
});

const VAP = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' } as const;
const VAP_BINDING = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
} as const;

/** One way a bootstrap is interrupted: which call fails, or where the operator is stopped. */
interface Interruption {
  readonly name: string;
  /** A 500 on this call, once. */
  readonly fail?: { readonly method: string; readonly path: RegExp };
  /** This call keeps failing until the operator has been stopped and started again. */
  readonly killBefore?: { readonly method: string; readonly path: RegExp };
  /** The credentials Secret write is refused by an admission policy until the test lifts it. */
  readonly refuseSecret?: true;
}

const STEPS: readonly Interruption[] = [
  { name: 'bootstrap-500', fail: { method: 'POST', path: /^\/api\/bootstrap$/ } },
  { name: 'find-user-500', fail: { method: 'GET', path: /^\/api\/users$/ } },
  { name: 'create-user-500', fail: { method: 'POST', path: /^\/api\/users$/ } },
  { name: 'mint-key-500', fail: { method: 'POST', path: /^\/api\/users\/\d+\/api-keys$/ } },
  { name: 'killed-after-bootstrap', killBefore: { method: 'GET', path: /^\/api\/users$/ } },
  { name: 'killed-after-user', killBefore: { method: 'POST', path: /^\/api\/users\/\d+\/api-keys$/ } },
  { name: 'secret-refused', refuseSecret: true },
];

describe('a bootstrap interrupted at any step, against terdut-server stand-ins (contract-faithful, not the real server)', () => {
  it('ends Bootstrapped with exactly one admin key, known to the operator, and one operator key: nothing orphaned, nothing logged', async (t) => {
    const cases = await Promise.all(
      STEPS.map(async (step) => {
        const ns = await h.namespace(t, `terdut-boot-${step.name}`);
        const standIn = await h.standIn(ns, 'terdut');
        if (step.fail) standIn.failNext(1, step.fail);
        if (step.killBefore) standIn.failNext(1_000, step.killBefore);
        return { step, ns, standIn };
      }),
    );
    const refused = cases.find((c) => c.step.refuseSecret);
    assert.ok(refused);
    const policy = `terdut-refuse-credentials-${refused.ns}`;
    await h.admin.apply(
      {
        ...VAP,
        metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['secrets'],
              },
            ],
          },
          validations: [
            {
              expression: "!object.metadata.name.endsWith('-operator-credentials')",
              message: 'refused by the test',
            },
          ],
        },
      } as KubeObject,
      { fieldManager: 'test' },
    );
    await h.admin.apply(
      {
        ...VAP_BINDING,
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ['Deny'],
          matchResources: {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': refused.ns } },
          },
        },
      } as KubeObject,
      { fieldManager: 'test' },
    );
    t.after(async () => {
      await h.admin.delete(VAP_BINDING, policy).catch(() => undefined);
      await h.admin.delete(VAP, policy).catch(() => undefined);
    });
    // The policy is in force once it refuses a probe of the same name shape.
    await eventually('the admission policy refuses credentials Secrets', async () => {
      try {
        await h.admin.create({
          ...SECRET,
          metadata: { name: 'probe-operator-credentials', namespace: refused.ns },
        } as KubeObject);
        await h.admin.delete(SECRET, 'probe-operator-credentials', refused.ns);
        return undefined;
      } catch {
        return true;
      }
    });
    await Promise.all(cases.map((c) => h.server(c.ns)));

    // The refused write: the keys are held, the condition says so, and the lifted policy lets them in.
    const notSaved = await h.until(
      KINDS.server,
      refused.ns,
      'terdut',
      'CredentialsNotSaved',
      (o) => condition(o, 'Bootstrapped')?.reason === 'CredentialsNotSaved',
    );
    assert.match(condition(notSaved, 'Bootstrapped')?.message ?? '', /operator-credentials/);
    await h.admin.delete(VAP_BINDING, policy);
    // Held in this process only: it must reach the Secret before the operator is stopped below.
    await h.until(
      KINDS.server,
      refused.ns,
      'terdut',
      'Bootstrapped after the policy is lifted',
      (o) => condition(o, 'Bootstrapped')?.status === 'True',
    );

    // Stopped mid-way: each killed case is stuck at its step; a new operator resumes from the Secret.
    for (const c of cases.filter((x) => x.step.killBefore)) {
      await eventually(`${c.step.name}: stuck at its step`, async () =>
        c.standIn.requests.some((r) => r.fault === 'fail') ? true : undefined,
      );
    }
    await h.stopOperator();
    for (const c of cases) c.standIn.clearFaults();
    await h.startOperator();

    for (const c of cases) {
      const server = await h.until(
        KINDS.server,
        c.ns,
        'terdut',
        `${c.step.name}: Bootstrapped`,
        (o) => condition(o, 'Bootstrapped')?.status === 'True',
      );
      const snap = c.standIn.snapshot();
      assert.deepEqual(
        snap.users.map((u) => [u.username, u.admin]),
        [
          ['admin', true],
          ['terdut-operator', false],
        ],
        c.step.name,
      );
      const secret = await h.admin.get<Secret>(SECRET, 'terdut-operator-credentials', c.ns);
      const adminKeys = snap.keys.filter((k) => k.userId === 1).map((k) => String(k.id));
      assert.deepEqual(
        adminKeys,
        [decoded(secret, 'adminKeyID')],
        `${c.step.name}: one admin key, the stored one`,
      );
      assert.equal(c.standIn.keyOwner(decoded(secret, 'adminKey') ?? ''), 'admin', c.step.name);
      const botKeys = snap.keys.filter((k) => k.userId === 2).map((k) => String(k.id));
      assert.deepEqual(
        botKeys,
        [decoded(secret, 'keyID')],
        `${c.step.name}: one operator key, the stored one`,
      );
      assert.equal(c.standIn.keyOwner(decoded(secret, 'apiKey') ?? ''), 'terdut-operator', c.step.name);
      const events = JSON.stringify(await h.events(c.ns));
      for (const k of c.standIn.issuedSecrets()) {
        assert.ok(!h.logs.join('\n').includes(k), `${c.step.name}: a key in the logs`);
        assert.ok(!events.includes(k), `${c.step.name}: a key in an Event`);
        assert.ok(!JSON.stringify(server).includes(k), `${c.step.name}: a key in the status`);
      }
    }
  });
});
