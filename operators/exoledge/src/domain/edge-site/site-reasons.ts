/**
 * The reasons of an EdgeSite's Ready condition and Events, and of a function that is
 * carried but not applied (`status.features[].reason`, beside the planner's
 * `FeatureReason`s).
 */
export const SiteReason = {
  /** Every object the site wants is live as desired. The Event of that name is sent once per generation. */
  Reconciled: 'Reconciled',
  /**
   * Writing an object failed: the loop stopped there, the objects before it stay applied,
   * those after it were not tried; the message names the object and the apiserver's answer.
   */
  ApplyFailed: 'ApplyFailed',
  /**
   * An object the site no longer wants (a switch turned off, a mode switched) could not be
   * deleted, or, while the site is deleted, one of its objects: as visible as a failed
   * apply, never silent (the seed's ServiceAccount that could create but not delete).
   */
  DeleteFailed: 'DeleteFailed',
  /**
   * The cluster does not serve a kind the site needs (cert-manager or Istio not
   * installed): its objects are skipped, everything else is applied, and the functions
   * they carry say so.
   */
  KindNotServed: 'KindNotServed',
  /** An object of the site's name exists without being the site's: it is never taken over. */
  NameConflict: 'NameConflict',
  /** The spec cannot be planned (what the CRD of this version refuses got in): the message says what. */
  InvalidSpec: 'InvalidSpec',
} as const;
export type SiteReason = (typeof SiteReason)[keyof typeof SiteReason];
