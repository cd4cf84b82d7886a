/** The operator settings the EdgeSite planner tests run with (images named as a deployment would). */
import type { EdgeSiteOptions } from '../../src/domain/edge-site/index.ts';

export const EDGE_OPTIONS: EdgeSiteOptions = {
  deciderImage: 'rg.fr-par.scw.cloud/exoledge/decider:0.1.1',
  wafFilterImage: 'ghcr.io/corazawaf/coraza-proxy-wasm:0.6.0',
  shardNamespace: 'exoledge-system',
  gatewayClassName: 'istio',
  deciderPort: 8080,
  valkeyUrl: 'redis://valkey.exoledge-system.svc:6379',
  trustedHops: 0,
};
