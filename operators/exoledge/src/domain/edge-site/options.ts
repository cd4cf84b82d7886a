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
   * The challenge filter (proof-of-work, or the captcha page), a Wasm module: an OCI
   * image reference (`ghcr.io/org/pow:1.0`), or a URL (`oci://`, `https://`, `file://`).
   */
  readonly challengeFilterImage: string;
  /** Coraza with the OWASP Core Rule Set built in (coraza-proxy-wasm), same forms. */
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
   * Proxies in front of the gateway that append to `X-Forwarded-For` and are trusted,
   * the gateway first. 0 (the default): the decider never reads the header, since any
   * client can write it.
   */
  readonly trustedHops: number;
}
