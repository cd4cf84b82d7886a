/**
 * The operator's settings a site's objects depend on: images, the shard namespace, the
 * gateway class. They are the operator's, not a site's (a team does not choose the
 * decider it runs), and the planner takes them as they are: flags are checked where
 * they are parsed.
 */

/** The port the decider serves `/v1/verdict`, `/readyz` and `/healthz` on. */
export const DEFAULT_DECIDER_PORT = 8080;

export interface EdgeSiteOptions {
  /** The decider's container image. */
  readonly deciderImage: string;
  /**
   * Coraza with the OWASP Core Rule Set built in (coraza-proxy-wasm), a Wasm module: an
   * OCI image reference, or a URL (`oci://`, `https://`, `file://`).
   */
  readonly wafFilterImage: string;
  /**
   * Where the BlocklistSource controller publishes decider shards (ConfigMaps): the
   * decider watches them there, through the Role the site is given in it.
   */
  readonly shardNamespace: string;
  /** The GatewayClass of a site's own Gateway (Istio's is `istio`). */
  readonly gatewayClassName: string;
  /** {@link DEFAULT_DECIDER_PORT} unless the decider image says otherwise. */
  readonly deciderPort: number;
  /**
   * `redis://host:port` of the Valkey every decider shares (the chart deploys one beside
   * the operator; each site's keys carry its namespace and name). Undefined: deciders run
   * without state, so nobody can be cleared and nothing is counted (the decider says so
   * in `/readyz`).
   */
  readonly valkeyUrl: string | undefined;
  /**
   * Envoy's `xff_num_trusted_hops` of the sites' gateways (Istio's `numTrustedProxies`):
   * trusted proxies in front of the gateway. 0 (the default): the client is the gateway's
   * own TCP peer, the last `X-Forwarded-For` entry, which the gateway appended.
   */
  readonly trustedHops: number;
  /**
   * A header the deciders read the client address from before `X-Forwarded-For`: only
   * for gateways that a CDN alone reaches and whose value the CDN always overwrites.
   * Undefined (the default): none; client-set headers are never read.
   */
  readonly clientAddressHeader?: string | undefined;
}
