/**
 * What every terdut controller shares: options, status writes that happen only when the
 * status changed, and turning a failure into a condition message.
 */
import {
  applyStatusIfChanged,
  type Clock,
  type Condition,
  type EventRecorder,
  EventType,
  type GroupVersionKind,
  type KubeClient,
  type KubeObject,
  type StatusWriteOptions,
  withConditions,
} from '@operators/kit';
import type { TerdutServer } from '../api/terdut-server.ts';
import type { CallRecord } from '../client/terdut-api.ts';
import { FIELD_MANAGER } from '../domain/names.ts';

/** DESIGN §5: "every 5–10 minutes". */
export const DEFAULT_RESYNC_MS = 5 * 60_000;

export interface TerdutControllerOptions {
  /**
   * Where a server answers. In a cluster, `http://<status.serviceName>.<namespace>.svc:<port>`;
   * a run outside the cluster (tests, `npm run up`) maps a server to another address here,
   * never through a spec field.
   */
  readonly serverUrl?: (server: TerdutServer, inCluster: string) => string;
  /** The periodic resync that catches drift made on the server directly. */
  readonly resyncMs?: number;
  /** Per-request timeout of terdut-server calls. */
  readonly apiTimeoutMs?: number;
  /** Whether the cluster serves Zalando's postgresql CRD (checked once at start). */
  readonly zalando?: boolean;
  readonly clock?: Clock;
  readonly concurrency?: number;
  /** Every terdut-server call, for metrics and tests. */
  readonly onApiCall?: (call: CallRecord & { readonly controller: string }) => void;
}

export { withConditions };

export function errorMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > 1000 ? `${m.slice(0, 1000)}…` : m;
}

/**
 * Server-side applies `status` when it differs from the object's: a resync that finds
 * everything in place writes nothing to Kubernetes.
 *
 * Guarded by default (the read's resourceVersion goes with the apply): a team's or a
 * child's status is the only record of its ID on the server, and a status computed from
 * a cached read that a newer write had overtaken removed the ID (CI under load: a team
 * deleted while the server was down lost its finalizer with no DELETE sent, its team left
 * on the server). A stale write is now refused with Conflict and the reconcile runs again
 * on a fresh read. Each reconcile path of a team or child writes its status once.
 */
export function writeStatus<S extends object>(
  client: KubeClient,
  gvk: GroupVersionKind,
  obj: KubeObject & { readonly status?: S },
  status: S,
  options: StatusWriteOptions = { guarded: true },
): Promise<boolean> {
  return applyStatusIfChanged(client, gvk, obj, status, FIELD_MANAGER, options);
}

/**
 * A TerdutServer's status writes: unguarded, since its bootstrap writes several times
 * from one read, and its credentials are recorded first in their Secret, from which
 * every step resumes (a field a stale write removed is read there again).
 */
export const SERVER_STATUS_WRITE: StatusWriteOptions = { guarded: false };

/** A wait, not a failure: the reconcile comes back after `afterMs` without counting an error. */
export class Waiting extends Error {
  override readonly name = 'Waiting';
  readonly afterMs: number;
  constructor(message: string, afterMs: number) {
    super(message);
    this.afterMs = afterMs;
  }
}

/** Decodes one key of a Secret's data; undefined when absent. */
export function secretValue(secret: KubeObject | undefined, key: string): string | undefined {
  const data = (secret as { data?: Record<string, string> } | undefined)?.data;
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/** Encodes Secret data. */
export function secretData(values: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );
}

/**
 * A failed clean-up, said where a user looks: a Degraded condition and a Warning Event.
 * The finalizer stays; the caller throws (retry with backoff) or waits.
 */
export async function markDegraded<S extends { readonly conditions?: readonly Condition[] }>(
  client: KubeClient,
  recorder: EventRecorder,
  gvk: GroupVersionKind,
  obj: KubeObject & { readonly status?: S },
  reason: string,
  message: string,
  clock: Clock,
): Promise<void> {
  recorder.event(obj, { type: EventType.Warning, reason: 'DeleteFailed', action: 'Delete', note: message });
  await writeStatus(client, gvk, obj, {
    ...obj.status,
    conditions: withConditions(
      obj.status?.conditions,
      [{ type: 'Degraded', status: 'True', reason, message }],
      new Date(clock.now()),
    ),
  } as S);
}

/**
 * A Warning Event when an object turns not-ready for a new reason (a missing reference,
 * refused consent, no credentials yet): said once, on the transition, where
 * `kubectl describe` shows it; the condition carries it from then on.
 */
export function announce(
  recorder: EventRecorder,
  obj: KubeObject & { readonly status?: { readonly conditions?: readonly Condition[] } },
  conditionType: string,
  reason: string,
  message: string,
): void {
  const was = obj.status?.conditions?.find((c) => c.type === conditionType);
  if (was?.status === 'False' && was.reason === reason) return;
  recorder.event(obj, { type: EventType.Warning, reason, action: 'Reconcile', note: message });
}

/**
 * A watch's mapping that reads the controller's own primary cache: nothing while that cache
 * has not synced (reading it would throw), which loses nothing, since its first list
 * enqueues every primary object anyway.
 */
export function whenSynced<O>(
  primary: { readonly store: { hasSynced(): boolean } },
  map: (o: O) => readonly string[],
): (o: O) => readonly string[] {
  return (o) => (primary.store.hasSynced() ? map(o) : []);
}
