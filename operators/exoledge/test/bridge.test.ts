/**
 * The console bridge against a real apiserver with the EdgeSite CRD of crds/edgesites.yaml
 * installed: an unchecked box comes back as `false` in a manifest the apiserver accepted;
 * a toggle on a shared gateway is refused with 409 and the shared edge's reason, without
 * a call to the apiserver; a record whose domains hold a scheme and capitals is refused
 * with 422 and the CRD's own CEL messages; and nothing is ever written: every request the
 * bridge sent was a dry-run, no EdgeSite exists afterwards, and a live site is left as it was.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import { type KubeObject, type RequestOptions, Transport } from '@operators/kit';
import { pino } from 'pino';
import { parse, parseAllDocuments } from 'yaml';
import { EDGE_SITE, type EdgeSite } from '../src/api/edge-site.ts';
import { apiserverDryRun } from '../src/bridge/apiserver-dry-run.ts';
import { JsonFileDirectory } from '../src/bridge/directory-file.ts';
import { dryRunOnlyPolicy } from '../src/bridge/dry-run-policy.ts';
import type { Bridge } from '../src/bridge/server.ts';
import { type EdgeSiteManifest, renderEdgeSite } from '../src/domain/bridge/index.ts';
import { badDomainsRecord, blogRecord, shopRecord } from './support/bridge-records.ts';
import { ask, directoryJson, memoryDirectory, startTestBridge } from './support/bridge-server.ts';

const CRD_FILE = join(import.meta.dirname, '../crds/edgesites.yaml');

describe('the console bridge (real apiserver)', () => {
  let env: TestEnv;
  let bridge: Bridge;
  let transport: Transport;
  let dir: string;
  /** Every request the bridge sent the apiserver. */
  const sent: RequestOptions[] = [];
  const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
  const ns = `bridge-${suffix}`;
  const live = `bridge-live-${suffix}`;
  /** Where the bridge runs under an identity of its own (the last test). */
  const own = `bridge-own-${suffix}`;
  const policy = `console-bridge-dry-run-only-${suffix}`;

  before(async () => {
    env = await testEnv();
    const crds = parseAllDocuments(readFileSync(CRD_FILE, 'utf8')).map((d) => d.toJS() as KubeObject);
    await env.installCrds(crds);
    for (const name of [ns, live, own]) {
      await env.admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
    dir = mkdtempSync(join(tmpdir(), 'bridge-'));
    const file = join(dir, 'domains.json');
    writeFileSync(
      file,
      directoryJson({
        'shop.example.com': shopRecord(ns),
        'blog.example.com': blogRecord(ns),
        'bad.example.com': badDomainsRecord(ns),
        'live.example.com': shopRecord(live),
        'lost.example.com': shopRecord(`bridge-missing-${suffix}`),
      }),
    );
    const log = pino({ level: 'silent' });
    transport = await Transport.load(env.kubeconfigPath);
    // Every request the dry-run makes is recorded, then sent as it is.
    const recording: Pick<Transport, 'raw'> = {
      raw: (opts) => {
        sent.push(opts);
        return transport.raw(opts);
      },
    };
    bridge = await startTestBridge({
      directory: await JsonFileDirectory.open(file, log),
      dryRun: apiserverDryRun(recording),
    });
  });

  after(async () => {
    await bridge?.close();
    await transport?.close();
    rmSync(dir, { recursive: true, force: true });
    for (const name of [ns, live, own]) {
      await env.admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, name).catch(() => undefined);
    }
    for (const o of dryRunOnlyPolicy(policy, 'unused')) {
      await env.admin
        .delete(o as Required<Pick<KubeObject, 'apiVersion' | 'kind'>>, policy)
        .catch(() => undefined);
    }
  });

  const body = (text: string) => JSON.parse(text) as { reason: string; message: string };

  it('hands out a manifest the apiserver accepted, the unchecked box written as false', async () => {
    const before = sent.length;
    const reply = await ask(bridge.url, '/domains/manifest?host=shop.example.com');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.contentType, 'application/yaml');
    const manifest = parse(reply.text) as EdgeSiteManifest;
    assert.deepEqual(manifest.metadata, { name: 'shop', namespace: ns });
    assert.equal(manifest.spec.security?.challenge, false);
    assert.equal(manifest.spec.security?.waf, true);
    assert.equal(manifest.spec.security?.sensitiveFiles, true);
    assert.equal(sent.length, before + 1, 'one request to the apiserver per manifest');
  });

  it('hands out the toggled manifest, dry-run validated, for a site with its own gateway', async () => {
    const reply = await ask(bridge.url, '/domains/security?host=shop.example.com', {
      body: JSON.stringify({ switch: 'sensitiveFiles', enabled: false }),
      accept: 'application/json',
    });
    assert.equal(reply.status, 200, reply.text);
    const manifest = JSON.parse(reply.text) as EdgeSiteManifest;
    assert.deepEqual(manifest.spec.security, {
      waf: true,
      challenge: false,
      sensitiveFiles: false,
      blocklists: ['proxies', 'cve-2024-3400'],
      allowlists: ['payment'],
    });
  });

  it('refuses a toggle on a shared gateway with 409 and the reason of the shared edge, asking the apiserver nothing', async () => {
    const before = sent.length;
    const reply = await ask(bridge.url, '/domains/security?host=blog.example.com', {
      body: JSON.stringify({ switch: 'waf', enabled: true }),
    });
    assert.equal(reply.status, 409, reply.text);
    const refusal = body(reply.text);
    assert.equal(refusal.reason, 'CarriedBySharedEdge');
    assert.match(refusal.message, /^waf of blog\.example\.com is carried by the shared edge/);
    assert.match(refusal.message, /the shared gateway edge\/shared/);
    assert.equal(sent.length, before);
  });

  it("renders a shared site's manifest without a security block, and the apiserver accepts it", async () => {
    const reply = await ask(bridge.url, '/domains/manifest?host=blog.example.com');
    assert.equal(reply.status, 200, reply.text);
    const manifest = parse(reply.text) as EdgeSiteManifest;
    assert.equal('security' in manifest.spec, false);
    assert.deepEqual(manifest.spec.gatewayRef, { name: 'shared', namespace: 'edge' });
  });

  it("refuses a record with a scheme and capitals in its domains with 422 and the CRD's CEL messages", async () => {
    const reply = await ask(bridge.url, '/domains/manifest?host=bad.example.com');
    assert.equal(reply.status, 422, reply.text);
    const refusal = body(reply.text);
    assert.equal(refusal.reason, 'DryRunRefused');
    assert.match(refusal.message, /EdgeSite\.edge\.exoledge\.io "bad" is invalid/);
    assert.match(
      refusal.message,
      /spec\.domains\[0\]: Invalid value: "https:\/\/bad\.example\.com": a domain has no scheme: write shop\.example\.com, not https:\/\/shop\.example\.com/,
    );
    assert.match(
      refusal.message,
      /spec\.domains\[1\]: Invalid value: "Bad\.example\.com": a domain is written in lowercase, such as shop\.example\.com/,
    );
  });

  it('refuses with 502 and no manifest when the apiserver gives no verdict (the namespace does not exist)', async () => {
    const reply = await ask(bridge.url, '/domains/manifest?host=lost.example.com');
    assert.equal(reply.status, 502, reply.text);
    const refusal = body(reply.text);
    assert.equal(refusal.reason, 'DryRunFailed');
    assert.match(refusal.message, /the apiserver answered 404: namespaces "bridge-missing-[^"]+" not found/);
  });

  it('validates against a live site and leaves it exactly as it was stored', async () => {
    const stored = await env.admin.create({
      ...EDGE_SITE,
      metadata: { name: 'shop', namespace: live },
      spec: {
        domains: ['live.example.com'],
        upstream: { name: 'docs', port: 80 },
        tls: { issuerRef: { name: 'letsencrypt' } },
      },
    } as EdgeSite);
    const reply = await ask(bridge.url, '/domains/security?host=live.example.com', {
      body: JSON.stringify({ switch: 'waf', enabled: false }),
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal((parse(reply.text) as EdgeSiteManifest).spec.security?.waf, false);
    const after = await env.admin.get<EdgeSite>(EDGE_SITE, 'shop', live);
    assert.equal(after.metadata.resourceVersion, stored.metadata.resourceVersion);
    assert.deepEqual(after.spec.domains, ['live.example.com']);
    assert.equal(after.spec.security, undefined);
  });

  it('writes nothing: every request was a dry-run apply, and no EdgeSite exists in the namespace afterwards', async () => {
    const before = sent.length;
    const get = await ask(bridge.url, '/domains/manifest?host=shop.example.com');
    assert.equal(get.status, 200, get.text);
    const post = await ask(bridge.url, '/domains/security?host=shop.example.com', {
      body: JSON.stringify({ switch: 'challenge', enabled: true }),
    });
    assert.equal(post.status, 200, post.text);
    assert.equal(sent.length, before + 2);
    for (const r of sent) {
      assert.equal(r.method, 'PATCH');
      assert.equal(r.query?.dryRun, 'All', `${r.method} ${r.path}`);
      assert.equal(r.query?.fieldValidation, 'Strict');
      assert.equal(r.contentType, 'application/apply-patch+yaml');
    }
    const { items } = await env.admin.list(EDGE_SITE, { namespace: ns });
    assert.deepEqual(
      items.map((i) => i.metadata.name),
      [],
    );
  });

  it('runs under its own identity with create and patch on EdgeSites, which the dry-run-only policy keeps from writing', async () => {
    const user = `console-bridge-${suffix}`;
    const rbac = 'rbac.authorization.k8s.io';
    await env.admin.create({
      apiVersion: `${rbac}/v1`,
      kind: 'Role',
      metadata: { name: 'console-bridge', namespace: own },
      // A dry-run apply needs patch, and create when the site does not exist yet.
      rules: [{ apiGroups: ['edge.exoledge.io'], resources: ['edgesites'], verbs: ['create', 'patch'] }],
    });
    await env.admin.create({
      apiVersion: `${rbac}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'console-bridge', namespace: own },
      roleRef: { apiGroup: rbac, kind: 'Role', name: 'console-bridge' },
      subjects: [{ apiGroup: rbac, kind: 'User', name: user }],
    });
    for (const o of dryRunOnlyPolicy(policy, user)) await env.admin.create(o);
    const identity = env.as(user);
    const site = renderEdgeSite(shopRecord(own));
    // In force once a real create by the bridge's identity is denied by the policy (the
    // apiserver loads policies asynchronously; a site created before that is removed).
    await eventually('the dry-run-only policy in force', async () => {
      try {
        await identity.create(site);
      } catch (err) {
        if (/the console bridge only validates EdgeSites/.test(String(err))) return true;
        throw err;
      }
      await env.admin.delete(EDGE_SITE, site.metadata.name, own);
      return undefined;
    });
    const ownBridge = await startTestBridge({
      directory: memoryDirectory({ 'shop.example.com': shopRecord(own) }),
      dryRun: apiserverDryRun(identity.transport),
    });
    try {
      const get = await ask(ownBridge.url, '/domains/manifest?host=shop.example.com');
      assert.equal(get.status, 200, get.text);
      const post = await ask(ownBridge.url, '/domains/security?host=shop.example.com', {
        body: JSON.stringify({ switch: 'waf', enabled: false }),
      });
      assert.equal(post.status, 200, post.text);
    } finally {
      await ownBridge.close();
    }
    const { items } = await env.admin.list(EDGE_SITE, { namespace: own });
    assert.deepEqual(
      items.map((i) => i.metadata.name),
      [],
    );
  });
});
