/**
 * `status.origins` of an EdgeSite: each origin of each route, its weight, how many ready
 * endpoints Kubernetes sees behind it, and why it receives nothing when it does not. Pure:
 * the site, the EndpointSlices and the Services of its namespace in, the entries out. The
 * controller reads them from its cache, calls `originsOf`, and writes the result; it
 * re-reconciles a site when a slice or a Service it names changes (`endpointSliceSites`,
 * `serviceSites`).
 *
 * Readiness is Kubernetes', not a probe of ours: an endpoint of an EndpointSlice is ready
 * when `conditions.ready` is not false (nil means ready, as the API documents) and it is
 * not `terminating`. A terminating endpoint is leaving: the gateway sends it nothing new,
 * even when `publishNotReadyAddresses` keeps its `ready` true.
 *
 * How the site's port finds its endpoints. The site names a Service port, as an HTTPRoute
 * backendRef does, but an EndpointSlice never carries the Service port number: its
 * `ports[]` entries hold the Service port's *name* and the *target* port number, which
 * may differ from Pod to Pod when the target port is named (the controller then splits
 * the endpoints into slices by port number). Matching the site's port against the
 * slice's numbers would count the wrong Pods whenever `port` and `targetPort` differ, the
 * common case (80 in front of 8080). So the Service is read: its TCP port with that
 * number gives a name (`''` for the one unnamed port a Service may have), and a slice
 * counts when one of its `ports[]` has that name, whatever its number. The name is the
 * one key the API keeps from Service to slice: unique among a Service's ports and copied
 * into every slice by the EndpointSlice controller.
 *
 * Counting: the Service's slices are those labelled `kubernetes.io/service-name`. An
 * endpoint is its first address (the API makes the others fungible with it), counted
 * once however many slices hold it: a Service's endpoints are split over several slices,
 * and during a rollover the same address appears in two. A copy that is ready makes the
 * address ready. A dual-stack Service has one set of slices per address family, each
 * listing the same Pods under another address: the families are counted apart and the
 * one with the most ready endpoints is reported, not their sum.
 *
 * Guarantees: one entry per (route prefix, Service, port), the key of the status list,
 * sorted by prefix, then Service name, then port, whatever the order of the routes,
 * slices and Services; a reason exactly when the weight is 0 or no endpoint is ready.
 * Caveats: slices and Services of another namespace are ignored when both sides name
 * theirs; addresses are compared as written, not parsed.
 */
import type { KubeObject, ObjectKey } from '@operators/kit';
import { objectKey } from '@operators/kit';
import { DEFAULT_WEIGHT, type EdgeSite, type EdgeSiteSpec, type OriginStatus } from '../../api/edge-site.ts';
import { OriginReason } from './origin-reasons.ts';

/** The label the EndpointSlice controller puts on every slice of a Service, naming it. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** `discovery.k8s.io/v1` EndpointConditions: nil means unknown, read as the API documents. */
export interface EndpointConditions {
  /** Nil: ready. */
  readonly ready?: boolean | null;
  readonly serving?: boolean | null;
  /** Nil: not terminating. */
  readonly terminating?: boolean | null;
}

export interface EndpointSliceEndpoint {
  /** At least one; the first is the endpoint, the others fungible with it. */
  readonly addresses: readonly string[];
  readonly conditions?: EndpointConditions;
}

export interface EndpointSlicePort {
  /** The Service port's name; nil or `''` for an unnamed port. */
  readonly name?: string | null;
  /** The target port number; nil means every port. Not the Service port. */
  readonly port?: number | null;
  readonly protocol?: string;
}

/** `discovery.k8s.io/v1` EndpointSlice, as read: `endpoints` and `ports` may be null. */
export interface EndpointSlice extends KubeObject {
  /** `IPv4`, `IPv6` or `FQDN`. */
  readonly addressType: string;
  readonly endpoints?: readonly EndpointSliceEndpoint[] | null;
  readonly ports?: readonly EndpointSlicePort[] | null;
}

export interface ServicePort {
  /** Required when the Service has more than one port. */
  readonly name?: string;
  readonly port: number;
  /** Nil: TCP. */
  readonly protocol?: string;
  readonly targetPort?: number | string;
}

/** `v1` Service, the fields read here. */
export interface Service extends KubeObject {
  readonly spec?: {
    readonly type?: string;
    readonly ports?: readonly ServicePort[] | null;
  };
}

/** An origin as the spec declares it, before anything is observed. */
export interface DeclaredOrigin {
  readonly prefix: string;
  readonly name: string;
  readonly port: number;
  readonly weight: number;
}

/** One entry of `status.origins`, with what the status has no field for. */
export interface OriginReport {
  readonly status: OriginStatus;
  /** Endpoints on the port that are not ready (terminating ones among them), counted as ready ones are. */
  readonly notReadyEndpoints: number;
  /** With a reason: what is wrong, naming the route and the Service, for a condition or an event. */
  readonly message?: string;
}

/**
 * The origins the spec routes to: each route's upstreams, `spec.upstream` (weight 1) for
 * a route without any, and one rule `/` to `spec.upstream` when `routes` is absent or
 * empty. Sorted by prefix, name and port; a (prefix, name, port) written twice, which the
 * CRD refuses, is kept once, the first.
 */
export function declaredOrigins(spec: Pick<EdgeSiteSpec, 'upstream' | 'routes'>): readonly DeclaredOrigin[] {
  const single = { name: spec.upstream.name, port: spec.upstream.port, weight: DEFAULT_WEIGHT };
  const routes = spec.routes?.length ? spec.routes : [{ prefix: '/' }];
  const byKey = new Map<string, DeclaredOrigin>();
  for (const route of routes) {
    const upstreams = route.upstreams?.length ? route.upstreams : [single];
    for (const u of upstreams) {
      const key = `${route.prefix}\u0000${u.name}\u0000${u.port}`;
      if (!byKey.has(key)) {
        byKey.set(key, {
          prefix: route.prefix,
          name: u.name,
          port: u.port,
          weight: u.weight ?? DEFAULT_WEIGHT,
        });
      }
    }
  }
  return [...byKey.values()].sort(byOriginKey);
}

/** `status.origins` of `site`: `originReports` without what the status has no field for. */
export function originsOf(
  site: EdgeSite,
  endpointSlices: readonly EndpointSlice[],
  services: readonly Service[],
): readonly OriginStatus[] {
  return originReports(site, endpointSlices, services).map((r) => r.status);
}

/**
 * Each origin of `site` (`declaredOrigins`), observed in the EndpointSlices and Services
 * of its namespace. The reason, when there is one, is the first that applies of:
 * `Drained` (weight 0; the count is still reported), `ServiceNotFound`, `PortNotFound`,
 * `NoEndpointSlices`, `NoReadyEndpoints`.
 */
export function originReports(
  site: EdgeSite,
  endpointSlices: readonly EndpointSlice[],
  services: readonly Service[],
): readonly OriginReport[] {
  const namespace = site.metadata.namespace;
  const servicesByName = new Map<string, Service>();
  for (const s of services) {
    if (inNamespace(s, namespace) && s.metadata.name !== undefined) servicesByName.set(s.metadata.name, s);
  }
  const slicesByService = new Map<string, EndpointSlice[]>();
  for (const slice of endpointSlices) {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
    if (service === undefined || !inNamespace(slice, namespace)) continue;
    const list = slicesByService.get(service);
    if (list) list.push(slice);
    else slicesByService.set(service, [slice]);
  }
  return declaredOrigins(site.spec).map((origin) =>
    report(origin, observe(origin, servicesByName.get(origin.name), slicesByService.get(origin.name) ?? [])),
  );
}

/** The sites (`namespace/name`) with an origin on the slice's Service: those its change may alter. */
export function endpointSliceSites(slice: EndpointSlice, sites: readonly EdgeSite[]): readonly ObjectKey[] {
  const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return service === undefined ? [] : sitesWithOrigin(slice.metadata.namespace, service, sites);
}

/** The sites (`namespace/name`) with an origin on `service`: a port renamed or removed changes their status. */
export function serviceSites(service: Service, sites: readonly EdgeSite[]): readonly ObjectKey[] {
  const name = service.metadata.name;
  return name === undefined ? [] : sitesWithOrigin(service.metadata.namespace, name, sites);
}

// ---------------------------------------------------------------------------------------

/** What the cluster says of one origin, before its weight is considered. */
type Observation =
  | { readonly kind: 'ServiceNotFound' }
  | { readonly kind: 'PortNotFound'; readonly ports: readonly ServicePort[] }
  | { readonly kind: 'NoEndpointSlices' }
  | { readonly kind: 'Counted'; readonly ready: number; readonly notReady: number };

function observe(
  origin: DeclaredOrigin,
  service: Service | undefined,
  slices: readonly EndpointSlice[],
): Observation {
  if (service === undefined) return { kind: 'ServiceNotFound' };
  const ports = service.spec?.ports ?? [];
  // An HTTPRoute reaches a Service port over TCP; a UDP port of the same number is another port.
  const port = ports.find((p) => p.port === origin.port && (p.protocol ?? 'TCP') === 'TCP');
  if (port === undefined) return { kind: 'PortNotFound', ports };
  if (slices.length === 0) return { kind: 'NoEndpointSlices' };
  return { kind: 'Counted', ...countEndpoints(slices, port.name ?? '') };
}

/** Ready and not-ready endpoints of the slices on the port named `portName`, as the module comment says. */
function countEndpoints(
  slices: readonly EndpointSlice[],
  portName: string,
): { readonly ready: number; readonly notReady: number } {
  // Per address family: address → whether some copy of it is ready.
  const families = new Map<string, Map<string, boolean>>();
  for (const slice of slices) {
    if (!(slice.ports ?? []).some((p) => (p.name ?? '') === portName)) continue;
    let seen = families.get(slice.addressType);
    if (seen === undefined) {
      seen = new Map();
      families.set(slice.addressType, seen);
    }
    for (const endpoint of slice.endpoints ?? []) {
      const address = endpoint.addresses[0];
      if (address === undefined) continue;
      seen.set(address, seen.get(address) === true || isReady(endpoint));
    }
  }
  let best = { ready: 0, notReady: 0 };
  for (const seen of families.values()) {
    let ready = 0;
    for (const r of seen.values()) if (r) ready++;
    const notReady = seen.size - ready;
    if (ready > best.ready || (ready === best.ready && notReady > best.notReady)) best = { ready, notReady };
  }
  return best;
}

function isReady(endpoint: EndpointSliceEndpoint): boolean {
  return endpoint.conditions?.ready !== false && endpoint.conditions?.terminating !== true;
}

function report(origin: DeclaredOrigin, seen: Observation): OriginReport {
  const ready = seen.kind === 'Counted' ? seen.ready : 0;
  const notReady = seen.kind === 'Counted' ? seen.notReady : 0;
  const status = { ...origin, readyEndpoints: ready };
  const where = `route ${origin.prefix}, Service ${origin.name} port ${origin.port}`;
  const problem = problemOf(seen);
  if (origin.weight === 0) {
    const count = `${plural(ready, 'ready endpoint')}${problem ? `; besides, ${problem.text}` : ''}`;
    const message = `${where}: drained (weight 0), it receives no new requests (${count})`;
    return {
      status: { ...status, reason: OriginReason.Drained, message },
      notReadyEndpoints: notReady,
      message,
    };
  }
  if (problem === undefined) return { status, notReadyEndpoints: notReady };
  // The message goes into the status too: a code alone does not say which Service or what to do.
  const message = `${where}: ${problem.text}`;
  return { status: { ...status, reason: problem.reason, message }, notReadyEndpoints: notReady, message };
}

/** Why the origin would receive nothing even with a weight: a reason and its words. */
function problemOf(seen: Observation): { readonly reason: OriginReason; readonly text: string } | undefined {
  switch (seen.kind) {
    case 'ServiceNotFound':
      return {
        reason: OriginReason.ServiceNotFound,
        text: "no such Service in the site's namespace: create it, or correct the name",
      };
    case 'PortNotFound': {
      const ports = seen.ports.map((p) => `${p.port}/${p.protocol ?? 'TCP'}${p.name ? ` (${p.name})` : ''}`);
      return {
        reason: OriginReason.PortNotFound,
        text:
          `the Service has no TCP port with this number (it has ${ports.length ? ports.join(', ') : 'none'}): ` +
          'name a port of the Service, not the target port of its Pods',
      };
    }
    case 'NoEndpointSlices':
      return {
        reason: OriginReason.NoEndpointSlices,
        text:
          'the Service has no EndpointSlice: a Service without a selector has none unless they are ' +
          'written for it, and one of type ExternalName has none at all',
      };
    case 'Counted':
      return seen.ready > 0
        ? undefined
        : {
            reason: OriginReason.NoReadyEndpoints,
            text:
              seen.notReady === 0
                ? 'no endpoint on this port: its selector matches no Pod, or none serves the port'
                : `no ready endpoint (${seen.notReady} not ready: starting, failing readiness, or terminating)`,
          };
    default: {
      const unknown: never = seen;
      return unknown;
    }
  }
}

function sitesWithOrigin(
  namespace: string | undefined,
  service: string,
  sites: readonly EdgeSite[],
): readonly ObjectKey[] {
  return sites
    .filter(
      (site) => inNamespace(site, namespace) && declaredOrigins(site.spec).some((o) => o.name === service),
    )
    .map(objectKey)
    .sort();
}

/** Lenient when either side does not say: the caller already passes one namespace's objects. */
function inNamespace(obj: KubeObject, namespace: string | undefined): boolean {
  return (
    namespace === undefined || obj.metadata.namespace === undefined || obj.metadata.namespace === namespace
  );
}

function byOriginKey(a: DeclaredOrigin, b: DeclaredOrigin): number {
  return compare(a.prefix, b.prefix) || compare(a.name, b.name) || a.port - b.port;
}

/** By code unit, as Go and the apiserver order strings: no locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
