/**
 * Why a function of `status.features` is not carried by the site's own objects: the
 * closed set of reasons the planner gives (`featuresFor`), which the status reports as
 * they are. The controller adds its own (an apply that failed) when it writes the status.
 */

export const FeatureReason = {
  /**
   * `spec.security` turns the switch off (written `false`: an absent switch is on). The
   * objects that carry it are removed, by name, so the console's "off" is true at the
   * gateway and not only on screen.
   */
  TurnedOff: 'TurnedOff',
  /** `spec.grpc` is false: the origins speak HTTP/1.1 or negotiate HTTP/2 themselves, and no DestinationRule is needed. */
  NotRequested: 'NotRequested',
  /**
   * `security.blocklists` is `[]`: the site selects no Presumed list, so nobody is
   * challenged (absent would have meant every Presumed list). Certain lists are not a
   * site's choice: they are the cluster's, dropped by Cilium or by the decider whatever
   * the selection, so the decider stays in place for them.
   */
  NoListSelected: 'NoListSelected',
  /**
   * The site joins a shared gateway (`spec.gatewayRef`) and brings only its route: the
   * WAF, the challenge, the decider and its lists are listener filters, carried once by
   * the shared edge for every site on it (two sites stacking their own would filter the
   * same traffic twice). Given for every function of a shared site, whatever its switches
   * say, since they have no effect there.
   */
  CarriedBySharedEdge: 'CarriedBySharedEdge',
  /**
   * The function is off, but deleting an object that carried it failed: it may still be
   * live at the gateway. Said instead of the off reason until the object is gone (the
   * deletion is retried with the reconcile's backoff), so the status never says off
   * while the filter still acts.
   */
  RemoveFailed: 'RemoveFailed',
} as const;
export type FeatureReason = (typeof FeatureReason)[keyof typeof FeatureReason];
