/**
 * Status conditions with `metav1.Condition` semantics, as pure functions over arrays:
 * a reconciler computes its next conditions from the current ones and writes them in
 * one status patch. The rules are apimachinery's `meta.SetStatusCondition`: one entry
 * per type; `lastTransitionTime` moves only when the status changes, so "Ready since"
 * means what users think it means; and the apiserver's validation is checked here,
 * where the bad reason is written, instead of in a status write that fails later.
 */

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A `metav1.Condition` as it travels in JSON. */
export interface Condition {
  /** CamelCase, e.g. `Ready`; unique within the array. */
  readonly type: string;
  readonly status: ConditionStatus;
  /** The `.metadata.generation` the condition was computed from. */
  readonly observedGeneration?: number;
  /** When `status` last changed (RFC 3339, seconds). */
  readonly lastTransitionTime: string;
  /** A CamelCase reason, one of a closed set per condition type, for machines. */
  readonly reason: string;
  /** For humans; may be empty. */
  readonly message: string;
}

/** What a reconciler states: everything but the transition time, which is derived. */
export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

/** The apiserver's pattern for `reason` (metav1.Condition's kubebuilder validation). */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
/** The apiserver's limit on `reason`, in characters. */
export const MAX_CONDITION_REASON_LENGTH = 1024;
/**
 * The apiserver's limit on `message`. Counted here in UTF-8 bytes: Go's validation of
 * built-in kinds counts bytes and a CRD schema counts characters; bytes satisfies both.
 */
export const MAX_CONDITION_MESSAGE_BYTES = 32768;
/** The apiserver's pattern for `type`: a Kubernetes qualified name (optional DNS prefix, `/`, name). */
export const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
/** The apiserver's limit on `type`, in characters (a CRD schema's maxLength). */
export const MAX_CONDITION_TYPE_LENGTH = 316;
/**
 * Go's validation of built-in kinds checks `type` as a label key: the name after the
 * prefix at most 63 characters, the prefix at most 253. Checked too, so a type that one
 * apiserver path accepts is accepted by all.
 */
const MAX_TYPE_NAME_LENGTH = 63;
const MAX_TYPE_PREFIX_LENGTH = 253;

const STATUSES: ReadonlySet<string> = new Set<ConditionStatus>(['True', 'False', 'Unknown']);

/** A condition the apiserver would refuse: a bug in the reconciler that states it, named precisely. */
export class InvalidConditionError extends Error {
  override readonly name = 'InvalidConditionError';
  readonly field: 'type' | 'status' | 'reason' | 'message' | 'observedGeneration';

  constructor(field: InvalidConditionError['field'], message: string) {
    super(message);
    this.field = field;
  }
}

/** Throws {@link InvalidConditionError} if the apiserver would refuse `c`. */
export function validateCondition(c: ConditionUpdate): void {
  if (!isConditionType(c.type)) {
    throw new InvalidConditionError(
      'type',
      `condition type ${JSON.stringify(c.type)} is not a qualified name such as Ready or example.com/Synced`,
    );
  }
  if (!STATUSES.has(c.status)) {
    throw new InvalidConditionError(
      'status',
      `condition ${c.type}: status ${JSON.stringify(c.status)} is not True, False or Unknown`,
    );
  }
  if (c.reason.length > MAX_CONDITION_REASON_LENGTH || !CONDITION_REASON_PATTERN.test(c.reason)) {
    throw new InvalidConditionError(
      'reason',
      `condition ${c.type}: reason ${JSON.stringify(c.reason.slice(0, 80))} must be CamelCase ` +
        `(a letter, then letters, digits, _ , or :, not ending in , or :), 1 to ${MAX_CONDITION_REASON_LENGTH} characters`,
    );
  }
  const bytes = Buffer.byteLength(c.message ?? '', 'utf8');
  if (bytes > MAX_CONDITION_MESSAGE_BYTES) {
    throw new InvalidConditionError(
      'message',
      `condition ${c.type}: message is ${bytes} bytes, over the ${MAX_CONDITION_MESSAGE_BYTES} the apiserver accepts; shorten it`,
    );
  }
  const g = c.observedGeneration;
  if (g !== undefined && (!Number.isSafeInteger(g) || g < 0)) {
    throw new InvalidConditionError(
      'observedGeneration',
      `condition ${c.type}: observedGeneration ${g} is not a non-negative integer`,
    );
  }
}

/**
 * `conditions` with `update` set: added if its type is new, else merged into the
 * existing entry, whose `lastTransitionTime` becomes `now` only if the status changed.
 * Other entries and the order are kept. Returns `conditions` itself when nothing
 * changed, so `next !== current` tells the caller a status write is due.
 *
 * @throws InvalidConditionError if the apiserver would refuse the condition.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: Date,
): readonly Condition[] {
  validateCondition(update);
  const current = conditions ?? [];
  const i = current.findIndex((c) => c.type === update.type);
  const existing = current[i];
  const message = update.message ?? '';
  if (existing === undefined) {
    return [...current, build(update, message, timestamp(now))];
  }
  const transitioned = existing.status !== update.status;
  if (
    !transitioned &&
    existing.reason === update.reason &&
    existing.message === message &&
    existing.observedGeneration === update.observedGeneration
  ) {
    return current;
  }
  const next = build(update, message, transitioned ? timestamp(now) : existing.lastTransitionTime);
  return current.map((c, j) => (j === i ? next : c));
}

/** `conditions` without the entry of `type` (itself when there was none). */
export function removeCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): readonly Condition[] {
  const current = conditions ?? [];
  return current.some((c) => c.type === type) ? current.filter((c) => c.type !== type) : current;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** The condition of `type` is present with status True. */
export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** The condition of `type` is present with status False (absent is not False: it is unknown). */
export function isFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'False';
}

function isConditionType(type: string): boolean {
  if (type.length > MAX_CONDITION_TYPE_LENGTH || !CONDITION_TYPE_PATTERN.test(type)) return false;
  const slash = type.indexOf('/');
  const name = slash < 0 ? type : type.slice(slash + 1);
  return name.length <= MAX_TYPE_NAME_LENGTH && slash <= MAX_TYPE_PREFIX_LENGTH;
}

function build(u: ConditionUpdate, message: string, lastTransitionTime: string): Condition {
  return u.observedGeneration === undefined
    ? { type: u.type, status: u.status, lastTransitionTime, reason: u.reason, message }
    : {
        type: u.type,
        status: u.status,
        observedGeneration: u.observedGeneration,
        lastTransitionTime,
        reason: u.reason,
        message,
      };
}

/**
 * `metav1.Time` as the apiserver writes it: RFC 3339 in UTC, whole seconds. A
 * millisecond timestamp would be truncated on the way in and differ on the way back,
 * so the next reconcile would see a change that is not one.
 */
export function timestamp(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
