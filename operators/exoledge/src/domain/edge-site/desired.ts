/**
 * Everything an EdgeSite should own, as data: `desiredObjects(site, options)` lists each
 * object with its kind and name, in the order to apply them and the order to delete
 * them, and, apart, the site's objects in the shard namespace. Pure: the controller
 * compares this with what is live, applies what drifted in `apply` order, deletes by
 * kind and name what it owns and is not listed, and runs `delete` in its finalizer.
 *
 * Guarantees:
 * - Each object is built in exactly one place below, under the one condition that
 *   decides it (the seed's lesson: an object listed twice, once always and once under a
 *   condition, comes back the moment it is deleted); a kind and name appearing twice is
 *   an error, thrown.
 * - A function's objects are listed exactly when `featuresFor` says the site carries it:
 *   the status and the objects come from the same decision.
 * - Two objects of one kind are told apart by name (the WAF and the challenge are both
 *   WasmPlugins): turning one off removes that name, never the kind.
 * - The same site and options always give the same objects, in the same order.
 *
 * Shared mode (`spec.gatewayRef`) lists the HTTPRoute alone, attached to that Gateway:
 * its shard set is empty, and what an autonomous past left there is the controller's to
 * clean by label.
 */
import type { KubeObject } from '@operators/kit';
import { type EdgeSite, type EdgeSiteSpec, Feature } from '../../api/edge-site.ts';
import { deciderDeployment, deciderService, deciderServiceAccount } from './decider.ts';
import { carries, type FeaturePlan, featuresFor, SiteMode, siteMode } from './features.ts';
import { extAuthzFilter, sensitiveFilesPolicy, wafPlugin } from './filters.ts';
import { certificate, gateway } from './gateway.ts';
import { grpcRules } from './grpc.ts';
import {
  APPLY_ORDER,
  DELETE_ORDER,
  type OwnedKind,
  SHARD_APPLY_ORDER,
  SHARD_DELETE_ORDER,
  type ShardKind,
} from './kinds.ts';
import { shardSelector } from './names.ts';
import type { EdgeSiteOptions } from './options.ts';
import { type SiteRef, siteRef } from './owner.ts';
import { httpRoute } from './route.ts';
import { shardReaderBinding, shardReaderRole } from './shard-access.ts';
import { siteConfigMap } from './site-config.ts';

/** Where an object is: enough to get, apply or delete it. */
export interface ObjectRef<K extends string = string> {
  readonly apiVersion: string;
  readonly kind: K;
  readonly namespace: string;
  readonly name: string;
}

/** One object of the set, with its reference. */
export interface DesiredObject<K extends string = OwnedKind> {
  readonly ref: ObjectRef<K>;
  readonly object: KubeObject;
}

/**
 * The site's objects in the shard namespace: no owner reference is possible there (the
 * site is in another namespace), so they carry the labels `selector` matches, and the
 * controller finds, prunes and deletes them by it. Apply them before the site's own
 * objects: the decider reads the shards as it starts.
 */
export interface ShardSet {
  readonly namespace: string;
  readonly selector: string;
  readonly apply: readonly DesiredObject<ShardKind>[];
  readonly delete: readonly ObjectRef<ShardKind>[];
}

export interface DesiredSet {
  readonly mode: SiteMode;
  readonly features: readonly FeaturePlan[];
  /** Every object the site owns, in its namespace, in `APPLY_ORDER` (by kind, then name). */
  readonly apply: readonly DesiredObject[];
  /** The same objects in `DELETE_ORDER` (by kind, then name): the finalizer's order. */
  readonly delete: readonly ObjectRef<OwnedKind>[];
  readonly shard: ShardSet;
}

/**
 * @throws Error if `site` lacks a name, namespace or uid (it must be read from the
 *   apiserver), if it has neither `gatewayRef` nor `tls` (which the CRD refuses), or if
 *   two objects would share a kind and name.
 */
export function desiredObjects(site: EdgeSite, options: EdgeSiteOptions): DesiredSet {
  const ref = siteRef(site);
  const features = featuresFor(site);
  const mode = siteMode(site.spec);
  const objects = [httpRoute(ref, site.spec), ...ownEdge(ref, site.spec, features, options)];
  const shardObjects =
    mode === SiteMode.Autonomous
      ? [shardReaderRole(ref, options.shardNamespace), shardReaderBinding(ref, options.shardNamespace)]
      : [];
  const owned = objects.map((o) => entry<OwnedKind>(o));
  const shard = shardObjects.map((o) => entry<ShardKind>(o));
  assertUnique([...owned, ...shard]);
  return {
    mode,
    features,
    apply: inOrder(owned, APPLY_ORDER),
    delete: inOrder(owned, DELETE_ORDER).map((o) => o.ref),
    shard: {
      namespace: options.shardNamespace,
      selector: shardSelector(ref.namespace, ref.name),
      apply: inOrder(shard, SHARD_APPLY_ORDER),
      delete: inOrder(shard, SHARD_DELETE_ORDER).map((o) => o.ref),
    },
  };
}

/**
 * The site's own edge: everything but the route, in autonomous mode; nothing in shared
 * mode, where the shared edge carries it all.
 */
function ownEdge(
  site: SiteRef,
  spec: EdgeSiteSpec,
  features: readonly FeaturePlan[],
  options: EdgeSiteOptions,
): KubeObject[] {
  const mode = siteMode(spec);
  switch (mode) {
    case SiteMode.Shared:
      return [];
    case SiteMode.Autonomous: {
      const { tls } = spec;
      if (!tls) {
        throw new Error(
          `EdgeSite ${site.namespace}/${site.name} has neither gatewayRef nor tls, which the EdgeSite CRD refuses: ` +
            'install the CRD of this operator version',
        );
      }
      const on = (f: Feature) => carries(features, f);
      return [
        deciderServiceAccount(site),
        siteConfigMap(site, spec),
        deciderDeployment(site, spec, options),
        deciderService(site, options),
        certificate(site, spec, tls),
        gateway(site, spec, tls, options),
        extAuthzFilter(site, spec, options),
        ...(on(Feature.Waf) ? [wafPlugin(site, spec, options)] : []),
        ...(on(Feature.SensitiveFiles) ? [sensitiveFilesPolicy(site)] : []),
        ...(on(Feature.Grpc) ? grpcRules(site, spec) : []),
      ];
    }
    default:
      return mode satisfies never;
  }
}

function entry<K extends string>(object: KubeObject): DesiredObject<K> {
  const { apiVersion, kind } = object;
  const { name, namespace } = object.metadata;
  if (!apiVersion || !kind || !name || !namespace) {
    throw new Error(`a desired ${kind ?? 'object'} lacks its apiVersion, kind, name or namespace`);
  }
  return { ref: { apiVersion, kind: kind as K, namespace, name }, object };
}

function assertUnique(objects: readonly DesiredObject<string>[]): void {
  const seen = new Set<string>();
  for (const { ref } of objects) {
    const key = `${ref.kind}/${ref.namespace}/${ref.name}`;
    if (seen.has(key)) throw new Error(`the desired set lists ${key} twice: each object must be built once`);
    seen.add(key);
  }
}

/** `objects` sorted by the rank of their kind in `order`, then by name. */
function inOrder<K extends string>(
  objects: readonly DesiredObject<K>[],
  order: readonly K[],
): DesiredObject<K>[] {
  const rank = (k: K): number => {
    const i = order.indexOf(k);
    if (i < 0) throw new Error(`${k} has no place in the order ${order.join(', ')}`);
    return i;
  };
  return [...objects].sort(
    (a, b) =>
      rank(a.ref.kind) - rank(b.ref.kind) || (a.ref.name < b.ref.name ? -1 : a.ref.name > b.ref.name ? 1 : 0),
  );
}
