/**
 * The order in which changed shards are written so that no address that stays listed is
 * ever held by no shard: the no-gap rule of the seed ("never a window without
 * protection"), decided per address rather than per prefix.
 *
 * Why not simply "highest first when the list grows": shards hold consecutive runs of the
 * canonical order, and a change moves prefixes between shards in a direction the total
 * count does not tell. A list that gains addresses can still move prefixes down (ten /24s
 * merging into one /21 free nine places, and every later prefix moves down across shard
 * boundaries); a list that loses addresses can split a prefix into several and move
 * others up. So the order is derived from what each shard actually loses.
 *
 * The rule: writing shard `i` replaces its content at once (one apply), so it is safe once
 * every address `i` loses that stays listed is already held by the new content of the
 * shard that will hold it. That gives "j before i" edges; the writes follow them. The
 * canonical order makes them acyclic (an address's old and new shard both grow with the
 * address, so two addresses cannot cross in opposite directions), but live content can be
 * anything someone wrote by hand, so a cycle is broken rather than assumed away: the
 * lowest waiting shard is first written with its old and new prefixes together (it loses
 * nothing), and with its new prefixes alone once what it loses is held elsewhere. Such an
 * interim write briefly holds more entries than the budget counts; it only happens for
 * content that the operator did not write.
 *
 * Addresses are compared as spans of one line: IPv4 at [0, 2^32), IPv6 above it, so an
 * IPv4-mapped IPv6 prefix (read as IPv4 by the parser) and its IPv4 form are one span.
 */
import { merge, parseBlocklist, prefixesOf } from '../blocklist/index.ts';

/** One write of a shard: its final content, or the interim union of old and new. */
export interface ShardWrite {
  readonly index: number;
  readonly content: 'final' | 'interim';
}

/** A shard to be written: what it holds now (empty when it does not exist) and what it will hold. */
export interface ShardChange {
  readonly index: number;
  /** The prefixes the live shard holds, as written in it. */
  readonly before: readonly string[];
  /** The prefixes it must hold. */
  readonly after: readonly string[];
}

/** A closed range of the one address line. */
interface Span {
  readonly lo: bigint;
  readonly hi: bigint;
}

const IPV6_BASE = 1n << 32n;
/** Nothing is refused for its length here: live content is whatever Cilium accepted. */
const ANY_LENGTH = { ipv4: 0, ipv6: 0 };

/** The addresses a list of prefixes covers, as sorted disjoint spans; what does not parse covers nothing. */
export function spansOf(prefixes: readonly string[]): Span[] {
  if (prefixes.length === 0) return [];
  const parsed = parseBlocklist(`${prefixes.join('\n')}\n`, { shortestPrefix: ANY_LENGTH, detailLimit: 0 });
  const spans: Span[] = [];
  for (const p of prefixesOf(merge(parsed.entries))) {
    const lo = p.family === 'ipv4' ? BigInt(p.address) : IPV6_BASE + p.address;
    const hi = lo + (1n << BigInt((p.family === 'ipv4' ? 32 : 128) - p.length)) - 1n;
    const last = spans[spans.length - 1];
    // merge() leaves adjacent prefixes that are not siblings apart; as addresses they are one run.
    if (last && last.hi + 1n === lo) spans[spans.length - 1] = { lo: last.lo, hi };
    else spans.push({ lo, hi });
  }
  return spans;
}

/** `a` minus `b`, both sorted and disjoint. */
function subtract(a: readonly Span[], b: readonly Span[]): Span[] {
  const out: Span[] = [];
  let j = 0;
  for (const s of a) {
    let lo = s.lo;
    while (j < b.length && b[j]!.hi < lo) j++;
    let k = j;
    while (lo <= s.hi && k < b.length && b[k]!.lo <= s.hi) {
      const cut = b[k]!;
      if (cut.lo > lo) out.push({ lo, hi: cut.lo - 1n });
      lo = cut.hi + 1n;
      k++;
    }
    if (lo <= s.hi) out.push({ lo, hi: s.hi });
  }
  return out;
}

/** The index of the first span of `spans` (sorted by `lo`, disjoint) that ends at or after `at`. */
function firstEndingFrom(spans: readonly { readonly span: Span }[], at: bigint): number {
  let lo = 0;
  let hi = spans.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (spans[mid]!.span.hi < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * For each shard, the shards whose new content must be written before it: those that
 * will hold an address it loses. Addresses held by no changed shard afterwards are either
 * no longer listed or held by a shard that is not rewritten; neither needs waiting for.
 */
export function writeDependencies(changes: readonly ShardChange[]): Map<number, Set<number>> {
  const deps = new Map(changes.map((c) => [c.index, new Set<number>()]));
  // A first publication loses nothing: no spans are computed for it.
  const losing = changes.filter((c) => c.before.length > 0);
  const after = new Map<number, Span[]>();
  const afterOf = (c: ShardChange): Span[] => {
    const known = after.get(c.index);
    if (known) return known;
    const spans = spansOf(c.after);
    after.set(c.index, spans);
    return spans;
  };
  const lost = losing
    .map((c) => ({ index: c.index, spans: subtract(spansOf(c.before), afterOf(c)) }))
    .filter((l) => l.spans.length > 0);
  if (lost.length === 0) return deps;
  const held = changes
    .flatMap((c) => afterOf(c).map((span) => ({ span, index: c.index })))
    .sort((x, y) => (x.span.lo < y.span.lo ? -1 : x.span.lo > y.span.lo ? 1 : 0));
  for (const l of lost) {
    const needs = deps.get(l.index) ?? new Set<number>();
    for (const s of l.spans) {
      for (let k = firstEndingFrom(held, s.lo); k < held.length && held[k]!.span.lo <= s.hi; k++) {
        if (held[k]!.index !== l.index) needs.add(held[k]!.index);
      }
    }
  }
  return deps;
}

/**
 * The writes, in order: every change once with its final content, lowest index first
 * among those ready, and before it an interim write wherever a cycle had to be broken.
 */
export function shardWriteOrder(changes: readonly ShardChange[]): ShardWrite[] {
  const deps = writeDependencies(changes);
  const waiting = changes.map((c) => c.index).sort((a, b) => a - b);
  /** Shards whose new prefixes are live (final or interim). */
  const holdsNew = new Set<number>();
  const writes: ShardWrite[] = [];
  while (waiting.length > 0) {
    const ready = waiting.findIndex((i) => [...(deps.get(i) ?? [])].every((d) => holdsNew.has(d)));
    if (ready >= 0) {
      const [i] = waiting.splice(ready, 1) as [number];
      writes.push({ index: i, content: 'final' });
      holdsNew.add(i);
      continue;
    }
    // A cycle: the lowest waiting shard not yet holding its new prefixes takes old and new together.
    const breaker = waiting.find((i) => !holdsNew.has(i));
    if (breaker === undefined)
      throw new Error('shardWriteOrder: no progress although every shard holds its new prefixes');
    writes.push({ index: breaker, content: 'interim' });
    holdsNew.add(breaker);
  }
  return writes;
}

/** The interim content of a shard: its new prefixes, then the old ones it would lose. */
export function interimPrefixes(change: ShardChange): string[] {
  const kept = new Set(change.after);
  return [...change.after, ...change.before.filter((p) => !kept.has(p))];
}
