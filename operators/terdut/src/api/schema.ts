/**
 * Schema pieces the five terdut.ryuvia.com CRDs share: Go durations, Secret key
 * references, object references, label selectors, conditions, printer columns.
 *
 * Every piece is a function that builds a fresh object: a shared object would come out
 * of the YAML writer as an anchor and alias, which reads badly in a generated file. The
 * CEL messages name the field (the caller passes its path) and say what to write instead.
 */
import {
  DNS_SUBDOMAIN_REGEX,
  type JSONSchemaProps,
  conditionsSchema as kitConditionsSchema,
  type PrinterColumn,
  type ValidationRule,
} from '@operators/kit';

export {
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  labelSelectorSchema,
  observedGenerationSchema,
} from '@operators/kit';

/**
 * A Go duration as the operator accepts it: one or more whole numbers each followed by
 * h, m, s or ms (`5m`, `1h30m`, `300s`, `168h`, `1500ms`), no sign, no spaces, not empty.
 * Go would also take fractions, `us` and `ns`; nothing here needs them.
 */
export const DURATION_REGEX = '^([0-9]+(h|ms|m|s))+$';

/** A key of a Secret's data. */
const SECRET_KEY_REGEX = '^[-._a-zA-Z0-9]+$';

export interface DurationOptions {
  /** The field's path from the object, for the messages: `spec.sweeper.staleAfter`. */
  readonly field: string;
  readonly description: string;
  readonly default?: string;
  /** The shortest duration accepted, a Go duration itself (`1h`). */
  readonly min?: string;
  /** Why `min`: appended to its message after a colon. */
  readonly minReason?: string;
}

/** A Go duration string (see {@link DURATION_REGEX}), optionally with a lower bound. */
export function durationSchema(o: DurationOptions): JSONSchemaProps {
  const rules: ValidationRule[] = [
    {
      rule: `self.matches('${DURATION_REGEX}')`,
      message: `${o.field} must be a Go duration such as 30s, 15m or 1h30m: whole numbers each followed by h, m, s or ms, no spaces`,
    },
  ];
  if (o.min !== undefined) {
    rules.push({
      // Only for a well-formed value: a malformed one already has its message above.
      rule: `!self.matches('${DURATION_REGEX}') || duration(self) >= duration('${o.min}')`,
      message: `${o.field} must be at least ${o.min}${o.minReason ? `: ${o.minReason}` : ''}`,
    });
  }
  return {
    type: 'string',
    maxLength: 64,
    description: `${o.description} A Go duration such as 30s, 15m or 1h30m (units h, m, s, ms)${o.min !== undefined ? `, at least ${o.min}` : ''}.`,
    ...(o.default !== undefined ? { default: o.default } : {}),
    'x-kubernetes-validations': rules,
  };
}

/** A Secret's name: empty, or a DNS subdomain. */
function secretName(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: 253,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self == '' || self.matches('${DNS_SUBDOMAIN_REGEX}')`,
        message: `${field} must be the name of a Secret: lowercase letters, digits, '-' and '.'`,
      },
    ],
  };
}

export interface SecretKeyRefOptions {
  /** The reference's path from the object: `spec.database.passwordSecretRef`. */
  readonly field: string;
  readonly description: string;
  /** The Secret key read when `key` is omitted. */
  readonly defaultKey: string;
}

/** `{name, key}` of a Secret in the object's own namespace; `key` defaulted per field. An empty name means unset. */
export function secretKeyRefSchema(o: SecretKeyRefOptions): JSONSchemaProps {
  return {
    type: 'object',
    description: `${o.description} A Secret in the same namespace; key defaults to ${o.defaultKey}.`,
    properties: {
      name: secretName(`${o.field}.name`, 'The Secret, in the same namespace. Empty means unset.'),
      key: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        default: o.defaultKey,
        description: `The key in the Secret's data (default ${o.defaultKey}).`,
        'x-kubernetes-validations': [
          {
            rule: `self.matches('${SECRET_KEY_REGEX}')`,
            message: `${o.field}.key must be a Secret key: letters, digits, '-', '_' and '.'`,
          },
        ],
      },
    },
  };
}

/** A required object name (a DNS subdomain): the `name` of a reference. */
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

/**
 * `spec.teamRef` of the child kinds: a TerdutTeam in the same namespace, immutable (the
 * child's server-side row belongs to that team's ID; moving it is delete and recreate).
 * `self == oldSelf` holds on the required reference itself, so it guards every update.
 */
export function teamRefSchema(kind: string): JSONSchemaProps {
  return {
    type: 'object',
    required: ['name'],
    description:
      'The TerdutTeam this belongs to, in the same namespace. Immutable: delete and recreate the ' +
      `${kind} to move it to another team.`,
    properties: {
      name: objectNameSchema('spec.teamRef.name', 'The name of a TerdutTeam in the same namespace.'),
    },
    'x-kubernetes-validations': [
      { rule: 'self == oldSelf', message: `spec.teamRef is immutable: delete and recreate the ${kind}` },
    ],
  };
}

/** A server-side ID in status. */
export function idSchema(description: string): JSONSchemaProps {
  return { type: 'integer', format: 'int64', minimum: 0, description };
}

/** `status.conditions` (metav1.Condition, a list keyed by type), with terdut's example types. */
export function conditionsSchema(description: string): JSONSchemaProps {
  return kitConditionsSchema(description, 'Ready, Synced');
}

/** The whole object's schema: apiVersion, kind, metadata, a required spec and a status. */
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
      apiVersion: { type: 'string', description: 'terdut.ryuvia.com/v1alpha1.' },
      kind: { type: 'string', description: 'The kind.' },
      metadata: { type: 'object' },
      spec,
      status,
    },
  };
}

/** The printer column of a condition's status. */
export function conditionColumn(type: string): PrinterColumn {
  return { name: type, type: 'string', jsonPath: `.status.conditions[?(@.type=="${type}")].status` };
}

export function ageColumn(): PrinterColumn {
  return { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
}

export function teamColumn(): PrinterColumn {
  return { name: 'Team', type: 'string', jsonPath: '.spec.teamRef.name' };
}

/** The categories of every terdut kind: `kubectl get terdut`. */
export const CATEGORIES: readonly string[] = ['terdut'];
