export { type AggregateOptions, type AggregateResult, aggregate } from './aggregate.ts';
export {
  type BudgetOptions,
  type BudgetResult,
  budget,
  type DropGroup,
  DropReason,
  IPV6_EQUIVALENT_OFFSET,
} from './budget.ts';
export { fingerprint, fingerprintOfText } from './fingerprint.ts';
export { canonicalStrings, canonicalText, formatPrefix } from './format.ts';
export { formatIpv4 } from './ipv4.ts';
export { formatIpv6 } from './ipv6.ts';
export { merge } from './merge.ts';
export {
  DEFAULT_DETAIL_LIMIT,
  type MalformedLine,
  MalformedReason,
  type NormalisedLine,
  type ParseCounts,
  type ParseOptions,
  type ParseResult,
  parseBlocklist,
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
