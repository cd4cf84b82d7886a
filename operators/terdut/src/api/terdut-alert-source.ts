/** `TerdutAlertSource` (namespaced): one alert-ingest integration on a team (DESIGN §4.5). */
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
  idSchema,
  objectSchema,
  observedGenerationSchema,
  teamColumn,
  teamRefSchema,
} from './schema.ts';

export const TERDUT_ALERT_SOURCE = { apiVersion: API_VERSION, kind: 'TerdutAlertSource' } as const;

export const AlertSourceKind = {
  /** Prometheus Alertmanager's webhook_config. */
  Alertmanager: 'alertmanager',
  /** A generic JSON webhook. */
  Webhook: 'webhook',
} as const;
export type AlertSourceKind = (typeof AlertSourceKind)[keyof typeof AlertSourceKind];

export interface TerdutAlertSourceSpec {
  /** Immutable. */
  readonly teamRef: LocalRef;
  /** Changing it deletes the integration and creates another: a new URL and key. */
  readonly kind: AlertSourceKind;
  readonly name: string;
}

export interface TerdutAlertSourceStatus extends CommonStatus {
  readonly integrationID?: number;
  readonly teamID?: number;
  /** The kind and name last applied on the server. */
  readonly applied?: { readonly kind: AlertSourceKind; readonly name: string };
  readonly webhookURLSecretRef?: { readonly name: string };
}

export type TerdutAlertSource = KubeObject & {
  readonly spec: TerdutAlertSourceSpec;
  readonly status?: TerdutAlertSourceStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

export const DEFAULT_ALERT_SOURCE_KIND: AlertSourceKind = AlertSourceKind.Alertmanager;
export const MAX_ALERT_SOURCE_NAME = 128;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'An alert-ingest integration on the team. Its webhook URL and key go to a generated Secret ' +
    '(status.webhookURLSecretRef), never to the spec or status.',
  required: ['teamRef', 'name'],
  properties: {
    teamRef: teamRefSchema('TerdutAlertSource'),
    kind: {
      type: 'string',
      enum: [AlertSourceKind.Alertmanager, AlertSourceKind.Webhook],
      default: DEFAULT_ALERT_SOURCE_KIND,
      description:
        "alertmanager (default): Prometheus Alertmanager's webhook_config. webhook: a generic JSON webhook. " +
        'WARNING: CHANGING kind DELETES THE INTEGRATION AND CREATES A NEW ONE, WITH A NEW WEBHOOK URL AND KEY: ' +
        'whatever sends to the old URL fails until it reads the new Secret. The server cannot change the kind in place.',
    },
    name: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_ALERT_SOURCE_NAME,
      description: `The integration's name on the server, 1 to ${MAX_ALERT_SOURCE_NAME} characters; changing it renames it in place (URL and key stay).`,
    },
  },
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema('Ready and Synced.'),
    observedGeneration: observedGenerationSchema(),
    integrationID: idSchema("The integration's ID on the server."),
    teamID: idSchema("The team's ID on the server."),
    applied: {
      type: 'object',
      description: 'The kind and name last applied on the server.',
      properties: {
        kind: { type: 'string', description: 'The kind last created.' },
        name: { type: 'string', description: 'The name last applied.' },
      },
    },
    webhookURLSecretRef: {
      type: 'object',
      description: 'The generated Secret holding the webhook URL and key, in this namespace.',
      properties: { name: { type: 'string', description: 'The Secret.' } },
    },
  },
});

export const TERDUT_ALERT_SOURCE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: TERDUT_ALERT_SOURCE.kind,
  plural: 'terdutalertsources',
  singular: 'terdutalertsource',
  shortNames: ['tas'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        teamColumn(),
        { name: 'Kind', type: 'string', jsonPath: '.spec.kind' },
        { name: 'IntegrationID', type: 'integer', jsonPath: '.status.integrationID' },
        ageColumn(),
      ],
      schema: objectSchema('One alert-ingest integration on a team.', specSchema(), statusSchema()),
    },
  ],
};

export function terdutAlertSourceCrd(): KubeObject {
  return customResourceDefinition(TERDUT_ALERT_SOURCE_DEFINITION);
}
