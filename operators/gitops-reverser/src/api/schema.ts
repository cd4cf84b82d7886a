/**
 * Schema pieces the six configbutler.ai CRDs share: names, references, Go durations,
 * immutability and superseded-field rules, label selectors, conditions, printer columns.
 *
 * Every piece is a function that builds a fresh object: a shared object would come out
 * of the YAML writer as an anchor and alias, which reads badly in a generated file. The
 * CEL messages name the field (the caller passes its path) and say what to write instead.
 *
 * The regexes are embedded in single-quoted CEL strings, so none may contain a quote or
 * a backslash; POSIX classes (`[[:cntrl:]]`) stand in for escapes.
 */
import {
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  type JSONSchemaProps,
  conditionsSchema as kitConditionsSchema,
  observedGenerationSchema,
  type PrinterColumn,
  type ValidationRule,
} from '@operators/kit';

export {
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  labelSelectorSchema,
  observedGenerationSchema,
} from '@operators/kit';

import { API_VERSION } from './common.ts';

/** The categories of every kind: `kubectl get gitops-reverser` lists them all. */
export const CATEGORIES: readonly string[] = ['gitops-reverser'];

/**
 * A Go duration as the operator accepts it: one or more whole numbers of at most six
 * digits, each followed by h, m, s or ms (`5s`, `1m30s`, `0s`, `1500ms`), no sign, no
 * spaces. Go would also take fractions, `us` and `ns`; nothing here needs them. The
 * digit limit, with {@link MAX_DURATION_LENGTH}, keeps every accepted value inside
 * int64 nanoseconds, so CEL's `duration()` never overflows on a value the regex let in.
 */
export const DURATION_REGEX = '^([0-9]{1,6}(h|ms|m|s))+$';
/**
 * The longest duration string. With six digits a component, the largest value that fits
 * is 999999h999999h99999h, about 2.1 million hours: under the 2.56 million of int64
 * nanoseconds.
 */
export const MAX_DURATION_LENGTH = 20;

/** A key of a Secret's data. */
const SECRET_KEY_REGEX = '^[-._a-zA-Z0-9]+$';

export interface DurationOptions {
  /** The field's path from the object, for the messages: `spec.commit.window`. */
  readonly field: string;
  readonly description: string;
  readonly default?: string;
  /** The longest duration accepted, a Go duration itself (`24h`). */
  readonly max?: string;
}

/** A Go duration string (see {@link DURATION_REGEX}), optionally with an upper bound. */
export function durationSchema(o: DurationOptions): JSONSchemaProps {
  const rules: ValidationRule[] = [
    {
      rule: `self.matches('${DURATION_REGEX}')`,
      message: `${o.field} must be a Go duration such as 5s, 1m30s or 0s: whole numbers of at most 6 digits each followed by h, m, s or ms, no spaces`,
    },
  ];
  if (o.max !== undefined) {
    rules.push({
      // Only for a well-formed value: a malformed one already has its message above,
      // and duration() would fail on it.
      rule: `!self.matches('${DURATION_REGEX}') || duration(self) <= duration('${o.max}')`,
      message: `${o.field} must be at most ${o.max}`,
    });
  }
  return {
    type: 'string',
    maxLength: MAX_DURATION_LENGTH,
    description: `${o.description} A Go duration such as 5s, 1m30s or 0s (units h, m, s, ms)${o.max !== undefined ? `, at most ${o.max}` : ''}.`,
    ...(o.default !== undefined ? { default: o.default } : {}),
    'x-kubernetes-validations': rules,
  };
}

/** A required object name (a DNS subdomain): the `name` of a reference, of a Secret. */
export function objectNameSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    minLength: 1,
    maxLength: 253,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${DNS_SUBDOMAIN_REGEX}')`,
        message: `${field} must be an object name: lowercase letters, digits, '-' and '.'`,
      },
    ],
  };
}

/** A namespace's name (a DNS label of at most 63 characters). */
export function namespaceNameSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    minLength: 1,
    maxLength: 63,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${DNS_LABEL_REGEX}')`,
        message: `${field} must be a namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit`,
      },
    ],
  };
}

/** A key of a Secret's data. */
export function secretKeySchema(field: string, description: string, defaultKey?: string): JSONSchemaProps {
  return {
    type: 'string',
    minLength: 1,
    maxLength: 253,
    description,
    ...(defaultKey !== undefined ? { default: defaultKey } : {}),
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${SECRET_KEY_REGEX}')`,
        message: `${field} must be a Secret key: letters, digits, '-', '_' and '.'`,
      },
    ],
  };
}

export interface LocalRefOptions {
  /** The reference's path from the object: `spec.providerRef`. */
  readonly field: string;
  readonly description: string;
  /** What `name` names: 'The name of a GitProvider in the same namespace.' */
  readonly nameDescription: string;
  /** Set to the kind to make the reference immutable (delete and recreate that kind to change it). */
  readonly immutableIn?: string;
}

/** `{name}` of an object in the referring object's namespace, optionally immutable. */
export function localRefSchema(o: LocalRefOptions): JSONSchemaProps {
  return {
    type: 'object',
    required: ['name'],
    description: o.description,
    properties: { name: objectNameSchema(`${o.field}.name`, o.nameDescription) },
    ...(o.immutableIn !== undefined
      ? { 'x-kubernetes-validations': [immutableRule(o.field, o.immutableIn)] }
      : {}),
  };
}

/**
 * A transition rule: the field may not change once the object exists. It holds on the
 * field itself, so it runs whenever the field exists before and after the update; a
 * field that is required (or defaulted) thus cannot escape it by being removed.
 */
export function immutableRule(field: string, kind: string): ValidationRule {
  return { rule: 'self == oldSelf', message: `${field} is immutable: delete and recreate the ${kind}` };
}

export interface SupersededOptions {
  /** The field's path from the object the rule sits on: `allowedNamespaces`, `commit.message`. */
  readonly name: string;
  /** Its full path, for the message: `spec.allowedNamespaces`. */
  readonly path: string;
  /** What to write instead, as an instruction: 'list the namespaces in spec.accessFrom.names'. */
  readonly instead: string;
}

/**
 * The rules, on the spec holding a superseded field, that refuse writing it. A field a
 * later API replaced stays in the schema (so that an object stored before the change is
 * still served whole, and its owner and the reconciler can see what it holds), but no
 * create or update may carry it.
 *
 * They sit on the spec, not the field: while the field is stored, every spec change is
 * refused with this message, so the owner migrates at their next edit (a re-applied old
 * manifest fails loudly) instead of keeping a field whose meaning is gone. A write that
 * leaves the spec as it is (status, metadata, finalizers) passes.
 *
 * Two rules, because neither obvious one works in kube-apiserver 1.36 (measured):
 * - `!has(self.push)` alone leaves the unchanged case to validation ratcheting, which
 *   cannot correlate the keys of a preserve-unknown-fields value (GitProvider
 *   `spec.push`), counts it as changed, and so refuses even the status writes of an
 *   object storing one;
 * - one rule with `optionalOldSelf` comparing `self == oldSelf.value()` fails with "no
 *   such overload" on such a value: the optional's unwrapped map does not compare.
 * So the create rule only asks whether the field is there (an update always passes it:
 * `oldSelf` has a value), and the update rule is a plain transition rule, whose
 * `self == oldSelf` does compare unknown fields.
 */
export function supersededRules(o: SupersededOptions): ValidationRule[] {
  // `commit.message` is absent when `!has(self.commit) || !has(self.commit.message)`.
  const parts = o.name.split('.');
  const absent = parts.map((_, i) => `!has(self.${parts.slice(0, i + 1).join('.')})`).join(' || ');
  const refusal = {
    message: `${o.path} is superseded and can no longer be written: ${o.instead}, and remove ${o.path}`,
    fieldPath: `.${o.name}`,
    reason: 'FieldValueForbidden',
  } as const;
  return [
    { rule: `oldSelf.hasValue() || ${absent}`, optionalOldSelf: true, ...refusal },
    { rule: `${absent} || self == oldSelf`, ...refusal },
  ];
}

/** The description of a superseded field: what replaced it. */
export function supersededDescription(replacement: string): string {
  return (
    `Superseded by ${replacement}; refused on create and update. It stays in the schema only so ` +
    'that an object stored by an older version can still be read; the operator refuses to act on ' +
    'an object that stores it (reason SupersededFieldStored) until it is removed.'
  );
}

/** `status.conditions` (metav1.Condition, a list keyed by type). */
export function conditionsSchema(description: string): JSONSchemaProps {
  return kitConditionsSchema(description, 'Ready, Stalled');
}

/** A status with only the common fields; `conditions` says which condition types the kind sets. */
export function commonStatusSchema(conditions: string): JSONSchemaProps {
  return {
    type: 'object',
    description: 'What the operator observed and did.',
    properties: {
      conditions: conditionsSchema(conditions),
      observedGeneration: observedGenerationSchema(),
    },
  };
}

/**
 * The whole object's schema: apiVersion, kind, metadata, a required spec and a status.
 * metadata stays `{type: object}`: the apiserver validates names itself, as for any kind.
 */
export function objectSchema(
  description: string,
  spec: JSONSchemaProps,
  status: JSONSchemaProps,
): JSONSchemaProps {
  return {
    type: 'object',
    description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: `${API_VERSION}.` },
      kind: { type: 'string', description: 'The kind.' },
      metadata: { type: 'object' },
      spec,
      status,
    },
  };
}

/** The printer column of a condition's status. */
export function conditionColumn(type: string, name = type): PrinterColumn {
  return { name, type: 'string', jsonPath: `.status.conditions[?(@.type=="${type}")].status` };
}

export function ageColumn(): PrinterColumn {
  return { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
}
