/**
 * `BlocklistSource` (edge.exoledge.io/v1alpha1, cluster-scoped): one IP list, where to
 * read it, how much of it to publish and through which channel. This file is the one
 * source of the CRD (`crds/blocklistsources.yaml` is generated from it by
 * `npm run gen-crds -w @operators/exoledge`) and of the TypeScript types the operator
 * reads it with, side by side so they cannot disagree.
 *
 * The schema refuses bad specs at admission, with CEL rules whose messages say what to
 * change: a spec the operator would have to reject later is never stored.
 */

import type { Condition } from '@operators/kit';
import {
  type CrdDefinition,
  customResourceDefinition,
  type JSONSchemaProps,
  type KubeObject,
} from '@operators/kit';

export const GROUP = 'edge.exoledge.io';
export const VERSION = 'v1alpha1';

export const BLOCKLIST_SOURCE = { apiVersion: `${GROUP}/${VERSION}`, kind: 'BlocklistSource' } as const;

/** Certain: addresses known to attack, refused at the kernel. Presumed: lists that hold real users too. */
export const ListKind = {
  /** Addresses we are sure attack (scanners, exploit sources): Cilium may drop them. */
  Certain: 'Certain',
  /** Open proxies, Tor exits, dynamic DNS: real users among them, so the decider challenges them. */
  Presumed: 'Presumed',
} as const;
export type ListKind = (typeof ListKind)[keyof typeof ListKind];

/** Defaults, as the CRD writes them into every object. */
export const DEFAULT_MAX_ENTRIES = 4000;
export const DEFAULT_SHARD_SIZE = 10_000;
export const DEFAULT_REFRESH_INTERVAL = '2h';

/**
 * Cilium's policy map holds 65,536 entries per endpoint, shared with every other policy:
 * a budget above it cannot be enforced at the kernel, whatever else is there.
 */
export const CILIUM_POLICY_MAP_ENTRIES = 65_536;
/** The largest budget at all: 5 million prefixes are 1,000 decider ConfigMaps of 5,000. */
export const MAX_MAX_ENTRIES = 5_000_000;
/**
 * The largest shard: 30,000 IPv6 prefixes of up to 46 bytes in JSON make 1.4 MB, just
 * under the 1.5 MiB the apiserver accepts for one object.
 */
export const MAX_SHARD_SIZE = 30_000;
/** Refreshing faster than this only loads the list's provider; slower than a week is a forgotten list. */
export const MIN_REFRESH_INTERVAL = '1m';
export const MAX_REFRESH_INTERVAL = '168h';

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** The spec as stored: the apiserver has filled in the defaults. */
export interface BlocklistSourceSpec {
  readonly url: string;
  readonly kind: ListKind;
  readonly enforce?: boolean;
  readonly maxEntries?: number;
  readonly shardSize?: number;
  readonly minPrefixLength?: number;
  readonly refreshInterval?: string;
  readonly podSelector?: LabelSelector;
}

/** Where a source publishes; decided by `kind` and `enforce` alone. */
export const Channel = {
  /** CiliumCIDRGroup shards and one CiliumClusterwideNetworkPolicy: dropped at the kernel. */
  CiliumPolicy: 'CiliumPolicy',
  /** ConfigMap shards read by the HTTP decider, which challenges instead of dropping. */
  Decider: 'Decider',
} as const;
export type Channel = (typeof Channel)[keyof typeof Channel];

export interface EntryCounts {
  /** Valid entries read (lines holding an address or prefix), duplicates included. */
  readonly read: number;
  /** Lines refused: never read as some other address. */
  readonly malformed: number;
  /** Prefixes whose host bits were set and cleared (`1.2.3.77/24` read as 1.2.3.0/24). */
  readonly normalised: number;
  /**
   * Well-formed prefixes refused as too short (`0.0.0.0/0`, `::/0`, `1.0.0.0/7` under the
   * operator's floor, /8 IPv4 and /32 IPv6 by default): never published, since with
   * `enforce` one of them would deny the world. Absent in a status written before the floor.
   */
  readonly refused?: number;
  /** Prefixes after merging: the minimal exact cover of what was read. */
  readonly merged: number;
  /** Prefixes published. */
  readonly published: number;
  /** Prefixes dropped by the budget: `merged - published`. */
  readonly dropped: number;
}

/** What the budget dropped of one family and prefix length, and why. */
export interface DroppedGroup {
  readonly reason: 'LongerThanMinPrefixLength' | 'OverMaxEntries';
  readonly family: 'IPv4' | 'IPv6';
  readonly prefixLength: number;
  readonly count: number;
}

export interface MalformedLineReport {
  readonly line: number;
  readonly reason: string;
  readonly text: string;
}

/** A line refused for a prefix shorter than the operator's floor. */
export interface RefusedLineReport {
  readonly line: number;
  readonly text: string;
}

export interface BlocklistSourceStatus {
  readonly observedGeneration?: number;
  readonly channel?: Channel;
  readonly entries?: EntryCounts;
  /** Exactly what the budget dropped, by rule, family and length; absent when nothing was. */
  readonly dropped?: readonly DroppedGroup[];
  /** The first refused lines with their numbers; absent when none was. */
  readonly malformedLines?: readonly MalformedLineReport[];
  /** The first prefixes refused as too short, with their line numbers; absent when none was. */
  readonly refusedLines?: readonly RefusedLineReport[];
  readonly shards?: number;
  /** SHA-256 of the published set's canonical text: `exoledge aggregate ... | sha256sum`. */
  readonly fingerprint?: string;
  /** When the published set was last read from the source (a 200; a 304 changes nothing). */
  readonly lastRefreshTime?: string;
  readonly conditions?: readonly Condition[];
}

export type BlocklistSource = KubeObject & {
  readonly spec: BlocklistSourceSpec;
  readonly status?: BlocklistSourceStatus;
};

/** How many refused lines the status shows one by one (the count is always exact). */
export const MALFORMED_LINES_SHOWN = 10;

// ---------------------------------------------------------------------------------------
// The schema

/** A Kubernetes label value: what the source's name becomes on every shard. */
const LABEL_VALUE_PATTERN = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';
/** A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY_REGEX =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';

// Schema pieces are built fresh at each use: a shared object would come out of the YAML
// writer as an anchor and alias, which reads badly in a generated file.
const labelValue = (): JSONSchemaProps => ({ type: 'string', maxLength: 63, pattern: LABEL_VALUE_PATTERN });

const labelSelector: JSONSchemaProps = {
  type: 'object',
  description:
    'The endpoints the deny policy protects, as a Kubernetes label selector; it becomes the ' +
    "policy's endpointSelector. {} selects every endpoint. Required for Certain lists with enforce.",
  properties: {
    matchLabels: {
      type: 'object',
      maxProperties: 64,
      additionalProperties: labelValue(),
      'x-kubernetes-validations': [
        {
          rule: `self.all(k, k.size() <= 317 && k.matches('${LABEL_KEY_REGEX}'))`,
          message: 'matchLabels keys must be label keys, such as app or example.com/role',
        },
      ],
    },
    matchExpressions: {
      type: 'array',
      maxItems: 32,
      items: {
        type: 'object',
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string', maxLength: 317 },
          operator: { type: 'string', enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', maxItems: 64, items: labelValue() },
        },
        'x-kubernetes-validations': [
          {
            rule: `self.key.matches('${LABEL_KEY_REGEX}')`,
            message: 'key must be a label key, such as app or example.com/role',
            fieldPath: '.key',
          },
          {
            rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
            message: 'In and NotIn need values; Exists and DoesNotExist take none',
          },
        ],
      },
    },
  },
};

const ENFORCED = "self.kind == 'Certain' && self.enforce";

const specSchema: JSONSchemaProps = {
  type: 'object',
  required: ['url', 'kind'],
  properties: {
    url: {
      type: 'string',
      maxLength: 2048,
      description:
        'The list: one IPv4 or IPv6 address or prefix per line, # and ; comments. Read with GET over ' +
        'http or https; any answer but 200 (or 304 to a conditional GET) is a failed read.',
      'x-kubernetes-validations': [
        {
          rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
          message: 'url must be an absolute http:// or https:// URL with a host',
        },
      ],
    },
    kind: {
      type: 'string',
      enum: [ListKind.Certain, ListKind.Presumed],
      description:
        'Certain: addresses known to attack; with enforce, Cilium drops their packets at the kernel. ' +
        'Presumed: open proxies, Tor, dynamic DNS, where real users hide too; the decider challenges them.',
    },
    enforce: {
      type: 'boolean',
      default: false,
      description:
        'Drop a Certain list at the kernel (CiliumCIDRGroups and a CiliumClusterwideNetworkPolicy). ' +
        'Without it the list goes to the decider, like a Presumed one.',
    },
    maxEntries: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_MAX_ENTRIES,
      default: DEFAULT_MAX_ENTRIES,
      description:
        'The budget: at most this many merged prefixes are published; the most specific go first, ' +
        'and exactly what was dropped is reported. At most 65,536 when enforced (Cilium policy map).',
    },
    shardSize: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_SHARD_SIZE,
      default: DEFAULT_SHARD_SIZE,
      description: 'Prefixes per CiliumCIDRGroup. Decider ConfigMaps always hold 5,000.',
    },
    minPrefixLength: {
      type: 'integer',
      minimum: 0,
      maximum: 32,
      description:
        'Drop IPv4 prefixes longer than /N (lone addresses included) and IPv6 prefixes longer than ' +
        '/N+96 (the same block size), when a list is full of single addresses. Absent: none dropped.',
    },
    refreshInterval: {
      type: 'string',
      maxLength: 32,
      default: DEFAULT_REFRESH_INTERVAL,
      description:
        'How old the list may get, such as 2h, 90m or 1h30m (hours, minutes, seconds; ' +
        `${MIN_REFRESH_INTERVAL} to ${MAX_REFRESH_INTERVAL}): the next read starts this long after the ` +
        'previous one started, never later. A failed read is retried after 5 minutes (or the interval, if shorter).',
      'x-kubernetes-validations': [
        {
          rule:
            "self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$') && self != '' && " +
            `duration(self) >= duration('${MIN_REFRESH_INTERVAL}') && duration(self) <= duration('${MAX_REFRESH_INTERVAL}')`,
          message: `refreshInterval must be hours, minutes and seconds such as 2h or 1h30m, from ${MIN_REFRESH_INTERVAL} to ${MAX_REFRESH_INTERVAL}`,
        },
      ],
    },
    podSelector: labelSelector,
  },
  'x-kubernetes-validations': [
    {
      rule: `!(${ENFORCED}) || has(self.podSelector)`,
      message:
        'an enforced Certain list drops packets at the kernel: podSelector must say which endpoints it ' +
        'protects ({} for all)',
      fieldPath: '.podSelector',
      reason: 'FieldValueRequired',
    },
    {
      rule: `!(${ENFORCED}) || self.maxEntries <= ${CILIUM_POLICY_MAP_ENTRIES}`,
      message:
        "an enforced list cannot exceed 65,536 entries: Cilium's policy map holds 65,536 per endpoint, " +
        'shared with every other policy',
      fieldPath: '.maxEntries',
    },
    {
      rule: "!(self.kind == 'Presumed' && self.enforce)",
      message:
        'enforce applies to Certain lists only: a Presumed list holds real users, and goes to the ' +
        'decider, which challenges instead of dropping',
      fieldPath: '.enforce',
      reason: 'FieldValueForbidden',
    },
  ],
};

const conditionSchema: JSONSchemaProps = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: { type: 'string', maxLength: 316 },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    observedGeneration: { type: 'integer', minimum: 0 },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    reason: { type: 'string', minLength: 1, maxLength: 1024 },
    message: { type: 'string', maxLength: 32768 },
  },
};

const count = (): JSONSchemaProps => ({ type: 'integer', minimum: 0 });

const statusSchema: JSONSchemaProps = {
  type: 'object',
  properties: {
    observedGeneration: {
      type: 'integer',
      description: 'The generation of the spec this status reports on.',
    },
    channel: {
      type: 'string',
      enum: [Channel.CiliumPolicy, Channel.Decider],
      description: 'Where the published set is: Cilium objects, or decider ConfigMaps.',
    },
    entries: {
      type: 'object',
      description: 'The published set, counted at each step: read, merged, budgeted.',
      properties: {
        read: count(),
        malformed: count(),
        normalised: count(),
        merged: count(),
        published: count(),
        dropped: count(),
        refused: {
          ...count(),
          description:
            "Prefixes refused as shorter than the operator's floor (0.0.0.0/0, ::/0; default /8 IPv4, /32 IPv6): never published.",
        },
      },
    },
    dropped: {
      type: 'array',
      description: 'Exactly what the budget dropped, by rule, family and prefix length, in drop order.',
      maxItems: 200,
      items: {
        type: 'object',
        properties: {
          reason: { type: 'string', enum: ['LongerThanMinPrefixLength', 'OverMaxEntries'] },
          family: { type: 'string', enum: ['IPv4', 'IPv6'] },
          prefixLength: count(),
          count: count(),
        },
      },
    },
    malformedLines: {
      type: 'array',
      description: `The first ${MALFORMED_LINES_SHOWN} refused lines of the source, with their numbers.`,
      maxItems: MALFORMED_LINES_SHOWN,
      items: {
        type: 'object',
        properties: { line: count(), reason: { type: 'string' }, text: { type: 'string', maxLength: 512 } },
      },
    },
    refusedLines: {
      type: 'array',
      description: `The first ${MALFORMED_LINES_SHOWN} prefixes refused as shorter than the operator's floor, with their line numbers.`,
      maxItems: MALFORMED_LINES_SHOWN,
      items: {
        type: 'object',
        properties: { line: count(), text: { type: 'string', maxLength: 512 } },
      },
    },
    shards: { ...count(), description: 'Objects the set is published in.' },
    fingerprint: {
      type: 'string',
      description: 'SHA-256 of the published canonical text (one prefix per line), as sha256sum prints it.',
    },
    lastRefreshTime: {
      type: 'string',
      format: 'date-time',
      description: 'When the published set was read from the source.',
    },
    conditions: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      items: conditionSchema,
    },
  },
};

export const BLOCKLIST_SOURCE_DEFINITION: CrdDefinition = {
  group: GROUP,
  kind: BLOCKLIST_SOURCE.kind,
  plural: 'blocklistsources',
  singular: 'blocklistsource',
  shortNames: ['bls'],
  categories: ['exoledge'],
  scope: 'Cluster',
  versions: [
    {
      name: VERSION,
      statusSubresource: true,
      printerColumns: [
        { name: 'Kind', type: 'string', jsonPath: '.spec.kind' },
        { name: 'Enforce', type: 'boolean', jsonPath: '.spec.enforce' },
        { name: 'Channel', type: 'string', jsonPath: '.status.channel' },
        { name: 'Published', type: 'integer', jsonPath: '.status.entries.published' },
        { name: 'Dropped', type: 'integer', jsonPath: '.status.entries.dropped' },
        { name: 'Shards', type: 'integer', jsonPath: '.status.shards' },
        { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
      schema: {
        type: 'object',
        description:
          'An IP blocklist read from a URL, merged, budgeted and published: as Cilium deny policies ' +
          '(Certain with enforce) or as shards for the HTTP decider (otherwise).',
        required: ['spec'],
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object' },
          spec: specSchema,
          status: statusSchema,
        },
        'x-kubernetes-validations': [
          {
            rule: 'self.metadata.name.size() <= 63',
            message:
              'the name becomes the value of the label edge.exoledge.io/source on every shard: at most 63 characters',
          },
        ],
      },
    },
  ],
};

export function blocklistSourceCrd(): KubeObject {
  return customResourceDefinition(BLOCKLIST_SOURCE_DEFINITION);
}
