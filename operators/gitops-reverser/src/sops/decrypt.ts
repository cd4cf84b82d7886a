/**
 * Reads a SOPS YAML file back, as `sops --decrypt` does: opens the data key with an
 * age identity, decrypts the values the file's rule marks as encrypted, and checks
 * the MAC over all values so that a changed plaintext field (a label, the type) or
 * a removed key is caught, not only a changed ciphertext.
 *
 * The operator uses it on the file already in Git to tell whether the Secret
 * changed; it reads files written by sops itself too (one document, age keys, any
 * of sops' suffix or regex rules).
 */
import { createHash } from 'node:crypto';
import { isMap, isScalar, isSeq, parseDocument, type YAMLMap } from 'yaml';
import { decryptDataKey } from './age-key.ts';
import { additionalData, decryptValue } from './cipher.ts';
import { shouldEncrypt } from './crypt-rules.ts';
import { SopsError, SopsErrorKind } from './errors.ts';
import { leafBytes } from './leaf.ts';
import { macAdditionalData, readMetadata, SOPS_METADATA_KEY, type SopsMetadata } from './metadata.ts';
import { parseIdentities } from './recipients.ts';
import { collectLeaves, showPath } from './tree.ts';

/**
 * The 32 bytes sops hashes first when `mac_only_encrypted` is set, so that such a
 * MAC never equals one over all values (sops.go, MACOnlyEncryptedInitialization).
 */
const MAC_ONLY_ENCRYPTED_INIT = Buffer.from(
  '8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69',
  'hex',
);

/** A decrypted file: the document without its `sops` block, and that block. */
export interface DecryptedSops {
  readonly document: Record<string, unknown>;
  readonly metadata: SopsMetadata;
}

/**
 * Decrypts a SOPS YAML file with age identities (secret keys, or age key file
 * texts). Throws a SopsError: NoMatchingIdentity when no identity opens it,
 * Tampered when a value or the MAC does not verify, Malformed or Unsupported when
 * it is not a SOPS file this reads.
 */
export async function decryptSops(
  text: string,
  identities: readonly string[],
): Promise<Record<string, unknown>> {
  return (await decryptSopsFile(text, identities)).document;
}

/** {@link decryptSops}, also returning the file's metadata (its recipients, its time). */
export async function decryptSopsFile(text: string, identities: readonly string[]): Promise<DecryptedSops> {
  const ids = parseIdentities(identities);
  const { root, metadata } = parseSopsYaml(text);
  const dataKey = await decryptDataKey(metadata.age, ids);

  const mac = createHash('sha512');
  if (metadata.macOnlyEncrypted) mac.update(MAC_ONLY_ENCRYPTED_INIT);
  for (const leaf of collectLeaves(root)) {
    const encrypted = shouldEncrypt(metadata.rule, leaf.path);
    let value = leaf.value;
    if (encrypted) {
      if (typeof value !== 'string') {
        throw new SopsError(
          SopsErrorKind.Malformed,
          `${showPath(leaf.path)}: should be encrypted but holds a plain ${typeof value}`,
        );
      }
      value = decryptValue(value, dataKey, additionalData(leaf.path), showPath(leaf.path));
      leaf.scalar.value = value;
    }
    if (encrypted || !metadata.macOnlyEncrypted) mac.update(leafBytes(value));
  }

  const computed = mac.digest('hex').toUpperCase();
  let stored: unknown;
  try {
    stored = decryptValue(metadata.mac, dataKey, macAdditionalData(metadata.lastModified), 'sops.mac');
  } catch (err) {
    throw new SopsError(
      SopsErrorKind.Tampered,
      'the MAC cannot be decrypted: the file or its lastmodified time was changed',
      { cause: err },
    );
  }
  if (stored !== computed) {
    throw new SopsError(
      SopsErrorKind.Tampered,
      stored === ''
        ? 'the file has no MAC'
        : 'MAC mismatch: the file was changed after it was encrypted (a value, a key or a plaintext field)',
    );
  }
  return { document: toPlain(root) as Record<string, unknown>, metadata };
}

/** The recipients a SOPS file's data key is encrypted for, without decrypting anything. */
export function sopsRecipients(text: string): string[] {
  return parseSopsYaml(text).metadata.age.map((a) => a.recipient);
}

function parseSopsYaml(text: string): { root: YAMLMap; metadata: SopsMetadata } {
  // Integers as bigint: a value above 2^53 must hash with all its digits.
  const doc = parseDocument(text, { intAsBigInt: true, uniqueKeys: true });
  const [error] = doc.errors;
  if (error) {
    throw new SopsError(SopsErrorKind.Malformed, `not valid YAML: ${error.message.split('\n')[0]}`);
  }
  const root = doc.contents;
  if (!isMap(root))
    throw new SopsError(SopsErrorKind.Malformed, 'not a SOPS file: the document is not a mapping');
  const index = root.items.findIndex((p) => isScalar(p.key) && p.key.value === SOPS_METADATA_KEY);
  const pair = root.items[index];
  if (!pair) throw new SopsError(SopsErrorKind.Malformed, 'not a SOPS file: it has no `sops` metadata');
  root.items.splice(index, 1);
  const metadata = readMetadata(toPlain(pair.value));
  return { root: root as YAMLMap, metadata };
}

/** A YAML node as plain data, in document order (JavaScript moves integer-like keys first). */
function toPlain(node: unknown): unknown {
  if (isMap(node)) {
    const out: Record<string, unknown> = {};
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : pair.key;
      out[String(key)] = toPlain(pair.value);
    }
    return out;
  }
  if (isSeq(node)) return node.items.map(toPlain);
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === 'bigint' && Number.isSafeInteger(Number(v))) return Number(v);
    return v ?? null;
  }
  return node ?? null;
}
