/**
 * The fingerprint of a published set: the SHA-256 of its canonical text (one prefix per
 * line, each ended by a newline). Canonical text makes it depend on the address set only,
 * not on how the list was written; and it equals `sha256sum` of what
 * `exoledge aggregate` prints, so anyone can check a status against a preview.
 */
import { createHash } from 'node:crypto';
import { canonicalText } from './format.ts';
import type { PrefixList } from './prefix-list.ts';

/** Lower-case hex SHA-256 of the canonical text of `list`. */
export function fingerprint(list: PrefixList): string {
  return fingerprintOfText(canonicalText(list));
}

/** The same, from canonical text already built (the CLI prints and hashes the same bytes). */
export function fingerprintOfText(text: Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The same, fed the canonical text piece by piece (see `canonicalTextPieces`). */
export class Fingerprinter {
  readonly #hash = createHash('sha256');

  update(piece: Uint8Array): void {
    this.#hash.update(piece);
  }

  /** The fingerprint of every piece given; call once. */
  digest(): string {
    return this.#hash.digest('hex');
  }
}
