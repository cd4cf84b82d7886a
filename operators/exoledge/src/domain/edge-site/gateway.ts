/**
 * The site's own edge (autonomous mode): a cert-manager Certificate for its domains and
 * a Gateway API Gateway terminating TLS with it.
 *
 * The Gateway has one HTTPS listener per domain, each with that domain as hostname, all
 * serving the one certificate: a listener per hostname is what lets the Gateway report,
 * domain by domain, whether its route attached. Listeners are named `https-<i>` by the
 * domain's position in `spec.domains`; only routes of the site's namespace may attach.
 * Istio deploys the Gateway's pods as `<gateway>-<class>` and labels them
 * `gateway.networking.k8s.io/gateway-name: <gateway>`, which the filters select by.
 */
import { type EdgeSiteSpec, IssuerKind, type TlsSpec } from '../../api/edge-site.ts';
import { OwnedKind } from './kinds.ts';
import { certificateName, defaultTlsSecretName, gatewayName } from './names.ts';
import type { EdgeSiteOptions } from './options.ts';
import { owned, type SiteRef } from './owner.ts';

/** The port every listener of a site's Gateway takes. */
export const HTTPS_PORT = 443;
/** cert-manager's API group, in an issuerRef. */
export const CERT_MANAGER_GROUP = 'cert-manager.io';

/** The Secret the certificate is written to and the listeners serve. */
export function tlsSecretName(site: SiteRef, tls: TlsSpec): string {
  return tls.secretName ?? defaultTlsSecretName(site.name);
}

export function certificate(site: SiteRef, spec: EdgeSiteSpec, tls: TlsSpec) {
  return owned(site, OwnedKind.Certificate, certificateName(site.name), {
    spec: {
      secretName: tlsSecretName(site, tls),
      dnsNames: [...spec.domains],
      issuerRef: {
        group: CERT_MANAGER_GROUP,
        kind: tls.issuerRef.kind ?? IssuerKind.Issuer,
        name: tls.issuerRef.name,
      },
    },
  });
}

export function gateway(site: SiteRef, spec: EdgeSiteSpec, tls: TlsSpec, options: EdgeSiteOptions) {
  const secret = tlsSecretName(site, tls);
  return owned(site, OwnedKind.Gateway, gatewayName(site.name), {
    spec: {
      gatewayClassName: options.gatewayClassName,
      listeners: spec.domains.map((hostname, i) => ({
        name: `https-${i}`,
        hostname,
        port: HTTPS_PORT,
        protocol: 'HTTPS',
        tls: { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: secret }] },
        allowedRoutes: { namespaces: { from: 'Same' } },
      })),
    },
  });
}
