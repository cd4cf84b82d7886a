/**
 * The site's HTTPRoute, in both modes: its domains as hostnames, one rule per route
 * prefix, each rule's upstreams as weighted backendRefs.
 *
 * - Without `spec.routes` (absent or empty, as the CRD documents) there is one rule,
 *   `/`, to `spec.upstream` (the seed: "sans spec.routes, une seule règle existe").
 * - A route without `upstreams` goes to `spec.upstream`, alone, with the default weight.
 * - Weight 0 stays a backendRef of weight 0: the origin is drained, still declared, and
 *   comes back by raising its weight. Removing it would be another change.
 * - Longest prefix wins in Gateway API whatever the order of the rules, so the rules are
 *   sorted by prefix: the same spec always gives the same object, and reordering
 *   `spec.routes` writes nothing. backendRefs keep the order the spec gives them.
 *
 * The parent is the site's own Gateway (autonomous), or `spec.gatewayRef` (shared), its
 * namespace written out (the site's when the ref leaves it out).
 */
import { DEFAULT_WEIGHT, type EdgeSiteSpec, type ServiceRef } from '../../api/edge-site.ts';
import { GATEWAY_API_GROUP, OwnedKind } from './kinds.ts';
import { gatewayName, routeName } from './names.ts';
import { owned, type SiteRef } from './owner.ts';

/** The prefix of the single rule a site without `spec.routes` has. */
export const ROOT_PREFIX = '/';

export interface BackendRef {
  readonly kind: 'Service';
  readonly name: string;
  readonly port: number;
  readonly weight: number;
}

export interface HttpRouteRule {
  readonly matches: readonly [{ readonly path: { readonly type: 'PathPrefix'; readonly value: string } }];
  readonly backendRefs: readonly BackendRef[];
}

export interface ParentRef {
  readonly group: typeof GATEWAY_API_GROUP;
  readonly kind: 'Gateway';
  readonly name: string;
  readonly namespace: string;
}

export interface HttpRouteSpec {
  readonly parentRefs: readonly [ParentRef];
  readonly hostnames: readonly string[];
  readonly rules: readonly HttpRouteRule[];
}

/** One route of the site, resolved: its prefix and its weighted origins. */
export interface ResolvedRoute {
  readonly prefix: string;
  readonly upstreams: readonly (ServiceRef & { readonly weight: number })[];
}

/** The site's routes with every default applied, sorted by prefix (code-unit order). */
export function resolvedRoutes(spec: Pick<EdgeSiteSpec, 'routes' | 'upstream'>): readonly ResolvedRoute[] {
  const upstream = { name: spec.upstream.name, port: spec.upstream.port, weight: DEFAULT_WEIGHT };
  const routes = spec.routes?.length ? spec.routes : [{ prefix: ROOT_PREFIX }];
  return routes
    .map((r) => ({
      prefix: r.prefix,
      upstreams: r.upstreams?.map((u) => ({
        name: u.name,
        port: u.port,
        weight: u.weight ?? DEFAULT_WEIGHT,
      })) ?? [upstream],
    }))
    .sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
}

/** The Gateway the route attaches to. */
export function parentRef(site: SiteRef, spec: Pick<EdgeSiteSpec, 'gatewayRef'>): ParentRef {
  const ref = spec.gatewayRef;
  return {
    group: GATEWAY_API_GROUP,
    kind: 'Gateway',
    name: ref?.name ?? gatewayName(site.name),
    namespace: ref?.namespace ?? site.namespace,
  };
}

export function httpRoute(site: SiteRef, spec: EdgeSiteSpec) {
  const body: { spec: HttpRouteSpec } = {
    spec: {
      parentRefs: [parentRef(site, spec)],
      hostnames: [...spec.domains],
      rules: resolvedRoutes(spec).map((r) => ({
        matches: [{ path: { type: 'PathPrefix', value: r.prefix } }],
        backendRefs: r.upstreams.map((u) => ({
          kind: 'Service',
          name: u.name,
          port: u.port,
          weight: u.weight,
        })),
      })),
    },
  };
  return owned(site, OwnedKind.HTTPRoute, routeName(site.name), body);
}
