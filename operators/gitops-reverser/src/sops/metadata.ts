/**
 * The `sops:` block at the end of a SOPS YAML file: who can open the data key,
 * which values are encrypted, when the file was last written and its MAC.
 *
 * sops stores `lastmodified` in RFC 3339 to the second and encrypts the MAC (the
 * uppercase hex SHA-512 over the leaves) with the data key and, as additional data,
 * that time as Go prints it after parsing: so the time cannot be changed without
 * the MAC failing.
 */

import {
  COMMENT_RULE_KEYS,
  CRYPT_RULE_KEYS,
  type CryptRule,
  cryptRule,
  defaultCryptRule,
} from './crypt-rules.ts';
import { SopsError, SopsErrorKind } from './errors.ts';

/**
 * The sops release whose file format this writes. sops writes its own version
 * here; v3.13.3 is the release the tests decrypt with.
 */
export const SOPS_FORMAT_VERSION = '3.13.3';

/** The reserved top-level key holding the metadata. */
export const SOPS_METADATA_KEY = 'sops';

/** RFC 3339 as Go's time.Parse accepts it, split into the parts time.Format(RFC3339) prints back. */
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** One age recipient's copy of the data key: an armored age file. */
export interface AgeKeyEntry {
  readonly recipient: string;
  readonly enc: string;
}

export interface SopsMetadata {
  readonly age: readonly AgeKeyEntry[];
  /** As written in the file. */
  readonly lastModified: string;
  /** The encrypted MAC. */
  readonly mac: string;
  readonly version: string;
  readonly rule: CryptRule;
  /** sops' `mac_only_encrypted`: the MAC covers only encrypted values, after a fixed prefix. */
  readonly macOnlyEncrypted: boolean;
}

/** `lastmodified` for a time: UTC, to the second, as sops writes it. */
export function formatLastModified(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The additional data of the MAC: `lastmodified` as Go formats it back after parsing. */
export function macAdditionalData(lastModified: string): string {
  const m = RFC3339.exec(lastModified);
  if (!m) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `sops.lastmodified "${lastModified}" is not an RFC 3339 time`,
    );
  }
  const zone = m[2] === '+00:00' || m[2] === '-00:00' ? 'Z' : m[2];
  return `${m[1]}${zone}`;
}

/**
 * The metadata the mirror writes, in the order sops writes it (its keys sorted, as
 * sops' serialisation through a Go map does).
 */
export function metadataForWriting(m: {
  readonly age: readonly AgeKeyEntry[];
  readonly encryptedRegex: string;
  readonly lastModified: string;
  readonly mac: string;
}): Record<string, unknown> {
  return {
    age: m.age.map((a) => ({ enc: a.enc, recipient: a.recipient })),
    encrypted_regex: m.encryptedRegex,
    lastmodified: m.lastModified,
    mac: m.mac,
    version: SOPS_FORMAT_VERSION,
  };
}

/** Reads the `sops:` block (already converted to plain values). */
export function readMetadata(value: unknown): SopsMetadata {
  if (!isRecord(value)) {
    throw new SopsError(SopsErrorKind.Malformed, 'the `sops` entry is not a mapping');
  }
  for (const k of COMMENT_RULE_KEYS) {
    if (value[k] !== undefined && value[k] !== '') {
      throw new SopsError(
        SopsErrorKind.Unsupported,
        `sops.${k} is set: rules on YAML comments are not supported here`,
      );
    }
  }
  const rules = CRYPT_RULE_KEYS.filter((k) => typeof value[k] === 'string' && value[k] !== '');
  if (rules.length > 1) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `sops names more than one encryption rule (${rules.join(', ')}); sops itself refuses such a file`,
    );
  }
  const ruleKey = rules[0];
  const rule = ruleKey === undefined ? defaultCryptRule() : cryptRule(ruleKey, String(value[ruleKey]));
  const lastModified = requiredString(value, 'lastmodified');
  macAdditionalData(lastModified);
  return {
    age: ageEntries(value),
    lastModified,
    mac: typeof value.mac === 'string' ? value.mac : '',
    version: typeof value.version === 'string' ? value.version : String(value.version ?? ''),
    rule,
    macOnlyEncrypted: value.mac_only_encrypted === true || value.mac_only_encrypted === 'true',
  };
}

function ageEntries(md: Record<string, unknown>): AgeKeyEntry[] {
  let list: unknown = md.age;
  // sops reads the top-level keys when any is present, else the key groups.
  if (list === undefined && Array.isArray(md.key_groups)) {
    if (md.key_groups.length > 1) {
      throw new SopsError(
        SopsErrorKind.Unsupported,
        `the file splits its data key over ${md.key_groups.length} key groups (Shamir); only one group is supported`,
      );
    }
    const group: unknown = md.key_groups[0];
    list = isRecord(group) ? group.age : undefined;
  }
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new SopsError(SopsErrorKind.Malformed, 'sops.age is not a list');
  return list.map((e, i) => {
    if (!isRecord(e) || typeof e.enc !== 'string') {
      throw new SopsError(SopsErrorKind.Malformed, `sops.age[${i}] has no \`enc\` text`);
    }
    return { recipient: typeof e.recipient === 'string' ? e.recipient : '', enc: e.enc };
  });
}

function requiredString(md: Record<string, unknown>, key: string): string {
  const v = md[key];
  if (typeof v !== 'string' || v === '') {
    throw new SopsError(SopsErrorKind.Malformed, `sops.${key} is missing`);
  }
  return v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
