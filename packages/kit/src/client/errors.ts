/**
 * Errors from the apiserver, classified so that callers branch on a reason, not on
 * HTTP codes or message text. The reasons are the `metav1.StatusReason` values that
 * matter to a controller, plus `Transient` for everything that deserves a retry
 * (network errors, 5xx, timeouts).
 */

/** Every reason a caller may branch on. */
export const ApiErrorReason = {
  /** 404: the object or the resource does not exist. */
  NotFound: 'NotFound',
  /** 409 on create: an object of that name exists already. */
  AlreadyExists: 'AlreadyExists',
  /** 409 otherwise: a resourceVersion precondition failed, or a server-side apply conflict between field managers. */
  Conflict: 'Conflict',
  /** 403: RBAC or an admission policy said no. Retrying does not help until someone changes the rules. */
  Forbidden: 'Forbidden',
  /** 401: the credentials were refused. */
  Unauthorized: 'Unauthorized',
  /** 422: the object failed validation (schema, CEL rule, admission); `causes` says which fields. */
  Invalid: 'Invalid',
  /** 410: the resourceVersion asked for is older than what the server keeps; relist. */
  Gone: 'Gone',
  /** 429: the server asks the client to slow down; `retryAfterSeconds` says for how long. */
  TooManyRequests: 'TooManyRequests',
  /** 400 and other 4xx: the request itself is wrong; retrying the same request fails the same way. */
  BadRequest: 'BadRequest',
  /** Network errors, 5xx, timeouts: worth retrying with backoff. */
  Transient: 'Transient',
} as const;
export type ApiErrorReason = (typeof ApiErrorReason)[keyof typeof ApiErrorReason];

export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** The `Status` object the apiserver returns with an error. */
export interface ApiStatus {
  readonly kind?: string;
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: { readonly causes?: readonly StatusCause[]; readonly retryAfterSeconds?: number };
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly reason: ApiErrorReason;
  readonly code: number;
  readonly causes: readonly StatusCause[];
  readonly retryAfterSeconds: number | undefined;
  /** What was asked, for messages that name the object: "GET /api/v1/namespaces/x/configmaps/y". */
  readonly request: string;

  constructor(
    reason: ApiErrorReason,
    code: number,
    message: string,
    request: string,
    causes: readonly StatusCause[] = [],
    retryAfterSeconds?: number,
  ) {
    super(`${request}: ${reason} (${code}): ${message}`);
    this.reason = reason;
    this.code = code;
    this.causes = causes;
    this.retryAfterSeconds = retryAfterSeconds;
    this.request = request;
  }

  /** Worth retrying the same request later (with backoff). */
  get retryable(): boolean {
    return (
      this.reason === ApiErrorReason.Transient ||
      this.reason === ApiErrorReason.TooManyRequests ||
      this.reason === ApiErrorReason.Conflict
    );
  }
}

/** Classifies an HTTP error response: the Status body's reason where it has one, the code otherwise. */
export function classifyStatus(
  code: number,
  body: unknown,
  request: string,
  retryAfterHeader?: string | null,
): ApiError {
  const status: ApiStatus = isStatus(body) ? body : {};
  const message = status.message ?? (typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${code}`);
  const causes = status.details?.causes ?? [];
  const headerRetry = retryAfterHeader ? Number.parseInt(retryAfterHeader, 10) : Number.NaN;
  const retryAfter =
    status.details?.retryAfterSeconds ?? (Number.isFinite(headerRetry) ? headerRetry : undefined);
  const reason = reasonFor(code, status.reason);
  return new ApiError(reason, code, message, request, causes, retryAfter);
}

function reasonFor(code: number, statusReason: string | undefined): ApiErrorReason {
  switch (statusReason) {
    case 'NotFound':
      return ApiErrorReason.NotFound;
    case 'AlreadyExists':
      return ApiErrorReason.AlreadyExists;
    case 'Conflict':
      return ApiErrorReason.Conflict;
    case 'Forbidden':
      return ApiErrorReason.Forbidden;
    case 'Unauthorized':
      return ApiErrorReason.Unauthorized;
    case 'Invalid':
      return ApiErrorReason.Invalid;
    case 'Gone':
    case 'Expired':
      return ApiErrorReason.Gone;
    case 'TooManyRequests':
      return ApiErrorReason.TooManyRequests;
  }
  if (code === 404) return ApiErrorReason.NotFound;
  if (code === 409) return ApiErrorReason.Conflict;
  if (code === 403) return ApiErrorReason.Forbidden;
  if (code === 401) return ApiErrorReason.Unauthorized;
  if (code === 422) return ApiErrorReason.Invalid;
  if (code === 410) return ApiErrorReason.Gone;
  if (code === 429) return ApiErrorReason.TooManyRequests;
  if (code >= 500 || code === 408) return ApiErrorReason.Transient;
  return ApiErrorReason.BadRequest;
}

function isStatus(body: unknown): body is ApiStatus {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

/** A network-level failure (refused, reset, timed out) as a Transient ApiError. */
export function transientError(request: string, cause: unknown): ApiError {
  const msg = cause instanceof Error ? `${cause.message}${causeCode(cause)}` : String(cause);
  return new ApiError(ApiErrorReason.Transient, 0, msg, request);
}

function causeCode(err: Error): string {
  const c = (err as { cause?: { code?: string; message?: string } }).cause;
  return c ? ` (${c.code ?? c.message ?? ''})` : '';
}

export function isApiError(err: unknown, reason?: ApiErrorReason): err is ApiError {
  return err instanceof ApiError && (reason === undefined || err.reason === reason);
}
