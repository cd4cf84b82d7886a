/**
 * The two fake CRDs of RFC 0002's testkit: a source (AuthentikUser) and a target
 * (StalwartAccount) shaped like the real operators', without the operators. Tests, the
 * local run and the bench install them.
 */
import { type CrdDefinition, customResourceDefinition, type KubeObject } from '@operators/kit';

const conditions = {
  type: 'array',
  items: {
    type: 'object',
    required: ['type', 'status'],
    properties: {
      type: { type: 'string' },
      status: { type: 'string' },
      reason: { type: 'string' },
      message: { type: 'string' },
      lastTransitionTime: { type: 'string' },
      observedGeneration: { type: 'integer' },
    },
  },
} as const;

const authentikUserDef: CrdDefinition = {
  group: 'authentik.weebo.io',
  kind: 'AuthentikUser',
  plural: 'authentikusers',
  scope: 'Namespaced',
  versions: [
    {
      name: 'v1alpha1',
      schema: {
        type: 'object',
        properties: {
          spec: {
            type: 'object',
            required: ['username'],
            properties: {
              username: { type: 'string' },
              email: { type: 'string' },
              isActive: { type: 'boolean' },
              groupRefs: { type: 'array', items: { type: 'string' } },
            },
          },
          status: {
            type: 'object',
            properties: { observedGeneration: { type: 'integer' }, conditions },
          },
        },
      },
    },
  ],
};

const stalwartAccount: CrdDefinition = {
  group: 'stalwart.weebo.io',
  kind: 'StalwartAccount',
  plural: 'stalwartaccounts',
  scope: 'Namespaced',
  versions: [
    {
      name: 'v1alpha1',
      schema: {
        type: 'object',
        properties: {
          spec: {
            type: 'object',
            required: ['name', 'domainRef'],
            properties: {
              domainRef: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
              name: { type: 'string' },
              state: { type: 'string', enum: ['Active', 'Locked'] },
              deletionPolicy: { type: 'string', enum: ['Orphan', 'Delete'] },
              quota: { type: 'integer' },
            },
          },
          status: {
            type: 'object',
            properties: { observedGeneration: { type: 'integer' }, address: { type: 'string' }, conditions },
          },
        },
      },
      printerColumns: [
        { name: 'Address', type: 'string', jsonPath: '.status.address' },
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};

export const AUTHENTIK_USER_CRD: KubeObject = customResourceDefinition(authentikUserDef);
export const STALWART_ACCOUNT_CRD: KubeObject = customResourceDefinition(stalwartAccount);
export const TEST_CRDS: readonly KubeObject[] = [AUTHENTIK_USER_CRD, STALWART_ACCOUNT_CRD];

export const AUTHENTIK_USER = { apiVersion: 'authentik.weebo.io/v1alpha1', kind: 'AuthentikUser' } as const;
export const STALWART_ACCOUNT = {
  apiVersion: 'stalwart.weebo.io/v1alpha1',
  kind: 'StalwartAccount',
} as const;

export type AuthentikUser = KubeObject & {
  spec: { username: string; email?: string; isActive?: boolean; groupRefs?: string[] };
};
export type StalwartAccount = KubeObject & {
  spec?: {
    domainRef?: { name: string };
    name?: string;
    state?: 'Active' | 'Locked';
    deletionPolicy?: string;
  };
  status?: {
    observedGeneration?: number;
    address?: string;
    conditions?: { type: string; status: string; reason?: string }[];
  };
};

/** An AuthentikUser as auth/sub's users.yaml renders it, `links: [stalwart]` as the header. */
export function authentikUser(
  name: string,
  namespace: string,
  opts: {
    isActive?: boolean;
    links?: readonly string[];
    username?: string;
    annotations?: Record<string, string>;
  } = {},
): AuthentikUser {
  const annotations: Record<string, string> = { ...(opts.annotations ?? {}) };
  for (const l of opts.links ?? ['stalwart']) annotations[`link.weebo.io/${l}`] = 'enabled';
  return {
    ...AUTHENTIK_USER,
    metadata: { name, namespace, ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: { username: opts.username ?? name, email: `${name}@weebo.poc`, isActive: opts.isActive ?? true },
  };
}
