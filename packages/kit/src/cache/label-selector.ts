/**
 * Label selectors evaluated in memory, for lists answered from the cache: the string
 * syntax the apiserver accepts (`app=web,tier!=db,env in (prod,staging),!legacy`), so
 * that a list from the cache selects exactly what the same list from the API would.
 *
 * Guarantees: every requirement must hold (AND); `!=` and `notin` also match objects
 * without the label, as the apiserver's do; a malformed selector throws at parse time,
 * naming it, rather than matching nothing.
 */

/** One requirement of a selector, as the apiserver's `labels.Requirement`. */
export type LabelRequirement =
  | { readonly op: 'equals'; readonly key: string; readonly value: string }
  | { readonly op: 'notEquals'; readonly key: string; readonly value: string }
  | { readonly op: 'in'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: 'notIn'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: 'exists'; readonly key: string }
  | { readonly op: 'doesNotExist'; readonly key: string };

export type Labels = Readonly<Record<string, string>> | undefined;

/** A parsed selector: `matches(labels)` is true when every requirement holds. */
export interface LabelSelector {
  readonly requirements: readonly LabelRequirement[];
  matches(labels: Labels): boolean;
}

const KEY = /^([a-z0-9A-Z.\-_/]+)$/;
const VALUE = /^([a-z0-9A-Z.\-_]*)$/;

/** Parses `selector`; the empty string selects everything. @throws Error on bad syntax. */
export function parseLabelSelector(selector: string): LabelSelector {
  const requirements = splitTopLevel(selector)
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => parseRequirement(s, selector));
  return { requirements, matches: (labels) => requirements.every((r) => requirementHolds(r, labels)) };
}

/** Whether one requirement holds for `labels` (own properties only: `constructor` is a valid key). */
export function requirementHolds(r: LabelRequirement, labels: Labels): boolean {
  const v = labels && Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
  switch (r.op) {
    case 'equals':
      return v === r.value;
    case 'notEquals':
      return v !== r.value;
    case 'in':
      return v !== undefined && r.values.includes(v);
    case 'notIn':
      return v === undefined || !r.values.includes(v);
    case 'exists':
      return v !== undefined;
    case 'doesNotExist':
      return v === undefined;
    default: {
      const never: never = r;
      return never;
    }
  }
}

/** Splits on commas outside parentheses: `a in (x,y),b` is two requirements. */
function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

function parseRequirement(s: string, whole: string): LabelRequirement {
  const bad = (why: string): Error => new Error(`invalid label selector "${whole}": ${why} in "${s}"`);
  const key = (k: string): string => {
    const t = k.trim();
    if (!KEY.test(t)) throw bad(`invalid key "${t}"`);
    return t;
  };
  const value = (v: string): string => {
    const t = v.trim();
    if (!VALUE.test(t)) throw bad(`invalid value "${t}"`);
    return t;
  };
  const set = s.match(/^(.+?)\s+(in|notin)\s+\((.*)\)$/);
  if (set) {
    const values = (set[3] ?? '').split(',').map(value);
    return set[2] === 'in'
      ? { op: 'in', key: key(set[1] ?? ''), values }
      : { op: 'notIn', key: key(set[1] ?? ''), values };
  }
  const ne = s.indexOf('!=');
  if (ne > 0) return { op: 'notEquals', key: key(s.slice(0, ne)), value: value(s.slice(ne + 2)) };
  const eq = s.indexOf('=');
  if (eq > 0) {
    const v = s.slice(eq + (s[eq + 1] === '=' ? 2 : 1));
    return { op: 'equals', key: key(s.slice(0, eq)), value: value(v) };
  }
  if (s.startsWith('!')) return { op: 'doesNotExist', key: key(s.slice(1)) };
  return { op: 'exists', key: key(s) };
}
