/**
 * A dead man's switch (DESIGN §4.4, §5): the server has no update verb, so any change but
 * the name is a delete and a create. The diff is against what was last applied (kept in
 * status, normalised), so that a reordered or reformatted spec never recreates.
 */

import { durationSeconds } from '@operators/kit';
import type { TerdutDeadmanSwitchSpec } from '../api/terdut-deadman-switch.ts';
import type { DeadmanSwitch } from '../client/terdut-api.ts';

export interface SwitchValues {
  readonly matcher: string;
  readonly timeoutSeconds: number;
  readonly severity: string;
}

export const DEFAULT_SEVERITY = 'critical';

/** The spec normalised; undefined when its timeout is not a duration. */
export function desiredSwitch(spec: TerdutDeadmanSwitchSpec): SwitchValues | undefined {
  const timeoutSeconds = durationSeconds(spec.timeout);
  if (timeoutSeconds === undefined || timeoutSeconds <= 0) return undefined;
  return {
    matcher: normaliseMatcher(spec.matcher),
    timeoutSeconds,
    severity: spec.severity ?? DEFAULT_SEVERITY,
  };
}

/** `a=b, c=d` and `a=b,c=d` are one matcher: spaces around the commas do not count. */
export function normaliseMatcher(m: string): string {
  return m
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .join(',');
}

export function valuesOf(live: DeadmanSwitch): SwitchValues {
  return {
    matcher: normaliseMatcher(live.matcher),
    timeoutSeconds: live.timeout_seconds,
    severity: live.severity,
  };
}

export function sameSwitch(a: SwitchValues, b: SwitchValues): boolean {
  return a.matcher === b.matcher && a.timeoutSeconds === b.timeoutSeconds && a.severity === b.severity;
}

/** What a reconcile does with a switch. */
export type SwitchPlan =
  | { readonly kind: 'Create' }
  | { readonly kind: 'InSync' }
  /** Spec changed since it was applied, or the server's copy was changed directly. */
  | { readonly kind: 'Recreate'; readonly why: 'SpecChanged' | 'ChangedOnServer' }
  /** The server lost it (deleted directly, or with its team). */
  | { readonly kind: 'Missing' };

export function planSwitch(input: {
  readonly desired: SwitchValues;
  readonly applied?: SwitchValues;
  /** The server's switch with status.switchID; undefined when it has none. */
  readonly live?: DeadmanSwitch;
  readonly hasId: boolean;
}): SwitchPlan {
  if (!input.hasId) return { kind: 'Create' };
  if (!input.live) return { kind: 'Missing' };
  if (!input.applied || !sameSwitch(input.desired, input.applied))
    return { kind: 'Recreate', why: 'SpecChanged' };
  if (!sameSwitch(valuesOf(input.live), input.applied)) return { kind: 'Recreate', why: 'ChangedOnServer' };
  return { kind: 'InSync' };
}
