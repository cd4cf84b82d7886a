/**
 * What a BlocklistSource publishes and how to get there from what is live: the objects
 * of its channel, which of them to write (only those that differ), in which order, and
 * which objects to delete. Pure: the reconciler applies the plan as it is.
 *
 * The two channels:
 * - CiliumPolicy (Certain + enforce): `CiliumCIDRGroup`s `<source>-<i>` of `shardSize`
 *   prefixes, labelled `edge.exoledge.io/source: <source>`, and one
 *   `CiliumClusterwideNetworkPolicy` `deny-<source>` whose `ingressDeny` selects those
 *   groups by that label. The policy names no shard: a list that grows or shrinks
 *   changes shards only, and the policy is written once.
 * - Decider (everything else): ConfigMaps `blocklist-<source>-<i>` of 5,000 prefixes in
 *   the decider's namespace, the prefixes as canonical text under `prefixes.txt`.
 *
 * Ordering, so that protection has no gap:
 * 1. Shards first, then the policy: a new policy selects shards that exist already.
 * 2. Shards hold consecutive runs of the canonical order, so when the set changes,
 *    prefixes move between neighbouring shards. When the set grows they move to higher
 *    shards, so shards are written highest first: a prefix is added to its new shard
 *    before it leaves its old one. When it shrinks they move down: lowest first.
 * 3. Then the surplus shards of this channel are deleted, then every object of the
 *    other channel: switching channel builds the new one completely before the old one
 *    goes, and leaves nothing of it (no ConfigMaps doubling a list Cilium now drops).
 *
 * Cleanup is by label, not by owner reference alone: the label is what the policy
 * selects and what the informers watch, and it works whatever owns the object.
 */
import { createHash } from 'node:crypto';
import { type GroupVersionKind, hasDrifted, type KubeObject, type OwnerReference } from '@operators/kit';
import { Channel, type LabelSelector } from '../../api/blocklist-source.ts';
import {
  CILIUM_CIDR_GROUP,
  CILIUM_CLUSTERWIDE_NETWORK_POLICY,
  type CiliumCidrGroup,
  type CiliumClusterwideNetworkPolicy,
  CONFIG_MAP,
  type ConfigMap,
} from '../../api/cilium.ts';
import {
  type BudgetResult,
  budget,
  canonicalText,
  fingerprintOfText,
  type PrefixList,
  prefixCount,
} from '../blocklist/index.ts';
import type { ResolvedSpec } from './spec.ts';

/** On every published object: the source it belongs to. The policy selects CIDR groups by it. */
export const LABEL_SOURCE = 'edge.exoledge.io/source';
/** On every shard: its position, 0-based. */
export const LABEL_SHARD = 'edge.exoledge.io/shard';
/** On decider shards: Certain or Presumed, so the decider may treat them differently. */
export const LABEL_KIND = 'edge.exoledge.io/kind';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'exoledge';
/**
 * On the policy: the SHA-256 of its spec. Drift is compared on the fields we state, so a
 * key removed from `podSelector` would otherwise look like no change; the hash changes.
 */
export const ANNOTATION_SPEC_HASH = 'edge.exoledge.io/spec-sha256';
/** Decider ConfigMaps hold this many prefixes: about 220 kB of IPv6 at worst, well under 1 MiB. */
export const DECIDER_SHARD_SIZE = 5000;
/** The key of a decider ConfigMap holding its prefixes, one per line. */
export const DECIDER_DATA_KEY = 'prefixes.txt';

export function cidrGroupName(source: string, index: number): string {
  return `${source}-${index}`;
}

export function policyName(source: string): string {
  return `deny-${source}`;
}

export function deciderConfigMapName(source: string, index: number): string {
  return `blocklist-${source}-${index}`;
}

/** The selector of everything a source publishes. */
export function sourceSelector(source: string): string {
  return `${LABEL_SOURCE}=${source}`;
}

/**
 * The set a spec publishes from a merged list: budgeted, fingerprinted, cut into shards.
 * Shards are held as canonical text (one prefix per line), cut from the one buffer the
 * fingerprint hashes: a decider list of 300,000 prefixes is 60 strings, not 300,000.
 */
export interface PublishedSet {
  readonly budget: BudgetResult;
  readonly merged: number;
  readonly published: number;
  /** SHA-256 of the canonical text of the published prefixes. */
  readonly fingerprint: string;
  /** Shard by shard, the canonical text of its prefixes, each line ended by `\n`. */
  readonly shards: readonly string[];
}

export function shardSizeOf(spec: ResolvedSpec): number {
  return spec.channel === Channel.CiliumPolicy ? spec.shardSize : DECIDER_SHARD_SIZE;
}

const LF = 0x0a;

/** Budget, fingerprint and shards of a merged list under `spec`. Pure; the reconciler memoises it. */
export function publishedSet(merged: PrefixList, spec: ResolvedSpec): PublishedSet {
  const result = budget(merged, {
    maxEntries: spec.maxEntries,
    ...(spec.minPrefixLength === undefined ? {} : { minPrefixLength: spec.minPrefixLength }),
  });
  const text = canonicalText(result.kept);
  const published = prefixCount(result.kept);
  const size = shardSizeOf(spec);
  const shards: string[] = [];
  let start = 0;
  let lines = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === LF && ++lines === size) {
      shards.push(text.toString('latin1', start, i + 1));
      start = i + 1;
      lines = 0;
    }
  }
  if (start < text.length) shards.push(text.toString('latin1', start));
  return {
    budget: result,
    merged: prefixCount(merged),
    published,
    fingerprint: fingerprintOfText(text),
    shards,
  };
}

/** The prefixes of a shard's text, one string each. */
export function shardPrefixes(text: string): string[] {
  const lines = text.split('\n');
  lines.pop();
  return lines;
}

/** The source as an owner: published objects carry a controller reference to it. */
export interface SourceRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

function ownerOf(source: SourceRef): OwnerReference {
  return { ...source, controller: true, blockOwnerDeletion: true };
}

function labels(source: string, extra: Record<string, string> = {}): Record<string, string> {
  return { [LABEL_SOURCE]: source, [LABEL_MANAGED_BY]: MANAGED_BY, ...extra };
}

export function cidrGroup(source: SourceRef, index: number, text: string): CiliumCidrGroup {
  return {
    ...CILIUM_CIDR_GROUP,
    metadata: {
      name: cidrGroupName(source.name, index),
      labels: labels(source.name, { [LABEL_SHARD]: String(index) }),
      ownerReferences: [ownerOf(source)],
    },
    spec: { externalCIDRs: shardPrefixes(text) },
  };
}

/** A policy-safe copy of a label selector: only the fields a selector has. */
function selectorOf(s: LabelSelector): LabelSelector {
  return {
    ...(s.matchLabels ? { matchLabels: { ...s.matchLabels } } : {}),
    ...(s.matchExpressions
      ? {
          matchExpressions: s.matchExpressions.map((e) => ({
            key: e.key,
            operator: e.operator,
            ...(e.values ? { values: [...e.values] } : {}),
          })),
        }
      : {}),
  };
}

export function denyPolicy(source: SourceRef, podSelector: LabelSelector): CiliumClusterwideNetworkPolicy {
  const spec: CiliumClusterwideNetworkPolicy['spec'] = {
    description: `exoledge: ingress denied from the addresses of BlocklistSource ${source.name}`,
    endpointSelector: selectorOf(podSelector),
    ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { [LABEL_SOURCE]: source.name } } }] }],
  };
  return {
    ...CILIUM_CLUSTERWIDE_NETWORK_POLICY,
    metadata: {
      name: policyName(source.name),
      labels: labels(source.name),
      annotations: {
        [ANNOTATION_SPEC_HASH]: createHash('sha256').update(JSON.stringify(spec)).digest('hex'),
      },
      ownerReferences: [ownerOf(source)],
    },
    spec,
  };
}

export function deciderConfigMap(
  source: SourceRef,
  spec: ResolvedSpec,
  namespace: string,
  index: number,
  text: string,
): ConfigMap {
  return {
    ...CONFIG_MAP,
    metadata: {
      name: deciderConfigMapName(source.name, index),
      namespace,
      labels: labels(source.name, { [LABEL_SHARD]: String(index), [LABEL_KIND]: spec.kind }),
      ownerReferences: [ownerOf(source)],
    },
    data: { [DECIDER_DATA_KEY]: text },
  };
}

/** Objects of a source as the informers hold them (all labelled with the source). */
export interface LiveObjects {
  readonly cidrGroups: readonly KubeObject[];
  readonly policies: readonly KubeObject[];
  readonly configMaps: readonly KubeObject[];
}

export interface ObjectRef {
  readonly gvk: GroupVersionKind;
  readonly name: string;
  readonly namespace?: string;
}

export interface PublicationPlan {
  readonly channel: Channel;
  /** Every object the channel needs, shards then policy. */
  readonly desired: readonly KubeObject[];
  /** Those of `desired` that differ from live, in the order to write them. */
  readonly apply: readonly KubeObject[];
  /** What to delete, in order: this channel's surplus shards, then the other channel. */
  readonly delete: readonly ObjectRef[];
}

export interface PublicationInput {
  readonly source: SourceRef;
  readonly spec: ResolvedSpec;
  readonly set: PublishedSet;
  readonly deciderNamespace: string;
  readonly live: LiveObjects;
  /** How many prefixes were published before (status), to order the shard writes. */
  readonly previouslyPublished: number;
}

function refOf(o: KubeObject, gvk: GroupVersionKind): ObjectRef {
  return o.metadata.namespace
    ? { gvk, name: o.metadata.name ?? '', namespace: o.metadata.namespace }
    : { gvk, name: o.metadata.name ?? '' };
}

function byName(objects: readonly KubeObject[]): Map<string, KubeObject> {
  return new Map(objects.map((o) => [o.metadata.name ?? '', o]));
}

/** The plan that takes the live objects to `set` in `spec`'s channel. Pure. */
export function planPublication(input: PublicationInput): PublicationPlan {
  const { source, spec, set, live } = input;
  const growing = set.published >= input.previouslyPublished;
  const order = set.shards.map((_, i) => i);
  if (growing) order.reverse();

  let shards: KubeObject[];
  let policy: KubeObject | undefined;
  let liveShards: readonly KubeObject[];
  let liveShardGvk: GroupVersionKind;
  const stale: ObjectRef[] = [];
  switch (spec.channel) {
    case Channel.CiliumPolicy:
      shards = order.map((i) => cidrGroup(source, i, set.shards[i] ?? ''));
      policy = denyPolicy(source, spec.podSelector);
      liveShards = live.cidrGroups;
      liveShardGvk = CILIUM_CIDR_GROUP;
      stale.push(...byShard(live.configMaps).map((o) => refOf(o, CONFIG_MAP)));
      break;
    case Channel.Decider:
      shards = order.map((i) =>
        deciderConfigMap(source, spec, input.deciderNamespace, i, set.shards[i] ?? ''),
      );
      policy = undefined;
      liveShards = live.configMaps;
      liveShardGvk = CONFIG_MAP;
      // The policy first: without it, the CIDR groups select nothing.
      stale.push(...live.policies.map((o) => refOf(o, CILIUM_CLUSTERWIDE_NETWORK_POLICY)));
      stale.push(...byShard(live.cidrGroups).map((o) => refOf(o, CILIUM_CIDR_GROUP)));
      break;
    default:
      return spec.channel satisfies never;
  }
  const desired = policy ? [...shards, policy] : shards;
  const liveByName = new Map([
    ...byName(liveShards),
    ...(policy ? byName(live.policies) : new Map<string, KubeObject>()),
  ]);
  const apply = desired.filter((d) => hasDrifted(d, liveByName.get(d.metadata.name ?? '')));

  const wanted = new Set(desired.map((d) => d.metadata.name));
  const surplus = byShard(liveShards.filter((o) => !wanted.has(o.metadata.name))).map((o) =>
    refOf(o, liveShardGvk),
  );
  // Policies of this source under another name (none is ever written; a rename would leave one).
  const strayPolicies = policy
    ? live.policies
        .filter((o) => !wanted.has(o.metadata.name))
        .map((o) => refOf(o, CILIUM_CLUSTERWIDE_NETWORK_POLICY))
    : [];
  return { channel: spec.channel, desired, apply, delete: [...surplus, ...strayPolicies, ...stale] };
}

function shardIndex(o: KubeObject): number {
  const n = Number(o.metadata.labels?.[LABEL_SHARD]);
  return Number.isInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** Shards in index order (a copy): deletions go lowest first, predictably. */
function byShard(objects: readonly KubeObject[]): KubeObject[] {
  return [...objects].sort((a, b) => shardIndex(a) - shardIndex(b));
}

/**
 * Every object the status says is published is live, by name: nothing was deleted
 * behind our back while the operator was away. Used only when memory holds no list.
 */
export function publishedComplete(
  sourceName: string,
  status: { readonly channel?: Channel; readonly shards?: number } | undefined,
  live: LiveObjects,
): boolean {
  if (status?.channel === undefined || status.shards === undefined) return false;
  const names = (objects: readonly KubeObject[]) => new Set(objects.map((o) => o.metadata.name));
  switch (status.channel) {
    case Channel.CiliumPolicy: {
      const groups = names(live.cidrGroups);
      for (let i = 0; i < status.shards; i++) if (!groups.has(cidrGroupName(sourceName, i))) return false;
      return names(live.policies).has(policyName(sourceName));
    }
    case Channel.Decider: {
      const maps = names(live.configMaps);
      for (let i = 0; i < status.shards; i++)
        if (!maps.has(deciderConfigMapName(sourceName, i))) return false;
      return true;
    }
    default:
      return status.channel satisfies never;
  }
}
