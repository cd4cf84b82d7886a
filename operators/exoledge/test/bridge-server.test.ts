/**
 * The bridge's HTTP service with a stand-in for the apiserver's dry-run: each endpoint's
 * statuses and bodies, YAML unless JSON is asked for, a refusal always `{reason, message}`
 * in JSON, the dry-run asked only once the record is rendered, and never a manifest
 * without the dry-run's acceptance. (The real apiserver's verdicts: bridge.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { parseListen } from '../src/bridge/main.ts';
import type { Bridge } from '../src/bridge/server.ts';
import type { DryRunResult, EdgeSiteManifest } from '../src/domain/bridge/index.ts';
import { blogRecord, shopRecord } from './support/bridge-records.ts';
import { ask, memoryDirectory, startTestBridge } from './support/bridge-server.ts';

describe('the bridge over HTTP (dry-run stood in for)', () => {
  let bridge: Bridge;
  const submitted: EdgeSiteManifest[] = [];
  let verdict: DryRunResult = { kind: 'Accepted' };

  before(async () => {
    bridge = await startTestBridge({
      directory: memoryDirectory({
        'shop.example.com': shopRecord(),
        'blog.example.com': blogRecord(),
        'broken.example.com': { site: { namespace: 'x', name: 'x' } },
        'lists.example.com': { ...shopRecord(), blocklists: ['on', 'no', '1_000'], allowlists: ['yes'] },
      }),
      dryRun: async (manifest) => {
        submitted.push(manifest);
        return verdict;
      },
    });
  });
  after(() => bridge.close());

  const json = (text: string): unknown => JSON.parse(text);

  it('GET /domains/manifest answers the EdgeSite in YAML, an unchecked box written false', async () => {
    verdict = { kind: 'Accepted' };
    const reply = await ask(bridge.url, '/domains/manifest?host=shop.example.com');
    assert.equal(reply.status, 200);
    assert.equal(reply.contentType, 'application/yaml');
    const manifest = parse(reply.text) as EdgeSiteManifest;
    assert.equal(manifest.apiVersion, 'edge.exoledge.io/v1alpha1');
    assert.equal(manifest.kind, 'EdgeSite');
    assert.deepEqual(manifest.metadata, { name: 'shop', namespace: 'shop' });
    assert.deepEqual(manifest.spec.security, {
      waf: true,
      challenge: false,
      sensitiveFiles: true,
      blocklists: ['proxies', 'cve-2024-3400'],
      allowlists: ['payment'],
    });
    assert.match(reply.text, /^ {4}challenge: false$/m);
  });

  it('quotes in the YAML what a YAML 1.1 reader (kubectl, Argo CD, Flux) would not take for a string', async () => {
    const reply = await ask(bridge.url, '/domains/manifest?host=lists.example.com');
    assert.equal(reply.status, 200);
    const manifest = parse(reply.text, { version: '1.1' }) as EdgeSiteManifest;
    assert.deepEqual(manifest.spec.security?.blocklists, ['on', 'no', '1_000']);
    assert.deepEqual(manifest.spec.security?.allowlists, ['yes']);
  });

  it('answers JSON when the request accepts application/json', async () => {
    const reply = await ask(bridge.url, '/domains/manifest?host=Shop.Example.com', {
      accept: 'application/json',
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.contentType, 'application/json');
    assert.deepEqual((json(reply.text) as EdgeSiteManifest).metadata, { name: 'shop', namespace: 'shop' });
  });

  it('submits to the dry-run exactly the manifest it hands out', async () => {
    submitted.length = 0;
    const reply = await ask(bridge.url, '/domains/manifest?host=shop.example.com', {
      accept: 'application/json',
    });
    assert.equal(submitted.length, 1);
    assert.deepEqual(json(reply.text), submitted[0]);
  });

  it('answers 422 with the apiserver message, and no manifest, when the dry-run refuses', async () => {
    verdict = { kind: 'Refused', message: 'spec.domains[0]: a domain has no scheme' };
    const reply = await ask(bridge.url, '/domains/manifest?host=shop.example.com');
    verdict = { kind: 'Accepted' };
    assert.equal(reply.status, 422);
    assert.equal(reply.contentType, 'application/json');
    assert.deepEqual(json(reply.text), {
      reason: 'DryRunRefused',
      message: 'spec.domains[0]: a domain has no scheme',
    });
  });

  it('answers 502 without a manifest when the dry-run gives no verdict', async () => {
    verdict = { kind: 'NoVerdict', message: 'the apiserver is unreachable' };
    const reply = await ask(bridge.url, '/domains/manifest?host=shop.example.com');
    verdict = { kind: 'Accepted' };
    assert.equal(reply.status, 502);
    assert.equal((json(reply.text) as { reason: string }).reason, 'DryRunFailed');
  });

  it('answers 400 for a bad host, 404 for an unknown one and 422 for an unreadable record, without asking the apiserver', async () => {
    submitted.length = 0;
    const bad = await ask(bridge.url, '/domains/manifest?host=https://shop.example.com');
    assert.equal(bad.status, 400);
    assert.equal((json(bad.text) as { reason: string }).reason, 'BadHost');
    const none = await ask(bridge.url, '/domains/manifest');
    assert.equal(none.status, 400);
    const unknown = await ask(bridge.url, '/domains/manifest?host=nowhere.example.com');
    assert.equal(unknown.status, 404);
    assert.deepEqual(json(unknown.text), {
      reason: 'UnknownHost',
      message: "the console's directory has no record for nowhere.example.com",
    });
    const broken = await ask(bridge.url, '/domains/manifest?host=broken.example.com');
    assert.equal(broken.status, 422);
    assert.equal((json(broken.text) as { reason: string }).reason, 'MalformedRecord');
    assert.equal(submitted.length, 0);
  });

  it('POST /domains/security answers the manifest with the switch set', async () => {
    const reply = await ask(bridge.url, '/domains/security?host=shop.example.com', {
      body: '{"switch":"challenge","enabled":true}',
      accept: 'application/json',
    });
    assert.equal(reply.status, 200);
    assert.equal((json(reply.text) as EdgeSiteManifest).spec.security?.challenge, true);
  });

  it('POST /domains/security answers 409 CarriedBySharedEdge on a shared gateway, without asking the apiserver', async () => {
    submitted.length = 0;
    const reply = await ask(bridge.url, '/domains/security?host=blog.example.com', {
      body: '{"switch":"waf","enabled":true}',
    });
    assert.equal(reply.status, 409);
    const body = json(reply.text) as { reason: string; message: string };
    assert.equal(body.reason, 'CarriedBySharedEdge');
    assert.match(body.message, /carried by the shared edge: the site joins the shared gateway edge\/shared/);
    assert.equal(submitted.length, 0);
  });

  it('answers 400 for a bad toggle and 413 for a body no toggle needs', async () => {
    const bad = await ask(bridge.url, '/domains/security?host=shop.example.com', {
      body: '{"switch":"grpc"}',
    });
    assert.equal(bad.status, 400);
    assert.equal((json(bad.text) as { reason: string }).reason, 'BadToggle');
    const big = await ask(bridge.url, '/domains/security?host=shop.example.com', {
      body: 'x'.repeat(20_000),
    });
    assert.equal(big.status, 413);
  });

  it('answers 405 with Allow for the wrong method, 404 for another path, and 200 on /healthz', async () => {
    const put = await ask(bridge.url, '/domains/manifest?host=shop.example.com', {
      method: 'PUT',
      body: '{}',
    });
    assert.equal(put.status, 405);
    assert.equal(put.allow, 'GET');
    const get = await ask(bridge.url, '/domains/security?host=shop.example.com');
    assert.equal(get.status, 405);
    assert.equal(get.allow, 'POST');
    const other = await ask(bridge.url, '/domains');
    assert.equal(other.status, 404);
    assert.equal((json(other.text) as { reason: string }).reason, 'NoSuchEndpoint');
    const health = await ask(bridge.url, '/healthz');
    assert.equal(health.status, 200);
  });
});

describe('the --listen flag', () => {
  it('takes host:port, :port and [v6]:port, and nothing else', () => {
    assert.deepEqual(parseListen(':8080'), { host: undefined, port: 8080 });
    assert.deepEqual(parseListen('127.0.0.1:9000'), { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(parseListen('[::1]:8080'), { host: '::1', port: 8080 });
    assert.equal(parseListen('8080'), undefined);
    assert.equal(parseListen(':70000'), undefined);
  });
});
