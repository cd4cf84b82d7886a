/**
 * The one failure of a client-cluster call that is about the cluster, not the request:
 * no answer within the deadline, or no connection at all. Callers report it per cluster
 * (Reason.ClusterUnreachable) and go on with the others; the apiserver's own refusals
 * (Forbidden, Invalid...) stay ApiErrors, since they say something about what was asked.
 */
import { Reason } from '../domain/reasons.ts';

export class ClusterUnreachableError extends Error {
  override readonly name = 'ClusterUnreachableError';
  /** Always {@link Reason.ClusterUnreachable}, for callers that report `reason`. */
  readonly reason = Reason.ClusterUnreachable;
  /** The client cluster's id, `<namespace>/<name>`. */
  readonly id: string;

  constructor(id: string, message: string, options?: { cause?: unknown }) {
    super(`cluster ${id}: ${message}`, options);
    this.id = id;
  }
}

export function isClusterUnreachable(err: unknown): err is ClusterUnreachableError {
  return err instanceof ClusterUnreachableError;
}
