/**
 * `TerdutServer` (namespaced): one terdut-server install (DESIGN §4.1), plus the
 * credential and consent fields this project adds (`spec.credentials`,
 * `status.mirroredCredentials`, `status.operatorCredentials`; docs/terdut.md says why).
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
  type LabelSelector,
  type LocalRef,
  type SecretKeyRef,
  VERSION,
} from './common.ts';
import {
  ageColumn,
  CATEGORIES,
  conditionColumn,
  conditionsSchema,
  DNS_SUBDOMAIN_REGEX,
  durationSchema,
  idSchema,
  labelSelectorSchema,
  objectNameSchema,
  objectSchema,
  observedGenerationSchema,
  secretKeyRefSchema,
} from './schema.ts';
import { SEVERITIES } from './terdut-deadman-switch.ts';

export const TERDUT_SERVER = { apiVersion: API_VERSION, kind: 'TerdutServer' } as const;

/** Who may attach a TerdutTeam from another namespace (Gateway API's allowedListeners shape). */
export const AllowedFrom = {
  /** No other namespace (the default). */
  None: 'None',
  /** The same as None in effect: same-namespace teams are always allowed. Kept for parity with Gateway API. */
  Same: 'Same',
  /** Every namespace. */
  All: 'All',
  /** Namespaces whose labels match `selector`. */
  Selector: 'Selector',
} as const;
export type AllowedFrom = (typeof AllowedFrom)[keyof typeof AllowedFrom];

export interface AllowedTeams {
  readonly namespaces?: {
    readonly from?: AllowedFrom;
    readonly selector?: LabelSelector;
  };
}

export interface DatabaseSpec {
  /** Bring-your-own: a DSN without a password. Exclusive with postgresClusterRef. */
  readonly dsn?: string;
  /** The password for `dsn`, as PGPASSWORD. Only with `dsn`. */
  readonly passwordSecretRef?: SecretKeyRef;
  /** A Zalando `postgresql` CR in the same namespace. */
  readonly postgresClusterRef?: LocalRef;
}

export interface TerdutServerSpec {
  readonly image?: { readonly repository?: string; readonly tag?: string };
  readonly replicas?: number;
  readonly networking?: {
    readonly hostname?: string;
    readonly servicePort?: number;
    readonly gatewayListener?: string;
  };
  readonly database: DatabaseSpec;
  readonly sweeper?: { readonly staleAfter?: string; readonly archiveAfter?: string };
  readonly deadman?: { readonly matchers?: string; readonly timeout?: string; readonly severity?: string };
  readonly notify?: {
    readonly ntfyURL?: string;
    readonly fallbackTopic?: string;
    readonly repeatEvery?: string;
    readonly tokenSecretRef?: SecretKeyRef;
  };
  readonly oidc?: {
    readonly enabled?: boolean;
    readonly issuer?: string;
    readonly clientID?: string;
    readonly clientSecretRef?: SecretKeyRef;
    readonly name?: string;
    readonly scopes?: string;
    readonly allowedGroups?: readonly string[];
    readonly adminGroup?: string;
    readonly sessionMaxAge?: string;
  };
  readonly passwordLogin?: boolean;
  readonly allowedTeams?: AllowedTeams;
  /** Added by this project: how the operator gets and rotates its own API key. */
  readonly credentials?: {
    /** An admin API key (Secret key `apiKey` unless `key` says otherwise), for a server bootstrapped by someone else. */
    readonly adminKeySecretRef?: SecretKeyRef;
    /** Rotate the operator's key this often (a Go duration, at least 1h); never when absent. */
    readonly rotateEvery?: string;
  };
}

/** One mirrored copy of the operator credentials in a consuming namespace (§6.4). */
export interface MirroredCredentials {
  readonly namespace: string;
  readonly secretName: string;
}

export interface TerdutServerStatus extends CommonStatus {
  readonly serviceName?: string;
  readonly operatorCredentialsSecretRef?: LocalRef;
  /** The operator's own user and key on the server; the key material is only in the Secret. */
  readonly operatorCredentials?: {
    readonly userID?: number;
    readonly keyID?: number;
    /** When the current key was minted (RFC 3339): the base of `rotateEvery`. */
    readonly mintedAt?: string;
    /**
     * A key being rotated out: written before the Secret swap, deleted on the server
     * after it, so that a crash in between never loses a key id (no route lists keys).
     */
    readonly retiringKeyID?: number;
    /** The `terdut.ryuvia.com/rotate` annotation value last acted on. */
    readonly rotateRequest?: string;
  };
  /** Where the TerdutServer controller keeps a copy of the credentials for cross-namespace teams. */
  readonly mirroredCredentials?: readonly MirroredCredentials[];
  /** The resourceVersion of the Zalando credentials Secret the Deployment was built with. */
  readonly databaseSecretVersion?: string;
}

export type TerdutServer = KubeObject & {
  readonly spec: TerdutServerSpec;
  readonly status?: TerdutServerStatus;
};

// ---------------------------------------------------------------------------------------
// The CRD

/** Defaults, as the CRD writes them into every object. */
export const DEFAULT_IMAGE_REPOSITORY = 'git.ryuvia.com/niklas/terdut-server';
export const DEFAULT_IMAGE_TAG = 'v0.9.3';
export const DEFAULT_REPLICAS = 1;
export const DEFAULT_SERVICE_PORT = 8080;
/** The shortest `spec.credentials.rotateEvery`. */
export const MIN_ROTATE_EVERY = '1h';

/** `user:password@` in a URL's authority, or a `password=` query parameter. */
const DSN_PASSWORD = "self.matches('^[a-zA-Z]+://[^/?#@]*:[^/?#@]*@') || self.matches('(?i)[?&]password=')";

const databaseSchema = (): JSONSchemaProps => ({
  type: 'object',
  description:
    'The Postgres database; the operator provisions none. Exactly one of dsn (bring your own, with ' +
    'passwordSecretRef) and postgresClusterRef (a Zalando postgresql CR).',
  properties: {
    dsn: {
      type: 'string',
      maxLength: 2048,
      description:
        'Bring your own: a postgres:// or postgresql:// URL without a password, such as ' +
        'postgres://terdut@terdut-postgres:5432/terdut?sslmode=require. The password comes from passwordSecretRef.',
      'x-kubernetes-validations': [
        {
          rule: "self.startsWith('postgres://') || self.startsWith('postgresql://')",
          message:
            'spec.database.dsn must be a postgres:// or postgresql:// URL, such as postgres://terdut@db:5432/terdut',
        },
        {
          rule: `!(${DSN_PASSWORD})`,
          message: 'spec.database.dsn must not carry a password: put it in passwordSecretRef',
        },
      ],
    },
    passwordSecretRef: secretKeyRefSchema({
      field: 'spec.database.passwordSecretRef',
      description: 'The password for dsn, given to the server as PGPASSWORD. Only with dsn.',
      defaultKey: 'password',
    }),
    postgresClusterRef: {
      type: 'object',
      required: ['name'],
      description:
        'A Zalando postgresql.acid.zalan.do CR in the same namespace: the operator derives the DSN and ' +
        'reads the password from the credentials Secret the postgres-operator generates.',
      properties: {
        name: objectNameSchema('spec.database.postgresClusterRef.name', 'The postgresql CR.'),
      },
    },
  },
  'x-kubernetes-validations': [
    {
      rule: 'has(self.dsn) != has(self.postgresClusterRef)',
      message:
        'spec.database needs exactly one of dsn and postgresClusterRef: dsn to bring your own database, ' +
        'postgresClusterRef for a Zalando postgresql CR',
    },
    {
      rule: '!has(self.passwordSecretRef) || has(self.dsn)',
      message:
        'spec.database.passwordSecretRef goes only with dsn: with postgresClusterRef the password comes ' +
        "from the postgres-operator's credentials Secret",
      fieldPath: '.passwordSecretRef',
      reason: 'FieldValueForbidden',
    },
  ],
});

const httpURL = (field: string, description: string): JSONSchemaProps => ({
  type: 'string',
  maxLength: 2048,
  description,
  'x-kubernetes-validations': [
    {
      rule: "self == '' || (isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != '')",
      message: `${field} must be an absolute http:// or https:// URL with a host`,
    },
  ],
});

const plainString = (description: string, maxLength = 256): JSONSchemaProps => ({
  type: 'string',
  maxLength,
  description,
});

const oidcSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'Single sign-on through an OpenID Connect provider.',
  properties: {
    enabled: {
      type: 'boolean',
      description: 'Offer OIDC login. Needs issuer, clientID and clientSecretRef.name.',
    },
    issuer: httpURL('spec.oidc.issuer', "The provider's issuer URL, such as https://dex.example.com."),
    clientID: plainString('The client ID registered with the provider.'),
    clientSecretRef: secretKeyRefSchema({
      field: 'spec.oidc.clientSecretRef',
      description: 'The client secret registered with the provider.',
      defaultKey: 'client-secret',
    }),
    name: plainString("The login button's label, such as SSO.", 64),
    scopes: plainString('The scopes requested, space-separated, such as "openid profile email".', 1024),
    allowedGroups: {
      type: 'array',
      maxItems: 256,
      'x-kubernetes-list-type': 'set',
      description: 'Only members of these groups may log in; empty: anyone the provider authenticates.',
      items: plainString('A group claim value.'),
    },
    adminGroup: plainString('Members of this group are server admins; empty: none by group.'),
    sessionMaxAge: durationSchema({
      field: 'spec.oidc.sessionMaxAge',
      description: 'How long an OIDC login session lasts.',
    }),
  },
  'x-kubernetes-validations': [
    {
      rule: "!(has(self.enabled) && self.enabled) || (has(self.issuer) && self.issuer != '')",
      message: "spec.oidc.issuer is required when spec.oidc.enabled is true: set the provider's issuer URL",
      fieldPath: '.issuer',
      reason: 'FieldValueRequired',
    },
    {
      rule: "!(has(self.enabled) && self.enabled) || (has(self.clientID) && self.clientID != '')",
      message:
        'spec.oidc.clientID is required when spec.oidc.enabled is true: set the client ID registered with the provider',
      fieldPath: '.clientID',
      reason: 'FieldValueRequired',
    },
    {
      rule: "!(has(self.enabled) && self.enabled) || (has(self.clientSecretRef) && has(self.clientSecretRef.name) && self.clientSecretRef.name != '')",
      message:
        'spec.oidc.clientSecretRef.name is required when spec.oidc.enabled is true: name the Secret holding the client secret',
      fieldPath: '.clientSecretRef',
      reason: 'FieldValueRequired',
    },
  ],
});

const allowedTeamsSchema = (): JSONSchemaProps => ({
  type: 'object',
  default: {},
  description:
    "Consent for TerdutTeams in OTHER namespaces to name this server in spec.serverRef (Gateway API's " +
    'allowedListeners shape). TerdutTeams in this namespace never need it.',
  properties: {
    namespaces: {
      type: 'object',
      default: {},
      description: 'Which namespaces may attach a TerdutTeam.',
      properties: {
        from: {
          type: 'string',
          enum: [AllowedFrom.None, AllowedFrom.Same, AllowedFrom.All, AllowedFrom.Selector],
          default: AllowedFrom.None,
          description:
            'None (default): no other namespace. Same: the same as None (same-namespace teams are always ' +
            'allowed), kept for parity with Gateway API. All: every namespace. Selector: namespaces whose ' +
            'labels match selector. Narrowing it revokes: the teams it no longer admits go Ready False, ' +
            'RefNotPermitted.',
        },
        selector: labelSelectorSchema(
          'spec.allowedTeams.namespaces.selector',
          'The namespaces admitted, by their labels. Required with from: Selector, refused otherwise.',
        ),
      },
      'x-kubernetes-validations': [
        {
          // has(): the rules also judge the default {}, before from's own default is in it.
          rule: "!(has(self.from) && self.from == 'Selector') || has(self.selector)",
          message:
            'spec.allowedTeams.namespaces.selector is required when from is Selector: say which namespace labels admit a team',
          fieldPath: '.selector',
          reason: 'FieldValueRequired',
        },
        {
          rule: "(has(self.from) && self.from == 'Selector') || !has(self.selector)",
          message:
            'spec.allowedTeams.namespaces.selector is only allowed when from is Selector: remove it, or set from: Selector',
          fieldPath: '.selector',
          reason: 'FieldValueForbidden',
        },
      ],
    },
  },
});

const specSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: "The desired terdut-server install: the chart's values.yaml reshaped as a spec.",
  required: ['database'],
  properties: {
    image: {
      type: 'object',
      default: {},
      description: 'The terdut-server container image.',
      properties: {
        repository: {
          type: 'string',
          minLength: 1,
          maxLength: 512,
          default: DEFAULT_IMAGE_REPOSITORY,
          description: `The image repository (default ${DEFAULT_IMAGE_REPOSITORY}).`,
        },
        tag: {
          type: 'string',
          minLength: 1,
          maxLength: 128,
          default: DEFAULT_IMAGE_TAG,
          description: `The image tag (default ${DEFAULT_IMAGE_TAG}).`,
        },
      },
    },
    replicas: {
      type: 'integer',
      format: 'int32',
      minimum: 0,
      default: DEFAULT_REPLICAS,
      description:
        'Pods of the Deployment (default 1; 0 stops the server). terdut-server is not tested scaled out: keep 1.',
    },
    networking: {
      type: 'object',
      default: {},
      description: 'How the server is reached.',
      properties: {
        hostname: {
          type: 'string',
          maxLength: 253,
          description: 'The public hostname, such as terdut.example.com; empty: none.',
          'x-kubernetes-validations': [
            {
              rule: `self == '' || self.matches('${DNS_SUBDOMAIN_REGEX}')`,
              message: 'spec.networking.hostname must be a lowercase DNS name such as terdut.example.com',
            },
          ],
        },
        servicePort: {
          type: 'integer',
          format: 'int32',
          minimum: 1,
          maximum: 65535,
          default: DEFAULT_SERVICE_PORT,
          description: `The Service's port (default ${DEFAULT_SERVICE_PORT}), 1 to 65535.`,
        },
        gatewayListener: {
          ...plainString(
            'Reserved: routing through a Gateway listener is not implemented yet, so only "" (none) is ' +
              'accepted. Route to the Service yourself (an HTTPRoute whose backendRef is status.serviceName).',
            253,
          ),
          'x-kubernetes-validations': [
            {
              rule: "self == ''",
              message:
                'spec.networking.gatewayListener is not implemented: leave it empty and attach your own HTTPRoute to the Service named in status.serviceName',
            },
          ],
        },
      },
    },
    database: databaseSchema(),
    sweeper: {
      type: 'object',
      description: 'The sweeper, which ages alerts out.',
      properties: {
        staleAfter: durationSchema({
          field: 'spec.sweeper.staleAfter',
          description: 'An alert not seen for this long is stale, such as 6h.',
        }),
        archiveAfter: durationSchema({
          field: 'spec.sweeper.archiveAfter',
          description: 'A resolved alert is archived after this long, such as 168h.',
        }),
      },
    },
    deadman: {
      type: 'object',
      description: "The server-wide dead man's switch (per-team switches are TerdutDeadmanSwitch objects).",
      properties: {
        matchers: plainString('The alert labels that feed the switch, such as alertname=Watchdog.', 1024),
        timeout: durationSchema({
          field: 'spec.deadman.timeout',
          description: 'The switch fires when no matching alert came for this long, such as 15m.',
        }),
        severity: {
          type: 'string',
          enum: [...SEVERITIES],
          description: 'The severity of the alert the switch raises: critical, warning or info.',
        },
      },
    },
    notify: {
      type: 'object',
      description: 'Notifications through ntfy.',
      properties: {
        ntfyURL: httpURL(
          'spec.notify.ntfyURL',
          'The ntfy server, such as http://ntfy.ntfy.svc.cluster.local.',
        ),
        fallbackTopic: plainString('The ntfy topic for alerts no escalation policy takes; empty: none.'),
        repeatEvery: durationSchema({
          field: 'spec.notify.repeatEvery',
          description: 'Repeat the notification of an unacknowledged alert this often, such as 15m.',
        }),
        tokenSecretRef: secretKeyRefSchema({
          field: 'spec.notify.tokenSecretRef',
          description: 'An ntfy access token; empty name: none.',
          defaultKey: 'token',
        }),
      },
    },
    oidc: oidcSchema(),
    passwordLogin: {
      type: 'boolean',
      default: true,
      description: 'Offer login with a username and password (default true).',
    },
    allowedTeams: allowedTeamsSchema(),
    credentials: {
      type: 'object',
      description: 'How the operator gets and rotates its own API key on the server.',
      properties: {
        adminKeySecretRef: secretKeyRefSchema({
          field: 'spec.credentials.adminKeySecretRef',
          description:
            "An admin API key, for a server bootstrapped by someone else (the chart's job, a human): the " +
            'operator mints its own key with it.',
          defaultKey: 'apiKey',
        }),
        rotateEvery: durationSchema({
          field: 'spec.credentials.rotateEvery',
          description: "Rotate the operator's key this often; absent: never.",
          min: MIN_ROTATE_EVERY,
          minReason: 'rotating more often only churns keys',
        }),
      },
    },
  },
});

const statusSchema = (): JSONSchemaProps => ({
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    conditions: conditionsSchema('Ready, DatabaseReady and Bootstrapped.'),
    observedGeneration: observedGenerationSchema(),
    serviceName: { type: 'string', description: "The server's Service, in this namespace." },
    operatorCredentialsSecretRef: {
      type: 'object',
      description: "The Secret holding the operator's API key for this server.",
      properties: { name: { type: 'string', description: 'The Secret, in this namespace.' } },
    },
    operatorCredentials: {
      type: 'object',
      description: "The operator's own user and key on the server; the key material is only in the Secret.",
      properties: {
        userID: idSchema("The operator's user ID."),
        keyID: idSchema('The current API key ID.'),
        mintedAt: {
          type: 'string',
          format: 'date-time',
          description: 'When the current key was minted: the base of rotateEvery.',
        },
        retiringKeyID: idSchema(
          'A key being rotated out: deleted on the server once the Secret holds the new key.',
        ),
        rotateRequest: {
          type: 'string',
          description: 'The terdut.ryuvia.com/rotate annotation value last acted on.',
        },
      },
    },
    mirroredCredentials: {
      type: 'array',
      description:
        'The copies of the credentials Secret kept in the namespaces of permitted cross-namespace TerdutTeams.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['namespace'],
      items: {
        type: 'object',
        description: 'One consuming namespace and its copy of the credentials.',
        required: ['namespace', 'secretName'],
        properties: {
          namespace: { type: 'string', description: 'The consuming namespace.' },
          secretName: { type: 'string', description: 'The mirrored Secret there.' },
        },
      },
    },
    databaseSecretVersion: {
      type: 'string',
      description: 'The resourceVersion of the Zalando credentials Secret the Deployment was built with.',
    },
  },
});

export const TERDUT_SERVER_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: TERDUT_SERVER.kind,
  plural: 'terdutservers',
  singular: 'terdutserver',
  shortNames: ['tsrv'],
  categories: CATEGORIES,
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        conditionColumn('Ready'),
        conditionColumn('Bootstrapped'),
        { name: 'Service', type: 'string', jsonPath: '.status.serviceName' },
        ageColumn(),
      ],
      schema: {
        ...objectSchema(
          'One terdut-server install: its Deployment, Service, database wiring, bootstrap, the ' +
            "operator's credentials, and which other namespaces' TerdutTeams may attach to it.",
          specSchema(),
          statusSchema(),
        ),
        // The name becomes the Service's name (a DNS label) and the pods' instance label value.
        'x-kubernetes-validations': [
          {
            rule: 'self.metadata.name.size() <= 63',
            message:
              "a TerdutServer's name is at most 63 characters: it names the Service and is the value of the pods' app.kubernetes.io/instance label",
          },
        ],
      },
    },
  ],
};

export function terdutServerCrd(): KubeObject {
  return customResourceDefinition(TERDUT_SERVER_DEFINITION);
}
