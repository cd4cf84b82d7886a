/**
 * The seed's example site (docs/exoledge.md) where the planner, bridge and CRD tests all
 * start: its two domains, / to docs, and /app split 300/100 between demo and demo-next.
 * Written out once, so that every test reads the same site, and not built by the code
 * under test.
 */
import type { EdgeSiteSpec, WeightedServiceRef } from '../../src/api/edge-site.ts';

/** The seed's /app origins: demo and demo-next, weighted 300 and 100. */
export const SEED_APP_SPLIT: readonly WeightedServiceRef[] = [
  { name: 'demo', port: 80, weight: 300 },
  { name: 'demo-next', port: 80, weight: 100 },
];

/** Where the seed's site answers and what it routes to; the rest is each test's own. */
export const SEED_ROUTING: Required<Pick<EdgeSiteSpec, 'domains' | 'upstream' | 'routes'>> = {
  domains: ['shop.example.com', '*.shop.example.com'],
  upstream: { name: 'docs', port: 80 },
  routes: [{ prefix: '/' }, { prefix: '/app', upstreams: SEED_APP_SPLIT }],
};
