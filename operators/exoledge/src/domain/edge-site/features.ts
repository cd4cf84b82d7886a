/**
 * Which of the site's functions its own objects carry, and why not when they do not:
 * one decision per function of `status.features` (waf, challenge, sensitiveFiles,
 * blocklists, grpc). The planner writes a function's objects exactly when this says the
 * site carries it, so the status and the objects cannot disagree.
 *
 * Two modes (the seed's "un site qui rejoint un bord partagé"):
 * - autonomous (no `gatewayRef`): the site carries every function its spec asks for,
 *   absent switches being on (`effectiveSecurity`);
 * - shared (`gatewayRef`): the site brings only its route; every function is the shared
 *   edge's, whatever the site's switches say (`CarriedBySharedEdge`).
 */
import { type EdgeSiteSpec, Feature } from '../../api/edge-site.ts';
import { FeatureReason } from './reasons.ts';
import { effectiveSecurity } from './security.ts';

export const SiteMode = {
  /** The site has its own gateway and carries everything. */
  Autonomous: 'Autonomous',
  /** The site joins `spec.gatewayRef` and brings only its route. */
  Shared: 'Shared',
} as const;
export type SiteMode = (typeof SiteMode)[keyof typeof SiteMode];

export function siteMode(spec: Pick<EdgeSiteSpec, 'gatewayRef'>): SiteMode {
  return spec.gatewayRef === undefined ? SiteMode.Autonomous : SiteMode.Shared;
}

/** One function of the site, decided. */
export type FeaturePlan =
  /** The site's own objects carry it: the planner writes them. */
  | { readonly name: Feature; readonly wanted: true; readonly carried: true }
  /** No object of the site carries it, for `reason`. */
  | {
      readonly name: Feature;
      /** What the spec asks for, absent switches resolved to on; on a shared site, without effect. */
      readonly wanted: boolean;
      readonly carried: false;
      readonly reason: FeatureReason;
    };

/** Every function, in `status.features` order (that of `Feature`). */
export function featuresFor(site: { readonly spec: EdgeSiteSpec }): readonly FeaturePlan[] {
  const { spec } = site;
  const security = effectiveSecurity(spec);
  const wanted: Readonly<Record<Feature, [boolean, FeatureReason]>> = {
    waf: [security.waf, FeatureReason.TurnedOff],
    challenge: [security.challenge, FeatureReason.TurnedOff],
    sensitiveFiles: [security.sensitiveFiles, FeatureReason.TurnedOff],
    blocklists: [
      security.blocklists.kind === 'AllPresumed' || security.blocklists.names.length > 0,
      FeatureReason.NoListSelected,
    ],
    grpc: [spec.grpc === true, FeatureReason.NotRequested],
  };
  const mode = siteMode(spec);
  return Object.values(Feature).map((name): FeaturePlan => {
    const [asked, offReason] = wanted[name];
    switch (mode) {
      case SiteMode.Shared:
        return { name, wanted: asked, carried: false, reason: FeatureReason.CarriedBySharedEdge };
      case SiteMode.Autonomous:
        return asked
          ? { name, wanted: true, carried: true }
          : { name, wanted: false, carried: false, reason: offReason };
      default:
        return mode satisfies never;
    }
  });
}

/** Whether the site's own objects carry `feature`. */
export function carries(features: readonly FeaturePlan[], feature: Feature): boolean {
  return features.some((f) => f.name === feature && f.carried);
}
