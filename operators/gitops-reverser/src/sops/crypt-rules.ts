/**
 * Which values of a SOPS file are encrypted. A file names at most one rule in its
 * metadata; a file naming none uses sops' default, `unencrypted_suffix: _unencrypted`.
 *
 * Every rule looks at each key on the path from the root to the value, not only the
 * last one: with `encrypted_regex: ^(data|stringData)$`, `data.password` is
 * encrypted, and so is `metadata.annotations.data` (a key named `data` anywhere).
 * Writing and reading must apply exactly sops' rule, or sops would try to decrypt
 * a plaintext value (or leave a ciphertext alone).
 */
import { SopsError, SopsErrorKind } from './errors.ts';

/** The rule of the mirror's Secrets: only the values under `data` and `stringData` are secret. */
export const SECRET_ENCRYPTED_REGEX = '^(data|stringData)$';

/** sops' default when a file names no rule. */
const DEFAULT_UNENCRYPTED_SUFFIX = '_unencrypted';

export type CryptRule =
  | { readonly kind: 'unencrypted_suffix'; readonly suffix: string }
  | { readonly kind: 'encrypted_suffix'; readonly suffix: string }
  | { readonly kind: 'unencrypted_regex'; readonly source: string; readonly regex: RegExp }
  | { readonly kind: 'encrypted_regex'; readonly source: string; readonly regex: RegExp };

/** The metadata keys naming a rule, in the order sops lists them. */
export const CRYPT_RULE_KEYS = [
  'unencrypted_suffix',
  'encrypted_suffix',
  'unencrypted_regex',
  'encrypted_regex',
] as const;

/** Rules that depend on YAML comments, which this implementation does not read. */
export const COMMENT_RULE_KEYS = ['unencrypted_comment_regex', 'encrypted_comment_regex'] as const;

/** The default rule. */
export function defaultCryptRule(): CryptRule {
  return { kind: 'unencrypted_suffix', suffix: DEFAULT_UNENCRYPTED_SUFFIX };
}

/** A rule from its metadata key and value; regexes are Go RE2 syntax, read as JavaScript. */
export function cryptRule(kind: (typeof CRYPT_RULE_KEYS)[number], value: string): CryptRule {
  switch (kind) {
    case 'unencrypted_suffix':
    case 'encrypted_suffix':
      return { kind, suffix: value };
    case 'unencrypted_regex':
    case 'encrypted_regex':
      return { kind, source: value, regex: compileGoRegex(kind, value) };
  }
}

/** True when sops encrypts the value at `path` (the keys from the root, sequence items sharing their parent's). */
export function shouldEncrypt(rule: CryptRule, path: readonly string[]): boolean {
  switch (rule.kind) {
    case 'unencrypted_suffix':
      return !path.some((k) => k.endsWith(rule.suffix));
    case 'encrypted_suffix':
      return path.some((k) => k.endsWith(rule.suffix));
    case 'unencrypted_regex':
      return !path.some((k) => rule.regex.test(k));
    case 'encrypted_regex':
      return path.some((k) => rule.regex.test(k));
  }
}

/**
 * Go's regexp.Match is a search, like RegExp.test. The common RE2 syntax (anchors,
 * groups, classes, alternation) means the same in JavaScript; what does not compile
 * here (e.g. `(?i)` at the start) is reported rather than guessed.
 */
function compileGoRegex(kind: string, source: string): RegExp {
  for (const flags of ['u', '']) {
    try {
      return new RegExp(source, flags);
    } catch {
      // Some RE2 patterns are valid only without the u flag; try that next.
    }
  }
  throw new SopsError(
    SopsErrorKind.Unsupported,
    `the file's ${kind} "${source}" is Go regexp syntax that JavaScript cannot compile`,
  );
}
