/**
 * The console's record of one domain: what the console knows and the bridge renders.
 * The console never talks to the Kubernetes API; it keeps these records (in a
 * DomainDirectory) and asks the bridge for the EdgeSite they make. The record is the
 * console's vocabulary, close to the EdgeSite's on purpose (a renderer that translated
 * much would be one more place for the two to disagree); where it differs, it says so:
 *
 * - `switches` are the console's checkboxes, always all three, `false` when unchecked.
 *   The EdgeSite reads an absent switch as on; a checkbox has no third state, so the
 *   record has none either, and the manifest always writes the three of them.
 * - `site` names the EdgeSite, which is not the host: one site serves several domains.
 */
import type { CaptchaSpec, GatewayRef, Posture, Route, ServiceRef, TlsSpec } from '../../api/edge-site.ts';
import type { SecuritySwitch } from '../edge-site/security.ts';

/** The checkboxes of the console's security panel: checked is `true`, unchecked `false`. */
export type ConsoleSwitches = { readonly [S in SecuritySwitch]: boolean };

/** Which EdgeSite a record renders: its namespace and name. */
export interface SiteRef {
  readonly namespace: string;
  readonly name: string;
}

export interface DomainRecord {
  readonly site: SiteRef;
  /** The site's host names, as the console holds them: the apiserver judges them, not the bridge. */
  readonly domains: readonly string[];
  readonly upstream: ServiceRef;
  readonly routes?: readonly Route[];
  readonly posture: Posture;
  readonly captcha?: CaptchaSpec;
  /** The site's own certificate; for a site with its own gateway (the apiserver refuses it with `gatewayRef`). */
  readonly tls?: TlsSpec;
  /** Set: the site joins this shared gateway, and its switches have no effect (shared mode). */
  readonly gatewayRef?: GatewayRef;
  readonly switches: ConsoleSwitches;
  /** BlocklistSource names. Absent: every Presumed list; `[]`: none (as `spec.security.blocklists`). */
  readonly blocklists?: readonly string[];
  /** ConfigMap names of the site's namespace. Absent: none. */
  readonly allowlists?: readonly string[];
}
