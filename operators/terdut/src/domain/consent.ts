/**
 * Cross-namespace consent (DESIGN §4.6): may a TerdutTeam in `teamNamespace` attach to
 * a TerdutServer in `serverNamespace`? Same-namespace is always allowed and never reads
 * allowedTeams; otherwise the server's `allowedTeams.namespaces.from` decides, and under
 * Selector the team namespace's labels (a Get of that one Namespace, never a List).
 */
import type { LabelSelector } from '../api/common.ts';
import type { AllowedFrom, AllowedTeams } from '../api/terdut-server.ts';

export type Consent =
  | { readonly permitted: true; readonly crossNamespace: boolean }
  | { readonly permitted: false; readonly message: string };

/** Whether a selector needs the namespace's labels to decide (so a caller knows to fetch them). */
export function needsNamespaceLabels(
  teamNamespace: string,
  serverNamespace: string,
  allowed?: AllowedTeams,
): boolean {
  return (
    teamNamespace !== serverNamespace &&
    (allowed?.namespaces?.from ?? ('None' satisfies AllowedFrom)) === ('Selector' satisfies AllowedFrom)
  );
}

export function consent(input: {
  readonly teamNamespace: string;
  readonly serverNamespace: string;
  readonly serverName: string;
  readonly allowedTeams?: AllowedTeams;
  /** The team namespace's labels; needed only under Selector. */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
}): Consent {
  const { teamNamespace, serverNamespace, serverName } = input;
  if (teamNamespace === serverNamespace) return { permitted: true, crossNamespace: false };
  const from = input.allowedTeams?.namespaces?.from ?? ('None' satisfies AllowedFrom);
  const where = `TerdutServer ${serverNamespace}/${serverName}`;
  switch (from) {
    case 'All' satisfies AllowedFrom:
      return { permitted: true, crossNamespace: true };
    case 'None' satisfies AllowedFrom:
    case 'Same' satisfies AllowedFrom:
      return {
        permitted: false,
        message:
          `${where} admits no TerdutTeam from another namespace (spec.allowedTeams.namespaces.from: ${from}); ` +
          `its owner may set from: All, or from: Selector with a selector matching namespace ${teamNamespace}`,
      };
    case 'Selector' satisfies AllowedFrom: {
      const selector = input.allowedTeams?.namespaces?.selector;
      if (selector && selectorMatches(selector, input.namespaceLabels ?? {})) {
        return { permitted: true, crossNamespace: true };
      }
      return {
        permitted: false,
        message:
          `${where} admits teams from namespaces matching ${describeSelector(selector)}; ` +
          `namespace ${teamNamespace} does not match (its labels decide, re-read on every reconcile)`,
      };
    }
    default:
      return from satisfies never;
  }
}

/** metav1.LabelSelector semantics: every matchLabels pair and every expression must hold; `{}` matches all. */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  // Own properties only: `constructor` is a valid label key, and no namespace has it unless labelled so.
  const label = (k: string): string | undefined => (Object.hasOwn(labels, k) ? labels[k] : undefined);
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (label(k) !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const v = label(e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (v === undefined || !values.includes(v)) return false;
        break;
      case 'NotIn':
        if (v !== undefined && values.includes(v)) return false;
        break;
      case 'Exists':
        if (v === undefined) return false;
        break;
      case 'DoesNotExist':
        if (v !== undefined) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

function describeSelector(selector: LabelSelector | undefined): string {
  if (!selector) return '(no selector)';
  const parts = [
    ...Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
    ...(selector.matchExpressions ?? []).map((e) => `${e.key} ${e.operator} (${(e.values ?? []).join(',')})`),
  ];
  return parts.length ? parts.join(', ') : '(everything)';
}
