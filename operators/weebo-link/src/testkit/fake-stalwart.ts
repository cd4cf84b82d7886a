/**
 * A small stand-in for weebo-stalwart: for every StalwartAccount it puts its finalizer,
 * then writes `status` (address, Ready, observedGeneration), so that a link's `safe`
 * can become true. It writes what the real operator writes, under its own identity
 * (pass an impersonating client), which is what link-targets must let through.
 *
 * It also keeps what the real operator keeps outside Kubernetes: one mailbox per
 * account address (`mailboxes`), created or updated (its state) when the account is
 * reconciled. On deletion it honours the account's own `deletionPolicy`, as RFC 0002
 * relies on (« la deletionPolicy de la cible s'applique »): `Delete` removes the
 * mailbox, `Orphan` (and no policy: the real operator's default destroys nothing)
 * keeps it; either way the finalizer is then removed and the CR goes.
 */
import { type KubeClient, type KubeObject, Manager } from '@operators/kit';
import type { Logger } from 'pino';
import { STALWART_ACCOUNT, type StalwartAccount } from './crds.ts';

export const STALWART_FINALIZER = 'stalwart.weebo.io/account';

/** A mailbox in the fake's store, by address (`<spec.name>@<spec.domainRef.name>`). */
export interface Mailbox {
  readonly address: string;
  /** The account's `spec.state` when last reconciled. */
  readonly state: string | undefined;
}

export interface FakeStalwart {
  readonly manager: Manager;
  /** The mailboxes the fake holds now, by address; survives the accounts under `Orphan`. */
  readonly mailboxes: ReadonlyMap<string, Mailbox>;
  stop(): Promise<void>;
}

export async function startFakeStalwart(opts: {
  client: KubeClient;
  namespace?: string;
  logger?: Logger;
  /** The mail store, kept across restarts of the operator (a new, empty one when omitted). */
  mailboxes?: Map<string, Mailbox>;
}): Promise<FakeStalwart> {
  const mailboxes = opts.mailboxes ?? new Map<string, Mailbox>();
  const addressOf = (a: StalwartAccount): string => `${a.spec?.name}@${a.spec?.domainRef?.name}`;
  const manager = new Manager({
    name: 'fake-stalwart',
    client: opts.client,
    logger: opts.logger,
    shutdownTimeoutMs: 2000,
  });
  manager
    .controller('stalwart-accounts')
    .for(STALWART_ACCOUNT, opts.namespace ? { namespace: opts.namespace } : {})
    .withConcurrency(4)
    .reconcile(async (req) => {
      const a = req.object as StalwartAccount | undefined;
      if (!a) return {};
      if (a.metadata.deletionTimestamp) {
        if (!a.metadata.finalizers?.includes(STALWART_FINALIZER)) return {};
        if (a.spec?.deletionPolicy === 'Delete') mailboxes.delete(addressOf(a));
        await manager.client.patch(STALWART_ACCOUNT, req.name, req.namespace, {
          type: 'merge',
          body: {
            metadata: {
              finalizers: a.metadata.finalizers.filter((f) => f !== STALWART_FINALIZER),
              resourceVersion: a.metadata.resourceVersion,
            },
          },
        });
        return {};
      }
      if (!a.metadata.finalizers?.includes(STALWART_FINALIZER)) {
        await manager.client.patch(STALWART_ACCOUNT, req.name, req.namespace, {
          type: 'merge',
          body: {
            metadata: {
              finalizers: [...(a.metadata.finalizers ?? []), STALWART_FINALIZER],
              resourceVersion: a.metadata.resourceVersion,
            },
          },
        });
        return {};
      }
      const address = addressOf(a);
      mailboxes.set(address, { address, state: a.spec?.state });
      const gen = a.metadata.generation;
      const ready = a.status?.conditions?.find((x) => x.type === 'Ready');
      if (a.status?.observedGeneration === gen && a.status?.address === address && ready?.status === 'True')
        return {};
      await manager.client.patchStatus(STALWART_ACCOUNT, req.name, req.namespace, {
        type: 'merge',
        body: {
          status: {
            observedGeneration: gen,
            address,
            conditions: [
              { type: 'Ready', status: 'True', reason: 'Reconciled', message: `${a.spec?.state}` },
            ],
          },
        },
      });
      return {};
    });
  await manager.start();
  return { manager, mailboxes, stop: () => manager.stop() };
}

/** The fake operator's service account and its RBAC (what weebo-stalwart's chart would grant). */
export const STALWART_SERVICE_ACCOUNT = { namespace: 'stalwart', name: 'weebo-stalwart' } as const;

export function fakeStalwartRbac(): KubeObject[] {
  const name = 'fake-weebo-stalwart';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        {
          apiGroups: ['stalwart.weebo.io'],
          resources: ['stalwartaccounts', 'stalwartaccounts/status'],
          verbs: ['get', 'list', 'watch', 'patch', 'update'],
        },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', ...STALWART_SERVICE_ACCOUNT }],
    },
  ];
}
