/**
 * After a restart, before trusting the status: does what is live still say what the
 * status says? The operator holds no list then, and would otherwise wait out the refresh
 * interval; objects edited or deleted while it was away must be repaired at start-up,
 * which needs the list read at once (`ReadWhy.Repair`).
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '@operators/kit';
import { Channel } from '../../api/blocklist-source.ts';
import {
  cidrGroup,
  cidrGroupName,
  DECIDER_DATA_KEY,
  deciderConfigMap,
  deciderConfigMapName,
  denyPolicy,
  FIELD_MANAGER,
  type LiveObjects,
  policyName,
  type SourceRef,
} from './publication.ts';
import type { ResolvedSpec } from './spec.ts';
import { tamper } from './tamper.ts';

/** What `publishedIntact` found. */
export type PublishedCheck =
  | { readonly intact: true }
  | {
      readonly intact: false;
      /** What differs, for the log: an object missing or extra, a path, or the fingerprint. */
      readonly why: string;
    };

export interface PublishedCheckInput {
  readonly source: SourceRef;
  readonly spec: ResolvedSpec;
  readonly deciderNamespace: string;
  readonly status:
    | { readonly channel?: Channel; readonly shards?: number; readonly fingerprint?: string }
    | undefined;
  readonly live: LiveObjects;
}

/** The text of a live shard, as the fingerprint hashes it: one prefix a line, each ended by `\n`. */
function shardText(o: KubeObject, channel: Channel): string {
  switch (channel) {
    case Channel.CiliumPolicy: {
      const cidrs = (o as { spec?: { externalCIDRs?: unknown } }).spec?.externalCIDRs;
      return Array.isArray(cidrs) ? cidrs.map((c) => `${String(c)}\n`).join('') : '';
    }
    case Channel.Decider:
      return (o as { data?: Record<string, string> }).data?.[DECIDER_DATA_KEY] ?? '';
    default:
      return channel satisfies never;
  }
}

/**
 * After a restart, before trusting the status to wait out the refresh interval: does
 * what is live still say what the status says? Exactly the objects of the status's
 * channel, none missing or extra; each untampered (labels, owner, no field others added);
 * the shards' content, in shard order, hashing to `status.fingerprint` (the SHA-256 of the
 * canonical text, as `fingerprint.ts` defines it: the shards hold consecutive runs of it);
 * and the policy as the spec wants it. Any difference means the list must be read at once
 * to republish: objects edited while the operator was away are repaired at start-up, not
 * at the next scheduled read. Pure.
 */
export function publishedIntact(input: PublishedCheckInput): PublishedCheck {
  const { source, status, live } = input;
  if (status?.channel === undefined || status.shards === undefined || status.fingerprint === undefined)
    return { intact: false, why: 'the status names no published set' };
  const channel = status.channel;
  const [shards, others, nameOf] =
    channel === Channel.CiliumPolicy
      ? [live.cidrGroups, live.configMaps, (i: number) => cidrGroupName(source.name, i)]
      : [
          live.configMaps,
          [...live.cidrGroups, ...live.policies],
          (i: number) => deciderConfigMapName(source.name, i),
        ];
  const stray = others[0] ?? shards.find((o) => !isShardName(o, status.shards ?? 0, nameOf));
  if (stray) return { intact: false, why: `${stray.kind} ${stray.metadata.name} is not in the status` };

  const hash = createHash('sha256');
  for (let i = 0; i < status.shards; i++) {
    const name = nameOf(i);
    const shard = shards.find((o) => o.metadata.name === name);
    if (!shard) return { intact: false, why: `${name} is missing` };
    const text = shardText(shard, channel);
    const desired =
      channel === Channel.CiliumPolicy
        ? cidrGroup(source, i, text)
        : deciderConfigMap(source, input.spec, input.deciderNamespace, i, text, {
            fingerprint: status.fingerprint,
            total: status.shards,
          });
    const t = tamper(desired, shard, FIELD_MANAGER);
    if (t.drifted) return { intact: false, why: `${name}: ${t.reason} at ${t.path}` };
    hash.update(text, 'latin1');
  }
  if (hash.digest('hex') !== status.fingerprint)
    return { intact: false, why: 'the shards do not hold the set the status fingerprints' };

  if (channel === Channel.CiliumPolicy) {
    const name = policyName(source.name);
    const extra = live.policies.find((p) => p.metadata.name !== name);
    if (extra) return { intact: false, why: `${extra.kind} ${extra.metadata.name} is not in the status` };
    const t = tamper(
      denyPolicy(source, input.spec.podSelector),
      live.policies.find((p) => p.metadata.name === name),
      FIELD_MANAGER,
    );
    if (t.drifted) return { intact: false, why: `${name}: ${t.reason} at ${t.path}` };
  }
  return { intact: true };
}

function isShardName(o: KubeObject, count: number, nameOf: (i: number) => string): boolean {
  for (let i = 0; i < count; i++) if (o.metadata.name === nameOf(i)) return true;
  return false;
}
