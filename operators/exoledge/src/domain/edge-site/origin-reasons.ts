/**
 * Why an origin of an EdgeSite receives nothing: the closed set of
 * `status.origins[].reason`. An origin with a reason is declared, not healthy; an origin
 * without one has a weight above 0 and at least one ready endpoint. The reasons come from
 * what Kubernetes already says (the Service, its EndpointSlices and their readiness
 * conditions), never from a probe of ours. `origins.ts` decides them; each one comes with
 * a message naming the route, the Service and what to do.
 */

export const OriginReason = {
  /**
   * The route gives the origin weight 0: the gateway sends it nothing new, on purpose
   * (the step before removing an origin, or a new one not yet opened). `readyEndpoints`
   * is still reported, so the console can show whether it could take traffic back. It
   * wins over every other reason: deleting a drained origin's Service is a normal step of
   * a rollout, not a fault; the message still names what else is wrong.
   */
  Drained: 'Drained',
  /**
   * No Service of that name in the site's namespace: the route's backendRef resolves to
   * nothing. A misspelt name, or a Service not created yet (or already deleted).
   */
  ServiceNotFound: 'ServiceNotFound',
  /**
   * The Service exists but has no TCP port with the number the site names: the gateway
   * cannot resolve the backendRef. The site names a Service port (as an HTTPRoute does),
   * not the Pod's target port; the message lists the Service's ports.
   */
  PortNotFound: 'PortNotFound',
  /**
   * The Service and its port exist but no EndpointSlice carries its name (label
   * `kubernetes.io/service-name`): a Service without a selector (whose slices nobody
   * wrote), a Service of type ExternalName, or one the EndpointSlice controller has not
   * reached yet. Nothing behind it is known, so nothing is counted.
   */
  NoEndpointSlices: 'NoEndpointSlices',
  /**
   * The Service's EndpointSlices hold no ready endpoint on the port: every Pod is
   * starting, failing its readiness probe or terminating, or the selector matches none.
   * The message says how many endpoints are there but not ready.
   */
  NoReadyEndpoints: 'NoReadyEndpoints',
} as const;
export type OriginReason = (typeof OriginReason)[keyof typeof OriginReason];
