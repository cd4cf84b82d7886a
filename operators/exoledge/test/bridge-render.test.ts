/**
 * The bridge's renderer, without an apiserver: the console's record becomes the EdgeSite
 * written out here; an unchecked box is an explicit `false` in the manifest (an absent
 * switch would read as on); what the record leaves out the manifest leaves out; a site on
 * a shared gateway gets no `security` block; and, for any record (fast-check), the
 * switches the EdgeSite resolves are exactly the console's boxes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Route } from '../src/api/edge-site.ts';
import { type DomainRecord, renderEdgeSite } from '../src/domain/bridge/index.ts';
import { effectiveSecurity } from '../src/domain/edge-site/security.ts';
import { blogRecord, shopRecord } from './support/bridge-records.ts';
import { SEED_ROUTING } from './support/seed-site.ts';

describe('the bridge renders the console record as an EdgeSite', () => {
  it('renders the whole record, field for field, with the apiVersion and kind of an EdgeSite', () => {
    assert.deepEqual(renderEdgeSite(shopRecord()), {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'EdgeSite',
      metadata: { name: 'shop', namespace: 'shop' },
      spec: {
        ...SEED_ROUTING,
        tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
        posture: 'Challenge',
        captcha: { provider: 'Turnstile', siteKey: '0x4AAAAAAAB_example', secretRef: { name: 'turnstile' } },
        security: {
          waf: true,
          challenge: false,
          sensitiveFiles: true,
          blocklists: ['proxies', 'cve-2024-3400'],
          allowlists: ['payment'],
        },
      },
    });
  });

  it('writes an unchecked box as an explicit false, which the EdgeSite then reads as off', () => {
    const record: DomainRecord = {
      ...shopRecord(),
      switches: { waf: false, challenge: false, sensitiveFiles: false },
    };
    const { spec } = renderEdgeSite(record);
    assert.equal(spec.security?.waf, false);
    assert.equal(spec.security?.challenge, false);
    assert.equal(spec.security?.sensitiveFiles, false);
    const effective = effectiveSecurity(spec);
    assert.deepEqual([effective.waf, effective.challenge, effective.sensitiveFiles], [false, false, false]);
  });

  it('leaves out what the record leaves out: no routes, captcha, gatewayRef, blocklists or allowlists invented', () => {
    const minimal: DomainRecord = {
      site: { namespace: 'docs', name: 'docs' },
      domains: ['docs.example.com'],
      upstream: { name: 'docs', port: 80 },
      posture: 'Strict',
      tls: { issuerRef: { name: 'letsencrypt' } },
      switches: { waf: true, challenge: true, sensitiveFiles: true },
    };
    assert.deepEqual(renderEdgeSite(minimal), {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'EdgeSite',
      metadata: { name: 'docs', namespace: 'docs' },
      spec: {
        domains: ['docs.example.com'],
        upstream: { name: 'docs', port: 80 },
        tls: { issuerRef: { name: 'letsencrypt' } },
        posture: 'Strict',
        security: { waf: true, challenge: true, sensitiveFiles: true },
      },
    });
  });

  it('keeps an empty blocklist selection apart from an absent one: [] is none, absent is every Presumed list', () => {
    const none = renderEdgeSite({ ...shopRecord(), blocklists: [] });
    assert.deepEqual(none.spec.security?.blocklists, []);
    const { blocklists: _, ...rest } = shopRecord();
    const every = renderEdgeSite(rest);
    assert.equal(every.spec.security !== undefined && 'blocklists' in every.spec.security, false);
  });

  it('renders no security block for a site on a shared gateway, whatever its boxes say', () => {
    assert.deepEqual(renderEdgeSite(blogRecord()), {
      apiVersion: 'edge.exoledge.io/v1alpha1',
      kind: 'EdgeSite',
      metadata: { name: 'blog', namespace: 'blog' },
      spec: {
        domains: ['blog.example.com'],
        upstream: { name: 'blog', port: 8080 },
        posture: 'Observe',
        gatewayRef: { name: 'shared', namespace: 'edge' },
      },
    });
  });

  it('fixes nothing: a domain the apiserver will refuse is rendered as the console wrote it', () => {
    const { spec } = renderEdgeSite({ ...shopRecord(), domains: ['https://Shop.example.com'] });
    assert.deepEqual(spec.domains, ['https://Shop.example.com']);
  });

  it('shares no object with the record, so a YAML writer has no alias to make', () => {
    const record = shopRecord();
    const { spec } = renderEdgeSite(record);
    assert.notEqual(spec.domains, record.domains);
    assert.notEqual(spec.upstream, record.upstream);
    assert.notEqual(spec.routes?.[1]?.upstreams, record.routes?.[1]?.upstreams);
    assert.notEqual(spec.tls?.issuerRef, record.tls?.issuerRef);
    assert.notEqual(spec.captcha?.secretRef, record.captcha?.secretRef);
    assert.notEqual(spec.security?.blocklists, record.blocklists);
  });

  it('for any record, the switches the EdgeSite resolves are the console boxes, and a shared site has none', () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
    const names = fc.array(name, { maxLength: 3 });
    const route: fc.Arbitrary<Route> = fc.record(
      {
        prefix: fc.stringMatching(/^\/[a-z]{0,5}$/),
        upstreams: fc.array(
          fc.record(
            { name, port: fc.integer({ min: 1, max: 65_535 }), weight: fc.nat(1000) },
            { requiredKeys: ['name', 'port'] },
          ),
          { minLength: 1, maxLength: 2 },
        ),
      },
      { requiredKeys: ['prefix'] },
    );
    const record: fc.Arbitrary<DomainRecord> = fc.record(
      {
        site: fc.record({ namespace: name, name }),
        domains: fc.array(fc.domain(), { minLength: 1, maxLength: 3 }),
        upstream: fc.record({ name, port: fc.integer({ min: 1, max: 65_535 }) }),
        routes: fc.array(route, { maxLength: 3 }),
        posture: fc.constantFrom('Observe', 'Challenge', 'Strict'),
        tls: fc.record({ issuerRef: fc.record({ name }) }),
        gatewayRef: fc.record({ name, namespace: name }, { requiredKeys: ['name'] }),
        switches: fc.record({ waf: fc.boolean(), challenge: fc.boolean(), sensitiveFiles: fc.boolean() }),
        blocklists: names,
        allowlists: names,
      },
      { requiredKeys: ['site', 'domains', 'upstream', 'posture', 'switches'] },
    );
    fc.assert(
      fc.property(record, (r) => {
        const { spec } = renderEdgeSite(r);
        if (r.gatewayRef !== undefined) {
          assert.equal('security' in spec, false);
          return;
        }
        assert.equal(spec.security?.waf, r.switches.waf);
        assert.equal(spec.security?.challenge, r.switches.challenge);
        assert.equal(spec.security?.sensitiveFiles, r.switches.sensitiveFiles);
        const effective = effectiveSecurity(spec);
        assert.equal(effective.waf, r.switches.waf);
        assert.equal(effective.challenge, r.switches.challenge);
        assert.equal(effective.sensitiveFiles, r.switches.sensitiveFiles);
        assert.deepEqual(spec.domains, r.domains);
      }),
    );
  });
});
