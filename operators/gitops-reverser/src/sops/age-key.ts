/**
 * The data key's copies, one per age recipient: the raw 32 bytes age-encrypted to
 * that recipient and ASCII-armored, as sops' age key source writes them. Anyone
 * holding one matching identity opens the data key and with it every value.
 */
import { armor, Decrypter, Encrypter } from 'age-encryption';
import { DATA_KEY_BYTES } from './cipher.ts';
import { SopsError, SopsErrorKind } from './errors.ts';
import type { AgeKeyEntry } from './metadata.ts';

/** What the package throws when no identity opens a file: the one failure that means "not for us". */
const NO_MATCH_MESSAGE = 'no identity matched';

/** Encrypts the data key to each (already validated) recipient. */
export async function encryptDataKey(
  dataKey: Uint8Array,
  recipients: readonly string[],
): Promise<AgeKeyEntry[]> {
  const out: AgeKeyEntry[] = [];
  for (const recipient of recipients) {
    const e = new Encrypter();
    e.addRecipient(recipient);
    out.push({ recipient, enc: armor.encode(await e.encrypt(dataKey)) });
  }
  return out;
}

/** Opens the data key with the first entry any of the (already validated) identities matches. */
export async function decryptDataKey(
  entries: readonly AgeKeyEntry[],
  identities: readonly string[],
): Promise<Uint8Array> {
  if (entries.length === 0) {
    throw new SopsError(
      SopsErrorKind.NoMatchingIdentity,
      'the file has no age recipient (its data key is encrypted only for other key types)',
    );
  }
  const d = new Decrypter();
  for (const id of identities) d.addIdentity(id);
  const failures: string[] = [];
  for (const entry of entries) {
    let key: Uint8Array;
    try {
      key = await d.decrypt(armor.decode(entry.enc));
    } catch (err) {
      const message = (err as Error).message;
      if (!message.includes(NO_MATCH_MESSAGE))
        failures.push(`${entry.recipient || 'an age entry'}: ${message}`);
      continue;
    }
    if (key.length !== DATA_KEY_BYTES) {
      throw new SopsError(
        SopsErrorKind.Malformed,
        `the data key for ${entry.recipient} is ${key.length} bytes, not ${DATA_KEY_BYTES}`,
      );
    }
    return key;
  }
  const recipients = entries.map((e) => e.recipient || '(unnamed)').join(', ');
  if (failures.length > 0) {
    throw new SopsError(
      SopsErrorKind.Malformed,
      `no age entry of the file could be opened: ${failures.join('; ')}`,
    );
  }
  throw new SopsError(
    SopsErrorKind.NoMatchingIdentity,
    `none of the ${identities.length} age identities matches the file's recipients (${recipients}); ` +
      'the file was encrypted for other keys',
  );
}
