/**
 * What `spec.security` asks for once the product defaults fill what it leaves out: the
 * one place where an absent switch becomes a value.
 *
 * Why the CRD has no `default:` for these switches: the apiserver would write `true` into
 * every stored object, and the console's manifest bridge could no longer tell "the user
 * turned the WAF on" from "the manifest never mentioned it". Keeping the absence in the
 * object and resolving it here keeps both facts, and gives one answer to every reader:
 * an absent switch is on, because an incomplete manifest must never turn a protection
 * off by omission (the seed's `SecuritySpec`, checked by its `TestSecurityDefaults`).
 *
 * This says what the site asks for, not what it gets: on a shared gateway the edge
 * carries these functions for every site, and `status.features` says so.
 */
import type { EdgeSiteSpec } from '../../api/edge-site.ts';

/** Which BlocklistSources the decider applies to a site. */
export type BlocklistSelection =
  /** `blocklists` absent: every Presumed list, including those created after the site. */
  | { readonly kind: 'AllPresumed' }
  /** `blocklists` written: exactly these names, none when empty. */
  | { readonly kind: 'Named'; readonly names: readonly string[] };

/** The switches of `spec.security`, each resolved to a value. */
export interface EffectiveSecurity {
  readonly waf: boolean;
  readonly challenge: boolean;
  readonly sensitiveFiles: boolean;
  readonly blocklists: BlocklistSelection;
  readonly allowlists: readonly string[];
}

/** The WAF is on unless turned off: an attack it would stop costs more than a false positive. */
export const DEFAULT_WAF = true;
/** The challenge filter is on unless turned off: without it the decider can only pass or drop. */
export const DEFAULT_CHALLENGE = true;
/** Sensitive files are denied unless allowed: a visitor never asks for `/.env`, an attacker does. */
export const DEFAULT_SENSITIVE_FILES = true;
/**
 * Every Presumed list applies unless the site names its own: a list added to the cluster
 * protects every site that did not choose otherwise, at the cost of a challenge, never a drop.
 */
export const DEFAULT_BLOCKLISTS: BlocklistSelection = Object.freeze({ kind: 'AllPresumed' });
/** No address is exempt unless listed: an allowlist lowers protection, so it is never implied. */
export const DEFAULT_ALLOWLISTS: readonly string[] = Object.freeze([]);

/** The three on/off switches, by their field name in `spec.security`. */
export const SECURITY_SWITCHES = ['waf', 'challenge', 'sensitiveFiles'] as const;
export type SecuritySwitch = (typeof SECURITY_SWITCHES)[number];

/**
 * The switches `spec` asks for, each absent one replaced by its product default.
 *
 * Guarantees: a switch is off only when written `false`; `blocklists` absent and `[]`
 * stay distinct (every Presumed list, and none); the result shares no array with `spec`.
 */
export function effectiveSecurity(spec: Pick<EdgeSiteSpec, 'security'>): EffectiveSecurity {
  const s = spec.security ?? {};
  return {
    waf: s.waf ?? DEFAULT_WAF,
    challenge: s.challenge ?? DEFAULT_CHALLENGE,
    sensitiveFiles: s.sensitiveFiles ?? DEFAULT_SENSITIVE_FILES,
    blocklists: s.blocklists === undefined ? DEFAULT_BLOCKLISTS : { kind: 'Named', names: [...s.blocklists] },
    allowlists: s.allowlists === undefined ? DEFAULT_ALLOWLISTS : [...s.allowlists],
  };
}
