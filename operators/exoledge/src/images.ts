import { packageVersion } from './cli.ts';

/**
 * The images a site's objects name unless told otherwise: the decider this project builds,
 * and Coraza's published WAF module. (The challenge is served by the decider.)
 */
export const DEFAULT_IMAGES = {
  decider: `ghcr.io/kube-operators-ts/exoledge-decider:${packageVersion()}`,
  wafFilter: 'oci://ghcr.io/corazawaf/coraza-proxy-wasm:0.6.0',
} as const;
