/**
 * The console's record of a domain, rendered as the EdgeSite manifest that goes to Git:
 * "the console decides, the operator applies, Git is the truth". Pure, and faithful: the
 * renderer fixes nothing (a domain in capitals stays in capitals, for the dry-run to
 * refuse with the CRD's own message) and adds no default the apiserver would add.
 */
import { EDGE_SITE, type EdgeSiteSpec, type SecuritySpec } from '../../api/edge-site.ts';
import { SiteMode, siteMode } from '../edge-site/features.ts';
import type { DomainRecord } from './record.ts';

/** An EdgeSite as the bridge hands it out: what Git stores, without status or server fields. */
export type EdgeSiteManifest = {
  readonly apiVersion: typeof EDGE_SITE.apiVersion;
  readonly kind: typeof EDGE_SITE.kind;
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: EdgeSiteSpec;
};

/**
 * The EdgeSite `record` asks for.
 *
 * Guarantees: with a gateway of its own, `spec.security` writes all three switches, an
 * unchecked one as an explicit `false` (an absent switch is on, so leaving it out would
 * turn a protection back on); on a shared gateway there is no `spec.security` at all;
 * optional fields absent from the record are absent from the manifest; the manifest
 * shares no object with the record (a YAML writer would show a shared one as an alias).
 */
export function renderEdgeSite(record: DomainRecord): EdgeSiteManifest {
  const security = securityOf(record);
  return {
    apiVersion: EDGE_SITE.apiVersion,
    kind: EDGE_SITE.kind,
    metadata: { name: record.site.name, namespace: record.site.namespace },
    spec: {
      domains: [...record.domains],
      upstream: { ...record.upstream },
      ...(record.routes
        ? {
            routes: record.routes.map((r) => ({
              prefix: r.prefix,
              ...(r.upstreams ? { upstreams: r.upstreams.map((u) => ({ ...u })) } : {}),
            })),
          }
        : {}),
      ...(record.tls ? { tls: { ...record.tls, issuerRef: { ...record.tls.issuerRef } } } : {}),
      posture: record.posture,
      ...(record.captcha
        ? { captcha: { ...record.captcha, secretRef: { ...record.captcha.secretRef } } }
        : {}),
      ...(record.gatewayRef ? { gatewayRef: { ...record.gatewayRef } } : {}),
      ...(security ? { security } : {}),
    },
  };
}

function securityOf(record: DomainRecord): SecuritySpec | undefined {
  const mode = siteMode(record);
  switch (mode) {
    case SiteMode.Shared:
      // The shared edge carries the WAF, the challenge, the sensitive files and the lists
      // for every site on it (they are listener filters); a site's `security` changes
      // nothing there. Rendering it would put a spec without effect in Git, one that
      // reads as a protection the site does not have (or lacks one it has).
      return undefined;
    case SiteMode.Autonomous:
      return {
        waf: record.switches.waf,
        challenge: record.switches.challenge,
        sensitiveFiles: record.switches.sensitiveFiles,
        ...(record.blocklists ? { blocklists: [...record.blocklists] } : {}),
        ...(record.allowlists ? { allowlists: [...record.allowlists] } : {}),
      };
    default:
      return mode satisfies never;
  }
}
