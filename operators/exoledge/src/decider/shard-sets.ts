/**
 * Which published shards the decider serves. The operator publishes a decider list as
 * ConfigMaps of 5,000 prefixes each and rewrites them one at a time when the list
 * changes (`publication.ts`), so the decider sees, between two complete versions, a mix
 * of shards of both; a list that grows or shrinks shows some shards of the new version
 * beside some of the old. Serving the union of what is there would answer for a list no
 * source ever published. So, per list, only a complete version is served: every shard
 * 0 to total - 1 of one fingerprint, and the shards' texts, in order, hashing to that
 * fingerprint. While no version of a list is complete, the caller keeps serving what it
 * served before, so the answer is always the old version or the new one, never a mix.
 *
 * What a shard carries (`deciderConfigMap`): the labels `edge.exoledge.io/source`,
 * `edge.exoledge.io/shard` and `edge.exoledge.io/kind`, the prefixes under `prefixes.txt`,
 * and the fingerprint of its whole version and the number of shards in it, under the data
 * keys `SHARD_FINGERPRINT_KEY` and `SHARD_TOTAL_KEY`. A shard without them (one written by
 * an older operator, or by hand) cannot say which version it belongs to, nor whether the
 * version has shards beyond the last one present: it is reported, never served.
 *
 * Pure: ConfigMaps in, a selection out. The caller watches the ConfigMaps, calls this
 * on every change, and rebuilds its lookup only when `fingerprint` changes.
 */
import { createHash } from 'node:crypto';
import { ListKind } from '../api/blocklist-source.ts';
import {
  DECIDER_DATA_KEY,
  LABEL_KIND,
  LABEL_SHARD,
  LABEL_SOURCE,
  SHARD_FINGERPRINT_KEY,
  SHARD_TOTAL_KEY,
} from '../domain/blocklist-source/publication.ts';

/** A ConfigMap as the decider sees it. Others than shards may be among them: they are skipped. */
export interface ObservedConfigMap {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** As read from the API: values are not trusted to be text. */
  readonly data?: Readonly<Record<string, unknown>> | undefined;
}

/** A version of a list: what the caller serves, and what it compares. */
export interface ServedVersion {
  readonly fingerprint: string;
  readonly kind: ListKind;
}

export interface SelectOptions {
  /**
   * What the caller serves now, by list (`servingOf` the previous selection). It decides
   * between two complete versions, and what an incomplete list keeps serving.
   */
  readonly serving?: ReadonlyMap<string, ServedVersion>;
}

/** Why a shard was not read. Each reason names a field the publisher writes. */
export const ShardProblemReason = {
  /** The `edge.exoledge.io/shard` label is missing or not a decimal index (`0`, `12`). */
  BadIndex: 'BadIndex',
  /** The `edge.exoledge.io/kind` label is missing or neither `Certain` nor `Presumed`. */
  BadKind: 'BadKind',
  /** The `fingerprint` data key is missing or not 64 lower-case hex digits. */
  BadFingerprint: 'BadFingerprint',
  /** The `total` data key is missing or not a decimal count of at least 1. */
  BadTotal: 'BadTotal',
  /** The index is not below the total: the shard belongs to no version it names. */
  IndexBeyondTotal: 'IndexBeyondTotal',
  /** The `prefixes.txt` data key is missing or not text. */
  NoPrefixes: 'NoPrefixes',
  /**
   * Another ConfigMap holds the same shard of the same version with other prefixes: one
   * of them was edited, and which is right cannot be told, so the version is not served.
   * Copies with the same prefixes are no problem.
   */
  ConflictingShard: 'ConflictingShard',
} as const;
export type ShardProblemReason = (typeof ShardProblemReason)[keyof typeof ShardProblemReason];

/** A ConfigMap of a list that could not be used. The list's other ConfigMaps still are. */
export interface ShardProblem {
  readonly configMap: string;
  readonly list: string;
  readonly reason: ShardProblemReason;
  readonly message: string;
}

/** Why a version seen in part is not served. */
export const IncompleteReason = {
  /** Some indexes below the total are held by no ConfigMap: being written, or being deleted. */
  MissingShards: 'MissingShards',
  /** Some indexes are held by ConfigMaps with different prefixes (see `ConflictingShard`). */
  ConflictingShards: 'ConflictingShards',
  /**
   * Every shard is there, but their prefixes, in order, do not hash to the fingerprint
   * they carry: a shard was edited by hand. The operator repairs it; until then the
   * version is not served.
   */
  FingerprintMismatch: 'FingerprintMismatch',
} as const;
export type IncompleteReason = (typeof IncompleteReason)[keyof typeof IncompleteReason];

/** A version of a list seen in part, and what it lacks. */
export type PartialVersion = {
  readonly fingerprint: string;
  readonly total: number;
  readonly kind: ListKind;
  /** How many of its indexes are held. */
  readonly present: number;
} & (
  | { readonly reason: typeof IncompleteReason.MissingShards; readonly missing: readonly number[] }
  | { readonly reason: typeof IncompleteReason.ConflictingShards; readonly conflicting: readonly number[] }
  | { readonly reason: typeof IncompleteReason.FingerprintMismatch }
);

/** What a list serves. */
export type ListSelection =
  /** A complete version: serve it. */
  | {
      readonly state: 'complete';
      readonly list: string;
      readonly kind: ListKind;
      readonly fingerprint: string;
      /** Shard by shard, index 0 first: the canonical text of its prefixes, each line ended by `\n`. */
      readonly shards: readonly string[];
      /** The ConfigMaps read, in shard order. */
      readonly configMaps: readonly string[];
    }
  /**
   * No complete version: keep serving `held` (what the caller served, from
   * `SelectOptions.serving`), or nothing if it served nothing of this list.
   */
  | {
      readonly state: 'incomplete';
      readonly list: string;
      readonly held: ServedVersion | undefined;
      /** Every version seen in part, most shards present first; empty when no shard of the list could be read. */
      readonly versions: readonly PartialVersion[];
    };

export interface ShardSelection {
  /** One per list with at least one ConfigMap, sorted by list name. */
  readonly lists: readonly ListSelection[];
  /** Sorted by ConfigMap name. */
  readonly problems: readonly ShardProblem[];
  /**
   * SHA-256 of what is to be served: each list's selected version, or for an incomplete
   * list the one it holds. It changes exactly when the lookup must be rebuilt; a list
   * going from complete to incomplete while holding the same version does not change it.
   */
  readonly fingerprint: string;
}

type Complete = Extract<ListSelection, { state: 'complete' }>;

/** One readable shard. */
interface Shard {
  readonly configMap: string;
  readonly index: number;
  readonly total: number;
  readonly kind: ListKind;
  readonly fingerprint: string;
  readonly text: string;
}

const DECIMAL = /^(0|[1-9][0-9]{0,8})$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const KINDS: ReadonlySet<string> = new Set(Object.values(ListKind));

/** The shard `cm` holds, or why it holds none. */
function readShard(cm: ObservedConfigMap, list: string): Shard | ShardProblem {
  const problem = (reason: ShardProblemReason, message: string): ShardProblem => ({
    configMap: cm.name,
    list,
    reason,
    message: `ConfigMap ${cm.name} of list ${list}: ${message}`,
  });
  const indexText = cm.labels?.[LABEL_SHARD];
  if (indexText === undefined || !DECIMAL.test(indexText)) {
    return problem(
      ShardProblemReason.BadIndex,
      `label ${LABEL_SHARD} is ${show(indexText)}, not a decimal index`,
    );
  }
  const kind = cm.labels?.[LABEL_KIND];
  if (kind === undefined || !KINDS.has(kind)) {
    return problem(
      ShardProblemReason.BadKind,
      `label ${LABEL_KIND} is ${show(kind)}, not Certain or Presumed`,
    );
  }
  const fingerprint = cm.data?.[SHARD_FINGERPRINT_KEY];
  if (typeof fingerprint !== 'string' || !SHA256_HEX.test(fingerprint)) {
    return problem(
      ShardProblemReason.BadFingerprint,
      `data key ${SHARD_FINGERPRINT_KEY} is ${show(fingerprint)}, not a SHA-256 in lower-case hex`,
    );
  }
  const totalText = cm.data?.[SHARD_TOTAL_KEY];
  if (typeof totalText !== 'string' || !DECIMAL.test(totalText) || totalText === '0') {
    return problem(
      ShardProblemReason.BadTotal,
      `data key ${SHARD_TOTAL_KEY} is ${show(totalText)}, not a decimal count of at least 1`,
    );
  }
  const index = Number(indexText);
  const total = Number(totalText);
  if (index >= total) {
    return problem(ShardProblemReason.IndexBeyondTotal, `shard ${index} of a version of ${total} shards`);
  }
  const text = cm.data?.[DECIDER_DATA_KEY];
  if (typeof text !== 'string') {
    return problem(ShardProblemReason.NoPrefixes, `data key ${DECIDER_DATA_KEY} is ${show(text)}, not text`);
  }
  return { configMap: cm.name, index, total, kind: kind as ListKind, fingerprint, text };
}

/** A value for a message, cut short: a problem names the field, it does not copy it. */
function show(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = typeof value === 'string' ? JSON.stringify(value) : `a ${typeof value}`;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The shards of one version (fingerprint, total, kind) of a list, by index. */
class Version {
  readonly fingerprint: string;
  readonly total: number;
  readonly kind: ListKind;
  readonly #shards = new Map<number, Shard>();
  readonly #conflicting = new Set<number>();

  constructor(first: Shard) {
    this.fingerprint = first.fingerprint;
    this.total = first.total;
    this.kind = first.kind;
  }

  /** Adds a shard; returns the one it conflicts with, if another holds its index with other text. */
  add(shard: Shard): Shard | undefined {
    const held = this.#shards.get(shard.index);
    if (held === undefined) {
      this.#shards.set(shard.index, shard);
      return undefined;
    }
    if (held.text === shard.text) return undefined;
    this.#conflicting.add(shard.index);
    return held;
  }

  /** The selection if this version is complete and verified, else what it lacks. */
  judge(list: string): Complete | PartialVersion {
    const head = {
      fingerprint: this.fingerprint,
      total: this.total,
      kind: this.kind,
      present: this.#shards.size,
    };
    if (this.#conflicting.size > 0) {
      return {
        ...head,
        reason: IncompleteReason.ConflictingShards,
        conflicting: [...this.#conflicting].sort((a, b) => a - b),
      };
    }
    if (this.#shards.size < this.total) {
      const missing: number[] = [];
      for (let i = 0; i < this.total; i++) if (!this.#shards.has(i)) missing.push(i);
      return { ...head, reason: IncompleteReason.MissingShards, missing };
    }
    const shards = Array.from({ length: this.total }, (_, i) => this.#shards.get(i)!);
    // The fingerprint is the SHA-256 of the canonical text, which the shards cut into
    // consecutive runs: their texts in order are that text (see `published-check.ts`).
    const hash = createHash('sha256');
    for (const s of shards) hash.update(s.text, 'utf8');
    if (hash.digest('hex') !== this.fingerprint)
      return { ...head, reason: IncompleteReason.FingerprintMismatch };
    return {
      state: 'complete',
      list,
      kind: this.kind,
      fingerprint: this.fingerprint,
      shards: shards.map((s) => s.text),
      configMaps: shards.map((s) => s.configMap),
    };
  }
}

/**
 * The version each list serves, from the ConfigMaps the decider sees. Pure.
 *
 * Rules, per list (the `edge.exoledge.io/source` label; ConfigMaps without it are not
 * shards and are skipped):
 * 1. Each ConfigMap is read as a shard of the version (fingerprint, total, kind) it
 *    names, or reported as a problem and left out; the list's other shards still count.
 * 2. A version is complete when every index 0 to total - 1 is held, by ConfigMaps that
 *    agree on the prefixes, and the prefixes in order hash to the fingerprint.
 * 3. One complete version is served. Of several (possible only if versions are ever
 *    published under different names side by side; the operator rewrites shards in
 *    place, so at most one is complete at a time), the one served now stays, until it is
 *    no longer complete: a fingerprint is a hash, not a date, so which one is newer cannot
 *    be read from the shards, and staying never mixes versions nor flips between them.
 *    Without one served, the least fingerprint, so that the choice is the same every time.
 * 4. No complete version: the list is `incomplete` and holds what it served.
 *
 * Cost: every whole version's text is hashed on each call, about 3 ms for the 4.8 MB of a
 * list of 330,000 prefixes (66 shards) on this machine; a caller that calls on every
 * event of a rollout pays it per event.
 */
export function selectShardSets(
  configMaps: readonly ObservedConfigMap[],
  options: SelectOptions = {},
): ShardSelection {
  const serving = options.serving ?? new Map<string, ServedVersion>();
  const byList = new Map<string, Map<string, Version>>();
  const problems: ShardProblem[] = [];
  const sorted = [...configMaps].sort((a, b) => compareText(a.name, b.name));
  for (const cm of sorted) {
    const list = cm.labels?.[LABEL_SOURCE];
    if (list === undefined || list === '') continue;
    let versions = byList.get(list);
    if (versions === undefined) {
      versions = new Map();
      byList.set(list, versions);
    }
    const shard = readShard(cm, list);
    if ('reason' in shard) {
      problems.push(shard);
      continue;
    }
    const key = `${shard.fingerprint}/${shard.total}/${shard.kind}`;
    let version = versions.get(key);
    if (version === undefined) {
      version = new Version(shard);
      versions.set(key, version);
    }
    const other = version.add(shard);
    if (other !== undefined) {
      const message = (a: Shard, b: Shard): string =>
        `ConfigMap ${a.configMap} of list ${list}: shard ${a.index} of version ${a.fingerprint.slice(0, 12)} ` +
        `holds other prefixes than ConfigMap ${b.configMap}`;
      for (const [a, b] of [
        [other, shard],
        [shard, other],
      ] as const) {
        if (
          !problems.some(
            (p) => p.configMap === a.configMap && p.reason === ShardProblemReason.ConflictingShard,
          )
        ) {
          problems.push({
            configMap: a.configMap,
            list,
            reason: ShardProblemReason.ConflictingShard,
            message: message(a, b),
          });
        }
      }
    }
  }

  const lists: ListSelection[] = [];
  for (const list of [...byList.keys()].sort(compareText)) {
    const complete: Complete[] = [];
    const partial: PartialVersion[] = [];
    for (const version of byList.get(list)!.values()) {
      const judged = version.judge(list);
      if ('state' in judged) complete.push(judged);
      else partial.push(judged);
    }
    const held = serving.get(list);
    complete.sort((a, b) => compareText(a.fingerprint, b.fingerprint) || compareText(a.kind, b.kind));
    const chosen =
      complete.find(
        (c) => held !== undefined && c.fingerprint === held.fingerprint && c.kind === held.kind,
      ) ?? complete[0];
    if (chosen !== undefined) {
      lists.push(chosen);
      continue;
    }
    partial.sort(
      (a, b) => b.present - a.present || compareText(a.fingerprint, b.fingerprint) || a.total - b.total,
    );
    lists.push({ state: 'incomplete', list, held, versions: partial });
  }
  problems.sort((a, b) => compareText(a.configMap, b.configMap));
  return { lists, problems, fingerprint: selectionFingerprint(lists) };
}

/** What the caller serves once it has applied `selection`: pass it as `serving` next time. */
export function servingOf(selection: ShardSelection): Map<string, ServedVersion> {
  return servedBy(selection.lists);
}

function servedBy(lists: readonly ListSelection[]): Map<string, ServedVersion> {
  const out = new Map<string, ServedVersion>();
  for (const l of lists) {
    switch (l.state) {
      case 'complete':
        out.set(l.list, { fingerprint: l.fingerprint, kind: l.kind });
        break;
      case 'incomplete':
        if (l.held !== undefined) out.set(l.list, l.held);
        break;
      default:
        return l satisfies never;
    }
  }
  return out;
}

function selectionFingerprint(lists: readonly ListSelection[]): string {
  const hash = createHash('sha256');
  for (const [list, version] of servedBy(lists)) {
    hash.update(`${list}\t${version.kind}\t${version.fingerprint}\n`);
  }
  return hash.digest('hex');
}

/** Code-unit order, the same in every locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
