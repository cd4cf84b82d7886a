/**
 * `EdgeSite` (edge.exoledge.io/v1alpha1, namespaced): one site at the edge, its domains,
 * its origins and how hard the edge is on its visitors. The operator owns everything the
 * site needs (certificate, gateway, route, decider, filters); this object is all a team
 * writes. This file is the one source of the CRD (`crds/edgesites.yaml` is generated from
 * it by `npm run gen-crds -w @operators/exoledge`) and of the TypeScript types the
 * operator reads it with, side by side so they cannot disagree.
 *
 * Two rules shape the schema:
 *
 * - A spec the operator would have to reject later is never stored: CEL rules refuse it
 *   at admission, each with a message that says what to change (a domain with a scheme,
 *   a route prefix the HTTPRoute would refuse, a certificate asked for on a shared gateway).
 * - An incomplete manifest never turns a protection off. The `security` switches carry no
 *   schema default on purpose, so an absent switch and an explicit `false` stay distinct
 *   in the stored object; `effectiveSecurity` (domain/edge-site/security.ts) resolves an
 *   absent one to the product default, which is on.
 */

import {
  type Condition,
  type CrdDefinition,
  conditionsSchema,
  customResourceDefinition,
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  type JSONSchemaProps,
  type KubeObject,
  observedGenerationSchema,
  type ValidationRule,
} from '@operators/kit';
import { GROUP, VERSION } from './blocklist-source.ts';

export const EDGE_SITE = { apiVersion: `${GROUP}/${VERSION}`, kind: 'EdgeSite' } as const;

/**
 * The site's stance: what the decider does with a client on a Presumed list the site
 * selects. Whatever the posture, a Certain list that reaches the decider (published, not
 * enforced by Cilium) is a `drop`: it is the cluster's list, not a site's choice; and an
 * allowlisted client passes. The full table is `domain/decider/verdict.ts` and
 * `docs/exoledge.md`.
 */
export const Posture = {
  /**
   * A listed client passes; the decider counts it and logs it under `ListedObserved`.
   * For a new site: see who would be challenged before anyone is.
   */
  Observe: 'Observe',
  /**
   * The default: a listed client without a clearance is asked a proof-of-work (the
   * captcha when the proof-of-work filter is off and the site has one). Presumed lists
   * hold real users, so they are asked to prove themselves, never cut; only a client that
   * floods challenges is dropped, for the rest of its window.
   */
  Challenge: 'Challenge',
  /**
   * Under attack: as `Challenge`, but a listed client is asked the captcha when the site
   * has one (a person can solve it, a farm of machines paying for proofs-of-work cannot).
   * Clients on no list still pass: a posture never turns the whole internet into suspects.
   */
  Strict: 'Strict',
} as const;
export type Posture = (typeof Posture)[keyof typeof Posture];

/** cert-manager's two issuer kinds, in its vocabulary. */
export const IssuerKind = { Issuer: 'Issuer', ClusterIssuer: 'ClusterIssuer' } as const;
export type IssuerKind = (typeof IssuerKind)[keyof typeof IssuerKind];

/**
 * The captcha services the challenge page can embed. All three verify a token the same
 * way (the server posts the secret key and the token to the provider), so one shape of
 * spec serves them all.
 */
export const CaptchaProvider = {
  Turnstile: 'Turnstile',
  HCaptcha: 'HCaptcha',
  ReCaptcha: 'ReCaptcha',
} as const;
export type CaptchaProvider = (typeof CaptchaProvider)[keyof typeof CaptchaProvider];

/** What ext_authz does with a request when the decider cannot answer in time. */
export const FailurePolicy = {
  /** Let it through: the seed's "permissif si panne". A decider outage must not take the site down. */
  Ignore: 'Ignore',
  /** Refuse it: for a site that would rather be down than unfiltered. */
  Fail: 'Fail',
} as const;
export type FailurePolicy = (typeof FailurePolicy)[keyof typeof FailurePolicy];

/** The functions `status.features` reports, one entry each: the console's source of truth. */
export const Feature = {
  Waf: 'waf',
  Challenge: 'challenge',
  SensitiveFiles: 'sensitiveFiles',
  Blocklists: 'blocklists',
  Grpc: 'grpc',
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

/** Defaults, as the CRD writes them into every object. */
export const DEFAULT_POSTURE: Posture = Posture.Challenge;
/** Two decider replicas, as the seed's schema shows: one can restart while the other answers. */
export const DEFAULT_DECIDER_REPLICAS = 2;
export const DEFAULT_FAILURE_POLICY: FailurePolicy = FailurePolicy.Ignore;
/**
 * Leading zero bits the proof-of-work asks for: about 65,000 hashes, well under a second
 * in a browser, and a real cost to a bot that must pay it for every address it uses.
 */
export const DEFAULT_DIFFICULTY = 16;
/** Below 8 bits (256 hashes) a proof-of-work costs a bot nothing. */
export const MIN_DIFFICULTY = 8;
/** Above 24 bits (16 million hashes) a slow phone takes minutes: the challenge becomes a refusal. */
export const MAX_DIFFICULTY = 24;
/** How long a passed challenge lets a client through before it is asked again. */
export const DEFAULT_CLEARANCE = '1h';
export const MIN_CLEARANCE = '1m';
export const MAX_CLEARANCE = '168h';
/** A route's upstream with no weight gets Gateway API's default weight. */
export const DEFAULT_WEIGHT = 1;
/** The Secret key holding the captcha's secret key when `captcha.secretRef.key` is absent. */
export const DEFAULT_CAPTCHA_SECRET_KEY = 'secret';

/**
 * The domains become the hostnames of one HTTPRoute, and the routes its rules, each
 * rule's upstreams its backendRefs: Gateway API allows 16 of each, and weights up to
 * 1,000,000.
 */
export const MAX_DOMAINS = 16;
export const MAX_ROUTES = 16;
export const MAX_ROUTE_UPSTREAMS = 16;
export const MAX_WEIGHT = 1_000_000;
/** HTTPRoute's limit on a path match. */
export const MAX_PREFIX_LENGTH = 1024;
/** Enough for every list an operator would run; bounds the cost of the CEL rules on names. */
export const MAX_SECURITY_LISTS = 64;
/**
 * The longest site name. The operator names the site's objects after it, the decider's
 * Service as `<site>-decider` among them, and Service names are DNS-1035 labels of at
 * most 63 characters: 52 leaves 11 for the suffixes. The name is also a label value
 * (at most 63) on every object of the site.
 */
export const MAX_SITE_NAME_LENGTH = 52;

/** A Service in the site's namespace, on one port. */
export interface ServiceRef {
  readonly name: string;
  readonly port: number;
}

/** An origin of a route, with its share of the route's traffic. */
export interface WeightedServiceRef extends ServiceRef {
  /** Relative to the route's other upstreams; 0 drains the origin without removing it. Defaulted to 1. */
  readonly weight?: number;
}

export interface Route {
  /** A path prefix, matched element by element (`/app` matches `/app/x`, not `/apple`); the longest wins. */
  readonly prefix: string;
  /** Absent: `spec.upstream`, alone. */
  readonly upstreams?: readonly WeightedServiceRef[];
}

export interface IssuerRef {
  readonly name: string;
  /** Defaulted to `Issuer`, as cert-manager does. */
  readonly kind?: IssuerKind;
}

export interface TlsSpec {
  readonly issuerRef: IssuerRef;
  /** Absent: the operator's own name for it, derived from the site's. */
  readonly secretName?: string;
}

export interface SecretKeyRef {
  readonly name: string;
  /** Defaulted to `secret`. */
  readonly key?: string;
}

export interface CaptchaSpec {
  readonly provider: CaptchaProvider;
  /** Public: written into the challenge page. */
  readonly siteKey: string;
  /** The provider's secret key, in a Secret of the site's namespace: read by the decider only. */
  readonly secretRef: SecretKeyRef;
}

export interface DeciderSpec {
  readonly replicas?: number;
}

export interface GatewayRef {
  readonly name: string;
  /** Absent: the site's namespace. */
  readonly namespace?: string;
}

/** The request filter in front of the site: ext_authz to the decider, which serves the challenge too. */
export interface FilterSpec {
  readonly failurePolicy?: FailurePolicy;
  readonly difficulty?: number;
  readonly clearance?: string;
}

/**
 * The console's switches, as written. No schema default on purpose: `undefined` means
 * "keep the product default", which is on (see `effectiveSecurity`).
 */
export interface SecuritySpec {
  readonly waf?: boolean;
  readonly challenge?: boolean;
  readonly sensitiveFiles?: boolean;
  /** Absent: every Presumed list. `[]`: none. Otherwise exactly these BlocklistSources. */
  readonly blocklists?: readonly string[];
  /** ConfigMaps of the site's namespace whose addresses the decider always lets through. */
  readonly allowlists?: readonly string[];
}

/** The spec as stored: the apiserver has filled in the defaults (but not the security switches). */
export interface EdgeSiteSpec {
  readonly domains: readonly string[];
  readonly upstream: ServiceRef;
  readonly routes?: readonly Route[];
  readonly tls?: TlsSpec;
  readonly posture?: Posture;
  readonly captcha?: CaptchaSpec;
  readonly decider?: DeciderSpec;
  readonly grpc?: boolean;
  readonly gatewayRef?: GatewayRef;
  readonly filter?: FilterSpec;
  readonly security?: SecuritySpec;
}

export interface FeatureStatus {
  readonly name: Feature;
  /** True only once the objects that carry it are applied: the status counts only what is real. */
  readonly applied: boolean;
  /** CamelCase, why `applied` is not what the spec asks (turned off, carried by the shared edge, failed). */
  readonly reason?: string;
}

/** One origin of one route, as the HTTPRoute weighs it and its EndpointSlices see it. */
export interface OriginStatus {
  /** The route the origin serves; `/` for the single rule without `spec.routes`. */
  readonly prefix: string;
  readonly name: string;
  readonly port: number;
  readonly weight: number;
  /** Ready endpoints in the Service's EndpointSlices: Kubernetes' readiness, not a probe of ours. */
  readonly readyEndpoints: number;
  /** CamelCase, when the origin receives nothing: drained (weight 0), no ready endpoint, no such Service. */
  readonly reason?: string;
  /** With a reason: what is wrong in words, naming the route and the Service, and what to do. */
  readonly message?: string;
}

export interface EdgeSiteStatus {
  readonly observedGeneration?: number;
  readonly conditions?: readonly Condition[];
  /** True when the site joins a shared gateway (`spec.gatewayRef`) and brings only its route. */
  readonly shared?: boolean;
  readonly features?: readonly FeatureStatus[];
  readonly origins?: readonly OriginStatus[];
}

export type EdgeSite = KubeObject & {
  readonly spec: EdgeSiteSpec;
  readonly status?: EdgeSiteStatus;
};

// ---------------------------------------------------------------------------------------
// The schema
//
// Schema pieces are built fresh at each use: a shared object would come out of the YAML
// writer as an anchor and alias, which reads badly in a generated file. Regexes spell `.`
// and `*` as `[.]` and `[*]`: a backslash would need escaping twice (TypeScript, then CEL).

/** A Service name: a DNS-1035 label (it must start with a letter, unlike most names). */
const SERVICE_NAME_REGEX = '^[a-z]([-a-z0-9]*[a-z0-9])?$';
/** One DNS label of a host name, at most 63 characters. */
const HOST_LABEL = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
/** Gateway API's Hostname, each label held to DNS's 63 characters. */
const HOSTNAME_REGEX = `^([*][.])?${HOST_LABEL}([.]${HOST_LABEL})*$`;
/** A wildcard as Gateway API accepts it: the whole first label, and nowhere else. */
const WILDCARD_REGEX = '^[*][.][^*]+$';
/** Digits and dots only: an IPv4 address, which Gateway API and cert-manager refuse as a host name. */
const IPV4_LIKE_REGEX = '^[0-9.]+$';
/** RFC 3986's path characters, and percent-encoded octets. */
const PATH_CHARS_REGEX = "^([-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9A-Fa-f][0-9A-Fa-f])+$";
/** A Secret's data key. */
const SECRET_KEY_REGEX = '^[-._a-zA-Z0-9]+$';
/** A captcha site key: safe to write into an HTML page as is. */
const SITE_KEY_REGEX = '^[-_A-Za-z0-9]+$';

/** A Kubernetes object's name (a DNS subdomain), as `field` of the object `what`. */
function objectName(field: string, what: string, description: string, maxLength = 253): JSONSchemaProps {
  return {
    type: 'string',
    maxLength,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${DNS_SUBDOMAIN_REGEX}')`,
        message: `${field} must be the name of ${what}: lowercase letters, digits, hyphens and dots, starting and ending with a letter or digit`,
      },
    ],
  };
}

function serviceName(description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: 63,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${SERVICE_NAME_REGEX}')`,
        message:
          "name must be the name of a Service in the site's namespace: lowercase letters, digits and " +
          'hyphens, starting with a letter and ending with a letter or digit',
      },
    ],
  };
}

const port = (): JSONSchemaProps => ({
  type: 'integer',
  minimum: 1,
  maximum: 65_535,
  description: 'The Service port, 1 to 65535.',
});

/**
 * One domain. The specific mistakes (scheme, path, port, capitals, a misplaced wildcard,
 * an address) each have their own rule and message; the last rule, on the shape of a
 * DNS name, stays quiet when one of them already explains the refusal, so each mistake
 * is reported once.
 */
const domainRules: readonly ValidationRule[] = [
  {
    rule: "!self.contains('://')",
    message: 'a domain has no scheme: write shop.example.com, not https://shop.example.com',
  },
  {
    rule: "self.contains('://') || !self.contains('/')",
    message: 'a domain has no path: write the host name alone, and route paths with spec.routes',
  },
  {
    rule: "self.contains('://') || !self.contains(':')",
    message: 'a domain has no port: write the host name alone; the gateway chooses the ports it listens on',
  },
  {
    rule: "!self.matches('[A-Z]')",
    message:
      'a domain is written in lowercase, such as shop.example.com: routes and certificates take host names in lowercase only',
  },
  {
    rule: `!self.contains('*') || self.matches('${WILDCARD_REGEX}')`,
    message: 'a wildcard may only be the whole first label, as in *.example.com',
  },
  {
    rule: `!self.matches('${IPV4_LIKE_REGEX}')`,
    message: 'a domain is a host name, not an IP address: routes and certificates are for names',
  },
  {
    rule:
      "self.contains('/') || self.contains(':') || self.matches('[A-Z]') || " +
      `(self.contains('*') && !self.matches('${WILDCARD_REGEX}')) || self.matches('${IPV4_LIKE_REGEX}') || ` +
      `self.matches('${HOSTNAME_REGEX}')`,
    message:
      'a domain must be a DNS name: labels of lowercase letters, digits and hyphens separated by dots, ' +
      'each starting and ending with a letter or digit and at most 63 characters long',
  },
];

/**
 * A route prefix, refused here when the HTTPRoute would refuse it (Gateway API's own path
 * rules) or when it could never match a request (a query, a fragment, a raw space).
 */
const prefixRules: readonly ValidationRule[] = [
  {
    rule: "self.startsWith('/')",
    message: 'a route prefix is a path starting with /, such as /app',
  },
  {
    rule: "!self.contains('?') && !self.contains('#')",
    message: 'a route prefix is a path only: no query (?) and no fragment (#)',
  },
  {
    rule:
      "!self.contains('//') && !self.contains('/./') && !self.contains('/../') && " +
      "!self.endsWith('/.') && !self.endsWith('/..')",
    message: 'a route prefix must be a normalised path: no empty segment (//) and no . or .. segment',
  },
  {
    rule: "!self.contains('%2f') && !self.contains('%2F')",
    message:
      'a route prefix must not hold an encoded slash (%2F): proxies and upstreams decode it differently',
  },
  {
    rule: `self.contains('?') || self.contains('#') || self.matches("${PATH_CHARS_REGEX}")`,
    message:
      'a route prefix may hold only the characters of a URL path; percent-encode the others, such as %20 for a space',
  },
];

/** `/app` and `/app/` match the same requests in Gateway API: compared with one trailing slash. */
const normalisedPrefix = (v: string): string =>
  `(${v}.prefix.endsWith('/') ? ${v}.prefix : ${v}.prefix + '/')`;

const routeUpstreams: JSONSchemaProps = {
  type: 'array',
  maxItems: MAX_ROUTE_UPSTREAMS,
  description:
    "The route's origins, sharing its traffic by weight. Absent: spec.upstream alone. " +
    'Each entry becomes one weighted backendRef of the route.',
  items: {
    type: 'object',
    required: ['name', 'port'],
    properties: {
      name: serviceName("A Service in the site's namespace."),
      port: port(),
      weight: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_WEIGHT,
        default: DEFAULT_WEIGHT,
        description:
          "Relative to the route's other upstreams (300 and 100 share 75/25). 0 drains the origin: " +
          'it stays declared and receives no new request.',
      },
    },
  },
  'x-kubernetes-validations': [
    {
      rule: 'size(self) > 0',
      message:
        'upstreams, when present, must list at least one Service; leave it out to send the route to spec.upstream',
    },
    {
      rule: 'self.all(u, self.exists_one(v, v.name == u.name && v.port == u.port))',
      message:
        "a Service and port may appear only once among a route's upstreams: merge their weights into one entry",
    },
  ],
};

const specSchema: JSONSchemaProps = {
  type: 'object',
  required: ['domains', 'upstream'],
  properties: {
    domains: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_DOMAINS,
      'x-kubernetes-list-type': 'set',
      description:
        'The host names the site answers for, lowercase, without scheme, path or port. A wildcard ' +
        'may be the whole first label (*.example.com). They are the route hostnames and the names of ' +
        'the certificate.',
      items: { type: 'string', maxLength: 253, 'x-kubernetes-validations': domainRules },
    },
    upstream: {
      type: 'object',
      required: ['name', 'port'],
      description:
        "The site's origin: a Service of the site's namespace. Without spec.routes, every request goes " +
        "to it; a route without upstreams goes to it too. Its health is its EndpointSlices' readiness.",
      properties: { name: serviceName("A Service in the site's namespace."), port: port() },
    },
    routes: {
      type: 'array',
      maxItems: MAX_ROUTES,
      description:
        'Routing by path, replacing the single rule (/ to spec.upstream): the longest matching prefix ' +
        'wins, whatever the order. A request no prefix matches gets a 404; list / to keep a default. ' +
        'Absent or empty: the single rule.',
      items: {
        type: 'object',
        required: ['prefix'],
        properties: {
          prefix: {
            type: 'string',
            maxLength: MAX_PREFIX_LENGTH,
            description:
              'A path prefix, matched element by element: /app matches /app and /app/x, not /apple.',
            'x-kubernetes-validations': prefixRules,
          },
          upstreams: routeUpstreams,
        },
      },
      'x-kubernetes-validations': [
        {
          rule: `self.all(r, self.exists_one(s, ${normalisedPrefix('s')} == ${normalisedPrefix('r')}))`,
          message: 'each route prefix may appear only once; /app and /app/ are the same prefix',
        },
      ],
    },
    tls: {
      type: 'object',
      required: ['issuerRef'],
      description:
        "The site's certificate, issued by cert-manager for every domain and served by the site's " +
        'gateway. Required with a gateway of its own; refused with gatewayRef (the listener has one).',
      properties: {
        issuerRef: {
          type: 'object',
          required: ['name'],
          description: 'The cert-manager issuer, as a Certificate names it.',
          properties: {
            name: objectName('issuerRef.name', 'a cert-manager Issuer or ClusterIssuer', 'The issuer.'),
            kind: {
              type: 'string',
              enum: [IssuerKind.Issuer, IssuerKind.ClusterIssuer],
              default: IssuerKind.Issuer,
              description: "Issuer (in the site's namespace) or ClusterIssuer.",
            },
          },
        },
        secretName: objectName(
          'secretName',
          'a Secret',
          "The Secret cert-manager writes the certificate to, in the site's namespace. Absent: named after the site.",
        ),
      },
    },
    posture: {
      type: 'string',
      enum: [Posture.Observe, Posture.Challenge, Posture.Strict],
      default: DEFAULT_POSTURE,
      description:
        'What the decider does with a client on a Presumed list the site selects. Observe: it passes, ' +
        'counted and logged. Challenge: a proof-of-work (none, so pass, when security.challenge is false). ' +
        'Strict: the captcha when one is set, else the proof-of-work. In every posture a Certain list ' +
        'served by the decider drops, an allowlisted client passes and an unlisted one passes.',
    },
    captcha: {
      type: 'object',
      required: ['provider', 'siteKey', 'secretRef'],
      description:
        'The captcha asked under posture Strict, served by the decider. Absent: Strict asks the ' +
        'proof-of-work too. It never stands in for a proof-of-work switched off by security.challenge.',
      properties: {
        provider: {
          type: 'string',
          enum: [CaptchaProvider.Turnstile, CaptchaProvider.HCaptcha, CaptchaProvider.ReCaptcha],
          description: 'Turnstile (Cloudflare), HCaptcha or ReCaptcha (Google).',
        },
        siteKey: {
          type: 'string',
          maxLength: 256,
          description: "The provider's public site key, written into the challenge page.",
          'x-kubernetes-validations': [
            {
              rule: `self.matches('${SITE_KEY_REGEX}')`,
              message:
                "siteKey must be the provider's public site key: letters, digits, hyphens and underscores only (it is written into the challenge page)",
            },
          ],
        },
        secretRef: {
          type: 'object',
          required: ['name'],
          description:
            "The provider's secret key: a key of a Secret in the site's namespace, read by the decider.",
          properties: {
            name: objectName('name', 'a Secret', "A Secret in the site's namespace."),
            key: {
              type: 'string',
              maxLength: 253,
              default: DEFAULT_CAPTCHA_SECRET_KEY,
              description: 'The key of the Secret holding the secret key.',
              'x-kubernetes-validations': [
                {
                  rule: `self.matches('${SECRET_KEY_REGEX}')`,
                  message:
                    'key must be a key of the Secret: letters, digits, hyphens, underscores and dots only',
                },
              ],
            },
          },
        },
      },
    },
    decider: {
      type: 'object',
      default: {},
      description:
        "The site's HTTP decider, which gives each request its verdict (pass, captcha, pow, drop).",
      properties: {
        replicas: {
          type: 'integer',
          minimum: 1,
          default: DEFAULT_DECIDER_REPLICAS,
          description: 'Decider pods. Two by default, so that one can restart while the other answers.',
        },
      },
    },
    grpc: {
      type: 'boolean',
      default: false,
      description:
        'The origins speak gRPC: a DestinationRule upgrades the connections to them to HTTP/2 (h2c).',
    },
    gatewayRef: {
      type: 'object',
      required: ['name'],
      description:
        'Join this existing Gateway instead of creating one: the site brings only its route. The ' +
        "certificate comes from the gateway's listener; the WAF, challenge, decider and lists are the " +
        "gateway's, for every site on it, and this site's security, posture, captcha, decider and " +
        'filter have no effect (status.shared and status.features say so).',
      properties: {
        name: objectName('name', 'a Gateway', 'The Gateway (gateway.networking.k8s.io).'),
        namespace: {
          type: 'string',
          maxLength: 63,
          description: "The Gateway's namespace. Absent: the site's.",
          'x-kubernetes-validations': [
            {
              rule: `self.matches('${DNS_LABEL_REGEX}')`,
              message:
                'namespace must be the name of a namespace: lowercase letters, digits and hyphens, starting and ending with a letter or digit',
            },
          ],
        },
      },
    },
    filter: {
      type: 'object',
      default: {},
      description:
        'The request filter in front of the site: ext_authz, which asks the decider for a verdict; the ' +
        'decider serves the proof-of-work or the captcha page itself, as the denied response.',
      properties: {
        failurePolicy: {
          type: 'string',
          enum: [FailurePolicy.Ignore, FailurePolicy.Fail],
          default: DEFAULT_FAILURE_POLICY,
          description:
            'When the decider cannot answer: Ignore lets the request through (a decider outage does ' +
            'not take the site down; Cilium still drops enforced lists), Fail refuses it.',
        },
        difficulty: {
          type: 'integer',
          minimum: MIN_DIFFICULTY,
          maximum: MAX_DIFFICULTY,
          default: DEFAULT_DIFFICULTY,
          description:
            'Leading zero bits of the proof-of-work hash; each bit doubles the work. 16: about 65,000 hashes.',
        },
        clearance: {
          type: 'string',
          maxLength: 32,
          default: DEFAULT_CLEARANCE,
          description: `How long a passed challenge lets the client through, such as 1h or 30m (${MIN_CLEARANCE} to ${MAX_CLEARANCE}).`,
          'x-kubernetes-validations': [
            {
              rule:
                "self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$') && self != '' && " +
                `duration(self) >= duration('${MIN_CLEARANCE}') && duration(self) <= duration('${MAX_CLEARANCE}')`,
              message: `clearance must be hours, minutes and seconds such as 1h or 30m, from ${MIN_CLEARANCE} to ${MAX_CLEARANCE}`,
            },
          ],
        },
      },
    },
    security: {
      type: 'object',
      description:
        "The console's switches. Each one present creates its objects and each one off removes them. " +
        'An absent switch keeps the product default, which is on: an incomplete manifest never turns ' +
        'a protection off.',
      properties: {
        waf: {
          type: 'boolean',
          description: 'The Coraza WAF with the OWASP Core Rule Set (a WasmPlugin). Absent: on.',
        },
        challenge: {
          type: 'boolean',
          description:
            'The proof-of-work the decider serves to clients of selected Presumed lists. Off: they pass ' +
            '(a captcha is still asked under Strict); drop verdicts stay. Absent: on.',
        },
        sensitiveFiles: {
          type: 'boolean',
          description:
            'Deny requests for files a site never serves (.env, .git/config...), by suffix, with an ' +
            'AuthorizationPolicy. Absent: on.',
        },
        blocklists: {
          type: 'array',
          maxItems: MAX_SECURITY_LISTS,
          'x-kubernetes-list-type': 'set',
          description:
            'The Presumed BlocklistSources the decider challenges, by name. Absent: every Presumed list. ' +
            "[]: none. Certain lists are the cluster's and drop whatever this selects.",
          items: {
            type: 'string',
            maxLength: 63,
            'x-kubernetes-validations': [
              {
                rule: `self.matches('${DNS_SUBDOMAIN_REGEX}')`,
                message:
                  'blocklists must list BlocklistSource names, such as proxies or cve-2024-3400: lowercase letters, digits, hyphens and dots, at most 63 characters',
              },
            ],
          },
        },
        allowlists: {
          type: 'array',
          maxItems: MAX_SECURITY_LISTS,
          'x-kubernetes-list-type': 'set',
          description:
            "ConfigMaps of the site's namespace listing addresses the decider always lets through. " +
            'Absent: none. They do not lift a Cilium drop, which happens before the site.',
          items: {
            type: 'string',
            maxLength: 253,
            'x-kubernetes-validations': [
              {
                rule: `self.matches('${DNS_SUBDOMAIN_REGEX}')`,
                message:
                  "allowlists must list ConfigMap names of the site's namespace: lowercase letters, digits, hyphens and dots, starting and ending with a letter or digit",
              },
            ],
          },
        },
      },
    },
  },
  'x-kubernetes-validations': [
    {
      rule: 'has(self.gatewayRef) || has(self.tls)',
      message:
        'a site with its own gateway terminates TLS: set tls.issuerRef to the cert-manager issuer of its certificate, or set gatewayRef to join a shared gateway',
      fieldPath: '.tls',
      reason: 'FieldValueRequired',
    },
    {
      rule: '!has(self.gatewayRef) || !has(self.tls)',
      message:
        "a site on a shared gateway (gatewayRef) is served with the certificate of the gateway's listener: remove tls",
      fieldPath: '.tls',
      reason: 'FieldValueForbidden',
    },
  ],
};

const count = (description: string): JSONSchemaProps => ({ type: 'integer', minimum: 0, description });

const statusSchema: JSONSchemaProps = {
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema(),
    conditions: conditionsSchema('The state of the site, Ready first.', 'Ready'),
    shared: {
      type: 'boolean',
      description: 'True when the site joins a shared gateway (spec.gatewayRef) and brings only its route.',
    },
    features: {
      type: 'array',
      maxItems: Object.keys(Feature).length,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      description:
        "One entry per function, whether it is applied and why not: the console's source of truth.",
      items: {
        type: 'object',
        required: ['name', 'applied'],
        properties: {
          name: { type: 'string', enum: Object.values(Feature) },
          applied: { type: 'boolean', description: 'The objects that carry it are applied.' },
          reason: {
            type: 'string',
            maxLength: 1024,
            description:
              'Why applied differs from the spec, CamelCase: turned off, carried by the shared edge...',
          },
        },
      },
    },
    origins: {
      type: 'array',
      maxItems: MAX_ROUTES * MAX_ROUTE_UPSTREAMS,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['prefix', 'name', 'port'],
      description:
        'Each origin of each route: its weight, its ready endpoints, and why it receives nothing when it does not.',
      items: {
        type: 'object',
        required: ['prefix', 'name', 'port', 'weight', 'readyEndpoints'],
        properties: {
          prefix: {
            type: 'string',
            maxLength: MAX_PREFIX_LENGTH,
            description: 'The route; / for the single rule.',
          },
          name: { type: 'string', maxLength: 63, description: 'The Service.' },
          port: { type: 'integer', minimum: 1, maximum: 65_535 },
          weight: count('The weight in the route.'),
          readyEndpoints: count("Ready endpoints in the Service's EndpointSlices."),
          reason: {
            type: 'string',
            maxLength: 1024,
            description:
              'Why the origin receives nothing, CamelCase: drained, no ready endpoint, no such Service.',
          },
          message: {
            type: 'string',
            maxLength: 1024,
            description: 'With a reason: what is wrong, naming the route and the Service, and what to do.',
          },
        },
      },
    },
  },
};

export const EDGE_SITE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: EDGE_SITE.kind,
  plural: 'edgesites',
  singular: 'edgesite',
  // Not `es`: Elasticsearch's operator already answers to it.
  shortNames: ['esite'],
  categories: ['exoledge'],
  scope: 'Namespaced',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        { name: 'Domain', type: 'string', jsonPath: '.spec.domains[0]' },
        { name: 'Upstream', type: 'string', jsonPath: '.spec.upstream.name' },
        { name: 'Posture', type: 'string', jsonPath: '.spec.posture' },
        { name: 'Shared', type: 'boolean', jsonPath: '.status.shared' },
        { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
      schema: {
        type: 'object',
        description:
          'One site at the edge: its domains, its origins and routes, its certificate, and how hard the ' +
          'edge is on its visitors (posture, challenge, WAF, blocklists). The operator owns the rest.',
        required: ['spec'],
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object' },
          spec: specSchema,
          status: statusSchema,
        },
        // The apiserver has already held the name to a DNS subdomain; what a Service name
        // adds is no dot and a letter first. No regex on the whole name: metadata.name has
        // no maxLength here, so the apiserver would estimate a regex over 3 MB.
        'x-kubernetes-validations': [
          {
            rule:
              `self.metadata.name.size() <= ${MAX_SITE_NAME_LENGTH} && !self.metadata.name.contains('.') && ` +
              "!self.metadata.name.matches('^[0-9]')",
            message: `the name must start with a letter, hold only lowercase letters, digits and hyphens, and be at most ${MAX_SITE_NAME_LENGTH} characters: the operator names the site's Services and labels after it`,
          },
        ],
      },
    },
  ],
};

export function edgeSiteCrd(): KubeObject {
  return customResourceDefinition(EDGE_SITE_DEFINITION);
}
