/**
 * The webhook server on its own, called over TLS by a test client that trusts the
 * test CA: what it answers to good and bad input, handler failures and timeouts, its
 * metrics, certificate rotation, keep-alive and graceful stop. The apiserver's side
 * (registration, caBundle, the calls it makes) is in webhook-apiserver.test.ts.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import {
  allow,
  CERT_FILE,
  CertificateReloader,
  deny,
  FakeClock,
  KEY_FILE,
  type KubeObject,
  mutateTo,
  selfSignedCertificates,
  type WebhookCertificates,
  WebhookServer,
  type WebhookServerOptions,
  writeCertificates,
} from '@operators/kit';
import { pino } from 'pino';
import { Registry } from 'prom-client';

const quiet = pino({ level: 'silent' });
let certs: WebhookCertificates;
let certDir: string;

before(async () => {
  certs = await selfSignedCertificates();
  certDir = await mkdtemp(join(tmpdir(), 'webhook-certs-'));
  await writeCertificates(certDir, certs);
});
after(async () => {
  await rm(certDir, { recursive: true, force: true });
});

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly json: Record<string, unknown>;
  readonly fingerprint: string;
  readonly reusedSocket: boolean;
}

function call(
  port: number,
  path: string,
  body: string | Buffer | undefined,
  opts: { method?: string; contentType?: string; agent?: Agent; ca?: string; chunked?: boolean } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': opts.contentType ?? 'application/json' };
    if (body !== undefined && !opts.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'POST',
        headers,
        ca: opts.ca ?? certs.ca.cert,
        agent: opts.agent ?? false,
      },
      (res) => {
        // Read now: a kept-alive socket goes back to the agent at the end of the response.
        const peer = (res.socket as TLSSocket).getPeerX509Certificate();
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // Not JSON: the test asserts on `body`.
          }
          resolve({
            status: res.statusCode ?? 0,
            body: text,
            json,
            fingerprint: peer?.fingerprint256 ?? '',
            reusedSocket: req.reusedSocket,
          });
        });
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

interface StatusOf {
  readonly status: string;
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

function review(request: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
}

const CM = (labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'n', labels },
  data: { a: '1' },
});

function admissionRequest(object: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uid: 'req-1',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    namespace: 'n',
    name: 'c',
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object,
    ...extra,
  };
}

async function started(t: TestContext, server: WebhookServer): Promise<number> {
  await server.start(new AbortController().signal);
  t.after(() => server.stop());
  return server.port;
}

function newServer(opts: Partial<WebhookServerOptions> = {}): WebhookServer {
  return new WebhookServer({ host: '127.0.0.1', port: 0, certDir, logger: quiet, ...opts });
}

/** Resolves `p`, or fails after `ms` naming `what` (for waits that have no natural end). */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('the webhook server', () => {
  it('answers with the handler decision, the request uid, warnings and the denial status', async (t) => {
    const seen: unknown[] = [];
    const server = newServer().validating('/validate', (req) => {
      seen.push(req.userInfo.username, req.operation, req.namespace);
      return req.object?.metadata.labels?.forbidden
        ? deny('Forbidden', 'the label forbidden is not allowed here', { warnings: ['think again'] })
        : allow(['looked fine']);
    });
    const port = await started(t, server);

    const ok = await call(port, '/validate', review(admissionRequest(CM())));
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'req-1', allowed: true, warnings: ['looked fine'] },
    });
    const no = await call(
      port,
      '/validate',
      review({ ...admissionRequest(CM({ forbidden: 'yes' })), uid: 'req-2' }),
    );
    assert.deepEqual(no.json.response, {
      uid: 'req-2',
      allowed: false,
      status: {
        status: 'Failure',
        code: 403,
        reason: 'Forbidden',
        message: 'the label forbidden is not allowed here',
      },
      warnings: ['think again'],
    });
    assert.deepEqual(seen.slice(0, 3), ['alice', 'CREATE', 'n']);
  });

  it('turns a desired object into a base64 JSON patch against the request object', async (t) => {
    const server = newServer().mutating('/mutate', (req) => {
      const cm = req.object as ReturnType<typeof CM>;
      return mutateTo({
        ...cm,
        metadata: { ...cm.metadata, labels: { ...cm.metadata.labels, 'kit.test/stamped': 'yes' } },
      });
    });
    const port = await started(t, server);
    const reply = await call(port, '/mutate', review(admissionRequest(CM({ app: 'x' }))));
    const response = reply.json.response as { allowed: boolean; patchType: string; patch: string };
    assert.equal(response.allowed, true);
    assert.equal(response.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')), [
      { op: 'add', path: '/metadata/labels/kit.test~1stamped', value: 'yes' },
    ]);
  });

  it('patches what a handler changed by editing the request object in place (w.spec.replicas = 3; return mutateTo(w))', async (t) => {
    interface Widget extends KubeObject {
      spec: { replicas: number; template: { labels: Record<string, string> } };
    }
    const server = newServer().mutating<Widget>('/mutate', (req) => {
      const w = req.object as Widget;
      w.spec.replicas = 3;
      w.spec.template.labels.tier = 'web';
      return mutateTo(w);
    });
    const port = await started(t, server);
    const widget = {
      apiVersion: 'kit.test.io/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'n' },
      spec: { replicas: 1, template: { labels: { app: 'x' } } },
    };
    const reply = await call(port, '/mutate', review(admissionRequest(widget)));
    const response = reply.json.response as {
      uid: string;
      allowed: boolean;
      patchType: string;
      patch: string;
    };
    assert.equal(response.uid, 'req-1');
    assert.equal(response.allowed, true);
    assert.equal(response.patchType, 'JSONPatch', JSON.stringify(response));
    assert.deepEqual(JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')), [
      { op: 'replace', path: '/spec/replicas', value: 3 },
      { op: 'add', path: '/spec/template/labels/tier', value: 'web' },
    ]);
  });

  it('refuses malformed JSON and a review of the wrong kind or version with a review denial, HTTP 200, code 400, and the uid when the body has one', async (t) => {
    const server = newServer()
      .validating('/v', () => allow())
      .conversion('/c', (o) => o);
    const port = await started(t, server);
    const denial = (reply: Reply) => {
      assert.equal(reply.status, 200, reply.body);
      assert.equal(reply.json.kind, 'AdmissionReview');
      const response = reply.json.response as { uid: string; allowed: boolean; status: StatusOf };
      assert.equal(response.allowed, false);
      assert.equal(response.status.status, 'Failure');
      return response;
    };

    const bad = denial(await call(port, '/v', '{"apiVersion": '));
    assert.equal(bad.uid, '');
    assert.equal(bad.status.code, 400);
    assert.equal(bad.status.reason, 'BadRequest');
    assert.match(bad.status.message, /the body is not JSON/);
    // Cut short after the uid, as the apiserver writes it first: the uid is recovered.
    const cut = denial(await call(port, '/v', review(admissionRequest(CM())).slice(0, -20)));
    assert.equal(cut.uid, 'req-1');
    assert.match(cut.status.message, /the body is not JSON/);

    const old = await call(
      port,
      '/v',
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1beta1',
        kind: 'AdmissionReview',
        request: { uid: 'old-1' },
      }),
    );
    // Answered in the version asked: the apiserver reads a v1beta1 answer to a v1beta1 review.
    assert.equal(old.json.apiVersion, 'admission.k8s.io/v1beta1');
    const oldResponse = denial(old);
    assert.equal(oldResponse.uid, 'old-1');
    assert.equal(oldResponse.status.code, 400);
    assert.match(
      oldResponse.status.message,
      /expected an admission.k8s.io\/v1 AdmissionReview, got admission.k8s.io\/v1beta1 AdmissionReview \(register the webhook with admissionReviewVersions: \[v1\]\)/,
    );

    const conversionAtAdmission = denial(
      await call(
        port,
        '/v',
        JSON.stringify({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'ConversionReview',
          request: { uid: 'conv-9', desiredAPIVersion: 'x/v1', objects: [] },
        }),
      ),
    );
    assert.equal(conversionAtAdmission.uid, 'conv-9');
    assert.match(conversionAtAdmission.status.message, /expected an admission.k8s.io\/v1 AdmissionReview/);

    // A conversion path answers in ConversionReviews.
    const conv = await call(port, '/c', review(admissionRequest(CM())));
    assert.equal(conv.status, 200);
    assert.equal(conv.json.kind, 'ConversionReview');
    assert.equal(conv.json.apiVersion, 'apiextensions.k8s.io/v1');
    const convResponse = conv.json.response as { uid: string; convertedObjects: unknown[]; result: StatusOf };
    assert.equal(convResponse.uid, 'req-1');
    assert.deepEqual(convResponse.convertedObjects, []);
    assert.equal(convResponse.result.status, 'Failure');
    assert.match(convResponse.result.message, /expected an apiextensions.k8s.io\/v1 ConversionReview/);

    const noUid = denial(await call(port, '/v', review({ ...admissionRequest(CM()), uid: undefined })));
    assert.equal(noUid.status.code, 400);
    assert.match(noUid.status.message, /no request with a uid/);

    const get = denial(await call(port, '/v', undefined, { method: 'GET' }));
    assert.equal(get.status.code, 405);
    assert.equal(get.status.reason, 'MethodNotAllowed');
    const form = denial(await call(port, '/v', 'a=1', { contentType: 'application/x-www-form-urlencoded' }));
    assert.equal(form.status.code, 415);
    assert.match(
      form.status.message,
      /content-type application\/x-www-form-urlencoded is not application\/json/,
    );

    // An unregistered path refuses a review in kind (a misnamed path must not admit
    // under failurePolicy Ignore), and anything else with a plain 404.
    const nowhere = denial(await call(port, '/nowhere', review(admissionRequest(CM()))));
    assert.deepEqual(nowhere, {
      uid: 'req-1',
      allowed: false,
      status: {
        status: 'Failure',
        code: 404,
        reason: 'NotFound',
        message: 'no webhook is registered at /nowhere',
      },
    });
    const plain = await call(port, '/nowhere', undefined, { method: 'GET' });
    assert.equal(plain.status, 404);
    assert.equal(plain.json.kind, 'Status');
  });

  it('denies a body over the limit, announced or streamed, with 413 and the uid read from its head', async (t) => {
    let calls = 0;
    const server = newServer({ maxBodyBytes: 64 * 1024 }).validating('/v', () => {
      calls++;
      return allow();
    });
    const port = await started(t, server);
    const big = review(admissionRequest({ ...CM(), data: { big: 'x'.repeat(100 * 1024) } }));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    for (const chunked of [false, true]) {
      // The server reads the rest of the body before it answers: the caller, still
      // writing, reads the denial instead of a reset.
      const reply = await call(port, '/v', big, { chunked, agent });
      assert.equal(reply.status, 200, `chunked ${chunked}: ${reply.body}`);
      assert.deepEqual(reply.json, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: {
          uid: 'req-1',
          allowed: false,
          status: {
            status: 'Failure',
            code: 413,
            reason: 'RequestEntityTooLarge',
            message: "the body exceeds the webhook server's limit of 65536 bytes",
          },
        },
      });
    }
    assert.equal(calls, 0);
    // Under the limit passes, on the same connection: the refused bodies were read to their end.
    const fine = await call(port, '/v', review(admissionRequest(CM())), { agent });
    assert.equal(fine.status, 200);
    assert.equal(fine.reusedSocket, true);
    assert.equal((fine.json.response as { allowed: boolean }).allowed, true);
  });

  it('denies, with the error message, when an admission handler throws, and counts it', async (t) => {
    const registry = new Registry();
    const server = newServer({ registry }).validating('/v', () => {
      throw new Error('the policy store is unreachable');
    });
    const port = await started(t, server);
    const reply = await call(port, '/v', review(admissionRequest(CM())));
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json.response, {
      uid: 'req-1',
      allowed: false,
      status: {
        status: 'Failure',
        code: 500,
        reason: 'InternalError',
        message: 'the webhook failed: the policy store is unreachable',
      },
    });
    const metrics = await registry.metrics();
    assert.match(metrics, /^controller_runtime_webhook_panics_total 1$/m);
  });

  it('refuses a change from a validating handler instead of silently dropping it', async (t) => {
    const server = newServer().validating(
      '/v',
      (req) => mutateTo(req.object) as unknown as ReturnType<typeof allow>,
    );
    const port = await started(t, server);
    const reply = await call(port, '/v', review(admissionRequest(CM())));
    const response = reply.json.response as { allowed: boolean; status: { message: string } };
    assert.equal(response.allowed, false);
    assert.match(response.status.message, /a validating webhook cannot change the object/);
  });

  it('fails a whole conversion when one object fails, naming it, and returns no object', async (t) => {
    const server = newServer().conversion('/convert', (obj, to) => {
      if (obj.metadata.name === 'b') throw new Error('spec.size "lots" is not a number');
      return { ...obj, apiVersion: to };
    });
    const port = await started(t, server);
    const objects = ['a', 'b', 'c'].map((name) => ({
      apiVersion: 'kit.test.io/v1',
      kind: 'Gadget',
      metadata: { name, namespace: 'n', uid: `u-${name}` },
    }));
    const body = (objs: unknown[]) =>
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: { uid: 'conv-1', desiredAPIVersion: 'kit.test.io/v2', objects: objs },
      });
    const failed = await call(port, '/convert', body(objects));
    assert.equal(failed.status, 200);
    assert.deepEqual(failed.json.response, {
      uid: 'conv-1',
      convertedObjects: [],
      result: {
        status: 'Failure',
        message:
          'converting Gadget n/b from kit.test.io/v1 to kit.test.io/v2: spec.size "lots" is not a number',
      },
    });
    const fine = await call(
      port,
      '/convert',
      body([objects[0], { ...objects[2], apiVersion: 'kit.test.io/v2' }]),
    );
    assert.deepEqual(fine.json.response, {
      uid: 'conv-1',
      convertedObjects: [
        { apiVersion: 'kit.test.io/v2', kind: 'Gadget', metadata: { name: 'a', namespace: 'n', uid: 'u-a' } },
        { apiVersion: 'kit.test.io/v2', kind: 'Gadget', metadata: { name: 'c', namespace: 'n', uid: 'u-c' } },
      ],
      result: { status: 'Success' },
    });
  });

  it('fails a conversion whose handler changes the name or forgets the apiVersion', async (t) => {
    const server = newServer().conversion('/convert', (obj) => ({
      ...obj,
      metadata: { ...obj.metadata, name: 'other' },
    }));
    const port = await started(t, server);
    const reply = await call(
      port,
      '/convert',
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: {
          uid: 'u',
          desiredAPIVersion: 'kit.test.io/v2',
          objects: [{ apiVersion: 'kit.test.io/v1', kind: 'Gadget', metadata: { name: 'a' } }],
        },
      }),
    );
    const response = reply.json.response as { result: { status: string; message: string } };
    assert.equal(response.result.status, 'Failure');
    assert.match(
      response.result.message,
      /apiVersion is kit.test.io\/v1, not kit.test.io\/v2; metadata.name changed/,
    );
  });

  it('aborts a handler at the deadline the apiserver sends and denies with Timeout', async (t) => {
    const clock = new FakeClock();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let aborted = false;
    const server = newServer({ clock }).validating(
      '/slow',
      (_req, { signal }) =>
        new Promise((resolve) => {
          entered();
          signal.addEventListener('abort', () => {
            aborted = true;
            // A handler that ignores its signal is answered for anyway; this one gives up.
            resolve(allow());
          });
        }),
    );
    const port = await started(t, server);
    const reply = call(port, '/slow?timeout=2s', review(admissionRequest(CM())));
    await within(5_000, 'the handler starts', inHandler);
    clock.advance(1_999);
    assert.equal(aborted, false);
    clock.advance(1);
    const response = (await reply).json.response as { allowed: boolean; status: Record<string, unknown> };
    assert.equal(aborted, true);
    assert.deepEqual(response, {
      uid: 'req-1',
      allowed: false,
      status: {
        status: 'Failure',
        code: 504,
        reason: 'Timeout',
        message: 'the webhook did not decide within 2000 ms',
      },
    });
  });

  it("waits for a slow handler until the apiserver's timeout (15 s), with no 10 s deadline of its own", async (t) => {
    const clock = new FakeClock();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let finish!: () => void;
    let signalAborted = false;
    const server = newServer({ clock }).validating(
      '/slow',
      (_req, { signal }) =>
        new Promise((resolve) => {
          entered();
          signal.addEventListener('abort', () => {
            signalAborted = true;
          });
          finish = () => resolve(allow(['took 12 s']));
        }),
    );
    const port = await started(t, server);
    let answered = false;
    const reply = call(port, '/slow?timeout=15s', review(admissionRequest(CM()))).finally(() => {
      answered = true;
    });
    await within(5_000, 'the handler starts', inHandler);
    clock.advance(12_000);
    // Time for an answer to arrive if the server had given one.
    await delay(200);
    assert.equal(answered, false, 'the server answered before the apiserver timeout');
    assert.equal(signalAborted, false);
    finish();
    const response = (await reply).json.response as { allowed: boolean; warnings: string[] };
    assert.deepEqual(response, { uid: 'req-1', allowed: true, warnings: ['took 12 s'] });
  });

  it("waits 30 s, the apiserver's longest timeout, when the request names none", async (t) => {
    const clock = new FakeClock();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const server = newServer({ clock }).validating(
      '/slow',
      () =>
        new Promise(() => {
          entered();
        }),
    );
    const port = await started(t, server);
    let answered = false;
    const reply = call(port, '/slow', review(admissionRequest(CM()))).finally(() => {
      answered = true;
    });
    await within(5_000, 'the handler starts', inHandler);
    clock.advance(29_999);
    await delay(200);
    assert.equal(answered, false);
    clock.advance(1);
    const response = (await reply).json.response as { status: { code: number; message: string } };
    assert.equal(response.status.code, 504);
    assert.equal(response.status.message, 'the webhook did not decide within 30000 ms');
  });

  it("aborts the signal at handlerTimeoutMs, yet answers for a handler only at the apiserver's deadline", async (t) => {
    const clock = new FakeClock();
    const entered: string[] = [];
    const server = newServer({ clock, handlerTimeoutMs: 2_000 })
      // Gives up when told, and answers itself.
      .validating(
        '/gives-up',
        (_req, { signal }) =>
          new Promise((resolve) => {
            entered.push('gives-up');
            signal.addEventListener('abort', () => resolve(allow(['gave up'])));
          }),
      )
      // Ignores the signal.
      .validating(
        '/stubborn',
        () =>
          new Promise(() => {
            entered.push('stubborn');
          }),
      );
    const port = await started(t, server);
    const givesUp = call(port, '/gives-up?timeout=10s', review(admissionRequest(CM())));
    let stubbornAnswered = false;
    const stubborn = call(port, '/stubborn?timeout=10s', review(admissionRequest(CM()))).finally(() => {
      stubbornAnswered = true;
    });
    for (let i = 0; i < 100 && entered.length < 2; i++) await delay(20);
    assert.equal(entered.length, 2, 'both handlers started');
    clock.advance(2_000);
    assert.deepEqual((await givesUp).json.response, { uid: 'req-1', allowed: true, warnings: ['gave up'] });
    await delay(200);
    assert.equal(
      stubbornAnswered,
      false,
      'a denial before the apiserver timeout would override failurePolicy',
    );
    clock.advance(8_000);
    const response = (await stubborn).json.response as { status: { code: number; message: string } };
    assert.equal(response.status.code, 504);
    assert.equal(response.status.message, 'the webhook did not decide within 10000 ms');
  });

  it("counts requests by path and code under controller-runtime's metric names", async (t) => {
    const registry = new Registry();
    const server = newServer({ registry }).validating('/v', () => allow());
    const port = await started(t, server);
    await call(port, '/v', review(admissionRequest(CM())));
    await call(port, '/v', review(admissionRequest(CM())));
    await call(port, '/v', 'not json');
    const text = await registry.metrics();
    // The malformed body is answered with a denial in a review: HTTP 200, as controller-runtime counts it.
    assert.match(text, /^controller_runtime_webhook_requests_total\{webhook="\/v",code="200"\} 3$/m);
    assert.doesNotMatch(text, /code="400"/);
    assert.match(text, /^controller_runtime_webhook_latency_seconds_count\{webhook="\/v"\} 3$/m);
    assert.match(text, /^controller_runtime_webhook_requests_in_flight\{webhook="\/v"\} 0$/m);
  });

  it('keeps connections alive between requests', async (t) => {
    const server = newServer().validating('/v', () => allow());
    const port = await started(t, server);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const first = await call(port, '/v', review(admissionRequest(CM())), { agent });
    const second = await call(port, '/v', review(admissionRequest(CM())), { agent });
    assert.equal(first.reusedSocket, false);
    assert.equal(second.reusedSocket, true);
  });

  it('serves a rotated certificate once its files are rewritten, without a restart', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'webhook-rotate-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeCertificates(dir, certs);
    const server = newServer({ certDir: dir }).validating('/v', () => allow());
    const port = await started(t, server);
    const before = await call(port, '/v', review(admissionRequest(CM())));
    assert.equal(before.fingerprint, new X509Certificate(certs.serving.cert).fingerprint256);

    const rotated = await selfSignedCertificates({ ca: certs.ca });
    const expected = new X509Certificate(rotated.serving.cert).fingerprint256;
    assert.notEqual(expected, before.fingerprint);
    await writeCertificates(dir, rotated);
    const deadline = Date.now() + 15_000; // the default poll is 10 s; inotify is faster
    let seen = before.fingerprint;
    while (seen !== expected && Date.now() < deadline) {
      await delay(50);
      seen = (await call(port, '/v', review(admissionRequest(CM())))).fingerprint;
    }
    assert.equal(seen, expected);
  });

  it('re-reads the files on its polling interval and skips a key that does not match the certificate', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'webhook-poll-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeCertificates(dir, certs);
    const clock = new FakeClock();
    const changes: string[] = [];
    let changed!: () => void;
    let next = new Promise<void>((resolve) => {
      changed = resolve;
    });
    const reloader = new CertificateReloader({
      certFile: join(dir, CERT_FILE),
      keyFile: join(dir, KEY_FILE),
      intervalMs: 10_000,
      watchFiles: false,
      clock,
      onChange: (pair) => {
        changes.push(pair.cert);
        changed();
      },
    });
    await reloader.load();
    t.after(() => reloader.stop());
    const rotated = await selfSignedCertificates({ ca: certs.ca });
    // Half-rotated: the new certificate beside the old key.
    await writeFile(join(dir, CERT_FILE), rotated.serving.cert);
    assert.equal(await reloader.check(), false);
    await writeFile(join(dir, KEY_FILE), rotated.serving.key);
    assert.deepEqual(changes, []);
    clock.advance(10_000);
    await within(5_000, 'the polled reload', next);
    assert.deepEqual(changes, [rotated.serving.cert]);
    next = new Promise<void>((resolve) => {
      changed = resolve;
    });
    // Unchanged files: the next poll applies nothing.
    assert.equal(await reloader.check(), false);
  });

  it('stops accepting at stop(), lets an in-flight request finish, then closes', async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const server = newServer().validating('/v', async () => {
      entered();
      await gate;
      return allow();
    });
    const port = await started(t, server);
    const inFlight = call(port, '/v', review(admissionRequest(CM())));
    await within(5_000, 'the handler starts', inHandler);
    let stopped = false;
    const stopping = server.stop().then(() => {
      stopped = true;
    });
    await assert.rejects(call(port, '/v', review(admissionRequest(CM()))), /ECONNREFUSED/);
    assert.equal(stopped, false);
    release();
    assert.equal((await inFlight).status, 200);
    await stopping;
    assert.equal(stopped, true);
  });

  it('refuses to start without a certificate, saying where it looked and what to do', async (t) => {
    const empty = await mkdtemp(join(tmpdir(), 'webhook-empty-'));
    t.after(() => rm(empty, { recursive: true, force: true }));
    await assert.rejects(
      newServer({ certDir: empty }).start(new AbortController().signal),
      new RegExp(
        `webhook-server: no usable serving certificate in ${empty} .*ENOENT.*selfSignedCertificates`,
      ),
    );
  });

  it('gives up on a request that outlives the drain bound', async (t) => {
    const clock = new FakeClock();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const server = newServer({ clock, drainTimeoutMs: 3_000, handlerTimeoutMs: 60_000 }).validating(
      '/v',
      () =>
        new Promise(() => {
          entered();
        }),
    );
    const port = await started(t, server);
    const inFlight = call(port, '/v', review(admissionRequest(CM()))).catch((err: Error) => err);
    await within(5_000, 'the handler starts', inHandler);
    const stopping = server.stop();
    // The drain timer is set once stop() has closed the listener; let it be set.
    for (let i = 0; i < 50 && clock.nextDueIn() !== 3_000; i++) await delay(10);
    clock.advance(3_000);
    await within(5_000, 'stop() after the drain bound', stopping);
    const outcome = await inFlight;
    assert.ok(outcome instanceof Error, 'the unfinished request was cut');
  });
});
