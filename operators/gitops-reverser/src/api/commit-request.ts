/**
 * `CommitRequest` (namespaced): a request for one commit of a GitTarget's pending changes
 * now, instead of at the end of its commit window. One object, one commit: its spec is
 * immutable, and a new request is a new object.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import { API_VERSION, type CommonStatus, GROUP, type LocalObjectRef, VERSION } from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  conditionColumn,
  conditionsSchema,
  localRefSchema,
  objectSchema,
  observedGenerationSchema,
} from './schema.ts';

export const COMMIT_REQUEST = { apiVersion: API_VERSION, kind: 'CommitRequest' } as const;

/** The longest `spec.message`. */
export const MAX_COMMIT_REQUEST_MESSAGE = 1024;
/** The longest `spec.closeDelaySeconds`: five minutes. */
export const MAX_CLOSE_DELAY_SECONDS = 300;

export interface CommitRequestSpec {
  /** A GitTarget in the same namespace. */
  readonly targetRef: LocalObjectRef;
  readonly message?: string;
  /** Filled by the apiserver (0). */
  readonly closeDelaySeconds?: number;
}

export interface CommitRequestStatus extends CommonStatus {
  /** The commit made for the request. */
  readonly sha?: string;
  /** RFC 3339. */
  readonly committedAt?: string;
}

export type CommitRequest = KubeObject & {
  readonly spec: CommitRequestSpec;
  readonly status?: CommitRequestStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'Which GitTarget to commit, and how. Immutable: a CommitRequest asks for one commit; create another ' +
    'for another.',
  required: ['targetRef'],
  properties: {
    targetRef: localRefSchema({
      field: 'spec.targetRef',
      description: 'The GitTarget whose pending changes are committed, in the same namespace.',
      nameDescription: 'The name of a GitTarget in the same namespace.',
    }),
    message: {
      type: 'string',
      maxLength: MAX_COMMIT_REQUEST_MESSAGE,
      description:
        `The commit message, at most ${MAX_COMMIT_REQUEST_MESSAGE} characters. Absent: the GitTarget's ` +
        'message (its spec.commit.message template, or the built-in one).',
    },
    closeDelaySeconds: {
      type: 'integer',
      format: 'int32',
      minimum: 0,
      maximum: MAX_CLOSE_DELAY_SECONDS,
      default: 0,
      description:
        'When the GitTarget has nothing pending: how many seconds to wait for its first change, and commit ' +
        `that (0, the default, to ${MAX_CLOSE_DELAY_SECONDS}). With changes pending they are committed at once.`,
    },
  },
  'x-kubernetes-validations': [
    {
      rule: 'self == oldSelf',
      message: 'spec is immutable: a CommitRequest asks for one commit; create a new CommitRequest instead',
    },
  ],
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema('Ready, Reconciling, Stalled and Pushed.'),
    observedGeneration: observedGenerationSchema(),
    sha: {
      type: 'string',
      maxLength: 64,
      description: 'The pushed commit, as the remote has it (or the branch tip when nothing was to commit).',
    },
    committedAt: { type: 'string', format: 'date-time', description: 'When that commit was made.' },
  },
});

export const COMMIT_REQUEST_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: COMMIT_REQUEST.kind,
  plural: 'commitrequests',
  singular: 'commitrequest',
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Target', type: 'string', jsonPath: '.spec.targetRef.name' },
        { name: 'SHA', type: 'string', jsonPath: '.status.sha' },
        ageColumn(),
      ],
      schema: objectSchema(
        "A request for one commit of a GitTarget's pending changes now, rather than when its commit " +
          'window closes. Its status reports the commit.',
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function commitRequestCrd(): KubeObject {
  return customResourceDefinition(COMMIT_REQUEST_DEFINITION);
}
