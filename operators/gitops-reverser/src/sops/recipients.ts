/**
 * The age keys the mirror encrypts to and decrypts with, checked before any file is
 * written: a typo in a recipient must fail the configuration, not produce a file
 * that nobody can open.
 *
 * Accepted are the two kinds that both the `age-encryption` package and sops
 * v3.13 handle natively: X25519 (`age1…`) and the post-quantum hybrid (`age1pq1…`).
 * Tag recipients (`age1tag1…`) are refused: sops treats any other `age1…1…` string
 * as a plugin recipient, which needs a plugin binary at decryption time.
 */
import { Decrypter, Encrypter } from 'age-encryption';
import { SopsError, SopsErrorKind } from './errors.ts';

/** The prefix of an X25519 recipient; bech32 data never contains a `1`, so the separator is the only one. */
const X25519_PREFIX = 'age1';
/** The prefix of a post-quantum hybrid (ML-KEM-768 + X25519) recipient. */
const HYBRID_PREFIX = 'age1pq1';
/** Prefixes of recipients sops would hand to an age plugin. */
const TAG_PREFIXES = ['age1tag1', 'age1tagpq1'] as const;

/** The two identity prefixes the package and sops read. */
const IDENTITY_PREFIXES = ['AGE-SECRET-KEY-1', 'AGE-SECRET-KEY-PQ-1'] as const;

/**
 * Validates age recipients and returns them trimmed, in order, without duplicates.
 * Throws a SopsError (InvalidRecipient) naming the first bad one.
 */
export function parseRecipients(recipients: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of recipients) {
    const r = raw.trim();
    if (!out.includes(r)) out.push(parseRecipient(r));
  }
  if (out.length === 0) {
    throw new SopsError(
      SopsErrorKind.InvalidRecipient,
      'no age recipient given: a Secret must be encrypted to at least one age public key (age1…)',
    );
  }
  return out;
}

function parseRecipient(r: string): string {
  const shown = r.length > 20 ? `${r.slice(0, 20)}…` : r;
  if (TAG_PREFIXES.some((p) => r.startsWith(p))) {
    throw new SopsError(
      SopsErrorKind.InvalidRecipient,
      `age recipient "${shown}" is a tag recipient, which sops can only use through an age plugin; ` +
        'use an X25519 (age1…) or post-quantum (age1pq1…) recipient',
    );
  }
  if (!r.startsWith(X25519_PREFIX)) {
    throw new SopsError(
      SopsErrorKind.InvalidRecipient,
      `"${shown}" is not an age recipient: an age public key starts with "age1" ` +
        '(age-keygen prints it as "Public key: age1…"; an AGE-SECRET-KEY-… is the private half and must not be used here)',
    );
  }
  try {
    // The package parses (bech32, checksum, key length) when a recipient is added.
    new Encrypter().addRecipient(r);
  } catch (err) {
    const kind = r.startsWith(HYBRID_PREFIX) ? 'post-quantum age recipient' : 'X25519 age recipient';
    throw new SopsError(
      SopsErrorKind.InvalidRecipient,
      `"${shown}" is not a valid ${kind}: ${(err as Error).message} (a character is wrong or missing; copy it again from age-keygen)`,
      { cause: err },
    );
  }
  return r;
}

/**
 * Validates age identities. Each entry is one secret key or the text of an age key
 * file (`age-keygen` output: `# created…`, `# public key…` comment lines and one key
 * per line), so the content of a Secret holding `keys.txt` can be passed as is.
 * Returns the secret keys; throws a SopsError (InvalidIdentity) on a bad one.
 */
export function parseIdentities(identities: readonly string[]): string[] {
  const out: string[] = [];
  for (const entry of identities) {
    for (const rawLine of entry.split(/\r?\n/)) {
      const line = rawLine.trim();
      if (line === '' || line.startsWith('#')) continue;
      if (!out.includes(line)) out.push(parseIdentity(line));
    }
  }
  if (out.length === 0) {
    throw new SopsError(
      SopsErrorKind.InvalidIdentity,
      'no age identity given: decrypting needs an age secret key (AGE-SECRET-KEY-1…)',
    );
  }
  return out;
}

function parseIdentity(line: string): string {
  // Never echo a secret key into a message: only its prefix.
  const prefix = IDENTITY_PREFIXES.find((p) => line.startsWith(p));
  if (!prefix) {
    throw new SopsError(
      SopsErrorKind.InvalidIdentity,
      `an age identity must start with "AGE-SECRET-KEY-1" or "AGE-SECRET-KEY-PQ-1"; got one starting with "${line.slice(0, 4)}…"` +
        (line.startsWith('age1') ? ' (that is a public key, a recipient, not an identity)' : ''),
    );
  }
  try {
    new Decrypter().addIdentity(line);
  } catch {
    // The package's message quotes the key: neither it nor the error goes into ours.
    throw new SopsError(
      SopsErrorKind.InvalidIdentity,
      `an age identity starting with "${prefix}" does not parse: a character is wrong or missing (bech32 checksum or length)`,
    );
  }
  return line;
}
