/**
 * The apiserver's verdict on a manifest, from a server-side dry-run: the one call the
 * bridge makes to Kubernetes. The verdict is classified here, purely, from the status
 * and body of the apiserver's answer; src/bridge/apiserver-dry-run.ts makes the call.
 */
import type { EdgeSiteManifest } from './render.ts';

export type DryRunResult =
  /** The apiserver would store the manifest: the schema, its CEL rules and admission accept it. */
  | { readonly kind: 'Accepted' }
  /** The apiserver judged the manifest and refused it; `message` is its own words. */
  | { readonly kind: 'Refused'; readonly message: string }
  /** The apiserver gave no verdict on the manifest (unreachable, forbidden, CRD or namespace missing). */
  | { readonly kind: 'NoVerdict'; readonly message: string };

/** Submits a manifest to a dry-run; never writes. Rejects only for a bug, never for an answer. */
export type DryRun = (manifest: EdgeSiteManifest) => Promise<DryRunResult>;

/**
 * The verdict an apiserver answer carries. `Refused` for 422 (Invalid: the schema and the
 * CEL rules) and 400 (BadRequest: strict field validation's unknown or duplicate fields),
 * the two answers about the object itself. Everything else is `NoVerdict`, 403 included:
 * the bridge cannot tell RBAC refusing *it* from a policy refusing the *manifest*, and
 * either way the manifest was not judged valid; the message says which it was.
 */
export function classifyDryRun(status: number, body: unknown): DryRunResult {
  if (status >= 200 && status < 300) return { kind: 'Accepted' };
  const message = messageOf(body);
  if (status === 422 || status === 400) return { kind: 'Refused', message };
  return { kind: 'NoVerdict', message: `the apiserver answered ${status}: ${message}` };
}

/** The `message` of a `Status` body, else the text as it came (shortened), else nothing useful. */
function messageOf(body: unknown): string {
  if (typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string') {
    return body.message;
  }
  if (typeof body === 'string' && body.trim() !== '') return body.trim().slice(0, 1000);
  return 'no message';
}
