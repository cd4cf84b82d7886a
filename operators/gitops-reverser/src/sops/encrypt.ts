/**
 * A Kubernetes Secret as a SOPS YAML file, so that it can sit in Git: every value
 * under `data` and `stringData` encrypted, the rest (apiVersion, kind, metadata,
 * type) in plain text for review, and `sops --decrypt` with an age identity of any
 * recipient gives the Secret back.
 *
 * Each call draws a new data key and new IVs, so two encryptions of the same Secret
 * differ; callers that must not churn Git compare plaintexts first
 * (sameSecretContent).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Document, isMap, type YAMLMap } from 'yaml';
import { encryptDataKey } from './age-key.ts';
import { additionalData, DATA_KEY_BYTES, encryptValue } from './cipher.ts';
import { cryptRule, SECRET_ENCRYPTED_REGEX, shouldEncrypt } from './crypt-rules.ts';
import { SopsError, SopsErrorKind } from './errors.ts';
import { leafBytes } from './leaf.ts';
import { formatLastModified, metadataForWriting, SOPS_METADATA_KEY } from './metadata.ts';
import { parseRecipients } from './recipients.ts';
import { collectLeaves } from './tree.ts';
import { quoteAmbiguousStrings, stringifyLikeSops } from './yaml-text.ts';

export interface EncryptOptions {
  /** age public keys (`age1…`, `age1pq1…`); each can decrypt the file alone. */
  readonly recipients: readonly string[];
  /** The file's `lastmodified`; now by default. */
  readonly now?: Date;
}

/**
 * Encrypts a Secret (a plain JSON-like object) into the text of a SOPS YAML file.
 * Key order is kept as the object gives it. Throws a SopsError for a bad recipient
 * or a document sops could not represent.
 */
export async function encryptSecret(
  secretDoc: Record<string, unknown>,
  opts: EncryptOptions,
): Promise<string> {
  const recipients = parseRecipients(opts.recipients);
  assertPlainDocument(secretDoc);

  const doc = new Document(secretDoc, { aliasDuplicateObjects: false });
  const root = doc.contents;
  if (!isMap(root)) throw new SopsError(SopsErrorKind.Malformed, 'the Secret is not a mapping');

  const dataKey = randomBytes(DATA_KEY_BYTES);
  const rule = cryptRule('encrypted_regex', SECRET_ENCRYPTED_REGEX);
  // The MAC covers every leaf, plaintext ones included, in document order: walking
  // the document that is written keeps the hashed order and the written order one.
  const mac = createHash('sha512');
  for (const leaf of collectLeaves(root as YAMLMap)) {
    mac.update(leafBytes(leaf.value));
    if (shouldEncrypt(rule, leaf.path)) {
      leaf.scalar.value = encryptValue(leaf.value, dataKey, additionalData(leaf.path));
    }
  }

  const lastModified = formatLastModified(opts.now ?? new Date());
  const metadata = metadataForWriting({
    age: await encryptDataKey(dataKey, recipients),
    encryptedRegex: SECRET_ENCRYPTED_REGEX,
    lastModified,
    mac: encryptValue(mac.digest('hex').toUpperCase(), dataKey, lastModified),
  });
  root.add(doc.createPair(SOPS_METADATA_KEY, metadata));
  quoteAmbiguousStrings(doc);
  return stringifyLikeSops(doc);
}

/** Only what YAML and sops represent faithfully: no Dates, Maps, class instances, NaN or Infinity. */
function assertPlainDocument(doc: Record<string, unknown>): void {
  if (!isPlainObject(doc)) throw new SopsError(SopsErrorKind.Malformed, 'the Secret must be a plain object');
  if (Object.hasOwn(doc, SOPS_METADATA_KEY)) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `the Secret has a top-level "${SOPS_METADATA_KEY}" key, which SOPS reserves for its metadata`,
    );
  }
  const check = (v: unknown, where: string): void => {
    if (
      v === null ||
      v === undefined ||
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      typeof v === 'bigint'
    ) {
      return;
    }
    if (typeof v === 'number') {
      if (Number.isFinite(v)) return;
      throw new SopsError(SopsErrorKind.Malformed, `${where}: ${v} cannot be written to a Secret manifest`);
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        check(item, `${where}[${i}]`);
      });
      return;
    }
    if (isPlainObject(v)) {
      for (const [k, item] of Object.entries(v)) check(item, `${where}.${k}`);
      return;
    }
    throw new SopsError(SopsErrorKind.Malformed, `${where}: a ${typeof v} that is not plain data`);
  };
  for (const [k, v] of Object.entries(doc)) check(v, k);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
