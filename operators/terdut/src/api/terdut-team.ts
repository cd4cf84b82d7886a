/** `TerdutTeam` (namespaced): one team on a TerdutServer, possibly in another namespace (DESIGN §4.2). */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type CommonStatus, GROUP, VERSION } from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  conditionColumn,
  conditionsSchema,
  DNS_LABEL_REGEX,
  idSchema,
  objectNameSchema,
  objectSchema,
  observedGenerationSchema,
} from './schema.ts';

export const TERDUT_TEAM = { apiVersion: API_VERSION, kind: 'TerdutTeam' } as const;

export interface ServerRef {
  readonly name: string;
  /** Defaults to the team's own namespace. */
  readonly namespace?: string;
}

export interface TerdutTeamSpec {
  /** Immutable. */
  readonly serverRef: ServerRef;
  /** The team's name on the server (`POST /api/teams {"name"}`). */
  readonly displayName: string;
  readonly oidc?: { readonly memberGroup?: string; readonly ownerGroup?: string };
}

export interface TerdutTeamStatus extends CommonStatus {
  readonly teamID?: number;
  /** What was last applied on the server: the base of the rename and OIDC diffs. */
  readonly applied?: { readonly name?: string; readonly memberGroup?: string; readonly ownerGroup?: string };
  /** The server's namespace/name the ID belongs to. */
  readonly server?: string;
}

export type TerdutTeam = KubeObject & {
  readonly spec: TerdutTeamSpec;
  readonly status?: TerdutTeamStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

/** The longest `spec.displayName`. */
export const MAX_DISPLAY_NAME = 128;

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'The team on the server.',
  required: ['serverRef', 'displayName'],
  properties: {
    serverRef: {
      type: 'object',
      required: ['name'],
      description:
        "The TerdutServer this team lives on. Immutable: the team's ID belongs to that server; delete " +
        'and recreate the TerdutTeam to move it.',
      properties: {
        name: objectNameSchema('spec.serverRef.name', 'The TerdutServer.'),
        namespace: {
          type: 'string',
          maxLength: 63,
          description:
            "The TerdutServer's namespace; absent: this TerdutTeam's own. Another namespace needs that " +
            "server's spec.allowedTeams to admit this one, else Ready is False with reason RefNotPermitted.",
          'x-kubernetes-validations': [
            {
              rule: `self.matches('${DNS_LABEL_REGEX}')`,
              message: "spec.serverRef.namespace must be a namespace name: lowercase letters, digits and '-'",
            },
          ],
        },
      },
      'x-kubernetes-validations': [
        { rule: 'self == oldSelf', message: 'spec.serverRef is immutable: delete and recreate the team' },
      ],
    },
    displayName: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_DISPLAY_NAME,
      description: `The team's name on the server, 1 to ${MAX_DISPLAY_NAME} characters; changing it renames the team.`,
    },
    oidc: {
      type: 'object',
      description: 'Which OIDC groups make a user a member or owner of the team, synced at login.',
      properties: {
        memberGroup: {
          type: 'string',
          maxLength: 256,
          description: "Members of this OIDC group are the team's members; absent or empty: none by group.",
        },
        ownerGroup: {
          type: 'string',
          maxLength: 256,
          description: "Members of this OIDC group are the team's owners; absent or empty: none by group.",
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
    teamID: idSchema("The team's ID on the server; every child object's controller reads it."),
    applied: {
      type: 'object',
      description: 'What was last applied on the server: the base of the rename and OIDC diffs.',
      properties: {
        name: { type: 'string', description: 'The team name last applied.' },
        memberGroup: { type: 'string', description: 'The member group last applied.' },
        ownerGroup: { type: 'string', description: 'The owner group last applied.' },
      },
    },
    server: { type: 'string', description: 'The TerdutServer the ID belongs to, as namespace/name.' },
  },
});

export const TERDUT_TEAM_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: TERDUT_TEAM.kind,
  plural: 'terdutteams',
  singular: 'terdutteam',
  shortNames: ['tteam'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Server', type: 'string', jsonPath: '.spec.serverRef.name' },
        { name: 'TeamID', type: 'integer', jsonPath: '.status.teamID' },
        ageColumn(),
      ],
      schema: objectSchema(
        'One team on a TerdutServer, possibly in another namespace: its name and OIDC group mapping.',
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function terdutTeamCrd(): KubeObject {
  return customResourceDefinition(TERDUT_TEAM_DEFINITION);
}
