/**
 * The lifecycle of a target: RFC 0002's table "Cycle de vie d'une cible" as one pure
 * decision, "what to do with this source/target pair". The controller reads the pair
 * from its caches, calls {@link decide}, and carries out the answer; it has no logic of
 * its own.
 *
 * | situation                                        | decision                                  |
 * | ------------------------------------------------ | ----------------------------------------- |
 * | annotated source, no target                      | Apply (Create), state Linked              |
 * | source changed                                   | Apply (Update) of the mapped fields only  |
 * | an `immutable` field changed on the source       | Refuse (Conflict), on the source          |
 * | a target of that name exists without our label   | Refuse (TargetExists), never adopted      |
 * | our label, source annotation, no source-uid      | Apply (Attach) if that source claims it:  |
 * | (labelled by hand: Exploitation, « Rattacher »)  | UID recorded, Linked; else Nothing        |
 * |                                                  | (AwaitingSource), never a departure       |
 * | source deleted, header removed, another UID      | Detach: onRemoval.patch, state Detaching  |
 * | Detaching and `safe` true                        | MarkDetached (Keep) or Delete (Delete)    |
 * | Detached (or Detaching), source back, annotated  | Apply (Reattach): new source-uid, Linked  |
 *
 * Guarantees: an error (a mapping or `safe` that fails, a header with another value than
 * `enabled`) is never a write: it is a Refuse, reported, and the target keeps its state.
 * A target labelled for another rule, or not labelled, is never written. A target without
 * a `source-uid` was never linked by weebo-link, so it is never locked or deleted.
 *
 * Drift is judged with the rule's field manager: a field weebo-link applied before and
 * the mapping no longer states is drift, and the next apply releases it.
 */
import { hasDrifted, type KubeObject } from '@operators/kit';
import {
  ENABLED,
  fieldManagerOf,
  headerAnnotation,
  isLinkState,
  LINK_LABEL,
  LinkState,
  SOURCE_ANNOTATION,
  SOURCE_UID_ANNOTATION,
  STATE_LABEL,
} from './headers.ts';
import { desiredTarget, evaluateSafe, immutableChange, safeStateTarget, sourceRef } from './mapping.ts';
import { type Rule, Then } from './rules.ts';

/** Why a target is written. */
export const ApplyReason = {
  /** An annotated source has no target yet. */
  Create: 'Create',
  /** The source (or the rule's mapping) changed: the mapped fields are re-applied. */
  Update: 'Update',
  /** A Detaching or Detached target's source is back (same name, annotated): it follows it again. */
  Reattach: 'Reattach',
  /**
   * An admin gave an existing target this rule's link label and the source annotation
   * by hand (RFC 0002, Exploitation: « Rattacher une cible existante »), and that source
   * claims it: the mapping is applied, the source's UID recorded, state Linked.
   */
  Attach: 'Attach',
} as const;
export type ApplyReason = (typeof ApplyReason)[keyof typeof ApplyReason];

/** Why a linked target starts its departure. */
export const DepartureReason = {
  /** The recorded source no longer exists. */
  SourceDeleted: 'SourceDeleted',
  /** The recorded source exists but no longer carries the header. */
  HeaderRemoved: 'HeaderRemoved',
  /** A source of that name exists with another UID: recreated, possibly by someone else. */
  SourceReplaced: 'SourceReplaced',
} as const;
export type DepartureReason = (typeof DepartureReason)[keyof typeof DepartureReason];

/** Why nothing is done; none of them is a problem. */
export const NothingReason = {
  /** No annotated source and no target. */
  NoSource: 'NoSource',
  /** The target is what the source asks for. */
  InSync: 'InSync',
  /** The target is Detached and no source claims it. */
  Detached: 'Detached',
  /** The target is being deleted: wait until it is gone. */
  TargetDeleting: 'TargetDeleting',
  /** The object belongs to another rule, or to no rule, and no source of this rule claims it. */
  NotOurs: 'NotOurs',
  /**
   * The target carries this rule's label but no source-uid (labelled by hand), and the
   * source its annotation names does not claim it (absent, without the header, or
   * missing annotation): weebo-link never linked it, so there is nothing to depart from;
   * it is attached when that source claims it.
   */
  AwaitingSource: 'AwaitingSource',
} as const;
export type NothingReason = (typeof NothingReason)[keyof typeof NothingReason];

/** Why weebo-link refuses to act: reported (Event, metric, log), never written. */
export const RefusalReason = {
  /**
   * An `immutable` field would change: nothing is applied (no renaming, ever). The
   * source's author reverts the change, or an admin retires the target explicitly.
   */
  Conflict: 'Conflict',
  /**
   * A target of that name exists without this rule's link label: never adopted (the
   * kit's rule). Attaching it is an explicit gesture (RFC 0002, Exploitation: « Rattacher
   * une cible existante »).
   */
  TargetExists: 'TargetExists',
  /** A mapping leaf failed to evaluate: nothing is applied, not even the other fields. */
  MappingFailed: 'MappingFailed',
  /** `safe` failed to evaluate: an error is never true, the target stays Detaching. */
  SafeFailed: 'SafeFailed',
  /**
   * The source's header has another value than `enabled`: not an opt-in, and not a
   * departure either (an error path never rewrites a target).
   */
  InvalidHeader: 'InvalidHeader',
} as const;
export type RefusalReason = (typeof RefusalReason)[keyof typeof RefusalReason];

export type Decision =
  | { readonly action: 'Nothing'; readonly reason: NothingReason }
  | {
      readonly action: 'Apply';
      readonly reason: ApplyReason;
      readonly target: KubeObject;
      /** The source followed, for events. */
      readonly source: KubeObject;
    }
  | { readonly action: 'Detach'; readonly reason: DepartureReason; readonly target: KubeObject }
  | { readonly action: 'MarkDetached'; readonly target: KubeObject }
  | { readonly action: 'Delete'; readonly uid: string }
  /** Detaching, `safe` is false: come back later (or when the target changes). */
  | { readonly action: 'Wait' }
  | {
      readonly action: 'Refuse';
      readonly reason: RefusalReason;
      /** The object the Event goes to: the source for source problems, the target for `safe`. */
      readonly regarding: KubeObject;
      readonly message: string;
    };

/** The pair as the controller reads it from its caches. */
export interface Pair {
  /** The object at the target's key: ours, another rule's, or anyone's; absent if none. */
  readonly target: KubeObject | undefined;
  /**
   * The sources in the rule's namespaces that carry this rule's header (any value) and
   * whose mapped target is this key.
   */
  readonly candidates: readonly KubeObject[];
  /** The source the target's `link.weebo.io/source` names, if it exists (annotated or not). */
  readonly recorded: KubeObject | undefined;
}

/** What to do with this pair. Pure and total. */
export function decide(rule: Rule, pair: Pair): Decision {
  const { target } = pair;
  const header = headerAnnotation(rule.header);
  const valid = pair.candidates.filter((s) => s.metadata.annotations?.[header] === ENABLED);
  const invalid = pair.candidates.filter((s) => {
    const v = s.metadata.annotations?.[header];
    return v !== undefined && v !== ENABLED;
  });

  if (target?.metadata.deletionTimestamp) return { action: 'Nothing', reason: NothingReason.TargetDeleting };

  if (target && target.metadata.labels?.[LINK_LABEL] !== rule.name) {
    const claimant = pick(valid, undefined);
    if (!claimant) return { action: 'Nothing', reason: NothingReason.NotOurs };
    const owner = target.metadata.labels?.[LINK_LABEL];
    return refuse(
      RefusalReason.TargetExists,
      claimant,
      `${rule.target.kind} ${key(target)} exists ${owner ? `and belongs to link ${owner}` : 'without the link.weebo.io/link label'}: it is never adopted (RFC 0002, D9)`,
    );
  }

  if (!target) {
    const source = pick(valid, undefined);
    if (!source) {
      const bad = invalid[0];
      return bad ? invalidHeader(rule, bad) : { action: 'Nothing', reason: NothingReason.NoSource };
    }
    const desired = desiredTarget(rule, source);
    if (!desired.ok) return refuse(RefusalReason.MappingFailed, source, desired.message);
    return { action: 'Apply', reason: ApplyReason.Create, target: desired.value, source };
  }

  // The target is this rule's.
  const label = target.metadata.labels?.[STATE_LABEL];
  const state: LinkState = isLinkState(label) ? label : LinkState.Linked;
  // An empty source-uid is no record either: earlier versions detached hand-labelled targets,
  // writing an empty one.
  const linkedUid = target.metadata.annotations?.[SOURCE_UID_ANNOTATION] || undefined;
  const recordedHeader = pair.recorded?.metadata.annotations?.[header];
  if (linkedUid === undefined && state !== LinkState.Detached) {
    // Labelled by hand: only the source its annotation names may attach it.
    const named = target.metadata.annotations?.[SOURCE_ANNOTATION];
    const claimant = valid.find((s) => sourceRef(rule, s) === named);
    if (claimant) return follow(rule, claimant, target, ApplyReason.Attach);
    if (pair.recorded && recordedHeader !== undefined && recordedHeader !== ENABLED)
      return invalidHeader(rule, pair.recorded);
    return { action: 'Nothing', reason: NothingReason.AwaitingSource };
  }
  const source = pick(valid, linkedUid);

  if (!source && pair.recorded && recordedHeader !== undefined && recordedHeader !== ENABLED)
    return invalidHeader(rule, pair.recorded);
  if (!source && !pair.recorded && invalid[0]) return invalidHeader(rule, invalid[0]);

  if (source) {
    const sameSource = source.metadata.uid === linkedUid;
    switch (state) {
      case LinkState.Linked:
        if (!sameSource) return detach(rule, target, DepartureReason.SourceReplaced);
        return follow(rule, source, target, ApplyReason.Update);
      case LinkState.Detaching:
        // The same source is back before the safe state was reached: follow it again.
        // Another one waits until the old link has reached its safe state.
        return sameSource
          ? follow(rule, source, target, ApplyReason.Reattach)
          : departure(rule, target, DepartureReason.SourceReplaced);
      case LinkState.Detached:
        return follow(rule, source, target, ApplyReason.Reattach);
      default:
        return assertNever(state);
    }
  }

  const reason =
    pair.recorded === undefined
      ? DepartureReason.SourceDeleted
      : pair.recorded.metadata.uid !== linkedUid
        ? DepartureReason.SourceReplaced
        : DepartureReason.HeaderRemoved;
  switch (state) {
    case LinkState.Linked:
      return detach(rule, target, reason);
    case LinkState.Detaching:
      return departure(rule, target, reason);
    case LinkState.Detached:
      return { action: 'Nothing', reason: NothingReason.Detached };
    default:
      return assertNever(state);
  }
}

/** Linked (or coming back): apply the mapping, unless it fails or would change an immutable field. */
function follow(rule: Rule, source: KubeObject, target: KubeObject, reason: ApplyReason): Decision {
  const desired = desiredTarget(rule, source);
  if (!desired.ok) return refuse(RefusalReason.MappingFailed, source, desired.message);
  const change = immutableChange(rule, desired.value, target);
  if (change)
    return refuse(
      RefusalReason.Conflict,
      source,
      `${change.path} is immutable: the target ${key(target)} has ${JSON.stringify(change.live)}, the source asks for ${JSON.stringify(change.desired)}; nothing applied`,
    );
  if (reason === ApplyReason.Update && !hasDrifted(desired.value, target, owned(rule)))
    return { action: 'Nothing', reason: NothingReason.InSync };
  return { action: 'Apply', reason, target: desired.value, source };
}

function detach(rule: Rule, target: KubeObject, reason: DepartureReason): Decision {
  return { action: 'Detach', reason, target: safeStateTarget(rule, target, LinkState.Detaching) };
}

/** Detaching: keep the safe-state patch applied; once `safe` holds, Keep or Delete. */
function departure(rule: Rule, target: KubeObject, reason: DepartureReason): Decision {
  const patched = safeStateTarget(rule, target, LinkState.Detaching);
  if (hasDrifted(patched, target, owned(rule))) return { action: 'Detach', reason, target: patched };
  const safe = evaluateSafe(rule, target);
  if (!safe.ok)
    return refuse(
      RefusalReason.SafeFailed,
      target,
      `${safe.message}: an error is never true, ${key(target)} stays Detaching`,
    );
  if (!safe.value) return { action: 'Wait' };
  switch (rule.onRemoval.then) {
    case Then.Keep:
      return { action: 'MarkDetached', target: safeStateTarget(rule, target, LinkState.Detached) };
    case Then.Delete:
      // Never a delete without the UID precondition: an object without a UID (never one read
      // from the apiserver) waits rather than risk deleting whatever holds the name.
      return target.metadata.uid ? { action: 'Delete', uid: target.metadata.uid } : { action: 'Wait' };
    default:
      return assertNever(rule.onRemoval.then);
  }
}

/**
 * Drift against the field set weebo-link owns (its managedFields entry, which the target
 * cache keeps), not only the fields it states: a field dropped from the mapping is drift.
 */
function owned(rule: Rule): { readonly fieldManager: string } {
  return { fieldManager: fieldManagerOf(rule.name) };
}

function invalidHeader(rule: Rule, source: KubeObject): Decision {
  const value = source.metadata.annotations?.[headerAnnotation(rule.header)];
  return refuse(
    RefusalReason.InvalidHeader,
    source,
    `${headerAnnotation(rule.header)} is ${JSON.stringify(value)} on ${sourceRef(rule, source)}: the only value is "enabled"; nothing is done to its target`,
  );
}

/**
 * The source a target follows: the one it records (same UID) if it is still there,
 * else the oldest claimant (ties by namespace and name), so that two sources mapped to
 * one name always give the same answer.
 */
function pick(valid: readonly KubeObject[], uid: string | undefined): KubeObject | undefined {
  if (valid.length === 0) return undefined;
  const same = uid ? valid.find((s) => s.metadata.uid === uid) : undefined;
  if (same) return same;
  return [...valid].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      key(a).localeCompare(key(b)),
  )[0];
}

function refuse(reason: RefusalReason, regarding: KubeObject, message: string): Decision {
  return { action: 'Refuse', reason, regarding, message };
}

function key(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
