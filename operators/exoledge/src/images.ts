import { packageVersion } from './cli.ts';

/**
 * The images a site's objects name unless told otherwise: the decider this project builds,
 * Coraza's published WAF module, and the proof-of-work module of the challenge filter.
 */
export const DEFAULT_IMAGES = {
  decider: `ghcr.io/kube-operators-ts/exoledge-decider:${packageVersion()}`,
  challengeFilter: `oci://ghcr.io/kube-operators-ts/exoledge-pow-filter:${packageVersion()}`,
  wafFilter: 'oci://ghcr.io/corazawaf/coraza-proxy-wasm:0.6.0',
} as const;
