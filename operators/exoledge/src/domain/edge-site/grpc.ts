/**
 * `spec.grpc`: one DestinationRule per upstream Service the route sends to, upgrading
 * the gateway's connections to it to HTTP/2 (`h2UpgradePolicy: UPGRADE`). The operator
 * does not own the application's Services, so it cannot set `appProtocol: h2c` on them
 * (the seed); the rule is the only lever, and it never touches the Service.
 *
 * Each rule applies to the site's gateway pods only (`workloadSelector` on Istio's
 * `gateway.networking.k8s.io/gateway-name` label): other clients of the Service, and
 * another site's gateway sending to the same Service, keep their own behaviour.
 */
import type { EdgeSiteSpec } from '../../api/edge-site.ts';
import { OwnedKind } from './kinds.ts';
import { GATEWAY_NAME_LABEL, gatewayName, grpcRuleName, LABEL_UPSTREAM } from './names.ts';
import { owned, type SiteRef } from './owner.ts';
import { resolvedRoutes } from './route.ts';

/** The Services the route sends to, each once, sorted by name. */
export function upstreamServices(spec: Pick<EdgeSiteSpec, 'routes' | 'upstream'>): readonly string[] {
  const names = new Set(resolvedRoutes(spec).flatMap((r) => r.upstreams.map((u) => u.name)));
  return [...names].sort();
}

export function grpcRules(site: SiteRef, spec: EdgeSiteSpec) {
  return upstreamServices(spec).map((service) =>
    owned(
      site,
      OwnedKind.DestinationRule,
      grpcRuleName(site.name, service),
      {
        spec: {
          host: `${service}.${site.namespace}.svc.cluster.local`,
          workloadSelector: { matchLabels: { [GATEWAY_NAME_LABEL]: gatewayName(site.name) } },
          trafficPolicy: { connectionPool: { http: { h2UpgradePolicy: 'UPGRADE' } } },
        },
      },
      { [LABEL_UPSTREAM]: service },
    ),
  );
}
