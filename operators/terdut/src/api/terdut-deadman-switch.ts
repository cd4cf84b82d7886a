/** `TerdutDeadmanSwitch` (namespaced): one dead man's switch on a team (DESIGN §4.4). */
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

export const TERDUT_DEADMAN_SWITCH = { apiVersion: API_VERSION, kind: 'TerdutDeadmanSwitch' } as const;

export interface TerdutDeadmanSwitchSpec {
  /** Immutable. */
  readonly teamRef: LocalRef;
  /** Immutable: the switch's name on the server. */
  readonly name: string;
  readonly matcher: string;
  /** A Go duration. */
  readonly timeout: string;
  readonly severity?: string;
}

export interface TerdutDeadmanSwitchStatus extends CommonStatus {
  readonly switchID?: number;
  readonly teamID?: number;
  /** What was last created on the server, normalised: the base of the diff (§5). */
  readonly applied?: { readonly matcher: string; readonly timeoutSeconds: number; readonly severity: string };
}

export type TerdutDeadmanSwitch = KubeObject & {
  readonly spec: TerdutDeadmanSwitchSpec;
  readonly status?: TerdutDeadmanSwitchStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

export const DEFAULT_SEVERITY = 'critical';
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export const MAX_SWITCH_NAME = 128;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    "A dead man's switch: it fires when no alert matching matcher came for timeout. The server has no " +
    'update for switches: any change but teamRef and name deletes the switch and creates it again.',
  required: ['teamRef', 'name', 'matcher', 'timeout'],
  properties: {
    teamRef: teamRefSchema('TerdutDeadmanSwitch'),
    name: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_SWITCH_NAME,
      description: `The switch's name on the server, 1 to ${MAX_SWITCH_NAME} characters. Immutable: it is the switch's identity.`,
      'x-kubernetes-validations': [
        {
          rule: 'self == oldSelf',
          message: "spec.name is immutable: it is the switch's identity on the server",
        },
      ],
    },
    matcher: {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description: 'The labels of the heartbeat alert, such as alertname=Watchdog,cluster=prod.',
    },
    timeout: durationSchema({
      field: 'spec.timeout',
      description: 'The switch fires when no matching alert came for this long, such as 15m.',
    }),
    severity: {
      type: 'string',
      enum: [...SEVERITIES],
      default: DEFAULT_SEVERITY,
      description: `The severity of the alert the switch raises: critical (default), warning or info.`,
    },
  },
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema('Ready and Synced.'),
    observedGeneration: observedGenerationSchema(),
    switchID: idSchema("The switch's ID on the server."),
    teamID: idSchema("The team's ID on the server."),
    applied: {
      type: 'object',
      description: 'What was last created on the server, normalised: the base of the recreate diff.',
      properties: {
        matcher: { type: 'string', description: 'The matcher last created.' },
        timeoutSeconds: {
          type: 'integer',
          format: 'int64',
          minimum: 0,
          description: 'The timeout last created, in seconds.',
        },
        severity: { type: 'string', description: 'The severity last created.' },
      },
    },
  },
});

export const TERDUT_DEADMAN_SWITCH_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: TERDUT_DEADMAN_SWITCH.kind,
  plural: 'terdutdeadmanswitches',
  singular: 'terdutdeadmanswitch',
  shortNames: ['tdms'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        teamColumn(),
        { name: 'SwitchID', type: 'integer', jsonPath: '.status.switchID' },
        ageColumn(),
      ],
      schema: objectSchema("One dead man's switch on a team.", specSchema(), statusSchema()),
    },
  ],
};

export function terdutDeadmanSwitchCrd(): KubeObject {
  return customResourceDefinition(TERDUT_DEADMAN_SWITCH_DEFINITION);
}
