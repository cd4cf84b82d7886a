/**
 * The EdgeSite CRD on the real apiserver: it is accepted (its CEL within the cost budget),
 * a good site and the docs' sample are stored, and each bad spec the seed names (a scheme,
 * uppercase, a port out of 1–65535) is refused at admission with a message that says what
 * to write instead. The expected messages are written out here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import { ApiErrorReason, isApiError, type KubeObject } from '@operators/kit';
import { parse } from 'yaml';
import { EDGE_SITE, edgeSiteCrd } from '../src/api/edge-site.ts';

const DOCS = join(import.meta.dirname, '../../../docs/exoledge.md');

describe('admission of an EdgeSite (real apiserver)', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds([edgeSiteCrd()]);
  });

  const site = (ns: string, name: string, spec: Record<string, unknown>): KubeObject =>
    ({ ...EDGE_SITE, metadata: { name, namespace: ns }, spec }) as KubeObject;
  const good = {
    domains: ['shop.example.com'],
    upstream: { name: 'shop', port: 80 },
    tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
  };

  it('stores a good site and the sample of docs/exoledge.md', async (t) => {
    const ns = await env.namespace(t, 'edge-crd');
    await env.admin.create(site(ns, 'good-site', good));
    const docs = readFileSync(DOCS, 'utf8');
    const section = docs.slice(docs.indexOf('## EdgeSite'));
    const yamlBlock = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(yamlBlock, 'the EdgeSite section has a yaml sample');
    const sample = parse(yamlBlock) as KubeObject;
    assert.equal(sample.kind, 'EdgeSite');
    await env.admin.create({ ...sample, metadata: { ...sample.metadata, namespace: ns } });
  });

  it('refuses a scheme, uppercase, a path, a port in a domain and a port out of range, each with its own message', async (t) => {
    const ns = await env.namespace(t, 'edge-crd-bad');
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['scheme', { ...good, domains: ['https://shop.example.com'] }, /a domain has no scheme/],
      ['uppercase', { ...good, domains: ['Shop.example.com'] }, /a domain is written in lowercase/],
      ['path', { ...good, domains: ['shop.example.com/app'] }, /a domain has no path/],
      ['port in domain', { ...good, domains: ['shop.example.com:8443'] }, /a domain has no port/],
      ['port 0', { ...good, upstream: { name: 'shop', port: 0 } }, /spec\.upstream\.port/],
      ['port 70000', { ...good, upstream: { name: 'shop', port: 70_000 } }, /spec\.upstream\.port/],
      [
        'own gateway without tls',
        { domains: good.domains, upstream: good.upstream },
        /a site with its own gateway terminates TLS/,
      ],
      [
        'same prefix twice',
        { ...good, routes: [{ prefix: '/app' }, { prefix: '/app/' }] },
        /each route prefix may appear only once/,
      ],
    ];
    for (const [what, spec, message] of cases) {
      await assert.rejects(
        env.admin.create(site(ns, `bad-${what.replace(/[^a-z0-9]+/g, '-')}`, spec)),
        (err: unknown) => {
          assert.ok(isApiError(err, ApiErrorReason.Invalid), `${what}: ${String(err)}`);
          assert.match((err as Error).message, message, what);
          return true;
        },
      );
    }
  });
});
