/**
 * A structured `metav1.LabelSelector` (`matchLabels` + `matchExpressions`) converted the
 * way apimachinery's `LabelSelectorAsSelector` converts it, refusals included.
 *
 * The apiserver stores selectors it would not convert: a CRD's schema rarely checks that
 * `In` has values or that a key is a qualified name. A policy that carries such a
 * selector must be answered with a decision ("this selector is invalid: …"), not
 * silently read as "matches nothing" or "matches everything", so conversion returns the
 * refusal for the caller to word.
 *
 * `undefined` (no selector) selects nothing; `{}` selects everything, as in Kubernetes.
 */
import { type LabelRequirement, type LabelSelector, requirementHolds } from './label-selector.ts';

/** The wire shape of `metav1.LabelSelector`. */
export interface LabelSelectorObject {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: string;
    readonly values?: readonly string[];
  }[];
}

export type SelectorConversion =
  | { readonly ok: true; readonly selector: LabelSelector }
  | { readonly ok: false; readonly message: string };

/** A label value or the name part of a key: at most 63, alphanumeric at both ends. */
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** A DNS-1123 subdomain, the optional prefix of a key. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a qualified label key, or undefined when it is. */
export function labelKeyError(key: string): string | undefined {
  const slash = key.indexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !SUBDOMAIN.test(prefix))) {
    return `key ${JSON.stringify(key)}: the prefix must be a DNS subdomain of at most 253 characters`;
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return `key ${JSON.stringify(key)}: the name must be at most 63 characters, alphanumeric at both ends, with '-', '_' or '.' between`;
  }
  return undefined;
}

/** Why `value` is not a label value, or undefined when it is (the empty value is one). */
export function labelValueError(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !NAME.test(value)) {
    return `value ${JSON.stringify(value)}: at most 63 characters, alphanumeric at both ends, with '-', '_' or '.' between`;
  }
  return undefined;
}

/** Converts `selector`; `undefined` converts to a selector that matches nothing. */
export function convertLabelSelector(selector: LabelSelectorObject | undefined): SelectorConversion {
  if (selector === undefined) return { ok: true, selector: nothing };
  const requirements: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const err = labelKeyError(key) ?? labelValueError(value);
    if (err) return { ok: false, message: `matchLabels ${err}` };
    requirements.push({ op: 'equals', key, value });
  }
  for (const [i, e] of (selector.matchExpressions ?? []).entries()) {
    const where = `matchExpressions[${i}]`;
    const keyErr = labelKeyError(e.key);
    if (keyErr) return { ok: false, message: `${where} ${keyErr}` };
    const values = e.values ?? [];
    for (const v of values) {
      const err = labelValueError(v);
      if (err) return { ok: false, message: `${where} ${err}` };
    }
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) {
          return { ok: false, message: `${where}: operator ${e.operator} needs at least one value` };
        }
        requirements.push({ op: e.operator === 'In' ? 'in' : 'notIn', key: e.key, values: [...values] });
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) {
          return { ok: false, message: `${where}: operator ${e.operator} takes no values` };
        }
        requirements.push({ op: e.operator === 'Exists' ? 'exists' : 'doesNotExist', key: e.key });
        break;
      default:
        return {
          ok: false,
          message: `${where}: operator ${JSON.stringify(e.operator)} is not one of In, NotIn, Exists, DoesNotExist`,
        };
    }
  }
  return {
    ok: true,
    selector: { requirements, matches: (labels) => requirements.every((r) => requirementHolds(r, labels)) },
  };
}

const nothing: LabelSelector = { requirements: [], matches: () => false };
