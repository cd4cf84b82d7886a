/**
 * The budget: how many prefixes of a merged list get published. Cilium's policy map holds
 * 65,536 entries per endpoint, shared with every other policy, and a proxy list merges to
 * far more than that; so a list gets `maxEntries`, and what does not fit is dropped,
 * counted and reported, never cut off silently at some arbitrary line.
 *
 * Rules, in order:
 * 1. `minPrefixLength` drops every IPv4 prefix longer than it, lone addresses (/32)
 *    included: on a list full of single addresses, publishing only the blocks is the
 *    useful choice. It is written in IPv4 terms (0 to 32) and IPv6 is held to the same
 *    block size: 24 allows blocks of at least 256 addresses, so IPv6 prefixes longer than
 *    /120 and lone IPv6 addresses go too.
 * 2. Over `maxEntries`, the most specific prefixes go first: the ones covering the fewest
 *    addresses, so what is lost is as little address space as possible. Specificity is
 *    block size, which compares IPv4 and IPv6 on one scale (an IPv4 /32 and an IPv6 /128
 *    are one address each). At equal block size IPv6 goes first, as an IPv6 host usually
 *    holds a whole /64 and one of its addresses is worth less than one IPv4 address.
 *    Where the cut falls inside one block size, the highest addresses go first, so the
 *    same input always publishes the same set.
 *
 * The input must be canonical (the output of `merge`); the kept and dropped lists are too.
 */
import { EMPTY_PREFIX_LIST, type PrefixList, prefixCount } from './prefix-list.ts';

/** Why a prefix was not published. */
export const DropReason = {
  /** Longer than `minPrefixLength` allows (for IPv6, longer than `minPrefixLength` + 96): rule 1. */
  LongerThanMinPrefixLength: 'LongerThanMinPrefixLength',
  /** Did not fit in `maxEntries`, being among the most specific prefixes: rule 2. */
  OverMaxEntries: 'OverMaxEntries',
} as const;
export type DropReason = (typeof DropReason)[keyof typeof DropReason];

export interface BudgetOptions {
  /** At most this many prefixes are kept, at least 1. Absent: no limit. */
  readonly maxEntries?: number;
  /** IPv4 prefixes longer than this (0 to 32) are dropped, IPv6 ones longer than this + 96. Absent: none. */
  readonly minPrefixLength?: number;
}

/** What was dropped of one family and prefix length, and why. */
export interface DropGroup {
  readonly reason: DropReason;
  readonly family: 'ipv4' | 'ipv6';
  readonly length: number;
  readonly dropped: number;
  /** Kept of the same family and length: nonzero only where the `maxEntries` cut falls. */
  readonly kept: number;
}

export interface BudgetResult {
  /** What gets published. */
  readonly kept: PrefixList;
  /** Exactly what does not. */
  readonly dropped: PrefixList;
  /** The dropped prefixes counted by reason, family and length: rule 1 first, then rule 2 in drop order. */
  readonly drops: readonly DropGroup[];
}

/**
 * What `minPrefixLength` adds for IPv6: an IPv4 /n and an IPv6 /(n + 96) hold the same
 * number of addresses, so one setting holds both families to the same smallest block.
 */
export const IPV6_EQUIVALENT_OFFSET = 96;

/** Checks the options as the CLI and the CRD do; a violation is a programming error here. */
function validate(options: BudgetOptions): void {
  const { maxEntries, minPrefixLength } = options;
  if (maxEntries !== undefined && !(Number.isSafeInteger(maxEntries) && maxEntries >= 1)) {
    throw new RangeError(`maxEntries must be an integer of at least 1, not ${maxEntries}`);
  }
  if (
    minPrefixLength !== undefined &&
    !(Number.isInteger(minPrefixLength) && minPrefixLength >= 0 && minPrefixLength <= 32)
  ) {
    throw new RangeError(`minPrefixLength must be an integer from 0 to 32, not ${minPrefixLength}`);
  }
}

/**
 * Applies the rules above to a canonical list. Pure. Options out of range throw a
 * RangeError: the CLI and the CRD's validation refuse them before they get here.
 */
export function budget(merged: PrefixList, options: BudgetOptions = {}): BudgetResult {
  validate(options);
  const v4Max = options.minPrefixLength ?? 32;
  const v6Max =
    options.minPrefixLength === undefined ? 128 : options.minPrefixLength + IPV6_EQUIVALENT_OFFSET;
  const { ipv4, ipv6 } = merged;
  if (v4Max === 32 && v6Max === 128 && (options.maxEntries ?? Infinity) >= prefixCount(merged)) {
    // Nothing to drop, the common case of a preview without a budget: no pass over the list.
    return { kept: merged, dropped: EMPTY_PREFIX_LIST, drops: [] };
  }

  // Prefixes per length, those that pass rule 1 and those that do not.
  const v4AtLength = new Float64Array(33);
  const v6AtLength = new Float64Array(129);
  for (const l of ipv4.lengths) v4AtLength[l]!++;
  for (const l of ipv6.lengths) v6AtLength[l]!++;
  let candidates = 0;
  for (let l = 0; l <= v4Max; l++) candidates += v4AtLength[l]!;
  for (let l = 0; l <= v6Max; l++) candidates += v6AtLength[l]!;

  // Rule 2: walk block sizes from one address up, taking what must go.
  const v4Cut = new Float64Array(33);
  const v6Cut = new Float64Array(129);
  let over = options.maxEntries === undefined ? 0 : Math.max(0, candidates - options.maxEntries);
  const cutOrder: { family: 'ipv4' | 'ipv6'; length: number }[] = [];
  for (let hostBits = 0; hostBits <= 128 && over > 0; hostBits++) {
    const l6 = 128 - hostBits;
    if (l6 <= v6Max) {
      const d = Math.min(over, v6AtLength[l6]!);
      if (d > 0) {
        v6Cut[l6] = d;
        over -= d;
        cutOrder.push({ family: 'ipv6', length: l6 });
      }
    }
    const l4 = 32 - hostBits;
    if (l4 >= 0 && l4 <= v4Max && over > 0) {
      const d = Math.min(over, v4AtLength[l4]!);
      if (d > 0) {
        v4Cut[l4] = d;
        over -= d;
        cutOrder.push({ family: 'ipv4', length: l4 });
      }
    }
  }

  // One pass per family sorts each prefix into kept or dropped. Within a cut length, the
  // first (lowest) `count - cut` are kept.
  const seen4 = new Float64Array(33);
  const keep4 = (l: number): boolean => {
    if (l > v4Max) return false;
    const cut = v4Cut[l]!;
    return cut === 0 || seen4[l]!++ < v4AtLength[l]! - cut;
  };
  const n4 = ipv4.addresses.length;
  const keptFlags = new Uint8Array(n4);
  let kept4 = 0;
  for (let i = 0; i < n4; i++) {
    if (keep4(ipv4.lengths[i]!)) {
      keptFlags[i] = 1;
      kept4++;
    }
  }
  const k4a = new Uint32Array(kept4);
  const k4l = new Uint8Array(kept4);
  const d4a = new Uint32Array(n4 - kept4);
  const d4l = new Uint8Array(n4 - kept4);
  for (let i = 0, k = 0, d = 0; i < n4; i++) {
    if (keptFlags[i] === 1) {
      k4a[k] = ipv4.addresses[i]!;
      k4l[k++] = ipv4.lengths[i]!;
    } else {
      d4a[d] = ipv4.addresses[i]!;
      d4l[d++] = ipv4.lengths[i]!;
    }
  }

  const seen6 = new Float64Array(129);
  const n6 = ipv6.lengths.length;
  const keptFlags6 = new Uint8Array(n6);
  let kept6 = 0;
  for (let i = 0; i < n6; i++) {
    const l = ipv6.lengths[i]!;
    const cut = v6Cut[l]!;
    if (l <= v6Max && (cut === 0 || seen6[l]!++ < v6AtLength[l]! - cut)) {
      keptFlags6[i] = 1;
      kept6++;
    }
  }
  const k6w = new Uint32Array(4 * kept6);
  const k6l = new Uint8Array(kept6);
  const d6w = new Uint32Array(4 * (n6 - kept6));
  const d6l = new Uint8Array(n6 - kept6);
  for (let i = 0, k = 0, d = 0; i < n6; i++) {
    const from = ipv6.words.subarray(4 * i, 4 * i + 4);
    if (keptFlags6[i] === 1) {
      k6w.set(from, 4 * k);
      k6l[k++] = ipv6.lengths[i]!;
    } else {
      d6w.set(from, 4 * d);
      d6l[d++] = ipv6.lengths[i]!;
    }
  }

  const drops: DropGroup[] = [];
  for (let l = 32; l > v4Max; l--) {
    const dropped = v4AtLength[l]!;
    if (dropped > 0)
      drops.push({
        reason: DropReason.LongerThanMinPrefixLength,
        family: 'ipv4',
        length: l,
        dropped,
        kept: 0,
      });
  }
  for (let l = 128; l > v6Max; l--) {
    const dropped = v6AtLength[l]!;
    if (dropped > 0)
      drops.push({
        reason: DropReason.LongerThanMinPrefixLength,
        family: 'ipv6',
        length: l,
        dropped,
        kept: 0,
      });
  }
  for (const { family, length } of cutOrder) {
    const dropped = (family === 'ipv4' ? v4Cut : v6Cut)[length]!;
    const all = (family === 'ipv4' ? v4AtLength : v6AtLength)[length]!;
    drops.push({ reason: DropReason.OverMaxEntries, family, length, dropped, kept: all - dropped });
  }

  return {
    kept: { ipv4: { addresses: k4a, lengths: k4l }, ipv6: { words: k6w, lengths: k6l } },
    dropped: {
      ipv4: { addresses: d4a, lengths: d4l },
      ipv6: { words: d6w, lengths: d6l },
    },
    drops,
  };
}
