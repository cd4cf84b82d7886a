/**
 * `GitTarget` (namespaced): one folder on one branch of a GitProvider's repository, which
 * the WatchRules naming it fill with the objects they mirror from one ClusterProvider.
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
  durationSchema,
  immutableRule,
  localRefSchema,
  objectNameSchema,
  objectSchema,
  observedGenerationSchema,
  supersededDescription,
  supersededRules,
} from './schema.ts';

export const GIT_TARGET = { apiVersion: API_VERSION, kind: 'GitTarget' } as const;

/** The ClusterProvider a GitTarget mirrors from when `spec.clusterProviderRef` is omitted. */
export const DEFAULT_CLUSTER_PROVIDER_NAME = 'default';
/** The commit window when `spec.commit.window` is absent. */
export const DEFAULT_COMMIT_WINDOW = '5s';
/** The longest commit window: longer would leave changes unpushed for more than a day. */
export const MAX_COMMIT_WINDOW = '24h';
/** The longest commit message template. */
export const MAX_COMMIT_MESSAGE = 1024;
/** The longest `spec.path`. */
export const MAX_PATH = 512;
/** The most example paths `status.retention.paths` holds. */
export const MAX_RETENTION_PATHS = 20;

/** Which deletions remove files from the folder. */
export const PruneMode = {
  /** Nothing is deleted from Git. */
  Never: 'Never',
  /** A file goes when its object's delete event is seen; deletes the sweep infers are only reported. */
  OnEvent: 'OnEvent',
  /** As OnEvent, and what the sweep after a snapshot infers as deleted goes too. */
  Always: 'Always',
} as const;
export type PruneMode = (typeof PruneMode)[keyof typeof PruneMode];
export const DEFAULT_PRUNE_MODE: PruneMode = PruneMode.OnEvent;

/** The encryption tools supported for Secrets written to Git. */
export const EncryptionProvider = { Sops: 'sops' } as const;
export type EncryptionProvider = (typeof EncryptionProvider)[keyof typeof EncryptionProvider];

/** The key of the age identity in `spec.encryption.secretRef`'s Secret. */
export const AGE_IDENTITY_KEY = 'identity';

/** An age recipient (a public key), as `age-keygen` prints it. */
const AGE_RECIPIENT_REGEX = '^age1[0-9a-z]+$';

export interface GitTargetSpec {
  /** Immutable. A GitProvider in the same namespace. */
  readonly providerRef: LocalObjectRef;
  /** Immutable. Filled by the apiserver (`{name: default}`). */
  readonly clusterProviderRef?: LocalObjectRef;
  /** Immutable. */
  readonly branch: string;
  /** Immutable. `.` is the repository root. */
  readonly path: string;
  /** Filled by the apiserver (window `5s`). */
  readonly commit?: { readonly window?: string; readonly message?: string };
  /** Filled by the apiserver (mode `OnEvent`). */
  readonly prune?: { readonly mode?: PruneMode };
  readonly encryption?: {
    readonly provider: EncryptionProvider;
    readonly age: { readonly recipients: readonly string[] };
    readonly secretRef?: LocalObjectRef;
  };
  /** Superseded; refused on write. The namespace matcher an older version stored, kept whole. */
  readonly allowedSourceNamespaces?: Readonly<Record<string, unknown>>;
}

export interface GitTargetStatus extends CommonStatus {
  readonly lastCommit?: { readonly sha: string; readonly time: string };
  readonly retention?: { readonly inferredDeletes: number; readonly paths?: readonly string[] };
  /** The watch streams running for this target. */
  readonly streams?: number;
}

export type GitTarget = KubeObject & {
  readonly spec: GitTargetSpec;
  readonly status?: GitTargetStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

const KIND = GIT_TARGET.kind;

/**
 * `spec.branch`: one concrete branch, as `git check-ref-format --branch` takes it, except
 * `@` alone, which git allows as a branch but reads as HEAD on every command line. Two
 * rules, so that each message says what is wrong.
 */
const branchSchema = (): JSONSchemaProps => ({
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description:
    "The branch to write, such as main: one branch, not a glob, matching one of the GitProvider's " +
    'allowedBranches. A branch the remote does not have is created by the first push as an orphan, ' +
    'holding only what the operator wrote. Immutable: delete and recreate the GitTarget to write elsewhere.',
  'x-kubernetes-validations': [
    immutableRule('spec.branch', KIND),
    {
      rule: "!self.matches('[[:space:][:cntrl:]~^:?*[]') && !self.contains('\\\\')",
      message:
        'spec.branch must be a Git branch name: no spaces, control characters or any of ~ ^ : ? * [ \\ ' +
        '(a branch, not a glob)',
    },
    {
      rule:
        "!self.startsWith('/') && !self.endsWith('/') && !self.contains('//') && !self.startsWith('-') && " +
        "!self.contains('..') && !self.contains('@{') && self != '@' && self != 'HEAD' && " +
        "!self.endsWith('.') && !self.matches('(^|/)[.]') && !self.matches('[.]lock(/|$)')",
      message:
        'spec.branch must be a Git branch name: no leading, trailing or doubled /, no leading -, no .., ' +
        'no @{, no part starting with . or ending with .lock, not ending with ., not @ or HEAD',
    },
  ],
});

/** `spec.path`: a folder relative to the repository root, which cannot leave it. */
const pathSchema = (): JSONSchemaProps => ({
  type: 'string',
  maxLength: MAX_PATH,
  description:
    'The folder to write into, relative to the repository root, such as clusters/prod/apps; . is the ' +
    'root itself. No leading /, no .. or empty part, no trailing /. Nothing outside it is touched. ' +
    'Immutable: delete and recreate the GitTarget to write elsewhere.',
  'x-kubernetes-validations': [
    immutableRule('spec.path', KIND),
    { rule: "self != ''", message: 'spec.path must not be empty: write . for the repository root' },
    {
      rule: "!self.startsWith('/')",
      message: 'spec.path must be relative to the repository root: remove the leading /',
    },
    {
      rule: "!self.contains('//') && !self.endsWith('/')",
      message: 'spec.path must not have an empty part: remove the doubled or trailing /',
    },
    {
      rule: "!self.matches('(^|/)[.][.](/|$)')",
      message: 'spec.path must not contain a .. part: it cannot leave the repository',
    },
    {
      rule: "self == '.' || !self.matches('(^|/)[.](/|$)')",
      message: 'spec.path may be . only as a whole (the repository root): remove the ./ parts',
    },
    {
      rule: "!self.matches('(?i)(^|/)[.]git(/|$)')",
      message: "spec.path must not enter .git: that is Git's own database",
    },
    {
      rule: "!self.matches('[[:cntrl:]]')",
      message: 'spec.path must not contain control characters',
    },
  ],
});

const encryptionSchema = (): JSONSchemaProps => ({
  type: 'object',
  required: ['provider', 'age'],
  description:
    'Encrypt Secret objects with SOPS, for age recipients, before they are written to Git (as ' +
    '<name>.sops.yaml). Absent: Secrets are never written.',
  properties: {
    provider: {
      type: 'string',
      enum: [EncryptionProvider.Sops],
      description: 'The encryption tool: sops (the only one).',
    },
    age: {
      type: 'object',
      required: ['recipients'],
      description: 'The age keys that can decrypt what is written.',
      properties: {
        recipients: {
          type: 'array',
          minItems: 1,
          maxItems: 64,
          'x-kubernetes-list-type': 'set',
          description:
            'Public keys (age1...) as age-keygen prints them; each can decrypt every file. Include the ' +
            "key Flux or Argo CD decrypts with, and keep a person's key for recovery.",
          items: {
            type: 'string',
            maxLength: 256,
            'x-kubernetes-validations': [
              {
                rule: `self.matches('${AGE_RECIPIENT_REGEX}')`,
                message:
                  'spec.encryption.age.recipients must be age public keys: age1 then lowercase letters and digits',
              },
            ],
          },
        },
      },
    },
    secretRef: {
      type: 'object',
      required: ['name'],
      description:
        `A Secret in the same namespace holding an age identity (AGE-SECRET-KEY-1...) under key ${AGE_IDENTITY_KEY}, ` +
        'whose public key is among the recipients. With it the operator decrypts the files already in Git and ' +
        'rewrites a Secret only when it changed; without it every snapshot rewrites every Secret, since ' +
        'encryption is randomised.',
      properties: {
        name: objectNameSchema('spec.encryption.secretRef.name', 'The Secret, in the same namespace.'),
      },
    },
  },
});

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'Where the mirrored objects go (provider, branch, path: immutable), which cluster they come from, ' +
    'and how they are committed.',
  required: ['providerRef', 'branch', 'path'],
  properties: {
    providerRef: localRefSchema({
      field: 'spec.providerRef',
      description:
        'The GitProvider (repository and credential) to write to, in the same namespace. Immutable: delete ' +
        'and recreate the GitTarget to write elsewhere.',
      nameDescription: 'The name of a GitProvider in the same namespace.',
      immutableIn: KIND,
    }),
    clusterProviderRef: {
      ...localRefSchema({
        field: 'spec.clusterProviderRef',
        description:
          `The ClusterProvider to mirror from (default: the one named ${DEFAULT_CLUSTER_PROVIDER_NAME}). It must exist and its ` +
          "spec.accessFrom must admit this namespace; the operator never creates one. Immutable: the folder's " +
          'content belongs to that cluster; delete and recreate the GitTarget to change it.',
        nameDescription: 'The name of a ClusterProvider (cluster-scoped).',
        immutableIn: KIND,
      }),
      default: { name: DEFAULT_CLUSTER_PROVIDER_NAME },
    },
    branch: branchSchema(),
    path: pathSchema(),
    commit: {
      type: 'object',
      default: {},
      description: 'How changes are batched into commits and how the commits read.',
      properties: {
        window: durationSchema({
          field: 'spec.commit.window',
          description:
            `How long changes are gathered into one commit (default ${DEFAULT_COMMIT_WINDOW}). The first change ` +
            'opens the window and it closes this long after, not reset by later changes; a later change to a ' +
            'file replaces the earlier one. 0s commits each changed file on its own.',
          default: DEFAULT_COMMIT_WINDOW,
          max: MAX_COMMIT_WINDOW,
        }),
        message: {
          type: 'string',
          maxLength: MAX_COMMIT_MESSAGE,
          description:
            `The template of each commit message, at most ${MAX_COMMIT_MESSAGE} characters: {{target}} ` +
            '(namespace/name), {{count}} (files changed) and {{changes}} (one line per file: operation and ' +
            'path, at most 200) are replaced; anything else stays as written. Absent or blank: ' +
            '"gitops-reverser: {{count}} changes to {{target}}", a blank line, then {{changes}}.',
        },
      },
    },
    prune: {
      type: 'object',
      default: {},
      description: 'When files of deleted objects are removed from the folder.',
      properties: {
        mode: {
          type: 'string',
          enum: [PruneMode.Never, PruneMode.OnEvent, PruneMode.Always],
          default: DEFAULT_PRUNE_MODE,
          description:
            'OnEvent (default): a file is deleted when the delete event of its object is seen; a file whose ' +
            'object the sweep after a complete snapshot finds gone (deleted while nothing watched) is kept ' +
            "and counted in status.retention. Always: the sweep's inferred deletes are deleted too. Never: " +
            'nothing is deleted from Git; inferred deletes are counted in status.retention. A rule item ' +
            'without DELETE never deletes.',
        },
      },
    },
    encryption: encryptionSchema(),
    allowedSourceNamespaces: {
      // Typed, unlike its free-form content: CEL cannot see a field without a type, so the
      // refusal below could not name it. An older version stored a namespace matcher
      // object ({names, selector}), which this keeps whole.
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      description: supersededDescription(
        "the ClusterProvider's spec.allowAnySourceNamespace plus each WatchRule item's sourceNamespace",
      ),
    },
  },
  'x-kubernetes-validations': [
    ...supersededRules({
      name: 'allowedSourceNamespaces',
      path: 'spec.allowedSourceNamespaces',
      instead:
        "set spec.allowAnySourceNamespace on the ClusterProvider and name the namespace in each WatchRule item's sourceNamespace",
    }),
  ],
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema(
      'Ready, Reconciling, Stalled, Validated, GitPathAccepted and StreamsRunning.',
    ),
    observedGeneration: observedGenerationSchema(),
    lastCommit: {
      type: 'object',
      required: ['sha', 'time'],
      description: 'The last commit pushed for this target.',
      properties: {
        sha: { type: 'string', maxLength: 64, description: 'Its hash.' },
        time: { type: 'string', format: 'date-time', description: 'When it was pushed.' },
      },
    },
    retention: {
      type: 'object',
      required: ['inferredDeletes'],
      description:
        'Files kept although the sweep found their objects gone (prune.mode OnEvent or Never): set ' +
        'prune.mode Always to have them deleted, or delete them by hand.',
      properties: {
        inferredDeletes: {
          type: 'integer',
          format: 'int64',
          minimum: 0,
          description: 'How many files.',
        },
        paths: {
          type: 'array',
          maxItems: MAX_RETENTION_PATHS,
          description: `Up to ${MAX_RETENTION_PATHS} of them, as paths in the repository.`,
          items: { type: 'string', maxLength: 4096 },
        },
      },
    },
    streams: {
      type: 'integer',
      format: 'int32',
      minimum: 0,
      description: 'The watch streams running for this target.',
    },
  },
});

export const GIT_TARGET_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: KIND,
  plural: 'gittargets',
  singular: 'gittarget',
  shortNames: ['gt'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'Provider', type: 'string', jsonPath: '.spec.providerRef.name' },
        { name: 'Branch', type: 'string', jsonPath: '.spec.branch' },
        { name: 'Path', type: 'string', jsonPath: '.spec.path' },
        { name: 'Cluster', type: 'string', jsonPath: '.spec.clusterProviderRef.name', priority: 1 },
        { name: 'Commit', type: 'string', jsonPath: '.status.lastCommit.sha', priority: 1 },
        ageColumn(),
      ],
      schema: objectSchema(
        "One folder on one branch of a GitProvider's repository, mirroring the objects the WatchRules " +
          'naming it select, from one ClusterProvider.',
        specSchema(),
        statusSchema(),
      ),
    },
  ],
};

export function gitTargetCrd(): KubeObject {
  return customResourceDefinition(GIT_TARGET_DEFINITION);
}
