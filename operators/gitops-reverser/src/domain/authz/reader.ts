/**
 * What the gate reads, passed in by each call site so the decision stays testable
 * without a cluster and every call site reads the same way (the control cluster's cache
 * in the operator).
 *
 * Contract: NotFound is `undefined`; any other failure throws. The gate turns a thrown
 * read into a thrown {@link GateReadError}, so a caller requeues and keeps what is
 * running instead of tearing down a data plane on a transient apiserver failure.
 */
import type { ClusterProviderPolicy } from './policy.ts';

export interface AuthzReader {
  /** The cluster-scoped ClusterProvider `name`, or undefined when it does not exist. */
  clusterProvider(name: string): Promise<ClusterProviderPolicy | undefined>;
  /**
   * The labels of Namespace `name` in the CONTROL cluster (never a source cluster, even
   * for a remote provider), or undefined when the Namespace does not exist.
   */
  namespaceLabels(name: string): Promise<Readonly<Record<string, string>> | undefined>;
}

/** A read the gate could not make: not a decision. The caller requeues and tears nothing down. */
export class GateReadError extends Error {
  override readonly name = 'GateReadError';
  readonly what: string;
  constructor(what: string, cause: unknown) {
    super(`cannot read ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.what = what;
  }
}

/** Calls `read`, wrapping anything it throws as a {@link GateReadError} naming `what`. */
export async function readOrThrow<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new GateReadError(what, err);
  }
}
