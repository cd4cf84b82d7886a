/**
 * The pipeline in one call, as the CLI and the reconciler run it: parse, merge, budget.
 * Sharding and the fingerprint come after, on `budget.kept`, because only the publisher
 * knows its shard size.
 */
import { type BudgetOptions, type BudgetResult, budget } from './budget.ts';
import { merge } from './merge.ts';
import { type ParseOptions, type ParseResult, parseBlocklist } from './parse.ts';
import type { PrefixList } from './prefix-list.ts';

export interface AggregateOptions extends ParseOptions, BudgetOptions {}

export interface AggregateResult {
  readonly parse: ParseResult;
  /** The minimal exact cover of every entry read. */
  readonly merged: PrefixList;
  /** `kept` is the set to publish. */
  readonly budget: BudgetResult;
}

export function aggregate(input: Uint8Array | string, options: AggregateOptions = {}): AggregateResult {
  return aggregateParsed(parseBlocklist(input, options), options);
}

/** The pipeline after parsing, for input read piece by piece with `BlocklistParser`. */
export function aggregateParsed(parse: ParseResult, options: BudgetOptions = {}): AggregateResult {
  const merged = merge(parse.entries);
  return { parse, merged, budget: budget(merged, options) };
}
