/**
 * A BlocklistSource's spec as the operator uses it: defaults filled in (the apiserver
 * does it too; doing it again keeps an object written before a default existed working),
 * the refresh interval in milliseconds, and the channel the spec selects.
 */
import {
  type BlocklistSourceSpec,
  Channel,
  DEFAULT_MAX_ENTRIES,
  DEFAULT_REFRESH_INTERVAL,
  DEFAULT_SHARD_SIZE,
  type LabelSelector,
  ListKind,
} from '../../api/blocklist-source.ts';

export interface ResolvedSpec {
  readonly url: string;
  readonly kind: ListKind;
  readonly enforce: boolean;
  readonly maxEntries: number;
  readonly shardSize: number;
  readonly minPrefixLength: number | undefined;
  readonly refreshIntervalMs: number;
  readonly podSelector: LabelSelector;
  readonly channel: Channel;
}

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/**
 * Milliseconds of a duration written as the CRD accepts it: hours, minutes and seconds
 * in that order, each optional (`2h`, `90m`, `1h30m`, `45s`). Undefined for anything else.
 */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m || text === '') return undefined;
  const [, h = '0', min = '0', s = '0'] = m;
  return ((Number(h) * 60 + Number(min)) * 60 + Number(s)) * 1000;
}

/** `ms` as the CRD writes durations: `5m`, `2h`, `1h30m`, `45s`; `0s` for zero. */
export function formatDuration(ms: number): string {
  let seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  seconds -= h * 3600;
  const m = Math.floor(seconds / 60);
  seconds -= m * 60;
  const text = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${seconds ? `${seconds}s` : ''}`;
  return text || '0s';
}

/**
 * The channel is decided by `kind` and `enforce` alone: a Certain list with enforce is
 * dropped at the kernel by Cilium; everything else goes to the decider, which can
 * challenge a visitor instead of dropping a real user's packets.
 */
export function channelOf(kind: ListKind, enforce: boolean): Channel {
  return kind === ListKind.Certain && enforce ? Channel.CiliumPolicy : Channel.Decider;
}

/** The spec with every default in place. The CRD has refused invalid values already. */
export function resolveSpec(spec: BlocklistSourceSpec): ResolvedSpec {
  const enforce = spec.enforce ?? false;
  return {
    url: spec.url,
    kind: spec.kind,
    enforce,
    maxEntries: spec.maxEntries ?? DEFAULT_MAX_ENTRIES,
    shardSize: spec.shardSize ?? DEFAULT_SHARD_SIZE,
    minPrefixLength: spec.minPrefixLength,
    refreshIntervalMs:
      parseDuration(spec.refreshInterval ?? DEFAULT_REFRESH_INTERVAL) ??
      (parseDuration(DEFAULT_REFRESH_INTERVAL) as number),
    podSelector: spec.podSelector ?? {},
    channel: channelOf(spec.kind, enforce),
  };
}
