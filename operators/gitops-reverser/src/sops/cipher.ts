/**
 * One encrypted value in sops' format:
 * `ENC[AES256_GCM,data:<b64>,iv:<b64>,tag:<b64>,type:<str|int|float|bool>]`.
 *
 * AES-256-GCM with the file's data key, a fresh random 32-byte IV per value (sops'
 * nonce size, not GCM's usual 12), a 16-byte tag, and the additional data binding
 * the value to its place in the tree (see {@link additionalData}) so that values
 * cannot be moved between keys. An empty plaintext is not encrypted at all: sops
 * stores it as the empty string.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SopsError, SopsErrorKind } from './errors.ts';
import { type LeafValue, leafText, leafType, parseLeaf } from './leaf.ts';

/** The data key is 32 random bytes: AES-256. */
export const DATA_KEY_BYTES = 32;
/** sops draws 32-byte GCM nonces (aes/cipher.go); decryption accepts whatever length a file carries. */
const IV_BYTES = 32;
/** GCM's full 16-byte tag, the only length Go's cipher.NewGCMWithNonceSize opens. */
const TAG_BYTES = 16;
/** Standard base64, padded: what Go's base64.StdEncoding writes and reads. */
const B64 = '[A-Za-z0-9+/]*={0,2}';
/** The format of an encrypted value; the type is checked by {@link parseLeaf}. */
const ENCRYPTED_VALUE = new RegExp(
  `^ENC\\[AES256_GCM,data:(${B64}),iv:(${B64}),tag:(${B64}),type:([a-z]+)\\]$`,
);

/**
 * The additional authenticated data of a value: the keys from the root to it, each
 * followed by a colon (`data:password:`). Sequence items share their parent's path.
 */
export function additionalData(path: readonly string[]): string {
  return path.map((k) => `${k}:`).join('');
}

/** True when a string is an encrypted value, not plaintext. */
export function isEncryptedValue(text: string): boolean {
  return ENCRYPTED_VALUE.test(text);
}

/** Encrypts one value; the empty string stays the empty string, as in sops. */
export function encryptValue(value: LeafValue, key: Uint8Array, aad: string): string {
  if (value === '') return '';
  const text = leafText(value);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `ENC[AES256_GCM,data:${data.toString('base64')},iv:${iv.toString('base64')},tag:${tag.toString('base64')},type:${leafType(value)}]`;
}

/**
 * Decrypts one value. `where` names it in errors (the path, never the value).
 * A value whose tag does not verify was changed or moved: Tampered.
 */
export function decryptValue(text: string, key: Uint8Array, aad: string, where: string): LeafValue {
  if (text === '') return '';
  const m = ENCRYPTED_VALUE.exec(text);
  if (!m) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `${where}: value is not in sops' encrypted format ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`,
    );
  }
  const [, data = '', ivB64 = '', tagB64 = '', type = ''] = m;
  const iv = base64(ivB64, where);
  const tag = base64(tagB64, where);
  if (iv.length === 0 || tag.length !== TAG_BYTES) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `${where}: encrypted value has an empty IV or a tag that is not 16 bytes`,
    );
  }
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    plaintext = Buffer.concat([decipher.update(base64(data, where)), decipher.final()]);
  } catch (err) {
    throw new SopsError(
      SopsErrorKind.Tampered,
      `${where}: encrypted value fails authentication: it was changed, moved to another key, or encrypted with another data key`,
      { cause: err },
    );
  }
  return parseLeaf(type, plaintext, where);
}

function base64(text: string, where: string): Buffer {
  if (text.length % 4 !== 0) {
    throw new SopsError(SopsErrorKind.Malformed, `${where}: encrypted value holds base64 of a wrong length`);
  }
  return Buffer.from(text, 'base64');
}
