/**
 * A webhook server that verifies its callers' client certificates (`clientCA`,
 * controller-runtime's `ClientCAName`): called directly over HTTPS with a certificate
 * from the CA, without one and with one from another CA; the CA file reloaded; and a
 * plane of its own whose apiserver presents a client certificate to webhooks, as a
 * cluster administrator configures it (`--admission-control-config-file` naming a
 * `WebhookAdmissionConfiguration` whose kubeconfig holds the certificate).
 *
 * The plane is private: the apiserver flag cannot be given to the shared one.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { eventually, privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import {
  ApiErrorReason,
  allow,
  clientCertificate,
  deny,
  injectCaBundle,
  isApiError,
  type PemPair,
  selfSignedCertificates,
  type WebhookCertificates,
  WebhookServer,
  type WebhookServerOptions,
  writeCertificates,
} from '@operators/kit';
import { pino } from 'pino';

const quiet = pino({ level: 'silent' });
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const VWC = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' };

let serving: WebhookCertificates;
/** The CA the servers trust for clients, and another one they do not. */
let clientCa: PemPair;
let otherCa: PemPair;
let trusted: PemPair;
let untrusted: PemPair;
let certDir: string;

before(async () => {
  serving = await selfSignedCertificates({ ipAddresses: ['127.0.0.1'] });
  clientCa = (await selfSignedCertificates()).ca;
  otherCa = (await selfSignedCertificates()).ca;
  trusted = await clientCertificate(clientCa, 'kube-apiserver');
  untrusted = await clientCertificate(otherCa, 'kube-apiserver');
  certDir = await mkdtemp(join(tmpdir(), 'webhook-client-ca-'));
  await writeCertificates(certDir, serving);
});
after(async () => {
  await rm(certDir, { recursive: true, force: true });
});

const REVIEW = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'req-1',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } },
  },
});

/** POSTs a review with `client`'s certificate (none when absent); the HTTP status, or the error. */
function post(port: number, client: PemPair | undefined): Promise<number | Error> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/v',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(REVIEW) },
        ca: serving.ca.cert,
        agent: false,
        ...(client ? { cert: client.cert, key: client.key } : {}),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', resolve);
    req.end(REVIEW);
  });
}

async function started(
  t: TestContext,
  opts: Partial<WebhookServerOptions>,
  calls: string[],
): Promise<number> {
  const server = new WebhookServer({
    host: '127.0.0.1',
    port: 0,
    certDir,
    logger: quiet,
    ...opts,
  }).validating('/v', (req) => {
    calls.push(req.uid);
    return allow();
  });
  await server.start(new AbortController().signal);
  t.after(() => server.stop());
  return server.port;
}

describe('a webhook server with a client CA', () => {
  it('serves a caller whose certificate the CA signed, and refuses at the TLS layer one without a certificate or from another CA', async (t) => {
    const calls: string[] = [];
    const port = await started(t, { clientCA: { pem: clientCa.cert } }, calls);
    assert.equal(await post(port, trusted), 200);
    const without = await post(port, undefined);
    assert.ok(without instanceof Error, `a caller without a certificate got HTTP ${String(without)}`);
    const other = await post(port, untrusted);
    assert.ok(other instanceof Error, `a caller with another CA's certificate got HTTP ${String(other)}`);
    // Only the trusted call reached the handler.
    assert.deepEqual(calls, ['req-1']);
  });

  it('reads the CA from a file in the certificate directory, reloads it when it changes, and will not start without it', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'webhook-client-ca-file-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeCertificates(dir, serving);
    await assert.rejects(
      started(t, { certDir: dir, clientCA: { file: 'client-ca.crt' } }, []),
      /no usable serving certificate in .* or client CA in .*client-ca\.crt .*ENOENT/,
    );
    await writeFile(join(dir, 'client-ca.crt'), clientCa.cert);
    const calls: string[] = [];
    const port = await started(t, { certDir: dir, clientCA: { file: 'client-ca.crt' } }, calls);
    assert.equal(await post(port, trusted), 200);
    assert.ok((await post(port, untrusted)) instanceof Error);

    // The administrator rotates the client CA: the server follows without a restart.
    await writeFile(join(dir, 'client-ca.crt'), otherCa.cert);
    const deadline = Date.now() + 15_000; // the default poll is 10 s; inotify is faster
    while ((await post(port, untrusted)) !== 200 && Date.now() < deadline) await delay(50);
    assert.equal(await post(port, untrusted), 200);
    assert.ok((await post(port, trusted)) instanceof Error);
  });
});

describe('the apiserver presenting a client certificate to webhooks', () => {
  let env: TestEnv & { plane: NonNullable<TestEnv['plane']> };
  let planeDir: string;

  before(async () => {
    planeDir = await mkdtemp(join(tmpdir(), 'webhook-admission-config-'));
    const kubeconfig = join(planeDir, 'webhook-kubeconfig.json');
    // `*` is the apiserver's default entry: every webhook it calls gets this certificate.
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        users: [
          {
            name: '*',
            user: {
              'client-certificate-data': Buffer.from(trusted.cert).toString('base64'),
              'client-key-data': Buffer.from(trusted.key).toString('base64'),
            },
          },
        ],
      }),
    );
    const webhookConfiguration = {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: kubeconfig,
    };
    const admissionConfig = join(planeDir, 'admission-config.json');
    await writeFile(
      admissionConfig,
      JSON.stringify({
        apiVersion: 'apiserver.config.k8s.io/v1',
        kind: 'AdmissionConfiguration',
        plugins: [
          { name: 'ValidatingAdmissionWebhook', configuration: webhookConfiguration },
          { name: 'MutatingAdmissionWebhook', configuration: webhookConfiguration },
        ],
      }),
    );
    env = await privateTestEnv({ apiserverFlags: [`--admission-control-config-file=${admissionConfig}`] });
  });

  after(async () => {
    await env?.close();
    await rm(planeDir, { recursive: true, force: true });
  });

  async function register(t: TestContext, name: string, port: number, ns: string): Promise<void> {
    await env.admin.create({
      ...VWC,
      metadata: { name },
      webhooks: [
        {
          name: `${name}.webhook.kit.test.io`,
          clientConfig: { url: `https://127.0.0.1:${port}/v` },
          rules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['configmaps'],
              scope: 'Namespaced',
            },
          ],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    });
    t.after(() => env.admin.delete(VWC, name).catch(() => undefined));
    await injectCaBundle(env.admin, serving.ca.cert, { validatingWebhookConfigurations: [name] });
  }

  it("reaches a server that trusts its certificate's CA, and fails the call to one that does not", async (t) => {
    const ns = await env.namespace(t, 'webhook-client-ca');
    const seen: string[] = [];
    const server = new WebhookServer({
      host: '127.0.0.1',
      port: 0,
      certDir,
      logger: quiet,
      clientCA: { pem: clientCa.cert },
    }).validating('/v', (req) => {
      seen.push(req.name ?? '');
      return req.object?.metadata.labels?.['kit.test/deny'] === 'yes'
        ? deny('Forbidden', 'refused by the webhook that verified the apiserver')
        : allow();
    });
    await server.start(new AbortController().signal);
    t.after(() => server.stop());
    await register(t, 'kit-client-ca-trusted', server.port, ns);
    const labelled = (name: string) => ({
      ...CONFIGMAP,
      metadata: { name, namespace: ns, labels: { 'kit.test/deny': 'yes' } },
    });
    await eventually('the webhook refuses a labelled ConfigMap', async () => {
      try {
        await env.admin.create(labelled('probe'), { dryRun: true });
        return undefined;
      } catch (err) {
        return isApiError(err, ApiErrorReason.Forbidden) ? true : Promise.reject(err);
      }
    });
    const err = await env.admin.create(labelled('refused')).then(
      () => assert.fail('the labelled ConfigMap was admitted'),
      (e: unknown) => e,
    );
    assert.ok(isApiError(err, ApiErrorReason.Forbidden), String(err));
    assert.match(err.message, /refused by the webhook that verified the apiserver/);
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'admitted', namespace: ns } });
    assert.ok(seen.includes('admitted'));

    // A server trusting another CA refuses the apiserver's certificate: the call fails
    // (failurePolicy Fail), and its handler is never reached.
    const otherNs = await env.namespace(t, 'webhook-client-ca-other');
    const strangers: string[] = [];
    const strict = new WebhookServer({
      name: 'strict-webhook-server',
      host: '127.0.0.1',
      port: 0,
      certDir,
      logger: quiet,
      clientCA: { pem: otherCa.cert },
    }).validating('/v', (req) => {
      strangers.push(req.name ?? '');
      return allow();
    });
    await strict.start(new AbortController().signal);
    t.after(() => strict.stop());
    await register(t, 'kit-client-ca-untrusted', strict.port, otherNs);
    const failure = await eventually('the call to the strict server fails', async () => {
      try {
        await env.admin.create(
          { ...CONFIGMAP, metadata: { name: 'probe', namespace: otherNs } },
          { dryRun: true },
        );
        return undefined;
      } catch (e) {
        return isApiError(e) && /failed calling webhook/.test(e.message) ? e : Promise.reject(e);
      }
    });
    assert.match(failure.message, /kit-client-ca-untrusted\.webhook\.kit\.test\.io/);
    assert.deepEqual(strangers, []);
  });
});
