/**
 * `gitTargetAdmitted`: may this GitTarget's namespace mirror through the ClusterProvider
 * it references? Every call site that compiles rules or starts a data plane for a
 * GitTarget asks this, with one reader, so they all answer identically.
 *
 * Evaluated on every reconcile, not only at admission, so a policy TIGHTENED after a
 * target was created revokes it. The checks are ordered on purpose:
 *  1. a missing provider is denied before any policy is consulted (an absent provider
 *     has no policy, and defaulting to allow would make an undeclared provider a bypass);
 *  2. a provider storing a superseded field is refused before the Namespace read;
 *  3. `spec.accessFrom` decides, against the Namespace's labels in the control cluster.
 * A NotFound Namespace is not an error (empty labels); any other failed read throws a
 * `GateReadError` with no decision, so the caller requeues and tears nothing down.
 */
import { type Decision, denied } from './decision.ts';
import { accessFromAdmits, type ClusterProviderPolicy } from './policy.ts';
import { type AuthzReader, readOrThrow } from './reader.ts';
import { ReasonClusterProviderNotFound } from './reasons.ts';
import { supersededFieldRefusal } from './superseded.ts';

/** The ClusterProvider a GitTarget goes through when `spec.clusterProviderRef` is omitted. */
export const DEFAULT_CLUSTER_PROVIDER = 'default';

/** The part of a GitTarget the gate reads. */
export interface GitTargetRef {
  readonly metadata: { readonly namespace?: string; readonly name?: string };
  readonly spec: { readonly clusterProviderRef?: { readonly name?: string } };
}

export function clusterProviderName(target: GitTargetRef): string {
  return target.spec.clusterProviderRef?.name || DEFAULT_CLUSTER_PROVIDER;
}

/** The denial of a missing provider, in upstream's words (naming the chart's switch that renders "default"). */
export function providerNotFoundMessage(provider: string): string {
  return (
    `referenced ClusterProvider "${provider}" was not found; a GitTarget may mirror a source cluster ` +
    'only through an existing ClusterProvider. The operator never creates one: declare it yourself, ' +
    `or let the chart render "${DEFAULT_CLUSTER_PROVIDER}" via clusterProvider.createDefault`
  );
}

export async function gitTargetAdmitted(reader: AuthzReader, target: GitTargetRef): Promise<Decision> {
  const provider = await readProvider(reader, clusterProviderName(target));
  return admittedBy(reader, provider, clusterProviderName(target), target.metadata.namespace ?? '');
}

/** Reads a ClusterProvider through the reader, a failure becoming a `GateReadError`. */
export function readProvider(reader: AuthzReader, name: string): Promise<ClusterProviderPolicy | undefined> {
  return readOrThrow(`ClusterProvider "${name}"`, () => reader.clusterProvider(name));
}

/**
 * Steps 1 to 3 for an already-read provider (so a caller deciding several things about
 * one provider reads it once).
 */
export async function admittedBy(
  reader: AuthzReader,
  provider: ClusterProviderPolicy | undefined,
  providerName: string,
  namespace: string,
): Promise<Decision> {
  if (!provider) return denied(ReasonClusterProviderNotFound, providerNotFoundMessage(providerName));
  const superseded = supersededFieldRefusal('ClusterProvider', { name: providerName }, provider.spec ?? {});
  if (superseded) return superseded;
  const accessFrom = provider.spec?.accessFrom;
  // Labels decide only when no name matched and there is a selector: otherwise the
  // answer is known without a read that could fail.
  const needsLabels = !accessFrom?.names?.includes(namespace) && accessFrom?.selector !== undefined;
  const labels = needsLabels
    ? await readOrThrow(`Namespace "${namespace}"`, () => reader.namespaceLabels(namespace))
    : undefined;
  return accessFromAdmits(providerName, accessFrom, namespace, labels ?? {});
}
