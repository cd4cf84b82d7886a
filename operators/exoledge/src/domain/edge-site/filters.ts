/**
 * The request filters on the site's own Gateway (autonomous mode), all Istio objects:
 *
 * - `<site>-ext-authz`, an EnvoyFilter inserting Envoy's ext_authz (HTTP) first in the
 *   gateway's HTTP filters: every request asks the decider for a verdict before anything
 *   else runs (the seed's path: TLS terminated, then the verdict, then the challenge).
 *   `pass` continues with the decider's `x-exoledge-*` headers added; everything else is
 *   a denial Envoy sends to the client as the decider wrote it (`allowed_client_headers`):
 *   the 403 of a drop, the challenge page, and the 303 with the clearance cookie that
 *   answers a solved challenge (`challenge-page.ts`). The challenge is served by the
 *   decider this way, with no Wasm filter. The cluster is Istio's name for the decider
 *   Service, `outbound|<port>||<host>`.
 * - `<site>-waf`, a WasmPlugin (phase AUTHZ): Coraza with the OWASP Core Rule Set. After
 *   ext_authz, so a client that has not passed the challenge costs no rule evaluation.
 * - `<site>-deny-files`, an AuthorizationPolicy DENY on the sensitive-file suffixes.
 *
 * All three select the site's Gateway by `targetRefs` (kind Gateway, group
 * gateway.networking.k8s.io), which the installed Istio CRDs (istio.io/api v1.32) have on
 * EnvoyFilter, WasmPlugin and AuthorizationPolicy: they bind to exactly the pods Istio
 * deploys for that Gateway, with no label to keep in step, and cannot reach another
 * gateway or a sidecar of the namespace. The CRDs allow targetRefs or a selector, not
 * both, so only targetRefs is set.
 */
import { type EdgeSiteSpec, FailurePolicy } from '../../api/edge-site.ts';
import { DENIED_CLIENT_HEADERS } from '../decider/challenge-page.ts';
import { deciderHost } from './decider.ts';
import { GATEWAY_API_GROUP, OwnedKind } from './kinds.ts';
import { extAuthzFilterName, gatewayName, sensitiveFilesPolicyName, wafPluginName } from './names.ts';
import type { EdgeSiteOptions } from './options.ts';
import { owned, type SiteRef } from './owner.ts';
import { SENSITIVE_FILE_SUFFIXES } from './sensitive-files.ts';
import { filterSettings } from './site-config.ts';

/** The decider's endpoint; ext_authz appends the request's path to it. */
export const VERDICT_PATH = '/v1/verdict';
/** How long the gateway waits for a verdict before `failurePolicy` decides. */
export const VERDICT_TIMEOUT = '0.25s';
/** Headers of the decider's allow answer passed on with the request, for the origin's logs. */
export const VERDICT_HEADER_PREFIX = 'x-exoledge-';
/** The header carrying the verdict. */
export const VERDICT_HEADER = 'x-exoledge-verdict';
/**
 * Request headers the decider sees beside those ext_authz always sends (method, path
 * with its query, host, authorization): the clearance cookie, the forwarded chain the
 * client address is read from (`client-address.ts`) and what a fingerprint needs. No
 * header a client could forge its address with (`x-envoy-external-address`,
 * `x-real-ip`): the decider would not read them anyway.
 */
export const VERDICT_REQUEST_HEADERS: readonly string[] = ['cookie', 'user-agent', 'x-forwarded-for'];
/**
 * coraza-proxy-wasm's built-in configuration, then the engine on, then the whole Core
 * Rule Set: the order its documentation gives (the recommended file sets detection only).
 */
export const CORAZA_DIRECTIVES: readonly string[] = [
  'Include @recommended-conf',
  'Include @crs-setup-conf',
  'Include @owasp_crs/*.conf',
  'SecRuleEngine On',
];

/** Istio's targetRefs to the site's Gateway. */
export function gatewayTargetRefs(site: SiteRef) {
  return [{ group: GATEWAY_API_GROUP, kind: 'Gateway', name: gatewayName(site.name) }];
}

/** `failurePolicy: Ignore` (the seed's "permissif si panne") lets a request through when the decider is down. */
export function failureModeAllow(spec: Pick<EdgeSiteSpec, 'filter'>): boolean {
  return filterSettings(spec).failurePolicy === FailurePolicy.Ignore;
}

/** A Wasm module's URL: an image reference is pulled as OCI; a URL is taken as it is. */
export function wasmUrl(image: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//.test(image) ? image : `oci://${image}`;
}

export function extAuthzFilter(site: SiteRef, spec: EdgeSiteSpec, options: EdgeSiteOptions) {
  const host = deciderHost(site);
  const port = options.deciderPort;
  return owned(site, OwnedKind.EnvoyFilter, extAuthzFilterName(site.name), {
    spec: {
      targetRefs: gatewayTargetRefs(site),
      configPatches: [
        {
          applyTo: 'HTTP_FILTER',
          match: {
            context: 'GATEWAY',
            listener: { filterChain: { filter: { name: 'envoy.filters.network.http_connection_manager' } } },
          },
          patch: {
            operation: 'INSERT_FIRST',
            value: {
              name: 'envoy.filters.http.ext_authz',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
                transport_api_version: 'V3',
                failure_mode_allow: failureModeAllow(spec),
                // Here, not in http_service.authorization_request: that copy is deprecated
                // (Envoy logs it) and the two may not both be set.
                allowed_headers: {
                  patterns: [
                    ...VERDICT_REQUEST_HEADERS,
                    ...(options.clientAddressHeader ? [options.clientAddressHeader] : []),
                  ].map((exact) => ({ exact })),
                },
                http_service: {
                  server_uri: {
                    uri: `http://${host}:${port}`,
                    cluster: `outbound|${port}||${host}`,
                    timeout: VERDICT_TIMEOUT,
                  },
                  path_prefix: VERDICT_PATH,
                  authorization_response: {
                    allowed_upstream_headers: { patterns: [{ prefix: VERDICT_HEADER_PREFIX }] },
                    // A denial reaches the client with these and its body: the challenge
                    // page, the redirect and the clearance cookie.
                    allowed_client_headers: {
                      patterns: DENIED_CLIENT_HEADERS.map((exact) => ({ exact })),
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  });
}

/** A plugin that fails to load follows `failurePolicy` too: open when Ignore, closed when Fail. */
function failStrategy(spec: Pick<EdgeSiteSpec, 'filter'>): 'FAIL_OPEN' | 'FAIL_CLOSE' {
  return failureModeAllow(spec) ? 'FAIL_OPEN' : 'FAIL_CLOSE';
}

export function wafPlugin(site: SiteRef, spec: EdgeSiteSpec, options: EdgeSiteOptions) {
  return owned(site, OwnedKind.WasmPlugin, wafPluginName(site.name), {
    spec: {
      targetRefs: gatewayTargetRefs(site),
      url: wasmUrl(options.wafFilterImage),
      phase: 'AUTHZ',
      type: 'HTTP',
      failStrategy: failStrategy(spec),
      pluginConfig: {
        directives_map: { default: [...CORAZA_DIRECTIVES] },
        default_directives: 'default',
      },
    },
  });
}

export function sensitiveFilesPolicy(site: SiteRef) {
  return owned(site, OwnedKind.AuthorizationPolicy, sensitiveFilesPolicyName(site.name), {
    spec: {
      targetRefs: gatewayTargetRefs(site),
      action: 'DENY',
      rules: [{ to: [{ operation: { paths: SENSITIVE_FILE_SUFFIXES.map((s) => `*${s}`) } }] }],
    },
  });
}
