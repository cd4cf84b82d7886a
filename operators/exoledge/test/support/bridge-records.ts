/**
 * Records of the console's directory the bridge tests share: a site with its own gateway
 * and one switch unchecked, a site on a shared gateway, and a record whose domains the
 * apiserver must refuse. Written out, not built by the code under test.
 */
import type { DomainRecord } from '../../src/domain/bridge/index.ts';
import { SEED_ROUTING } from './seed-site.ts';

/** The docs' example site (the seed's), as the console holds it, with the challenge box unchecked. */
export function shopRecord(namespace = 'shop'): DomainRecord {
  return {
    site: { namespace, name: 'shop' },
    ...SEED_ROUTING,
    posture: 'Challenge',
    captcha: { provider: 'Turnstile', siteKey: '0x4AAAAAAAB_example', secretRef: { name: 'turnstile' } },
    tls: { issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
    switches: { waf: true, challenge: false, sensitiveFiles: true },
    blocklists: ['proxies', 'cve-2024-3400'],
    allowlists: ['payment'],
  };
}

/** A site that joins the shared gateway `edge/shared`: its switches have no effect. */
export function blogRecord(namespace = 'blog'): DomainRecord {
  return {
    site: { namespace, name: 'blog' },
    domains: ['blog.example.com'],
    upstream: { name: 'blog', port: 8080 },
    posture: 'Observe',
    gatewayRef: { name: 'shared', namespace: 'edge' },
    switches: { waf: false, challenge: true, sensitiveFiles: true },
  };
}

/** A record the console got wrong: a scheme and capitals in its domains. */
export function badDomainsRecord(namespace = 'bad'): DomainRecord {
  return {
    site: { namespace, name: 'bad' },
    domains: ['https://bad.example.com', 'Bad.example.com'],
    upstream: { name: 'bad', port: 80 },
    posture: 'Challenge',
    tls: { issuerRef: { name: 'letsencrypt' } },
    switches: { waf: true, challenge: true, sensitiveFiles: true },
  };
}
