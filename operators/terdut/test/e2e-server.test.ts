/**
 * A TerdutServer's workload and database wiring (DESIGN §4.1, §8), on the real apiserver
 * with Zalando's real postgresql CRD, against terdut-server STAND-INS (contract-faithful,
 * not the real server). No kubelet runs, so Deployments never become Available: nothing
 * here waits on that.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '@operators/kit';
import { condition, Harness, KINDS } from './support/harness.ts';

const h = Harness.forFile();

const SECRET = { apiVersion: 'v1', kind: 'Secret' } as const;
const DEPLOYMENT = { apiVersion: 'apps/v1', kind: 'Deployment' } as const;
const SERVICE = { apiVersion: 'v1', kind: 'Service' } as const;
const POSTGRESQL = { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql' } as const;

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
type Deployment = KubeObject & {
  spec?: {
    template?: {
      spec?: { containers?: { env?: Env[] }[] };
      metadata?: { annotations?: Record<string, string> };
    };
  };
};
const envOf = (d: Deployment): Env[] => d.spec?.template?.spec?.containers?.[0]?.env ?? [];

describe('a TerdutServer’s workload, against terdut-server stand-ins (contract-faithful, not the real server)', () => {
  it('a missing password Secret says PasswordSecretNotFound and builds no Deployment; once it exists, PGPASSWORD refers to it', async (t) => {
    const ns = await h.namespace(t, 'terdut-byo');
    await h.server(ns, 'terdut', {
      database: { dsn: 'postgres://terdut@pg:5432/terdut', passwordSecretRef: { name: 'pg-password' } },
    });
    const waiting = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'DatabaseReady=False',
      (o) => condition(o, 'DatabaseReady')?.reason === 'PasswordSecretNotFound',
    );
    assert.equal(condition(waiting, 'Ready')?.status, 'False');
    assert.match(condition(waiting, 'DatabaseReady')?.message ?? '', /pg-password/);
    assert.equal(await h.admin.find(DEPLOYMENT, 'terdut', ns), undefined);
    await h.eventWith(ns, 'terdut', 'PasswordSecretNotFound');
    await h.admin.create({
      ...SECRET,
      metadata: { name: 'pg-password', namespace: ns },
      stringData: { password: 'hunter22' },
    } as KubeObject);
    await h.ready(KINDS.server, ns, 'terdut');
    const env = envOf(await h.admin.get<Deployment>(DEPLOYMENT, 'terdut', ns));
    assert.deepEqual(
      env.find((e) => e.name === 'PGPASSWORD'),
      { name: 'PGPASSWORD', valueFrom: { secretKeyRef: { name: 'pg-password', key: 'password' } } },
    );
    assert.deepEqual(
      env.find((e) => e.name === 'TERDUT_DATABASE_DSN'),
      { name: 'TERDUT_DATABASE_DSN', value: 'postgres://terdut@pg:5432/terdut' },
    );
  });

  it('a Service deleted by hand comes back', async (t) => {
    const ns = await h.namespace(t, 'terdut-svc');
    await h.server(ns);
    await h.ready(KINDS.server, ns, 'terdut');
    const first = await h.admin.get(SERVICE, 'terdut', ns);
    await h.admin.delete(SERVICE, 'terdut', ns);
    const back = await h.until(
      SERVICE as never,
      ns,
      'terdut',
      'recreated',
      (o) => o.metadata.uid !== first.metadata.uid,
    );
    assert.equal(back.metadata.ownerReferences?.[0]?.kind, 'TerdutServer');
  });

  it('without Zalando’s CRD, a postgresClusterRef says PostgresCrdAbsent (no error loop) while a BYO server beside it works', async (t) => {
    const ns = await h.namespace(t, 'terdut-nocrd');
    await h.server(ns, 'zalando', { database: { postgresClusterRef: { name: 'terdut-pg' } } });
    await h.server(ns, 'byo');
    await h.ready(KINDS.server, ns, 'byo');
    const waiting = await h.until(
      KINDS.server,
      ns,
      'zalando',
      'PostgresCrdAbsent',
      (o) => condition(o, 'DatabaseReady')?.reason === 'PostgresCrdAbsent',
    );
    assert.match(condition(waiting, 'DatabaseReady')?.message ?? '', /postgres-operator|dsn/);
    const errors = h.logs.filter((l) => l.includes('"level":50') && l.includes('zalando'));
    assert.deepEqual(errors, [], 'no reconcile error about it');
  });

  it('with a Zalando cluster: the DSN and password from its conventions; a rotated password says RestartNeeded and a KeyRotationNeeded Event, and never restarts the pods', async (t) => {
    await h.env.installThirdParty('zalando');
    await h.stopOperator();
    await h.startOperator({ zalando: true });
    const ns = await h.namespace(t, 'terdut-zalando');
    const cluster = await h.admin.create({
      ...POSTGRESQL,
      metadata: { name: 'terdut-pg', namespace: ns },
      spec: {
        teamId: 'acid',
        numberOfInstances: 1,
        postgresql: { version: '16' },
        volume: { size: '1Gi' },
        users: { terdut_owner: [] },
        databases: { terdut: 'terdut_owner' },
      },
    } as KubeObject);
    await h.admin.patch(
      POSTGRESQL,
      cluster.metadata.name ?? '',
      ns,
      { type: 'merge', body: { status: { PostgresClusterStatus: 'Running' } } },
      { subresource: 'status' },
    );
    await h.admin.create({
      ...SECRET,
      metadata: {
        name: 'terdut-owner.terdut-pg.credentials.postgresql.acid.zalan.do',
        namespace: ns,
        labels: { application: 'spilo', 'cluster-name': 'terdut-pg' },
      },
      stringData: { username: 'terdut_owner', password: 'first' },
    } as KubeObject);
    await h.server(ns, 'terdut', { database: { postgresClusterRef: { name: 'terdut-pg' } } });
    const server = await h.ready(KINDS.server, ns, 'terdut');
    assert.equal(condition(server, 'DatabaseReady')?.reason, 'DatabaseResolved');
    const deployment = await h.admin.get<Deployment>(DEPLOYMENT, 'terdut', ns);
    assert.deepEqual(
      envOf(deployment).filter((e) => ['PGPASSWORD', 'TERDUT_DATABASE_DSN'].includes(e.name)),
      [
        {
          name: 'PGPASSWORD',
          valueFrom: {
            secretKeyRef: {
              name: 'terdut-owner.terdut-pg.credentials.postgresql.acid.zalan.do',
              key: 'password',
            },
          },
        },
        {
          name: 'TERDUT_DATABASE_DSN',
          value: `postgres://terdut_owner@terdut-pg.${ns}.svc:5432/terdut?sslmode=require`,
        },
      ],
    );

    await h.admin.patch(SECRET, 'terdut-owner.terdut-pg.credentials.postgresql.acid.zalan.do', ns, {
      type: 'merge',
      body: { stringData: { password: 'second' } },
    });
    const rotated = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'RestartNeeded',
      (o) => condition(o, 'RestartNeeded')?.status === 'True',
    );
    assert.equal(condition(rotated, 'RestartNeeded')?.reason, 'KeyRotationNeeded');
    assert.match(
      condition(rotated, 'RestartNeeded')?.message ?? '',
      /kubectl rollout restart deployment\/terdut/,
    );
    assert.equal((await h.eventWith(ns, 'terdut', 'KeyRotationNeeded')).type, 'Warning');
    const after = await h.admin.get<Deployment>(DEPLOYMENT, 'terdut', ns);
    assert.equal(after.metadata.generation, deployment.metadata.generation, 'the Deployment was not touched');

    // `kubectl rollout restart` stamps the template: the condition clears.
    await h.admin.patch(DEPLOYMENT, 'terdut', ns, {
      type: 'merge',
      body: {
        spec: {
          template: {
            metadata: {
              annotations: { 'kubectl.kubernetes.io/restartedAt': new Date(Date.now() + 1000).toISOString() },
            },
          },
        },
      },
    });
    const restarted = await h.until(
      KINDS.server,
      ns,
      'terdut',
      'RestartNeeded=False',
      (o) => condition(o, 'RestartNeeded')?.status === 'False',
    );
    assert.equal(condition(restarted, 'RestartNeeded')?.reason, 'RestartedAfterRotation');
  });
});
