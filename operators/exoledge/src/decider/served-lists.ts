/**
 * The blocklists the decider serves, and the one table every verdict reads. Runs in the
 * list worker (`list-worker.ts`), off the thread that answers requests; `ListLoader`
 * carries each view there and each new table back.
 *
 * Each view of the shard ConfigMaps goes through `selectShardSets` (per list, a complete
 * version or what is held), then each newly selected version's text is parsed. Only when
 * what is served changes (a list's version, a list added or gone) is a new `PrefixTable`
 * built; it then replaces the old one in a single assignment. A verdict reads the
 * reference once, so it sees the old table or the new one, never one in the making:
 * building happens in the feed's callback, never on a request, and JavaScript runs one
 * callback at a time (a selection, parse and build of three million prefixes takes most
 * of a second: hence the worker, where no request waits for it).
 *
 * A version whose text does not parse (the operator only publishes canonical text, so
 * this means a hand edit that kept the fingerprint, or a bug) is not served: the list
 * keeps the version it had, and the problem is reported until a good version comes.
 */
import { ListKind } from '../api/blocklist-source.ts';
import { type PrefixList, parseBlocklist } from '../domain/blocklist/index.ts';
import type { ListHit } from '../domain/decider/verdict.ts';
import { type Address, PrefixTable } from './prefix-table.ts';
import {
  type ObservedConfigMap,
  type ServedVersion,
  type ShardProblem,
  selectShardSets,
} from './shard-sets.ts';

interface ServedList {
  readonly fingerprint: string;
  readonly kind: ListKind;
  readonly prefixes: PrefixList;
  readonly entries: number;
}

/** What one view changed, for logs and metrics. */
export interface ApplyOutcome {
  /** A new table is served. */
  readonly rebuilt: boolean;
  /** How long the build took, when there was one. */
  readonly buildMs: number;
  /** ConfigMaps that could not be read, from `selectShardSets`. */
  readonly shardProblems: readonly ShardProblem[];
  /** Lists whose newly selected version does not parse: they keep the version they had. */
  readonly parseProblems: readonly string[];
  /** Lists with no complete version in this view (being rewritten, most often). */
  readonly incomplete: readonly string[];
}

/** A served list, for `/readyz`. */
export interface ServedListInfo {
  readonly name: string;
  readonly kind: ListKind;
  readonly fingerprint: string;
  readonly entries: number;
}

const EMPTY_TABLE = PrefixTable.build([]);

export class ServedLists {
  #table: PrefixTable = EMPTY_TABLE;
  #lists = new Map<string, ServedList>();
  #applied = false;
  #last: ApplyOutcome | undefined;

  /** The lists holding `address`, from the table served now. */
  lookup(address: Address): readonly ListHit[] {
    const found = this.#table.lookup(address);
    return found.outcome === 'listed' ? found.lists : [];
  }

  /** Whether a view was applied: before, the decider knows no list and is not ready. */
  get applied(): boolean {
    return this.#applied;
  }

  /** The table served now. */
  get table(): PrefixTable {
    return this.#table;
  }

  get lastOutcome(): ApplyOutcome | undefined {
    return this.#last;
  }

  get served(): readonly ServedListInfo[] {
    return [...this.#lists].map(([name, l]) => ({
      name,
      kind: l.kind,
      fingerprint: l.fingerprint,
      entries: l.entries,
    }));
  }

  /**
   * Serves what `configMaps` select; see the module comment. `seed`, for a fresh instance
   * only, is what another instance served from these very ConfigMaps, every list complete
   * (`ListLoader` retires its worker then): it decides between complete versions as that
   * instance's state did, so this one holds exactly what it held. Seeding builds no table
   * (`table` stays empty): the request thread serves that instance's already; the next
   * view that changes what is served builds one.
   */
  apply(configMaps: readonly ObservedConfigMap[], seed?: ReadonlyMap<string, ServedVersion>): ApplyOutcome {
    const serving = new Map<string, ServedVersion>(seed ?? []);
    for (const [name, l] of this.#lists) serving.set(name, { fingerprint: l.fingerprint, kind: l.kind });
    const selection = selectShardSets(configMaps, { serving });
    const next = new Map<string, ServedList>();
    const parseProblems: string[] = [];
    const incomplete: string[] = [];
    for (const l of selection.lists) {
      const held = this.#lists.get(l.list);
      switch (l.state) {
        case 'complete': {
          if (held !== undefined && held.fingerprint === l.fingerprint && held.kind === l.kind) {
            next.set(l.list, held);
            break;
          }
          const parsed = parseBlocklist(l.shards.join(''));
          const refused = parsed.counts.malformed + parsed.counts.tooShort;
          if (refused > 0) {
            const first = parsed.malformed[0];
            parseProblems.push(
              `list ${l.list} version ${l.fingerprint.slice(0, 12)}: ${refused} lines do not parse` +
                (first ? ` (line ${first.line}: ${first.message})` : '') +
                (held ? `; version ${held.fingerprint.slice(0, 12)} is still served` : '; nothing is served'),
            );
            if (held !== undefined) next.set(l.list, held);
            break;
          }
          const entries = parsed.counts.ipv4 + parsed.counts.ipv6;
          next.set(l.list, { fingerprint: l.fingerprint, kind: l.kind, prefixes: parsed.entries, entries });
          break;
        }
        case 'incomplete':
          incomplete.push(l.list);
          // `held` is what this class passed as serving: the same version, kept.
          if (held !== undefined) next.set(l.list, held);
          break;
        default:
          return l satisfies never;
      }
    }
    let rebuilt = false;
    let buildMs = 0;
    if (seed === undefined && (!this.#applied || changed(this.#lists, next))) {
      const started = performance.now();
      const table = PrefixTable.build(
        [...next].map(([name, l]) => ({ name, kind: l.kind, prefixes: l.prefixes })),
      );
      buildMs = performance.now() - started;
      // The swap: one assignment, after the table is whole.
      this.#table = table;
      rebuilt = true;
    }
    this.#lists = next;
    this.#applied = true;
    this.#last = { rebuilt, buildMs, shardProblems: selection.problems, parseProblems, incomplete };
    return this.#last;
  }
}

function changed(a: ReadonlyMap<string, ServedList>, b: ReadonlyMap<string, ServedList>): boolean {
  if (a.size !== b.size) return true;
  for (const [name, l] of b) if (a.get(name) !== l) return true;
  return false;
}

/** An allowlist table: the same lookup, every list of one kind (the kind means nothing here). */
export function allowlistTable(lists: ReadonlyMap<string, PrefixList>): PrefixTable {
  return PrefixTable.build(
    [...lists].map(([name, prefixes]) => ({ name, kind: ListKind.Presumed, prefixes })),
  );
}
