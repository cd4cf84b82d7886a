/**
 * An EdgeSite's status after a reconcile, pure: what the planner wanted (`DesiredSet`),
 * what happened to each object (`ObjectOutcome`), and the origins in; `status` out.
 *
 * The rule the seed learned the hard way: the status counts only what was applied. A
 * function (`status.features[]`) is `applied` when the site carries it and every object
 * that carries it is live as desired after this reconcile (written now, or found in sync);
 * an object not reached because an earlier one failed, or whose kind the cluster does not
 * serve, leaves its function not applied, with the reason.
 */
import type { Condition } from '@operators/kit';
import { setCondition } from '@operators/kit';
import { type EdgeSiteStatus, Feature, type FeatureStatus, type OriginStatus } from '../../api/edge-site.ts';
import type { DesiredSet, ObjectRef } from './desired.ts';
import { SiteMode } from './features.ts';
import { OwnedKind, ShardKind } from './kinds.ts';
import { sensitiveFilesPolicyName, wafPluginName } from './names.ts';
import { FeatureReason } from './reasons.ts';
import { SiteReason } from './site-reasons.ts';

/** What one reconcile did with one desired object. */
export type ObjectOutcome =
  /** Written (created or changed) by this reconcile. */
  | { readonly kind: 'Applied' }
  /** Live already equals desired: nothing written. */
  | { readonly kind: 'InSync' }
  /** The cluster does not serve its kind (a CRD not installed): skipped, the site keeps what works. */
  | { readonly kind: 'NotServed'; readonly crd: string }
  /** The apply failed (or the name is taken by an object the site does not own): the loop stopped here. */
  | { readonly kind: 'Failed'; readonly message: string }
  /** After a failure: not tried. */
  | { readonly kind: 'NotReached' };

/** `Kind/name`, the key of an outcome (namespaces are the site's, or the shard namespace's). */
export function outcomeKey(ref: Pick<ObjectRef, 'kind' | 'name'>): string {
  return `${ref.kind}/${ref.name}`;
}

/**
 * The function an object carries, or undefined for the site's core (the route, the
 * gateway and its certificate serve traffic whatever the switches). The decider and
 * what reaches it (its configuration, account, Service, the ext_authz filter and its
 * grant in the shard namespace) carry the lists.
 */
export function featureOf(ref: Pick<ObjectRef, 'kind' | 'name'>, site: string): Feature | undefined {
  switch (ref.kind) {
    case OwnedKind.WasmPlugin:
      if (ref.name === wafPluginName(site)) return Feature.Waf;
      return undefined;
    case OwnedKind.AuthorizationPolicy:
      return ref.name === sensitiveFilesPolicyName(site) ? Feature.SensitiveFiles : undefined;
    case OwnedKind.DestinationRule:
      return Feature.Grpc;
    case OwnedKind.ServiceAccount:
    case OwnedKind.ConfigMap:
    case OwnedKind.Deployment:
    case OwnedKind.Service:
    case OwnedKind.EnvoyFilter:
    case ShardKind.Role:
    case ShardKind.RoleBinding:
      return Feature.Blocklists;
    default:
      return undefined;
  }
}

/** `status.features`: the planner's decision, then what was really applied. */
export function featureStatuses(
  site: string,
  desired: DesiredSet,
  outcomes: ReadonlyMap<string, ObjectOutcome>,
  /** Objects the plan no longer lists whose deletion failed: they may still be live. */
  stillLive: readonly Pick<ObjectRef, 'kind' | 'name'>[] = [],
): readonly FeatureStatus[] {
  const refs = [...desired.apply.map((o) => o.ref), ...desired.shard.apply.map((o) => o.ref)];
  return desired.features.map((plan): FeatureStatus => {
    if (!plan.carried) {
      const live = stillLive.some((r) => featureOf(r, site) === plan.name);
      return { name: plan.name, applied: false, reason: live ? FeatureReason.RemoveFailed : plan.reason };
    }
    // The challenge is served by the decider: its configuration and the ext_authz filter carry it.
    const carriers = refs.filter(
      (r) =>
        featureOf(r, site) === plan.name ||
        (plan.name === Feature.Challenge &&
          (r.kind === OwnedKind.ConfigMap || r.kind === OwnedKind.EnvoyFilter)),
    );
    let reason: string | undefined;
    for (const ref of carriers) {
      const o = outcomes.get(outcomeKey(ref));
      if (o?.kind === 'Applied' || o?.kind === 'InSync') continue;
      reason = o?.kind === 'NotServed' ? SiteReason.KindNotServed : SiteReason.ApplyFailed;
      break;
    }
    return reason ? { name: plan.name, applied: false, reason } : { name: plan.name, applied: true };
  });
}

/** How the reconcile ended, for the Ready condition. */
export type ReconcileVerdict =
  | { readonly kind: 'Reconciled' }
  | { readonly kind: 'KindsNotServed'; readonly crds: readonly string[] }
  | { readonly kind: 'ApplyFailed'; readonly object: string; readonly message: string }
  | { readonly kind: 'NameConflict'; readonly object: string }
  | { readonly kind: 'DeleteFailed'; readonly object: string; readonly message: string }
  | { readonly kind: 'InvalidSpec'; readonly message: string };

/** The Ready condition a verdict gives: True only when everything desired is live. */
export function readyCondition(
  verdict: ReconcileVerdict,
  objects: number,
): { status: 'True' | 'False'; reason: string; message: string } {
  switch (verdict.kind) {
    case 'Reconciled':
      return { status: 'True', reason: SiteReason.Reconciled, message: `${objects} objects live as desired` };
    case 'KindsNotServed':
      return {
        status: 'False',
        reason: SiteReason.KindNotServed,
        message:
          `the cluster does not serve ${verdict.crds.join(', ')}: the objects of those kinds are skipped ` +
          '(status.features says which functions that leaves off); everything else is applied',
      };
    case 'ApplyFailed':
      return {
        status: 'False',
        reason: SiteReason.ApplyFailed,
        message: `applying ${verdict.object} failed, the objects after it were not tried: ${verdict.message}`,
      };
    case 'NameConflict':
      return {
        status: 'False',
        reason: SiteReason.NameConflict,
        message:
          `${verdict.object} exists and is not this site's: it is left alone; ` +
          'rename or delete it, or rename the site',
      };
    case 'DeleteFailed':
      return {
        status: 'False',
        reason: SiteReason.DeleteFailed,
        message: `deleting ${verdict.object} failed: ${verdict.message}`,
      };
    case 'InvalidSpec':
      return { status: 'False', reason: SiteReason.InvalidSpec, message: verdict.message };
    default:
      return verdict satisfies never;
  }
}

export interface StatusInput {
  readonly generation: number | undefined;
  readonly previous: EdgeSiteStatus | undefined;
  readonly mode: SiteMode;
  readonly features: readonly FeatureStatus[];
  readonly origins: readonly OriginStatus[];
  readonly verdict: ReconcileVerdict;
  /** How many objects the site wants (its namespace's and the shard namespace's). */
  readonly objects: number;
  readonly now: Date;
}

/** The whole status; equal to `previous` (deeply) when nothing changed, so it is not written. */
export function nextStatus(input: StatusInput): EdgeSiteStatus {
  const ready = readyCondition(input.verdict, input.objects);
  const conditions: readonly Condition[] = setCondition(
    input.previous?.conditions,
    {
      type: 'Ready',
      status: ready.status,
      reason: ready.reason,
      message: ready.message,
      ...(input.generation === undefined ? {} : { observedGeneration: input.generation }),
    },
    input.now,
  );
  return {
    ...(input.generation === undefined ? {} : { observedGeneration: input.generation }),
    conditions,
    shared: input.mode === SiteMode.Shared,
    features: input.features,
    origins: input.origins,
  };
}
