/**
 * The conditions a BlocklistSource reports, and the closed set of reasons for each. A
 * user reads `Ready` first: is the set I asked for in force? `SourceRead` says why not
 * when the list could not be read; `AllEntriesPublished` says whether the budget cut
 * anything. Events carry the same reasons.
 */

export const ConditionType = {
  /** The published objects hold the set of the latest read of the list, under the current spec. */
  Ready: 'Ready',
  /** The last attempt to read the list succeeded (200, or 304 to a conditional GET). */
  SourceRead: 'SourceRead',
  /** Every merged prefix is published: the budget dropped nothing. */
  AllEntriesPublished: 'AllEntriesPublished',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** Reasons of `Ready`. */
export const ReadyReason = {
  /**
   * True: the shards (and, in the Cilium channel, the policy) hold exactly the set of the
   * latest read, and nothing of the other channel is left.
   */
  Published: 'Published',
  /**
   * False: the list could not be read (see `SourceRead`), and the set published from the
   * last good read stays in force. A passing network failure must never leave a site
   * unprotected: nothing is deleted until a read succeeds. Retried after 5 minutes.
   */
  LastSetKept: 'LastSetKept',
  /** False: the list could not be read and nothing was ever published for this source. */
  NothingPublished: 'NothingPublished',
  /**
   * False: writing a shard or the policy failed (the message names the object and the
   * apiserver's answer). The loop stopped there: the counts in the status are those of
   * the set last published in full. Retried with backoff.
   */
  ApplyFailed: 'ApplyFailed',
  /**
   * False: an object we must write has a name already taken by an object that is not
   * ours (it lacks our `edge.exoledge.io/source` label). We do not take it over; rename
   * the source or remove that object. Checked again every 5 minutes.
   */
  NameConflict: 'NameConflict',
  /**
   * False: Cilium's policy map holds 65,536 entries per endpoint, shared by every policy
   * selecting it, and the enforced sources with this source's `podSelector` would hold
   * more. The older sources (by creationTimestamp, then name) keep their place; this one
   * publishes nothing new, and what it published before stays (an error path never
   * deletes). The message names the older sources and their counts. It is decided again
   * whenever one of them changes.
   */
  PolicyMapBudgetExceeded: 'PolicyMapBudgetExceeded',
} as const;
export type ReadyReason = (typeof ReadyReason)[keyof typeof ReadyReason];

/** Reasons of `SourceRead`; the False ones are also the failures of a read. */
export const SourceReadReason = {
  /** True: the list was read (or found unchanged by a conditional GET). */
  Read: 'Read',
  /** False: no connection (DNS, refused, reset, TLS). */
  Unreachable: 'Unreachable',
  /** False: the whole read took longer than the operator's fetch timeout. */
  Timeout: 'Timeout',
  /** False: an answer other than 200 (or 304 to a conditional GET): the body is not read. */
  HttpStatus: 'HttpStatus',
  /** False: the list is larger than the operator's size limit (counted after decompression). */
  TooLarge: 'TooLarge',
  /** False: a redirect to something other than http or https, or too many redirects. */
  BadRedirect: 'BadRedirect',
  /**
   * False: the body was read but more of its lines are malformed than valid: an error
   * page served with a 200, or the wrong file. Publishing it would replace a real list
   * with almost nothing, so it is treated as a failed read and the last set is kept.
   */
  NotABlocklist: 'NotABlocklist',
  /**
   * False: the answer came with a Content-Encoding we did not ask for (we ask for gzip,
   * deflate or br): its body cannot be read as a list, whatever its status.
   */
  UnsupportedEncoding: 'UnsupportedEncoding',
  /**
   * False: a gzip, deflate or br body that does not decode: truncated (the provider cut
   * the file short) or corrupt. Distinct from `Unreachable`: the connection was fine, the
   * file was not; nothing is published from it.
   */
  CorruptBody: 'CorruptBody',
} as const;
export type SourceReadReason = (typeof SourceReadReason)[keyof typeof SourceReadReason];
/** The ways a read fails. */
export type ReadFailureReason = Exclude<SourceReadReason, 'Read'>;

/** Reasons of `AllEntriesPublished`. */
export const BudgetReason = {
  /** True: every merged prefix is published. */
  AllPublished: 'AllPublished',
  /**
   * False: `minPrefixLength` or `maxEntries` dropped prefixes; `status.dropped` lists
   * exactly which lengths, how many, and by which rule. Never a silent truncation.
   */
  DroppedByBudget: 'DroppedByBudget',
  /**
   * False: the list holds prefixes shorter than the operator's floor (`0.0.0.0/0`, `::/0`,
   * `1.0.0.0/7` under the default /8 IPv4, /32 IPv6): they are refused, never published,
   * since with `enforce` one of them would deny the world; `status.refusedLines` shows the
   * first ones. The rest of the list is published. Takes precedence over
   * `DroppedByBudget`: a list that says "block everything" needs a human first.
   */
  PrefixesRefused: 'PrefixesRefused',
} as const;
export type BudgetReason = (typeof BudgetReason)[keyof typeof BudgetReason];

/** Event reasons that are not condition reasons. */
export const EventReason = {
  /** Normal: a new set is in force (its fingerprint, shard count or channel changed). */
  Published: 'Published',
  /** Warning: a read failed; the note says how, and that the last set is kept. */
  ReadFailed: 'ReadFailed',
  /** Warning: the budget dropped prefixes from a newly published set. */
  DroppedByBudget: 'DroppedByBudget',
  /** Warning: a newly published set was read from a list holding prefixes under the floor, refused. */
  PrefixesRefused: BudgetReason.PrefixesRefused,
  ApplyFailed: ReadyReason.ApplyFailed,
  NameConflict: ReadyReason.NameConflict,
  /** Warning: the source was refused its place in the shared policy map; the note names the others. */
  PolicyMapBudgetExceeded: ReadyReason.PolicyMapBudgetExceeded,
  /** Normal: the source was deleted and every object it published is gone. */
  CleanedUp: 'CleanedUp',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];
