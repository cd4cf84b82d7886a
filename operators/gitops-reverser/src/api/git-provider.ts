/**
 * `GitProvider` (namespaced): a Git repository, the credentials to push to it, and the
 * branches GitTargets may write.
 */
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';
import {
  API_VERSION,
  type CommonStatus,
  GROUP,
  type LocalObjectRef,
  type SecretKeyRef,
  VERSION,
} from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  commonStatusSchema,
  conditionColumn,
  objectNameSchema,
  objectSchema,
  secretKeySchema,
  supersededDescription,
  supersededRules,
} from './schema.ts';

export const GIT_PROVIDER = { apiVersion: API_VERSION, kind: 'GitProvider' } as const;

/** The committer when `spec.commit.committer.name` is absent. */
export const DEFAULT_COMMITTER_NAME = 'gitops-reverser';
/** The committer's email when `spec.commit.committer.email` is absent: `.invalid` never resolves (RFC 2606). */
export const DEFAULT_COMMITTER_EMAIL = 'noreply@gitops-reverser.invalid';
/** The known_hosts key when `spec.knownHostsRef.key` is absent. */
export const DEFAULT_KNOWN_HOSTS_KEY = 'known_hosts';
/** The username sent with a password or token when the Secret has no `username`. */
export const DEFAULT_HTTP_USERNAME = 'git';

/** The credential Secret's keys: `username`, `password` / `token` for http(s); `identity` for ssh. */
export const SecretKeys = {
  Username: 'username',
  Password: 'password',
  Token: 'token',
  Identity: 'identity',
} as const;

/** A URL with a scheme the operator can fetch from and push to. */
const SCHEME_URL_REGEX = '^(https?|ssh|file)://[^[:space:][:cntrl:]]+$';
/** The scp-like ssh form, `user@host:path` (`git@github.com:org/repo.git`). */
const SCP_LIKE_REGEX = '^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^[:space:][:cntrl:]]+$';
/** A URL carrying a password in its user info: `https://user:secret@host/...`. */
const URL_WITH_PASSWORD_REGEX = '^[a-z]+://[^/@]*:[^/@]*@';
/** Whitespace or a control character anywhere. */
const SPACE_OR_CONTROL_REGEX = '[[:space:][:cntrl:]]';

export interface GitProviderSpec {
  readonly url: string;
  readonly secretRef?: LocalObjectRef;
  /** Required (by CEL) when the URL is ssh. */
  readonly knownHostsRef?: SecretKeyRef;
  /** Branch globs: `main`, `release/*`, `*`. */
  readonly allowedBranches: readonly string[];
  /** Filled by the apiserver (committer defaults included). */
  readonly commit?: {
    readonly committer: { readonly name: string; readonly email: string };
    /** Superseded by the GitTarget's `spec.commit.message`; refused on write. */
    readonly message?: string;
  };
  /** Superseded by the GitTarget's `spec.commit.window`; refused on write. */
  readonly push?: Readonly<Record<string, unknown>>;
}

export type GitProviderStatus = CommonStatus;

export type GitProvider = KubeObject & {
  readonly spec: GitProviderSpec;
  readonly status?: GitProviderStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

/** The CEL test of an ssh URL (either form), on the spec. */
const IS_SSH = `(self.url.startsWith('ssh://') || self.url.matches('${SCP_LIKE_REGEX}'))`;

const defaultCommitter = () => ({ name: DEFAULT_COMMITTER_NAME, email: DEFAULT_COMMITTER_EMAIL });

const urlSchema = (): JSONSchemaProps => ({
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description:
    'The repository: https://host/org/repo.git, http://..., ssh://git@host/org/repo.git, the scp-like ' +
    'git@host:org/repo.git, or file:///path for a repository on a volume the operator mounts. No ' +
    'credentials in the URL: they go in the Secret named by secretRef. http:// sends them in clear: ' +
    'use https://.',
  'x-kubernetes-validations': [
    {
      rule: `self.matches('${SCHEME_URL_REGEX}') || self.matches('${SCP_LIKE_REGEX}')`,
      message:
        'spec.url must be an https://, http://, ssh:// or file:// URL, or scp-like user@host:path, ' +
        'without spaces',
    },
    {
      rule: `!self.matches('${URL_WITH_PASSWORD_REGEX}')`,
      message: 'spec.url must not carry a password: put the credential in the Secret named by spec.secretRef',
    },
  ],
});

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'The repository, how to authenticate to it, and what may be written to it.',
  required: ['url', 'allowedBranches'],
  properties: {
    url: urlSchema(),
    secretRef: {
      type: 'object',
      required: ['name'],
      description:
        'The credential, a Secret in the same namespace. For an http(s) URL: password or token (a ' +
        'personal access or deploy token), and optionally username (default git). For an ssh URL: ' +
        'identity, an unencrypted private key (OpenSSH or PEM format). Absent: no credential (a public ' +
        'repository can then be read but rarely pushed to).',
      properties: { name: objectNameSchema('spec.secretRef.name', 'The Secret, in the same namespace.') },
    },
    knownHostsRef: {
      type: 'object',
      required: ['name'],
      description:
        "The ssh server's host keys, in known_hosts format (ssh-keyscan output), from a Secret in the same " +
        'namespace. Required for an ssh URL: host keys are always checked, there is no way to skip it. ' +
        'Unused for other URLs.',
      properties: {
        name: objectNameSchema('spec.knownHostsRef.name', 'The Secret, in the same namespace.'),
        key: secretKeySchema(
          'spec.knownHostsRef.key',
          `The key holding the known_hosts lines (default ${DEFAULT_KNOWN_HOSTS_KEY}).`,
          DEFAULT_KNOWN_HOSTS_KEY,
        ),
      },
    },
    allowedBranches: {
      type: 'array',
      minItems: 1,
      maxItems: 64,
      description:
        "The branches GitTargets may write to, as globs with Go's path.Match semantics: * matches any run of " +
        'characters but /, ? one character but /, [a-z] and [^a-z] a class, \\ escapes. So release/* matches ' +
        'release/1.2 but not release/a/b, and * alone every branch without a /. A malformed glob matches ' +
        'nothing. A GitTarget whose branch matches none is refused (BranchNotAllowed). At least one.',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 255,
        description: 'A branch name or glob.',
        'x-kubernetes-validations': [
          {
            rule: `!self.matches('${SPACE_OR_CONTROL_REGEX}')`,
            message: 'spec.allowedBranches entries must be branch names or globs, without spaces',
          },
        ],
      },
    },
    commit: {
      type: 'object',
      // Whole, not {}: the apiserver checks a default against the schema (required
      // fields included) without filling the defaults nested in it.
      default: { committer: defaultCommitter() },
      description: 'How commits pushed through this provider are signed off.',
      required: ['committer'],
      properties: {
        committer: {
          type: 'object',
          // So that `commit: {}` still names a committer.
          default: defaultCommitter(),
          required: ['name', 'email'],
          description: 'The author and committer of every commit the operator pushes through this provider.',
          properties: {
            name: {
              type: 'string',
              minLength: 1,
              maxLength: 256,
              default: DEFAULT_COMMITTER_NAME,
              description: `The committer's name (default ${DEFAULT_COMMITTER_NAME}).`,
              'x-kubernetes-validations': [
                {
                  rule: "self.matches('^[^<>[:cntrl:]]+$')",
                  message: 'spec.commit.committer.name must not contain < or > or control characters',
                },
              ],
            },
            email: {
              type: 'string',
              minLength: 3,
              maxLength: 254,
              default: DEFAULT_COMMITTER_EMAIL,
              description: `The committer's email (default ${DEFAULT_COMMITTER_EMAIL}).`,
              'x-kubernetes-validations': [
                {
                  rule: "self.matches('^[^<>@[:space:][:cntrl:]]+@[^<>@[:space:][:cntrl:]]+$')",
                  message: 'spec.commit.committer.email must be an email address such as bot@example.com',
                },
              ],
            },
          },
        },
        message: {
          type: 'string',
          description: supersededDescription("the GitTarget's spec.commit.message"),
        },
      },
    },
    push: {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      description: supersededDescription("the GitTarget's spec.commit.window"),
    },
  },
  'x-kubernetes-validations': [
    {
      rule: `!${IS_SSH} || has(self.knownHostsRef)`,
      message:
        'spec.knownHostsRef is required for an ssh URL: host keys are always checked; put the output of ' +
        'ssh-keyscan for the host in a Secret and name it here',
      fieldPath: '.knownHostsRef',
      reason: 'FieldValueRequired',
    },
    ...supersededRules({
      name: 'commit.message',
      path: 'spec.commit.message',
      instead: "set the message template in each GitTarget's spec.commit.message",
    }),
    ...supersededRules({
      name: 'push',
      path: 'spec.push',
      instead: "batch commits with each GitTarget's spec.commit.window",
    }),
  ],
});

export const GIT_PROVIDER_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: GIT_PROVIDER.kind,
  plural: 'gitproviders',
  singular: 'gitprovider',
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        { name: 'URL', type: 'string', jsonPath: '.spec.url' },
        ageColumn(),
      ],
      schema: objectSchema(
        'A Git repository the operator writes to: where it is, the credential to push with, and which ' +
          'branches GitTargets in this namespace may write.',
        specSchema(),
        commonStatusSchema('Ready, Reconciling and Stalled.'),
      ),
    },
  ],
};

export function gitProviderCrd(): KubeObject {
  return customResourceDefinition(GIT_PROVIDER_DEFINITION);
}
