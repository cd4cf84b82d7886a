/**
 * Every failure of SOPS encryption or decryption that a caller can act on is a
 * SopsError with a kind: a bad key in the configuration is fixed by the user, a file
 * that none of our identities opens or that was tampered with is rewritten by the
 * operator, an unsupported file is reported.
 */
export const SopsErrorKind = {
  /** A recipient is not an age public key this implementation and sops both accept. */
  InvalidRecipient: 'InvalidRecipient',
  /** An identity is not an age secret key. */
  InvalidIdentity: 'InvalidIdentity',
  /** The text is not a SOPS YAML file (no `sops` block, broken YAML, a value not in sops' format). */
  Malformed: 'Malformed',
  /** A SOPS feature this implementation does not read (Shamir key groups, comment rules, YAML aliases). */
  Unsupported: 'Unsupported',
  /** None of the given identities opens the file's data key. */
  NoMatchingIdentity: 'NoMatchingIdentity',
  /** A value fails its AES-GCM authentication or the file's MAC does not match its content. */
  Tampered: 'Tampered',
} as const;
export type SopsErrorKind = (typeof SopsErrorKind)[keyof typeof SopsErrorKind];

export class SopsError extends Error {
  override readonly name = 'SopsError';
  readonly kind: SopsErrorKind;

  constructor(kind: SopsErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/** True when `err` is a SopsError of this kind. */
export function isSopsError(err: unknown, kind?: SopsErrorKind): err is SopsError {
  return err instanceof SopsError && (kind === undefined || err.kind === kind);
}
