/**
 * The webhook server registered in the real kube-apiserver and called by it: a refused
 * ConfigMap, an admitted one, a mutated one, and a CRD converted between two versions,
 * with the caBundle put in place by the kit's injector (without it the apiserver could
 * not trust the server, and every call would fail). The server runs inside a Manager as
 * a runnable that does not need leadership.
 *
 * The plane is shared with the whole run: every webhook is scoped to this file's test
 * namespace by a namespaceSelector, and the configurations are deleted when the tests end.
 *
 * Also: the cert-manager chart pattern (Issuer, Certificate, annotated configuration)
 * in fixtures/webhook/cert-manager.yaml is accepted by cert-manager's real CRDs with
 * strict field validation.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import {
  type AdmissionRequest,
  ApiErrorReason,
  allow,
  deny,
  injectCaBundle,
  isApiError,
  type KubeObject,
  Manager,
  mutateTo,
  selfSignedCertificates,
  WebhookServer,
  writeCertificates,
} from '@operators/kit';
import { pino } from 'pino';
import { parseAllDocuments } from 'yaml';

const quiet = pino({ level: 'silent' });
const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const VWC = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' };
const MWC = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration' };
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
const GROUP = 'webhook.kit.test.io';
const GADGETS = `gadgets.${GROUP}`;

let env: TestEnv;
let manager: Manager;
let server: WebhookServer;
let certDir: string;
const admitted: AdmissionRequest[] = [];
/** Names the slow validating handler was called for, in order of answering. */
const slowAnswered: string[] = [];
/** How long the slow handler takes for ConfigMaps named `slow-*`: under the webhook's 15 s, over 10 s. */
const SLOW_HANDLER_MS = 12_000;
/** Names the in-place mutating handler was called for. */
const scaledSeen: string[] = [];

/** A Deployment, as much of it as the in-place mutating handler touches. */
interface Scaled extends KubeObject {
  spec: { replicas?: number };
}
const cleanups: (() => Promise<unknown>)[] = [];

/** v1 stores `spec.size` as a decimal string; v2 says `spec.replicas` as an integer. */
function convertGadget(obj: KubeObject, to: string): KubeObject {
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  if (to === `${GROUP}/v2`) {
    const { size, ...rest } = spec;
    if (typeof size !== 'string' || !/^\d+$/.test(size))
      throw new Error(`spec.size ${JSON.stringify(size)} is not a whole number`);
    return { ...obj, apiVersion: to, spec: { ...rest, replicas: Number(size) } };
  }
  if (to === `${GROUP}/v1`) {
    const { replicas, ...rest } = spec;
    return { ...obj, apiVersion: to, spec: { ...rest, size: String(replicas) } };
  }
  throw new Error(`no conversion to ${to}`);
}

function gadgetCrd(port: number): KubeObject {
  const version = (name: string, storage: boolean, spec: Record<string, unknown>) => ({
    name,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: spec } },
      },
    },
  });
  return {
    ...CRD,
    metadata: { name: GADGETS },
    spec: {
      group: GROUP,
      names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
      scope: 'Namespaced',
      versions: [
        version('v1', true, { size: { type: 'string' } }),
        version('v2', false, { replicas: { type: 'integer' } }),
      ],
      conversion: {
        strategy: 'Webhook',
        // No caBundle here: injectCaBundle puts it in, as cert-manager's injector would.
        webhook: {
          clientConfig: { url: `https://127.0.0.1:${port}/convert` },
          conversionReviewVersions: ['v1'],
        },
      },
    },
  };
}

before(async () => {
  env = await testEnv();
  const certs = await selfSignedCertificates({ ipAddresses: ['127.0.0.1'] });
  certDir = await mkdtemp(join(tmpdir(), 'webhook-apiserver-'));
  await writeCertificates(certDir, certs);
  server = new WebhookServer({ host: '127.0.0.1', port: 0, certDir, logger: quiet })
    .validating('/validate', (req) => {
      admitted.push(req);
      return req.object?.metadata.labels?.['kit.test/deny'] === 'yes'
        ? deny('Forbidden', 'ConfigMaps labelled kit.test/deny are refused in this namespace')
        : allow();
    })
    .mutating('/mutate', (req) => {
      const cm = req.object as KubeObject;
      return mutateTo({
        ...cm,
        metadata: { ...cm.metadata, labels: { ...cm.metadata.labels, 'kit.test/mutated': 'yes' } },
      });
    })
    .validating('/slow', async (req, { signal }) => {
      // Probes answer at once, so that the test can see the webhook is active.
      if (req.name?.startsWith('slow-')) await delay(SLOW_HANDLER_MS, undefined, { signal });
      slowAnswered.push(req.name ?? '');
      return allow();
    })
    .mutating<Scaled>('/scale-in-place', (req) => {
      scaledSeen.push(req.name ?? '');
      // The natural way: edit the request's object, return it.
      const d = req.object as Scaled;
      d.spec.replicas = 3;
      return mutateTo(d);
    })
    .conversion('/convert', convertGadget);
  manager = new Manager({ name: 'webhook-test', client: env.admin, logger: quiet });
  manager.add(server, { needLeaderElection: false });
  await manager.start();
  cleanups.push(() => manager.stop());
  await env.installCrds([gadgetCrd(server.port)]);
  cleanups.push(() => env.admin.delete(CRD, GADGETS).catch(() => undefined));
  await injectCaBundle(env.admin, certs.ca.cert, { customResourceDefinitions: [GADGETS] });
});

after(async () => {
  // Configurations first (registered by the tests), then the CRD, then the server.
  for (const f of cleanups.reverse()) await f();
  await rm(certDir, { recursive: true, force: true });
  await env?.close();
});

const CONFIGMAPS_RULE = { apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };

function admissionWebhook(
  name: string,
  path: string,
  ns: string,
  opts: { port?: number; rule?: typeof CONFIGMAPS_RULE } = {},
) {
  return {
    name,
    clientConfig: { url: `https://127.0.0.1:${opts.port ?? server.port}${path}` },
    rules: [{ ...(opts.rule ?? CONFIGMAPS_RULE), operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' }],
    // Only this test's namespace: the plane is shared, and failurePolicy Fail elsewhere
    // would refuse other tests' ConfigMaps whenever this server is down.
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 10,
  };
}

async function register(kind: typeof VWC | typeof MWC, name: string, webhooks: unknown[]): Promise<void> {
  await env.admin.create({ ...kind, metadata: { name }, webhooks });
  cleanups.push(() => env.admin.delete(kind, name).catch(() => undefined));
}

describe('webhooks called by the apiserver', () => {
  it('refuses a labelled ConfigMap with the webhook message and admits the others', async (t) => {
    const ns = await env.namespace(t, 'webhook-validate');
    const name = `kit-validate-${ns}`;
    await register(VWC, name, [admissionWebhook('deny-labelled.webhook.kit.test.io', '/validate', ns)]);
    await injectCaBundle(env.admin, await readFile(join(certDir, 'ca.crt'), 'utf8'), {
      validatingWebhookConfigurations: [name],
    });
    const injected = await env.admin.get<
      KubeObject & { webhooks: { clientConfig: { caBundle?: string } }[] }
    >(VWC, name);
    assert.equal(
      injected.webhooks[0]?.clientConfig.caBundle,
      Buffer.from(await readFile(join(certDir, 'ca.crt'), 'utf8')).toString('base64'),
    );
    // The injector owns the bundle and nothing else: the rules stay their creator's.
    const owned = (manager: string) =>
      JSON.stringify(injected.metadata.managedFields?.find((m) => m.manager === manager)?.fieldsV1 ?? {});
    assert.match(owned('kit-ca-injector'), /"f:caBundle"/);
    assert.doesNotMatch(owned('kit-ca-injector'), /"f:rules"|"f:failurePolicy"/);
    const refused = {
      ...CONFIGMAP,
      metadata: { name: 'refused', namespace: ns, labels: { 'kit.test/deny': 'yes' } },
    };
    // The apiserver loads new configurations asynchronously: wait until a dry run is refused.
    await eventually('the validating webhook is active', async () => {
      try {
        await env.admin.create(refused, { dryRun: true });
        return undefined;
      } catch (err) {
        return isApiError(err, ApiErrorReason.Forbidden) ? true : Promise.reject(err);
      }
    });

    const err = await env.admin.create(refused).then(
      () => assert.fail('the labelled ConfigMap was admitted'),
      (e: unknown) => e,
    );
    assert.ok(isApiError(err, ApiErrorReason.Forbidden), String(err));
    assert.equal(err.code, 403);
    assert.match(
      err.message,
      /admission webhook "deny-labelled\.webhook\.kit\.test\.io" denied the request: ConfigMaps labelled kit\.test\/deny are refused in this namespace/,
    );
    assert.equal(await env.admin.find(CONFIGMAP, 'refused', ns), undefined);

    const before = admitted.length;
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'admitted', namespace: ns }, data: { a: '1' } });
    const live = await env.admin.get<KubeObject & { data: Record<string, string> }>(
      CONFIGMAP,
      'admitted',
      ns,
    );
    assert.deepEqual(live.data, { a: '1' });
    const seen = admitted.slice(before).find((r) => r.name === 'admitted' && r.dryRun !== true);
    assert.ok(seen, 'the webhook saw the admitted create');
    assert.equal(seen.operation, 'CREATE');
    assert.equal(seen.namespace, ns);
    assert.deepEqual(seen.kind, { group: '', version: 'v1', kind: 'ConfigMap' });
    assert.equal(seen.userInfo.username, 'admin');
  });

  it('adds the label a mutating webhook asks for', async (t) => {
    const ns = await env.namespace(t, 'webhook-mutate');
    const name = `kit-mutate-${ns}`;
    await register(MWC, name, [admissionWebhook('stamp.webhook.kit.test.io', '/mutate', ns)]);
    await injectCaBundle(env.admin, await readFile(join(certDir, 'ca.crt'), 'utf8'), {
      mutatingWebhookConfigurations: [name],
    });
    const labelsOf = async (cmName: string, dryRun: boolean) =>
      (
        await env.admin.create(
          { ...CONFIGMAP, metadata: { name: cmName, namespace: ns, labels: { app: 'x' } } },
          { dryRun },
        )
      ).metadata.labels;
    await eventually('the mutating webhook is active', async () =>
      (await labelsOf('probe', true))?.['kit.test/mutated'] === 'yes' ? true : undefined,
    );
    await labelsOf('stamped', false);
    const live = await env.admin.get(CONFIGMAP, 'stamped', ns);
    assert.deepEqual(live.metadata.labels, { app: 'x', 'kit.test/mutated': 'yes' });
  });

  it("admits under failurePolicy Ignore an object whose handler takes 12 s of the webhook's 15 s timeoutSeconds", async (t) => {
    const ns = await env.namespace(t, 'webhook-slow');
    const name = `kit-slow-${ns}`;
    await register(VWC, name, [
      {
        ...admissionWebhook('slow.webhook.kit.test.io', '/slow', ns),
        failurePolicy: 'Ignore',
        timeoutSeconds: 15,
      },
    ]);
    await injectCaBundle(env.admin, await readFile(join(certDir, 'ca.crt'), 'utf8'), {
      validatingWebhookConfigurations: [name],
    });
    // Under Ignore every create passes: the webhook is active once it has seen a probe.
    await eventually('the slow webhook is active', async () => {
      const probe = `probe-${slowAnswered.length}`;
      await env.admin.create({ ...CONFIGMAP, metadata: { name: probe, namespace: ns } }, { dryRun: true });
      return slowAnswered.includes(probe) ? true : undefined;
    });
    const started = Date.now();
    // Not a dry run: the apiserver calls the webhook once, and the object is stored.
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'slow-1', namespace: ns }, data: { a: '1' } });
    assert.ok(Date.now() - started >= SLOW_HANDLER_MS - 1_000, 'the webhook was waited for');
    assert.ok(slowAnswered.includes('slow-1'), 'the handler decided');
    const live = await env.admin.get<KubeObject & { data: Record<string, string> }>(CONFIGMAP, 'slow-1', ns);
    assert.deepEqual(live.data, { a: '1' });
  });

  it('denies under failurePolicy Ignore a review over maxBodyBytes, with 413 and the limit, instead of admitting it unchecked', async (t) => {
    const ns = await env.namespace(t, 'webhook-oversized');
    const small = new WebhookServer({
      name: 'small-webhook-server',
      host: '127.0.0.1',
      port: 0,
      certDir,
      logger: quiet,
      maxBodyBytes: 8 * 1024,
    }).validating('/validate', () => allow());
    await small.start(new AbortController().signal);
    t.after(() => small.stop());
    const name = `kit-oversized-${ns}`;
    await register(VWC, name, [
      {
        ...admissionWebhook('small.webhook.kit.test.io', '/validate', ns, { port: small.port }),
        failurePolicy: 'Ignore',
      },
    ]);
    await injectCaBundle(env.admin, await readFile(join(certDir, 'ca.crt'), 'utf8'), {
      validatingWebhookConfigurations: [name],
    });
    const big = (cmName: string) => ({
      ...CONFIGMAP,
      metadata: { name: cmName, namespace: ns },
      data: { big: 'x'.repeat(16 * 1024) },
    });
    await eventually('the oversized review is refused', async () => {
      try {
        await env.admin.create(big('probe'), { dryRun: true });
        return undefined;
      } catch (err) {
        return isApiError(err) && err.code === 413 ? true : Promise.reject(err);
      }
    });
    const err = await env.admin.create(big('big')).then(
      () => assert.fail('the oversized ConfigMap was admitted'),
      (e: unknown) => e,
    );
    assert.ok(isApiError(err), String(err));
    assert.equal(err.code, 413);
    assert.match(
      err.message,
      /admission webhook "small\.webhook\.kit\.test\.io" denied the request: the body exceeds the webhook server's limit of 8192 bytes/,
    );
    assert.equal(await env.admin.find(CONFIGMAP, 'big', ns), undefined);
    // A review under the limit is answered as usual.
    await env.admin.create({ ...CONFIGMAP, metadata: { name: 'small', namespace: ns }, data: { a: '1' } });
  });

  it('stores replicas 3 set by a mutating handler that edits the request object in place', async (t) => {
    const ns = await env.namespace(t, 'webhook-in-place');
    const name = `kit-in-place-${ns}`;
    await register(MWC, name, [
      admissionWebhook('scale.webhook.kit.test.io', '/scale-in-place', ns, {
        rule: { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] },
      }),
    ]);
    await injectCaBundle(env.admin, await readFile(join(certDir, 'ca.crt'), 'utf8'), {
      mutatingWebhookConfigurations: [name],
    });
    const deployment = (deploymentName: string): Scaled => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: deploymentName, namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'x' } },
        template: {
          metadata: { labels: { app: 'x' } },
          spec: { containers: [{ name: 'c', image: 'registry.invalid/x:1' }] },
        },
      } as Scaled['spec'],
    });
    // Seen by the handler, not by its effect: the effect is what is under test.
    await eventually('the mutating webhook is active', async () => {
      const probe = `probe-${scaledSeen.length}`;
      await env.admin.create(deployment(probe), { dryRun: true });
      return scaledSeen.includes(probe) ? true : undefined;
    });
    await env.admin.create(deployment('scaled'));
    const live = await env.admin.get<Scaled>({ apiVersion: 'apps/v1', kind: 'Deployment' }, 'scaled', ns);
    assert.equal(live.spec.replicas, 3);
  });

  it('converts a Gadget between v1 (size as a string) and v2 (replicas as an integer)', async (t) => {
    const ns = await env.namespace(t, 'webhook-convert');
    const v1 = { apiVersion: `${GROUP}/v1`, kind: 'Gadget' };
    const v2 = { apiVersion: `${GROUP}/v2`, kind: 'Gadget' };
    // The CRD's caBundle was injected in before(); the apiserver picks it up shortly.
    await eventually('the conversion webhook answers', async () => {
      await env.admin.create(
        { ...v2, metadata: { name: 'probe', namespace: ns }, spec: { replicas: 1 } },
        { dryRun: true },
      );
      return true;
    });
    await env.admin.create({ ...v2, metadata: { name: 'g', namespace: ns }, spec: { replicas: 3 } });
    const asV1 = await env.admin.get(v1, 'g', ns);
    const asV2 = await env.admin.get(v2, 'g', ns);
    assert.equal(asV1.apiVersion, 'webhook.kit.test.io/v1');
    assert.deepEqual(asV1.spec, { size: '3' });
    assert.equal(asV2.apiVersion, 'webhook.kit.test.io/v2');
    assert.deepEqual(asV2.spec, { replicas: 3 });

    // A v1 value v2 cannot hold: reading it as v2 fails with the handler's message.
    await env.admin.create({ ...v1, metadata: { name: 'lots', namespace: ns }, spec: { size: 'lots' } });
    const err = await env.admin.get(v2, 'lots', ns).then(
      () => assert.fail('a Gadget of size "lots" was converted to v2'),
      (e: unknown) => e,
    );
    assert.ok(isApiError(err), String(err));
    assert.match(
      err.message,
      /converting Gadget .*\/lots from webhook\.kit\.test\.io\/v1 to webhook\.kit\.test\.io\/v2: spec\.size "lots" is not a whole number/,
    );
  });

  it("accepts the chart's cert-manager Issuer, Certificate and annotated configuration, strictly validated", async (t) => {
    // cert-manager's own Certificate and Issuer CRDs, read from its Go module.
    await env.installThirdParty('certManager');

    const ns = await env.namespace(t, 'webhook-cert-manager');
    const text = (
      await readFile(join(import.meta.dirname, 'fixtures/webhook/cert-manager.yaml'), 'utf8')
    ).replaceAll('my-operator-system', ns);
    const docs = parseAllDocuments(text).map((d) => d.toJS() as KubeObject);
    assert.deepEqual(
      docs.map((d) => d.kind),
      ['Issuer', 'Certificate', 'ValidatingWebhookConfiguration'],
    );
    for (const doc of docs) {
      // Strict field validation (the client's default): a misspelt field is an error, not a prune.
      const namespaced = doc.kind !== 'ValidatingWebhookConfiguration';
      // The configuration points at a Service that does not exist here: a dry run only.
      const created = await env.admin.create(doc, { dryRun: !namespaced });
      assert.equal(created.metadata.name, doc.metadata.name);
    }
    const certificate = await env.admin.get<KubeObject & { spec: Record<string, unknown> }>(
      { apiVersion: 'cert-manager.io/v1', kind: 'Certificate' },
      'my-operator-webhook',
      ns,
    );
    assert.deepEqual(certificate.spec.dnsNames, [
      `my-operator-webhook.${ns}.svc`,
      `my-operator-webhook.${ns}.svc.cluster.local`,
    ]);
    // A misspelt field is refused, so the acceptance above means something.
    const typo = {
      ...docs[1],
      metadata: { name: 'typo', namespace: ns },
      spec: { ...(docs[1]?.spec as object), secretNmae: 'x' },
    };
    await assert.rejects(
      env.admin.create(typo as KubeObject),
      (e: unknown) => isApiError(e) && /secretNmae/.test(e.message),
    );
  });

  it('stops with the manager that runs it', async () => {
    const port = server.port;
    await manager.stop();
    assert.throws(() => server.port, /is not listening/);
    await assert.rejects(
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket.end()));
        socket.on('error', reject);
      }),
      /ECONNREFUSED/,
    );
  });
});
