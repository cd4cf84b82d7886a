/**
 * The names and labels of what an EdgeSite owns, one rule each, so that the planner,
 * the controller, the docs and the tests agree.
 *
 * In the site's namespace every name is the site's name with a fixed suffix of at most
 * 11 characters: a site name is at most 52 (`MAX_SITE_NAME_LENGTH`), so every name holds
 * in 63 and stays a DNS-1035 label (a site name starts with a letter and has no dot).
 * Each kind has one suffix, none of which ends another, so two sites of one namespace
 * can never want the same name for the same kind. The two exceptions carry a hash:
 * - a DestinationRule per upstream Service: `<site>-grpc-<5 characters>`, hashed from
 *   the Service name (which may be 63 characters long itself) and labelled with it;
 * - the decider's Role and RoleBinding in the shard namespace, which every site of
 *   every namespace shares: `decider-<site>-<10 characters>`, hashed from
 *   `<namespace>/<site>` (the site's name cut to fit), labelled with both.
 * A fixed-length hash at the end keeps the names of two sites distinct.
 */
import { createHash } from 'node:crypto';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../blocklist-source/publication.ts';

export { LABEL_MANAGED_BY, MANAGED_BY };

/** On every object of a site: the site's name. The controller lists what a site owns by it. */
export const LABEL_SITE = 'edge.exoledge.io/site';
/** On the shard namespace's objects: the site's namespace, which the site label alone cannot say there. */
export const LABEL_SITE_NAMESPACE = 'edge.exoledge.io/site-namespace';
/** On a DestinationRule: the upstream Service it upgrades, which its hashed name does not show. */
export const LABEL_UPSTREAM = 'edge.exoledge.io/upstream';
/** On the decider's pods: its selector, with the site label. */
export const LABEL_NAME = 'app.kubernetes.io/name';
export const DECIDER_APP = 'exoledge-decider';
/**
 * The label Istio's Gateway API deployment puts on a Gateway's pods, valued with the
 * Gateway's name: how a DestinationRule picks the site's gateway pods only.
 */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

/** The site's Gateway: the site's own name, so Istio's generated `<gateway>-<class>` objects stay short. */
export const gatewayName = (site: string): string => site;
/** The HTTPRoute, in both modes. */
export const routeName = (site: string): string => site;
/** The cert-manager Certificate; also the Secret's name when `tls.secretName` is absent. */
export const certificateName = (site: string): string => `${site}-tls`;
export const defaultTlsSecretName = (site: string): string => `${site}-tls`;
/** The decider's configuration: posture, captcha, upstream, filter, lists. */
export const siteConfigMapName = (site: string): string => `${site}-edge`;
/** The decider's Deployment, Service and ServiceAccount. */
export const deciderName = (site: string): string => `${site}-decider`;
/** The EnvoyFilter inserting ext_authz. */
export const extAuthzFilterName = (site: string): string => `${site}-ext-authz`;
/**
 * The Secret the site's owner may create with the signing keys of clearances (key
 * `keys`): the decider's environment references it, optional.
 */
export const signingKeySecretName = (site: string): string => `${site}-decider-signing-key`;
/** The key of that Secret. */
export const SIGNING_KEY_SECRET_KEY = 'keys';
/** The Coraza + OWASP CRS WasmPlugin. */
export const wafPluginName = (site: string): string => `${site}-waf`;
/**
 * The AuthorizationPolicy denying sensitive files. Not `-sensitive-files`: 16 characters
 * after a 52-character site name would make 68, over the 63 every name here keeps to.
 */
export const sensitiveFilesPolicyName = (site: string): string => `${site}-deny-files`;
/** The DestinationRule upgrading connections to one upstream Service to HTTP/2. */
export const grpcRuleName = (site: string, service: string): string =>
  `${site}-grpc-${base36Hash(service, 5)}`;

/** Room for the site's name in a shard name: `decider-` (8) + name + `-` + 10 of hash = 63. */
const SHARD_NAME_ROOM = 63 - 'decider-'.length - 1 - 10;

/** The decider's Role and RoleBinding in the shard namespace. */
export function shardAccessName(namespace: string, site: string): string {
  const cut = site.slice(0, SHARD_NAME_ROOM).replace(/-+$/, '');
  return `decider-${cut}-${base36Hash(`${namespace}/${site}`, 10)}`;
}

/**
 * `length` base-36 digits (lowercase letters and digits) of the SHA-256 of `text`: the
 * low-order ones of its first 128 bits, which are evenly spread (the leading ones are not).
 */
function base36Hash(text: string, length: number): string {
  const digest = createHash('sha256').update(text).digest();
  const n = BigInt(`0x${digest.subarray(0, 16).toString('hex')}`);
  return (n % 36n ** BigInt(length)).toString(36).padStart(length, '0');
}

/** The labels of every object a site owns in its namespace. */
export function siteLabels(
  site: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_SITE]: site, ...extra };
}

/** The labels of the site's objects in the shard namespace: the selector the controller cleans up by. */
export function shardLabels(namespace: string, site: string): Record<string, string> {
  return siteLabels(site, { [LABEL_SITE_NAMESPACE]: namespace });
}

/** The label selector of a site's objects in the shard namespace. */
export function shardSelector(namespace: string, site: string): string {
  return Object.entries(shardLabels(namespace, site))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The decider pods' selector (immutable in a Deployment, so nothing that may change). */
export function deciderSelector(site: string): Record<string, string> {
  return { [LABEL_NAME]: DECIDER_APP, [LABEL_SITE]: site };
}
