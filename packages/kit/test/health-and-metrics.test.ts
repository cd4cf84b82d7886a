/**
 * The manager's endpoints: user-registered liveness and readiness checks, listed by
 * name when they fail; `/metrics` on loopback by default, apart from the probes; secure
 * metrics decided by the real apiserver (TokenReview + SubjectAccessReview): a service
 * account RBAC allows gets 200, one it does not gets 403, no token gets 401; decisions
 * are reused for their TTL only, refusals (a made-up token) too; concurrent requests
 * with one token share one review; past the bound on reviews in flight a request is
 * refused at once, never queued; a certificate directory is served as given. A cache
 * that cannot sync makes `start()` fail, naming it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  AUTH_CACHE_TTL_MS,
  type AuthDecision,
  KubeClient,
  type KubeObject,
  MAX_CONCURRENT_REVIEWS,
  Manager,
  RequestAuthorizer,
  selfSignedCertificates,
  type WriteOptions,
  writeCertificates,
} from '@operators/kit';
import { pino } from 'pino';
import { httpGet } from './support/http-get.ts';
import { WIDGET, WIDGET_CRD } from './support/sample-operator.ts';

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});

const quiet = pino({ level: 'silent' });

describe('health probes and metrics', () => {
  it('lists failing user checks by name: /healthz answers 500, /readyz 503, and 200 once they pass', async (t) => {
    const ns = await env.namespace(t, 'checks');
    const manager = new Manager({
      name: 'checks',
      client: env.admin,
      logger: quiet,
      healthProbe: { port: 0, host: '127.0.0.1' },
    });
    manager
      .controller('widgets')
      .for(WIDGET, { namespace: ns })
      .reconcile(async () => ({}));
    let broken = true;
    manager.addHealthCheck('database', () => {
      if (broken) throw new Error('connection refused');
    });
    manager.addReadyCheck('warmup', async () => {
      if (broken) throw new Error('index not loaded');
    });
    assert.throws(() => manager.addReadyCheck('warmup', () => {}), /exists already/);
    await manager.start();
    t.after(() => manager.stop());
    const port = manager.healthProbeEndpoint?.port ?? 0;

    const healthz = await httpGet(port, '/healthz');
    assert.equal(healthz.status, 500);
    assert.match(healthz.body, /^\[-\]database failed: connection refused$/m);
    assert.match(healthz.body, /^\[\+\]ping ok$/m);
    const readyz = await httpGet(port, '/readyz');
    assert.equal(readyz.status, 503);
    assert.match(readyz.body, /^\[-\]warmup failed: index not loaded$/m);
    assert.match(readyz.body, /^\[\+\]manager ok$/m, 'the caches have synced: only the user check fails');
    assert.equal((await httpGet(port, '/readyz/manager')).status, 200, 'one check alone');
    assert.equal((await httpGet(port, '/readyz/nosuch')).status, 404);

    broken = false;
    assert.equal((await httpGet(port, '/healthz')).status, 200);
    assert.equal((await httpGet(port, '/readyz')).status, 200);
    assert.equal(
      (await httpGet(port, '/metrics')).status,
      404,
      'metrics are not served on the probe address',
    );
  });

  it('serves /metrics on 127.0.0.1 by default and the probes on all interfaces', async (t) => {
    const manager = new Manager({
      name: 'addresses',
      client: env.admin,
      logger: quiet,
      healthProbe: { port: 0 },
      metrics: { port: 0 },
    });
    await manager.start();
    t.after(() => manager.stop());
    assert.equal(manager.metricsEndpoint?.host, '127.0.0.1');
    assert.equal(manager.healthProbeEndpoint?.host, '0.0.0.0');
    const metrics = await httpGet(manager.metricsEndpoint?.port ?? 0, '/metrics');
    assert.equal(metrics.status, 200);
    for (const name of ['leader_election_master_status', 'process_resident_memory_bytes']) {
      assert.match(metrics.body, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    assert.equal((await httpGet(manager.metricsEndpoint?.port ?? 0, '/healthz')).status, 404);
  });

  it('secure metrics: 200 for a token RBAC allows to get /metrics, 403 for one it does not, 401 without', async (t) => {
    const ns = await env.namespace(t, 'securemetrics');
    const role = `metrics-reader-${ns}`;
    for (const name of ['scraper', 'stranger']) {
      await env.admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
    }
    const rbac = 'rbac.authorization.k8s.io/v1';
    await env.admin.create({
      apiVersion: rbac,
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    } as KubeObject);
    await env.admin.create({
      apiVersion: rbac,
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: ns }],
    } as KubeObject);
    t.after(async () => {
      await env.admin.delete({ apiVersion: rbac, kind: 'ClusterRoleBinding' }, role);
      await env.admin.delete({ apiVersion: rbac, kind: 'ClusterRole' }, role);
    });
    const token = async (sa: string): Promise<string> => {
      const tr = await env.admin.transport.request<{ status: { token: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 600 },
        },
      });
      return tr.status.token;
    };

    const manager = new Manager({
      name: 'securemetrics',
      client: env.admin,
      logger: quiet,
      metrics: { port: 0, host: '127.0.0.1', secure: {} },
    });
    await manager.start();
    t.after(() => manager.stop());
    const port = manager.metricsEndpoint?.port ?? 0;

    const allowed = await httpGet(port, '/metrics', { tls: true, token: await token('scraper') });
    assert.equal(allowed.status, 200, allowed.body);
    assert.match(allowed.body, /^# TYPE leader_election_master_status /m);
    const forbidden = await httpGet(port, '/metrics', { tls: true, token: await token('stranger') });
    assert.equal(forbidden.status, 403, forbidden.body);
    assert.match(forbidden.body, new RegExp(`system:serviceaccount:${ns}:stranger`));
    assert.equal((await httpGet(port, '/metrics', { tls: true })).status, 401);
    assert.equal((await httpGet(port, '/metrics', { tls: true, token: 'not-a-token' })).status, 401);
  });

  it('reuses an authorization decision for its TTL, then asks the apiserver again', async (t) => {
    const ns = await env.namespace(t, 'authcache');
    await env.admin.create({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'sa', namespace: ns },
    });
    const tr = await env.admin.transport.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/serviceaccounts/sa/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    /** The real client, counting the reviews it sends. */
    class Counting extends KubeClient {
      reviews = 0;
      override create<T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<T & KubeObject> {
        this.reviews++;
        return super.create(obj, opts);
      }
    }
    const client = new Counting(env.admin.transport, env.admin.discovery);
    let now = 1_000_000;
    const authorizer = new RequestAuthorizer(client, () => now);
    const header = `Bearer ${tr.status.token}`;
    assert.equal((await authorizer.authorize(header, '/metrics')).kind, 'forbidden');
    assert.equal(client.reviews, 2, 'a TokenReview and a SubjectAccessReview');
    now += AUTH_CACHE_TTL_MS - 1;
    assert.equal((await authorizer.authorize(header, '/metrics')).kind, 'forbidden');
    assert.equal(client.reviews, 2, 'the cached decision was not reused');
    now += 2;
    await authorizer.authorize(header, '/metrics');
    assert.equal(client.reviews, 4, 'the expired decision was reused');

    // A token the apiserver does not accept: one TokenReview, then the refusal is reused.
    const madeUp = 'Bearer not-a-token-at-all';
    assert.equal((await authorizer.authorize(madeUp, '/metrics')).kind, 'unauthenticated');
    assert.equal(client.reviews, 5, 'one TokenReview for the made-up token');
    assert.equal((await authorizer.authorize(madeUp, '/metrics')).kind, 'unauthenticated');
    assert.equal(client.reviews, 5, 'the refusal was not cached');
  });

  it('shares one review between concurrent requests with one token, and refuses at once past the bound on reviews in flight', async () => {
    /** A client whose TokenReviews wait until the test lets them answer (unauthenticated). */
    class Held extends KubeClient {
      reviews = 0;
      private readonly waiting: (() => void)[] = [];
      override async create<T extends KubeObject>(obj: T): Promise<T & KubeObject> {
        this.reviews++;
        await new Promise<void>((r) => this.waiting.push(r));
        return { ...obj, status: { authenticated: false, error: 'made up' } };
      }
      answerAll(): void {
        for (const r of this.waiting.splice(0)) r();
      }
    }
    const client = new Held(env.admin.transport, env.admin.discovery);
    const authorizer = new RequestAuthorizer(client);
    const same = Array.from({ length: 20 }, () => authorizer.authorize('Bearer same', '/metrics'));
    await new Promise((r) => setImmediate(r));
    assert.equal(client.reviews, 1, 'concurrent requests with one token each sent a review');
    const others: Promise<AuthDecision>[] = [];
    for (let i = 1; i < MAX_CONCURRENT_REVIEWS; i++)
      others.push(authorizer.authorize(`Bearer t${i}`, '/metrics'));
    assert.equal(authorizer.reviewsInFlight, MAX_CONCURRENT_REVIEWS);
    const started = performance.now();
    const over = await authorizer.authorize('Bearer one-too-many', '/metrics');
    assert.ok(performance.now() - started < 50, 'the request past the bound waited');
    assert.equal(over.kind, 'overloaded');
    assert.equal(client.reviews, MAX_CONCURRENT_REVIEWS, 'a review was sent past the bound');
    client.answerAll();
    for (const d of await Promise.all([...same, ...others])) assert.equal(d.kind, 'unauthenticated');
    assert.equal(authorizer.reviewsInFlight, 0);
    // Room again, and the refusals are cached: the same token sends no second review.
    assert.equal((await authorizer.authorize('Bearer same', '/metrics')).kind, 'unauthenticated');
    assert.equal(client.reviews, MAX_CONCURRENT_REVIEWS);
  });

  it('secure metrics serve the certificate found in certDir, and its renewal without a restart', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'metrics-certs-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const certs = await selfSignedCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    await writeCertificates(dir, certs);
    const manager = new Manager({
      name: 'certdir',
      client: env.admin,
      logger: quiet,
      metrics: { port: 0, host: '127.0.0.1', secure: { tls: { certDir: dir } } },
    });
    await manager.start();
    t.after(() => manager.stop());
    const { X509Certificate } = await import('node:crypto');
    const fingerprint = (pem: string): string => new X509Certificate(pem).fingerprint256;
    // The served certificate's fingerprint (not verified here: only which one is served matters).
    const served = (): Promise<string> =>
      new Promise<PeerCertificate>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: manager.metricsEndpoint?.port ?? 0,
            path: '/metrics',
            rejectUnauthorized: false,
            agent: false,
          },
          (res) => {
            resolve((res.socket as TLSSocket).getPeerCertificate());
            res.resume();
          },
        );
        req.on('error', reject);
        req.end();
      }).then((c) => c.fingerprint256);
    assert.equal(await served(), fingerprint(certs.serving.cert), 'the certificate from the directory');

    // cert-manager renews into the mounted Secret: the files change, the process does not restart.
    const renewed = await selfSignedCertificates({ dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    await writeCertificates(dir, renewed);
    await eventually(
      'the renewed certificate served',
      async () => ((await served()) === fingerprint(renewed.serving.cert) ? true : undefined),
      30_000,
    );
  });

  it('start() fails after the cache-sync timeout, naming the informer that did not sync', async (t) => {
    const manager = new Manager({
      name: 'unsynced',
      // A user who may not list ConfigMaps anywhere: the informer's list is refused forever.
      client: env.as('nobody-at-all'),
      logger: quiet,
      cacheSyncTimeoutMs: 1_500,
    });
    manager
      .controller('configmaps')
      .for({ apiVersion: 'v1', kind: 'ConfigMap' })
      .reconcile(async () => ({}));
    t.after(() => manager.stop());
    await assert.rejects(manager.start(), /caches did not sync within 1500 ms: .*ConfigMap/);
  });
});
