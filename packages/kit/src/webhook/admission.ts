/**
 * Admission webhooks (`admission.k8s.io/v1` AdmissionReview): what a handler receives,
 * the decisions it may return, and the pure translation of a decision into the
 * AdmissionResponse the apiserver reads.
 *
 * A decision is data: allow, deny (with a CamelCase reason, a message for the human
 * whose request was refused, and an HTTP code), or, for mutating webhooks, allow with a
 * patch (JSON patch operations, or the desired object from which the patch is computed).
 * The apiserver prefixes a denial's message with `admission webhook "<name>" denied the
 * request: ` and returns the decision's code and reason to the client.
 *
 * Caveats: the apiserver waits `timeoutSeconds` (10 s by default, 30 s at most) for an
 * answer, then applies the webhook's `failurePolicy`; a handler must answer well within
 * it. A mutating webhook may be called again after other webhooks changed the object
 * (`reinvocationPolicy: IfNeeded`), and for a dry run: its decision must depend on the
 * request only (idempotent, no side effect unless `sideEffects` says so).
 */
import type { JsonPatchOp } from '../client/client.ts';
import type { KubeObject } from '../client/types.ts';
import { type JsonValue, jsonPatchDiff } from './json-patch.ts';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

/** The operation a request performs. `CONNECT` is `exec`, `attach`, `port-forward` and proxy. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionUserInfo {
  readonly username?: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** `AdmissionRequest` of admission.k8s.io/v1, as the apiserver sends it. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  /** Echoed in the response; the server does it for you. */
  readonly uid: string;
  /** The kind of the object, in the version the webhook asked for in its rules. */
  readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
  readonly resource: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource?: string;
  /** The kind as the client sent it, when the apiserver converted it for the webhook. */
  readonly requestKind?: { readonly group: string; readonly version: string; readonly kind: string };
  readonly requestResource?: { readonly group: string; readonly version: string; readonly resource: string };
  readonly requestSubResource?: string;
  /** Empty for cluster-scoped objects; for a CREATE with `generateName`, the name is empty too. */
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly userInfo: AdmissionUserInfo;
  /** The object after the request (absent for DELETE). */
  readonly object?: T | null;
  /** The object before the request (UPDATE and DELETE). */
  readonly oldObject?: T | null;
  /** True when nothing will be persisted: a handler with side effects must not act. */
  readonly dryRun?: boolean;
  /** The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`). */
  readonly options?: KubeObject | null;
}

export interface AdmissionReview {
  readonly apiVersion: typeof ADMISSION_API_VERSION;
  readonly kind: 'AdmissionReview';
  readonly request?: AdmissionRequest;
  readonly response?: AdmissionResponse;
}

/** `AdmissionResponse` of admission.k8s.io/v1. */
export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: {
    readonly status?: 'Success' | 'Failure';
    readonly code?: number;
    readonly reason?: string;
    readonly message?: string;
  };
  readonly patchType?: 'JSONPatch';
  /** Base64 of the JSON patch. */
  readonly patch?: string;
  readonly warnings?: readonly string[];
}

/**
 * Reasons the server itself gives in denials it makes (a handler chooses its own).
 * CamelCase, like `metav1.StatusReason`, so that clients branch on them.
 *
 * Every refusal of the server's is a denial in an AdmissionReview (HTTP 200), never a
 * bare HTTP error: the apiserver treats an HTTP error as a failed call and applies the
 * webhook's `failurePolicy`, so under `Ignore` a body the server could not check would
 * be admitted unchecked. A denial is applied whatever the policy (controller-runtime
 * answers the same way).
 */
export const AdmissionReason = {
  /**
   * The handler threw or rejected, or returned a mutation that cannot be applied (an
   * object that is not JSON, a change to a DELETE): the request is refused rather than
   * admitted unchecked. Code 500.
   */
  HandlerFailed: 'InternalError',
  /**
   * The handler had not answered at the apiserver's deadline (its `timeout` parameter,
   * 30 s without one). Code 504. The apiserver has stopped waiting by then and applied
   * the webhook's `failurePolicy`, so it never sees this denial: it is for direct
   * callers, the log and the metrics.
   */
  HandlerTimedOut: 'Timeout',
  /** The body is not JSON, or not a review of the kind and version the path serves. Code 400. */
  BadRequest: 'BadRequest',
  /** The body is over the server's `maxBodyBytes`. Code 413. */
  RequestEntityTooLarge: 'RequestEntityTooLarge',
  /** Not a POST. Code 405. */
  MethodNotAllowed: 'MethodNotAllowed',
  /** The content type is not `application/json`. Code 415. */
  UnsupportedMediaType: 'UnsupportedMediaType',
  /** No webhook is registered at the path (a configuration naming the wrong path). Code 404. */
  NotFound: 'NotFound',
} as const;

/** Allowed, unchanged. */
export interface Allow {
  readonly type: 'allow';
  readonly warnings?: readonly string[];
}

/** Refused: the client receives `code` and `reason`, and `message` after the apiserver's prefix. */
export interface Deny {
  readonly type: 'deny';
  /** HTTP code the client sees; 403 by default, as controller-runtime's `Denied`. At least 400. */
  readonly code: number;
  /** CamelCase, for clients that branch on it (`Forbidden`, `Invalid`, or your own). */
  readonly reason: string;
  /** For the human: what was refused and what to do instead. */
  readonly message: string;
  readonly warnings?: readonly string[];
}

/** Allowed with these changes (a mutating webhook only). */
export interface Patched {
  readonly type: 'patch';
  readonly patch: readonly JsonPatchOp[];
  readonly warnings?: readonly string[];
}

/**
 * Allowed, changed into `object`: the server computes the JSON patch from the request's
 * object as the apiserver sent it (a pristine copy the handler never sees), so `object`
 * may be the handler's own request object edited in place.
 */
export interface Mutated {
  readonly type: 'mutate';
  readonly object: unknown;
  readonly warnings?: readonly string[];
}

/** What a validating handler returns. */
export type ValidationDecision = Allow | Deny;
/** What a mutating handler returns. */
export type MutationDecision = Allow | Deny | Patched | Mutated;

export function allow(warnings?: readonly string[]): Allow {
  return warnings ? { type: 'allow', warnings } : { type: 'allow' };
}

export function deny(
  reason: string,
  message: string,
  opts: { code?: number; warnings?: readonly string[] } = {},
): Deny {
  return {
    type: 'deny',
    code: opts.code ?? 403,
    reason,
    message,
    ...(opts.warnings ? { warnings: opts.warnings } : {}),
  };
}

export function patch(ops: readonly JsonPatchOp[], warnings?: readonly string[]): Patched {
  return { type: 'patch', patch: ops, ...(warnings ? { warnings } : {}) };
}

/** Allow the request with the object changed into `object` (a whole object, not a fragment). */
export function mutateTo(object: unknown, warnings?: readonly string[]): Mutated {
  return { type: 'mutate', object, ...(warnings ? { warnings } : {}) };
}

/** What a handler may use besides the request (which is the handler's own copy: edit it freely). */
export interface AdmissionContext {
  /**
   * Aborts at the apiserver's deadline (its `timeout`), at the server's
   * `handlerTimeoutMs` when one is set and sooner, or when the apiserver hangs up.
   */
  readonly signal: AbortSignal;
}

export type ValidatingHandler<T extends KubeObject = KubeObject> = (
  request: AdmissionRequest<T>,
  ctx: AdmissionContext,
) => ValidationDecision | Promise<ValidationDecision>;

export type MutatingHandler<T extends KubeObject = KubeObject> = (
  request: AdmissionRequest<T>,
  ctx: AdmissionContext,
) => MutationDecision | Promise<MutationDecision>;

/**
 * The AdmissionResponse for `decision` on `request`.
 *
 * `request` must be the request as the apiserver sent it: a `mutate` decision's patch
 * is the difference between `request.object` and the decision's object, so an object
 * the handler edited in place and returned would be diffed against itself and its
 * change lost. The server passes a pristine copy and gives the handler another.
 *
 * @throws Error for a `mutate` decision whose object is not JSON-serialisable, or on a
 *   request without an object (DELETE, CONNECT): the server turns it into a denial.
 */
export function admissionResponse(request: AdmissionRequest, decision: MutationDecision): AdmissionResponse {
  const warnings = decision.warnings?.length ? { warnings: decision.warnings } : {};
  switch (decision.type) {
    case 'allow':
      return { uid: request.uid, allowed: true, ...warnings };
    case 'deny':
      return {
        uid: request.uid,
        allowed: false,
        // The apiserver raises codes below 400 to 400; say what it will do.
        status: {
          status: 'Failure',
          code: Math.max(400, decision.code),
          reason: decision.reason,
          message: decision.message,
        },
        ...warnings,
      };
    case 'patch':
      return withPatch(request.uid, decision.patch, warnings);
    case 'mutate': {
      if (request.object === undefined || request.object === null) {
        throw new Error(`a ${request.operation} request has no object to mutate`);
      }
      const desired = toJson(decision.object);
      return withPatch(request.uid, jsonPatchDiff(request.object as unknown as JsonValue, desired), warnings);
    }
    default: {
      const never: never = decision;
      throw new Error(`unknown admission decision ${JSON.stringify(never)}`);
    }
  }
}

function withPatch(
  uid: string,
  ops: readonly JsonPatchOp[],
  warnings: { warnings?: readonly string[] },
): AdmissionResponse {
  // An empty patch is no patch: the apiserver would apply it for nothing.
  if (ops.length === 0) return { uid, allowed: true, ...warnings };
  return {
    uid,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
    ...warnings,
  };
}

/** The value as JSON sees it (undefined keys dropped, Dates as strings). */
function toJson(value: unknown): JsonValue {
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error('the mutated object is not JSON (undefined or a function)');
  return JSON.parse(text) as JsonValue;
}
