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
 *    addresses move between shards. A shard is written only once every address it loses
 *    that stays listed is held by the shard that will hold it (`write-order.ts`): an
 *    address reaches its new shard before it leaves its old one.
 * 3. Then the surplus shards of this channel are deleted, then every object of the
 *    other channel: switching channel builds the new one completely before the old one
 *    goes, and leaves nothing of it (no ConfigMaps doubling a list Cilium now drops).
 *
 * Drift is judged by field ownership (`tamper.ts`): an object is rewritten when a field we
 * state differs, when it holds a field we no longer state, or when another manager added
 * a field under its content (a selector key, a rule, a CIDR); the controller removes the
 * latter before applying, since a forced apply leaves others' fields in place.
 *
 * Cleanup is by label, not by owner reference alone: the label is what the policy
 * selects and what the informers watch, and it works whatever owns the object.
 */
import type { GroupVersionKind, KubeObject, OwnerReference } from '@operators/kit';
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
import { tamper } from './tamper.ts';
import { interimPrefixes, type ShardChange, shardWriteOrder } from './write-order.ts';

/** On every published object: the source it belongs to. The policy selects CIDR groups by it. */
export const LABEL_SOURCE = 'edge.exoledge.io/source';
/** On every shard: its position, 0-based. */
export const LABEL_SHARD = 'edge.exoledge.io/shard';
/** On decider shards: Certain or Presumed, so the decider may treat them differently. */
export const LABEL_KIND = 'edge.exoledge.io/kind';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'exoledge';
/**
 * The field manager of every write. Drift is judged against the fields it owns (see
 * `tamper.ts`): what we state is ours, what others add under the content is removed.
 */
export const FIELD_MANAGER = 'exoledge';
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
    // Deny rules alone would put the endpoints in default-deny: every packet no other
    // policy allows would be dropped, not only the listed addresses.
    enableDefaultDeny: { ingress: false, egress: false },
    ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: { [LABEL_SOURCE]: source.name } } }] }],
  };
  return {
    ...CILIUM_CLUSTERWIDE_NETWORK_POLICY,
    metadata: {
      name: policyName(source.name),
      labels: labels(source.name),
      ownerReferences: [ownerOf(source)],
    },
    spec,
  };
}

/**
 * The data key holding the fingerprint of the version a decider shard belongs to (the
 * SHA-256 of the whole list's canonical text, in hex). A data key, not a label: 64
 * characters are one more than a label value holds.
 */
export const SHARD_FINGERPRINT_KEY = 'fingerprint';
/** The data key holding how many shards that version has, in decimal. */
export const SHARD_TOTAL_KEY = 'total';

/** Which published version a shard is part of: what lets the decider serve only complete ones. */
export interface ShardVersion {
  readonly fingerprint: string;
  readonly total: number;
}

export function deciderConfigMap(
  source: SourceRef,
  spec: ResolvedSpec,
  namespace: string,
  index: number,
  text: string,
  version: ShardVersion,
): ConfigMap {
  return {
    ...CONFIG_MAP,
    metadata: {
      name: deciderConfigMapName(source.name, index),
      namespace,
      labels: labels(source.name, { [LABEL_SHARD]: String(index), [LABEL_KIND]: spec.kind }),
      ownerReferences: [ownerOf(source)],
    },
    data: {
      [DECIDER_DATA_KEY]: text,
      [SHARD_FINGERPRINT_KEY]: version.fingerprint,
      [SHARD_TOTAL_KEY]: String(version.total),
    },
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
  /**
   * Those of `desired` that differ from live, in the order to write them: shards in the
   * no-gap order of `write-order.ts` (a shard may appear twice, first with an interim
   * content), then the policy.
   */
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
}

function refOf(o: KubeObject, gvk: GroupVersionKind): ObjectRef {
  return o.metadata.namespace
    ? { gvk, name: o.metadata.name ?? '', namespace: o.metadata.namespace }
    : { gvk, name: o.metadata.name ?? '' };
}

function byName(objects: readonly KubeObject[]): Map<string, KubeObject> {
  return new Map(objects.map((o) => [o.metadata.name ?? '', o]));
}

/** The prefixes a live shard holds, as written in it (a CIDR group's list, a ConfigMap's text). */
function livePrefixes(o: KubeObject | undefined): string[] {
  if (!o) return [];
  const cidrs = (o as { spec?: { externalCIDRs?: unknown } }).spec?.externalCIDRs;
  if (Array.isArray(cidrs)) return cidrs.filter((c): c is string => typeof c === 'string');
  const text = (o as { data?: Record<string, unknown> }).data?.[DECIDER_DATA_KEY];
  return typeof text === 'string' ? text.split('\n').filter((l) => l !== '') : [];
}

/** The plan that takes the live objects to `set` in `spec`'s channel. Pure. */
export function planPublication(input: PublicationInput): PublicationPlan {
  const { source, spec, set, live } = input;
  const shardOf = (i: number, text: string): KubeObject =>
    spec.channel === Channel.CiliumPolicy
      ? cidrGroup(source, i, text)
      : deciderConfigMap(source, spec, input.deciderNamespace, i, text, {
          fingerprint: set.fingerprint,
          total: set.shards.length,
        });

  let policy: KubeObject | undefined;
  let liveShards: readonly KubeObject[];
  let liveShardGvk: GroupVersionKind;
  const stale: ObjectRef[] = [];
  switch (spec.channel) {
    case Channel.CiliumPolicy:
      policy = denyPolicy(source, spec.podSelector);
      liveShards = live.cidrGroups;
      liveShardGvk = CILIUM_CIDR_GROUP;
      stale.push(...byShard(live.configMaps).map((o) => refOf(o, CONFIG_MAP)));
      break;
    case Channel.Decider:
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
  const shards = set.shards.map((text, i) => shardOf(i, text));
  const desired = policy ? [...shards, policy] : shards;
  const liveShardByName = byName(liveShards);
  const drifted = (d: KubeObject, l: KubeObject | undefined) => tamper(d, l, FIELD_MANAGER).drifted;

  // Changed shards, in the order that leaves no listed address without a shard (write-order.ts).
  const changes: ShardChange[] = [];
  shards.forEach((d, index) => {
    const l = liveShardByName.get(d.metadata.name ?? '');
    if (drifted(d, l)) {
      changes.push({ index, before: livePrefixes(l), after: shardPrefixes(set.shards[index] ?? '') });
    }
  });
  const changeAt = new Map(changes.map((c) => [c.index, c]));
  const writes = shardWriteOrder(changes).map(({ index, content }) => {
    const change = changeAt.get(index);
    return content === 'interim' && change
      ? shardOf(
          index,
          interimPrefixes(change)
            .map((p) => `${p}\n`)
            .join(''),
        )
      : (shards[index] as KubeObject);
  });
  const livePolicy = policy ? byName(live.policies).get(policy.metadata.name ?? '') : undefined;
  const apply = policy && drifted(policy, livePolicy) ? [...writes, policy] : writes;

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
 * Whether an object found under one of our names is ours: labelled with the source, or,
 * its label removed by hand, controlled by the same source (the controller owner
 * reference `desired` carries, same UID). Anything else is someone else's and never taken.
 */
export function isOurs(found: KubeObject, desired: KubeObject): boolean {
  const source = desired.metadata.labels?.[LABEL_SOURCE];
  if (source !== undefined && found.metadata.labels?.[LABEL_SOURCE] === source) return true;
  const owner = desired.metadata.ownerReferences?.find((r) => r.controller);
  return (
    owner !== undefined &&
    (found.metadata.ownerReferences ?? []).some((r) => r.controller === true && r.uid === owner.uid)
  );
}
