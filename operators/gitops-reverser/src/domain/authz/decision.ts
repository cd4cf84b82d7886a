/**
 * The outcome of a ClusterProvider namespace-admission check. A denial always carries a
 * reason and an operator-legible message; an admission carries neither, so no caller can
 * publish a stale denial text next to an admitted target.
 */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string; readonly message: string };

export const ADMITTED: Decision = Object.freeze({ allowed: true });

export function denied(reason: string, message: string): Decision {
  return { allowed: false, reason, message };
}
