/** `TerdutEscalationRule` (namespaced): a team's whole escalation policy, one per team (DESIGN §4.3). */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type CommonStatus, GROUP, type LocalRef, VERSION } from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  conditionColumn,
  conditionsSchema,
  durationSchema,
  idSchema,
  objectSchema,
  observedGenerationSchema,
  teamColumn,
  teamRefSchema,
} from './schema.ts';

export const TERDUT_ESCALATION_RULE = { apiVersion: API_VERSION, kind: 'TerdutEscalationRule' } as const;

export const TargetKind = {
  /** Whoever is on call that day. */
  Oncall: 'oncall',
  /** A named user, resolved to its ID at apply time. */
  User: 'user',
} as const;
export type TargetKind = (typeof TargetKind)[keyof typeof TargetKind];

export interface EscalationTarget {
  readonly kind: TargetKind;
  /** Required iff kind is user. */
  readonly username?: string;
}

export interface EscalationLevel {
  /** A Go duration (`5m`, `1h30m`). */
  readonly timeout: string;
  readonly targets: readonly EscalationTarget[];
}

export interface TerdutEscalationRuleSpec {
  /** Immutable. */
  readonly teamRef: LocalRef;
  readonly repeatCount?: number;
  readonly fallbackTopic?: string;
  readonly levels: readonly EscalationLevel[];
}

export interface TerdutEscalationRuleStatus extends CommonStatus {
  readonly teamID?: number;
}

export type TerdutEscalationRule = KubeObject & {
  readonly spec: TerdutEscalationRuleSpec;
  readonly status?: TerdutEscalationRuleStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

export const MAX_REPEAT_COUNT = 100;
export const MAX_LEVELS = 20;
export const MAX_TARGETS = 20;

const targetSchema = (): JSONSchemaProps => ({
  type: 'object',
  required: ['kind'],
  description: 'Who is notified at this level.',
  properties: {
    kind: {
      type: 'string',
      enum: [TargetKind.Oncall, TargetKind.User],
      description: 'oncall: whoever is on call that day. user: the user named in username.',
    },
    username: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description:
        'The user to notify, resolved to its ID when applied. Required with kind user, refused with oncall.',
    },
  },
  'x-kubernetes-validations': [
    {
      rule: "self.kind != 'user' || has(self.username)",
      message: 'spec.levels[].targets[].username is required when kind is user: name the user to notify',
      fieldPath: '.username',
      reason: 'FieldValueRequired',
    },
    {
      rule: "self.kind != 'oncall' || !has(self.username)",
      message:
        'spec.levels[].targets[].username is only for kind user: an oncall target is whoever is on call; remove username or set kind: user',
      fieldPath: '.username',
      reason: 'FieldValueForbidden',
    },
  ],
});

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: "The team's whole escalation policy: one TerdutEscalationRule per team.",
  required: ['teamRef', 'levels'],
  properties: {
    teamRef: teamRefSchema('TerdutEscalationRule'),
    repeatCount: {
      type: 'integer',
      format: 'int32',
      minimum: 0,
      maximum: MAX_REPEAT_COUNT,
      default: 0,
      description: `How many times the whole policy repeats after its last level (default 0, at most ${MAX_REPEAT_COUNT}).`,
    },
    fallbackTopic: {
      type: 'string',
      maxLength: 256,
      description: 'The ntfy topic notified when nobody acknowledges; absent: none.',
    },
    levels: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_LEVELS,
      description: `The levels, in order: 1 to ${MAX_LEVELS}. An alert not acknowledged within a level's timeout goes to the next.`,
      items: {
        type: 'object',
        required: ['timeout', 'targets'],
        description: 'One level: who is notified, and how long they have to acknowledge.',
        properties: {
          timeout: durationSchema({
            field: 'spec.levels[].timeout',
            description: 'How long this level has to acknowledge before the next level is notified.',
          }),
          targets: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_TARGETS,
            description: `Who is notified at this level: 1 to ${MAX_TARGETS} targets.`,
            items: targetSchema(),
          },
        },
      },
    },
  },
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema('Ready and Synced.'),
    observedGeneration: observedGenerationSchema(),
    teamID: idSchema("The team's ID on the server the policy was applied to."),
  },
});

export const TERDUT_ESCALATION_RULE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: TERDUT_ESCALATION_RULE.kind,
  plural: 'terdutescalationrules',
  singular: 'terdutescalationrule',
  shortNames: ['tesc'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        teamColumn(),
        { name: 'TeamID', type: 'integer', jsonPath: '.status.teamID' },
        ageColumn(),
      ],
      schema: objectSchema(
        "A team's escalation policy: levels of targets with timeouts, repeated repeatCount times.",
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function terdutEscalationRuleCrd(): KubeObject {
  return customResourceDefinition(TERDUT_ESCALATION_RULE_DEFINITION);
}
