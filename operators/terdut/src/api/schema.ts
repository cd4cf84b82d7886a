/**
 * Schema pieces the five terdut.ryuvia.com CRDs share: Go durations, Secret key
 * references, object references, label selectors, conditions, printer columns.
 *
 * Every piece is a function that builds a fresh object: a shared object would come out
 * of the YAML writer as an anchor and alias, which reads badly in a generated file. The
 * CEL messages name the field (the caller passes its path) and say what to write instead.
 */
import type { JSONSchemaProps, PrinterColumn, ValidationRule } from '@operators/kit';

/**
 * A Go duration as the operator accepts it: one or more whole numbers each followed by
 * h, m, s or ms (`5m`, `1h30m`, `300s`, `168h`, `1500ms`), no sign, no spaces, not empty.
 * Go would also take fractions, `us` and `ns`; nothing here needs them.
 */
export const DURATION_REGEX = '^([0-9]+(h|ms|m|s))+$';

/** A DNS subdomain (RFC 1123): the name of a Secret, a custom resource, a postgresql CR. */
export const DNS_SUBDOMAIN_REGEX = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** A DNS label (RFC 1123): the name of a namespace. */
export const DNS_LABEL_REGEX = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** A key of a Secret's data. */
const SECRET_KEY_REGEX = '^[-._a-zA-Z0-9]+$';

/** A Kubernetes label value. */
const LABEL_VALUE_PATTERN = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';
/** A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY_REGEX =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';

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

const labelValue = (): JSONSchemaProps => ({ type: 'string', maxLength: 63, pattern: LABEL_VALUE_PATTERN });

/** metav1.LabelSelector. `field` is its path, for the messages. */
export function labelSelectorSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'object',
    description: `${description} A Kubernetes label selector: matchLabels and matchExpressions, all of which must match; {} matches everything.`,
    properties: {
      matchLabels: {
        type: 'object',
        maxProperties: 64,
        description: 'Labels that must be present with exactly these values.',
        additionalProperties: labelValue(),
        'x-kubernetes-validations': [
          {
            rule: `self.all(k, k.size() <= 317 && k.matches('${LABEL_KEY_REGEX}'))`,
            message: `${field}.matchLabels keys must be label keys, such as team or example.com/tenant`,
          },
        ],
      },
      matchExpressions: {
        type: 'array',
        maxItems: 32,
        description: 'Requirements on labels: In, NotIn (with values), Exists, DoesNotExist (without).',
        items: {
          type: 'object',
          description: 'One requirement on one label.',
          required: ['key', 'operator'],
          properties: {
            key: { type: 'string', maxLength: 317, description: 'The label key.' },
            operator: {
              type: 'string',
              enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'],
              description: 'In, NotIn, Exists or DoesNotExist.',
            },
            values: {
              type: 'array',
              maxItems: 64,
              description: 'The values for In and NotIn; empty for Exists and DoesNotExist.',
              items: labelValue(),
            },
          },
          'x-kubernetes-validations': [
            {
              rule: `self.key.matches('${LABEL_KEY_REGEX}')`,
              message: `${field}.matchExpressions key must be a label key, such as team or example.com/tenant`,
              fieldPath: '.key',
            },
            {
              rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
              message: `${field}.matchExpressions: In and NotIn need values; Exists and DoesNotExist take none`,
            },
          ],
        },
      },
    },
  };
}

/** A server-side ID in status. */
export function idSchema(description: string): JSONSchemaProps {
  return { type: 'integer', format: 'int64', minimum: 0, description };
}

/** `status.conditions`: metav1.Condition, a list keyed by type. */
export function conditionsSchema(description: string): JSONSchemaProps {
  return {
    type: 'array',
    description,
    maxItems: 16,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
    items: {
      type: 'object',
      description: 'One condition (metav1.Condition).',
      required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
      properties: {
        type: { type: 'string', maxLength: 316, description: 'The condition, CamelCase: Ready, Synced...' },
        status: {
          type: 'string',
          enum: ['True', 'False', 'Unknown'],
          description: 'True, False or Unknown.',
        },
        observedGeneration: {
          type: 'integer',
          format: 'int64',
          minimum: 0,
          description: 'The metadata.generation the condition was computed from.',
        },
        lastTransitionTime: {
          type: 'string',
          format: 'date-time',
          description: 'When status last changed.',
        },
        reason: {
          type: 'string',
          minLength: 1,
          maxLength: 1024,
          description: 'Why, in one CamelCase word, for machines.',
        },
        message: { type: 'string', maxLength: 32768, description: 'Why, for humans; may be empty.' },
      },
    },
  };
}

/** `status.observedGeneration` (DESIGN §7). */
export function observedGenerationSchema(): JSONSchemaProps {
  return {
    type: 'integer',
    format: 'int64',
    minimum: 0,
    description:
      'The metadata.generation last reconciled successfully: bumped only after a successful reconcile ' +
      'of that generation, so a lower value means the current spec is not applied yet.',
  };
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
