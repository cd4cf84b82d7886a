/**
 * The outcome of compiling or evaluating: a value or an error, never both, never neither.
 *
 * Guarantee: no function of this package converts an error into `false` (or `true`).
 * A caller that wants "deny on error" writes it, visibly, with a `switch` on `ok`.
 */
import type { CelError } from './errors.ts';

export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: CelError };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail<T>(error: CelError): Result<T> {
  return { ok: false, error };
}
