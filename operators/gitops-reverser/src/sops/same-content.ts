/**
 * Whether the encrypted file already in Git holds this Secret. Encryption draws
 * a new data key and new IVs every time, so comparing texts would rewrite every
 * Secret on every resync and churn Git; comparing plaintexts rewrites only what
 * changed.
 *
 * A file that cannot be read back (encrypted for other keys, tampered with, not a
 * SOPS file) is "unreadable": the right move is to rewrite it with the current
 * keys, so it never counts as the same. A bad identity in our own configuration
 * is thrown instead: rewriting cannot fix that.
 */
import { decryptSopsFile } from './decrypt.ts';
import { SopsError, SopsErrorKind } from './errors.ts';
import { parseRecipients } from './recipients.ts';

export type ContentComparison =
  | { readonly kind: 'same' }
  | { readonly kind: 'changed' }
  /** Same plaintext, but the file is encrypted for another set of recipients. */
  | { readonly kind: 'recipients-changed'; readonly fileRecipients: readonly string[] }
  | { readonly kind: 'unreadable'; readonly error: SopsError };

export interface CompareOptions {
  /**
   * The recipients the Secret should be encrypted for now; when given, a file
   * encrypted for another set is not the same (a removed key must lose access).
   */
  readonly recipients?: readonly string[];
}

/** Compares the file's plaintext with a Secret; key order does not matter, values and types do. */
export async function compareSecretContent(
  existingSopsText: string,
  secretDoc: Record<string, unknown>,
  identities: readonly string[],
  opts: CompareOptions = {},
): Promise<ContentComparison> {
  let decrypted: Awaited<ReturnType<typeof decryptSopsFile>>;
  try {
    decrypted = await decryptSopsFile(existingSopsText, identities);
  } catch (err) {
    if (err instanceof SopsError && err.kind !== SopsErrorKind.InvalidIdentity)
      return { kind: 'unreadable', error: err };
    throw err;
  }
  if (opts.recipients) {
    const wanted = new Set(parseRecipients(opts.recipients));
    const fileRecipients = decrypted.metadata.age.map((a) => a.recipient);
    const have = new Set(fileRecipients);
    if (wanted.size !== have.size || [...wanted].some((r) => !have.has(r))) {
      return { kind: 'recipients-changed', fileRecipients };
    }
  }
  return plainEqual(decrypted.document, secretDoc) ? { kind: 'same' } : { kind: 'changed' };
}

/** True when the file holds exactly this Secret (see {@link compareSecretContent}). */
export async function sameSecretContent(
  existingSopsText: string,
  secretDoc: Record<string, unknown>,
  identities: readonly string[],
  opts: CompareOptions = {},
): Promise<boolean> {
  return (await compareSecretContent(existingSopsText, secretDoc, identities, opts)).kind === 'same';
}

/**
 * Equality of YAML-shaped data as the file stores it: object key order ignored,
 * properties holding undefined absent (they are not written), an integer equal
 * whether a number or a bigint.
 */
function plainEqual(a: unknown, b: unknown): boolean {
  if ((typeof a === 'bigint' || typeof b === 'bigint') && isIntegral(a) && isIntegral(b)) {
    return BigInt(a) === BigInt(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => plainEqual(v, b[i]))
    );
  }
  if (isObject(a) && isObject(b)) {
    const ka = definedKeys(a);
    const kb = definedKeys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && plainEqual(a[k], b[k]));
  }
  return Object.is(a, b) || (a === 0 && b === 0);
}

function isIntegral(v: unknown): v is number | bigint {
  return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function definedKeys(o: Record<string, unknown>): string[] {
  return Object.keys(o).filter((k) => o[k] !== undefined);
}
