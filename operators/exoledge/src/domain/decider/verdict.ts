/**
 * The decider's one decision: what the gateway does with a request, from the lists that
 * hold its client's address, the site's configuration and what Valkey remembers of the
 * client. Pure: the HTTP shell looks the address up, reads the state only when
 * `stateWanted` says the answer depends on it, and turns the decision into a response.
 *
 * The table, first matching row wins:
 *
 * | client                                              | verdict                       | reason          |
 * | --------------------------------------------------- | ----------------------------- | --------------- |
 * | in an allowlist of the site                         | pass                          | Allowlisted     |
 * | in a served Certain list                            | drop                          | CertainListed   |
 * | in no selected Presumed list                        | pass                          | NotListed       |
 * | posture Observe                                     | pass (counted, logged)        | ListedObserved  |
 * | no challenge can be served (below)                  | pass                          | ChallengeOff    |
 * | a valid clearance token                             | pass                          | Cleared         |
 * | more than CHALLENGE_FLOOD_THRESHOLD challenges in   | pow with `extraBits` more     | ChallengeFlood  |
 * | the window and the challenge is a proof-of-work     | zero bits (never a drop)      |                 |
 * | otherwise (posture Challenge or Strict)             | pow, or captcha (below)       | PresumedListed  |
 *
 * Which challenge: posture Challenge asks a proof-of-work; Strict asks the captcha when
 * the site has one, else a proof-of-work. `challenge: false` turns the proof-of-work off
 * and nothing else: where a proof-of-work would be asked the client passes (ChallengeOff);
 * a captcha is asked only where Strict asks it (a configured captcha is never a stand-in
 * for a switched-off proof-of-work).
 *
 * A Presumed list is never a drop, however many challenges its addresses are sent: a
 * Tor exit or a carrier-grade NAT address hides many people, and the seed's answer to a
 * presumption is a test, not a cut. A flood of challenges raises the work each new one
 * asks instead (ChallengeFlood), so a flood pays for itself while a person still gets in.
 *
 * Before the table: a request whose client address cannot be read (`client-address.ts`)
 * passes, as `unreadableClient()`, reason UnreadableAddress.
 *
 * A clearance token only changes the verdict of a listed client (everyone else passes
 * anyway), so it is looked at there, and Valkey is read only for those clients.
 */
import { ListKind } from '../../api/blocklist-source.ts';
import { Posture } from '../../api/edge-site.ts';
import type { BlocklistSelection } from '../edge-site/security.ts';

/** What the gateway does with the request. */
export const Verdict = {
  /** Let it through. */
  Pass: 'pass',
  /** Let it through only after a captcha. */
  Captcha: 'captcha',
  /** Let it through only after a proof-of-work. */
  Pow: 'pow',
  /** Refuse it (403). */
  Drop: 'drop',
} as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** Why a verdict was given: a closed set, one per row of the table. */
export const VerdictReason = {
  /**
   * The address is in one of the site's allowlists. First, before any blocklist: an
   * allowlist is the site owner saying "these are mine" (a payment provider, a monitor),
   * and a list bought from elsewhere must not lock them out.
   */
  Allowlisted: 'Allowlisted',
  /**
   * The address is in a Certain list the decider serves. Certain lists with `enforce` are
   * dropped by Cilium and never reach the decider; without `enforce` they are published to
   * the decider, which is then the only place they are enforced. Whatever the posture and
   * the site's selection: like Cilium's deny, a Certain list is the cluster's, not a site's.
   */
  CertainListed: 'CertainListed',
  /** The address is in no Presumed list the site selects (and no Certain list). */
  NotListed: 'NotListed',
  /**
   * In a selected Presumed list, but the posture is Observe: passed, and counted and logged
   * under this reason, so a site sees who would be challenged before anyone is.
   */
  ListedObserved: 'ListedObserved',
  /**
   * In a selected Presumed list, but the site has neither the challenge filter nor a
   * captcha: nothing could serve a challenge, and a Presumed list is never a drop.
   */
  ChallengeOff: 'ChallengeOff',
  /** In a selected Presumed list, with a valid clearance token: it solved a challenge lately. */
  Cleared: 'Cleared',
  /**
   * In a selected Presumed list and sent more than `CHALLENGE_FLOOD_THRESHOLD` challenges in
   * the current window without coming back cleared: still challenged, never dropped (many
   * people may share the address), but the proof-of-work asks `extraBits` more zero bits,
   * doubling the work with each doubling of the flood up to `MAX_EXTRA_BITS`.
   */
  ChallengeFlood: 'ChallengeFlood',
  /** In a selected Presumed list: challenged (proof-of-work or captcha, see the module comment). */
  PresumedListed: 'PresumedListed',
  /**
   * The request's client address cannot be read (a forwarded header that names no
   * address). Passed: the gateway always sends one, so this is a misconfiguration, and
   * refusing every request would turn it into an outage; the metric counts it.
   */
  UnreadableAddress: 'UnreadableAddress',
} as const;
export type VerdictReason = (typeof VerdictReason)[keyof typeof VerdictReason];

/**
 * Challenges one client may be sent in a window at the site's difficulty: two a second
 * for a minute. A person behind a listed address answers the first; a page with many
 * assets may ask a few dozen times before the cookie is set. Past it the work grows.
 */
export const CHALLENGE_FLOOD_THRESHOLD = 120;
/**
 * The most a flood adds to the site's difficulty: 4 bits, 16 times the work. More would
 * make a slow phone behind a busy NAT wait minutes, which is a cut by another name.
 */
export const MAX_EXTRA_BITS = 4;
/** The counting window, in seconds: fixed, starting at the client's first challenge. */
export const CHALLENGE_WINDOW_SECONDS = 60;

/** A list holding the address. */
export interface ListHit {
  readonly name: string;
  readonly kind: ListKind;
}

/** What the site's configuration says, as far as the verdict goes. */
export interface VerdictPolicy {
  readonly posture: Posture;
  /** The site has a captcha. */
  readonly captcha: boolean;
  /** The challenge filter is on (`security.challenge`). */
  readonly challenge: boolean;
  readonly blocklists: BlocklistSelection;
}

/** What Valkey says of the client. */
export type ClientState =
  /** It presented a valid clearance token. */
  | { readonly kind: 'cleared' }
  /** No valid clearance; this is challenge number `count` of its window (1 for the first). */
  | { readonly kind: 'challenged'; readonly count: number }
  /** Valkey did not answer: nothing counted, so the site's difficulty (fail open on the count). */
  | { readonly kind: 'unavailable' }
  /** Not read, because `stateWanted` said the answer does not depend on it. */
  | { readonly kind: 'notRead' };

export interface VerdictInput {
  readonly allowlisted: boolean;
  /** Every served list holding the address, in any order. */
  readonly lists: readonly ListHit[];
  readonly policy: VerdictPolicy;
  readonly state: ClientState;
}

export interface Decision {
  readonly verdict: Verdict;
  readonly reason: VerdictReason;
  /** The list that decided it (the first by name of its kind), when a list did. */
  readonly list?: string;
  /** With ChallengeFlood: zero bits the proof-of-work asks beyond the site's difficulty. */
  readonly extraBits?: number;
}

/**
 * The extra work for challenge number `count` of a window: none up to the threshold, then
 * one bit, and one more each time the count doubles, at most `MAX_EXTRA_BITS`.
 */
export function extraBitsFor(count: number): number {
  if (count <= CHALLENGE_FLOOD_THRESHOLD) return 0;
  return Math.min(MAX_EXTRA_BITS, 1 + Math.floor(Math.log2(count / CHALLENGE_FLOOD_THRESHOLD)));
}

/** Whether the site applies list `name` as a Presumed list. */
export function selects(selection: BlocklistSelection, name: string): boolean {
  switch (selection.kind) {
    case 'AllPresumed':
      return true;
    case 'Named':
      return selection.names.includes(name);
    default:
      return selection satisfies never;
  }
}

/** The challenge a listed client gets under `policy`, or pass when none can be served. */
export function challengeFor(policy: VerdictPolicy): typeof Verdict.Pow | typeof Verdict.Captcha | 'none' {
  if (policy.posture === Posture.Strict && policy.captcha) return Verdict.Captcha;
  return policy.challenge ? Verdict.Pow : 'none';
}

/** The first list by name among `lists` matching `keep`. */
function first(lists: readonly ListHit[], keep: (l: ListHit) => boolean): ListHit | undefined {
  let found: ListHit | undefined;
  for (const l of lists) if (keep(l) && (found === undefined || l.name < found.name)) found = l;
  return found;
}

function presumedHit(input: Omit<VerdictInput, 'state'>): ListHit | undefined {
  return first(input.lists, (l) => l.kind === ListKind.Presumed && selects(input.policy.blocklists, l.name));
}

/**
 * Whether the decision depends on the client's state: the client is in a selected
 * Presumed list, in no allowlist nor Certain list, and a challenge would be served. Only
 * then is Valkey read (and the client's challenge counted), so an unlisted client costs
 * no round trip.
 */
export function stateWanted(input: Omit<VerdictInput, 'state'>): boolean {
  if (input.allowlisted) return false;
  if (input.lists.some((l) => l.kind === ListKind.Certain)) return false;
  if (presumedHit(input) === undefined) return false;
  return input.policy.posture !== Posture.Observe && challengeFor(input.policy) !== 'none';
}

/** The verdict for one request; see the module comment for the table. */
export function decide(input: VerdictInput): Decision {
  if (input.allowlisted) return { verdict: Verdict.Pass, reason: VerdictReason.Allowlisted };
  const certain = first(input.lists, (l) => l.kind === ListKind.Certain);
  if (certain !== undefined) {
    return { verdict: Verdict.Drop, reason: VerdictReason.CertainListed, list: certain.name };
  }
  const presumed = presumedHit(input);
  if (presumed === undefined) return { verdict: Verdict.Pass, reason: VerdictReason.NotListed };
  const list = presumed.name;
  if (input.policy.posture === Posture.Observe) {
    return { verdict: Verdict.Pass, reason: VerdictReason.ListedObserved, list };
  }
  const challenge = challengeFor(input.policy);
  if (challenge === 'none') return { verdict: Verdict.Pass, reason: VerdictReason.ChallengeOff, list };
  const { state } = input;
  switch (state.kind) {
    case 'cleared':
      return { verdict: Verdict.Pass, reason: VerdictReason.Cleared, list };
    case 'challenged': {
      const extraBits = challenge === Verdict.Pow ? extraBitsFor(state.count) : 0;
      if (extraBits > 0)
        return { verdict: Verdict.Pow, reason: VerdictReason.ChallengeFlood, list, extraBits };
      break;
    }
    case 'unavailable':
    case 'notRead':
      // Fail open on the count, not on the list: without Valkey nothing is counted, and the
      // client is asked the site's own difficulty.
      break;
    default:
      return state satisfies never;
  }
  return { verdict: challenge, reason: VerdictReason.PresumedListed, list };
}

/** The decision for a request whose client address cannot be read. */
export function unreadableClient(): Decision {
  return { verdict: Verdict.Pass, reason: VerdictReason.UnreadableAddress };
}

/** Whether the verdict asks the client to solve something. */
export function isChallenge(verdict: Verdict): boolean {
  return verdict === Verdict.Pow || verdict === Verdict.Captcha;
}
