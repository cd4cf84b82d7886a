/**
 * The blocklist pipeline, pure and fast: `parseBlocklist` (text to entries, malformed
 * lines refused and reported) -> `merge` (the minimal exact CIDR cover) -> `budget`
 * (what fits in `maxEntries` and `minPrefixLength`, and exactly what does not) ->
 * `shard` and `fingerprint` (what gets published, and its name). `aggregate` runs the
 * first three. Data in, data out: the reconciler turns the results into objects,
 * conditions and events.
 */
export { type AggregateOptions, type AggregateResult, aggregate, aggregateParsed } from './aggregate.ts';
export {
  type BudgetOptions,
  type BudgetResult,
  budget,
  type DropGroup,
  DropReason,
  IPV6_EQUIVALENT_OFFSET,
} from './budget.ts';
export { Fingerprinter, fingerprint, fingerprintOfText } from './fingerprint.ts';
export { canonicalStrings, canonicalText, canonicalTextPieces, formatPrefix, PIECE_BYTES } from './format.ts';
export { formatIpv4 } from './ipv4.ts';
export { formatIpv6 } from './ipv6.ts';
export { merge } from './merge.ts';
export {
  BlocklistParser,
  DEFAULT_DETAIL_LIMIT,
  DEFAULT_SHORTEST_PREFIX,
  type MalformedLine,
  MalformedReason,
  type NormalisedLine,
  type ParseCounts,
  type ParseOptions,
  type ParseResult,
  parseBlocklist,
  type RefusedLine,
  type ShortestPrefix,
} from './parse.ts';
export {
  EMPTY_PREFIX_LIST,
  type Ipv4Prefixes,
  type Ipv6Prefixes,
  type Prefix,
  type PrefixList,
  prefixCount,
  prefixesOf,
  prefixListOf,
} from './prefix-list.ts';
export { type Shard, shard } from './shard.ts';
