/**
 * Schema pieces every operator's CRDs share, as the apiserver's own validation spells
 * them: object and namespace names, label keys and values, and `metav1.LabelSelector`
 * with CEL rules that refuse what `LabelSelectorAsSelector` would refuse (In without
 * values, a malformed key), naming the field in each message.
 *
 * Every piece is a function that builds a fresh object: a shared object would come out
 * of the YAML writer as an anchor and alias, which reads badly in a generated file.
 */
import type { JSONSchemaProps } from './crd.ts';

/** A DNS subdomain (RFC 1123): the name of most objects, a Secret, an API group. */
export const DNS_SUBDOMAIN_REGEX = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** A DNS label (RFC 1123): the name of a namespace. */
export const DNS_LABEL_REGEX = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** A Kubernetes label value. */
export const LABEL_VALUE_PATTERN = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';
/** A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
export const LABEL_KEY_REGEX =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';

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

/** `status.conditions`: metav1.Condition, a list keyed by type. */
export function conditionsSchema(description: string, typeExamples = 'Ready, Stalled'): JSONSchemaProps {
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
        type: { type: 'string', maxLength: 316, description: `The condition, CamelCase: ${typeExamples}...` },
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

/** `status.observedGeneration`, as kstatus reads it. */
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
