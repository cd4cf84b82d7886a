/**
 * Writing YAML that sops (Go, go-yaml v3) reads back with the same types.
 *
 * The `yaml` package quotes a string that YAML 1.2's core schema would read as
 * something else, but go-yaml resolves more plain scalars to non-strings: `1_000`
 * and `0b11` are ints, `2024-01-01` is a timestamp, `<<` is a merge key. A plaintext
 * value read back as another type hashes differently (the MAC fails) and comes out
 * of `sops --decrypt` changed, and a key read as a number makes sops refuse the file.
 * So every single-line string go-yaml might not read as a string is double-quoted:
 * anything in its table of special words, and anything starting like a number.
 */
import { type Document, visit } from 'yaml';

/** Words go-yaml v3 resolves to bool, null, float or merge, plus YAML 1.1's booleans for older readers. */
const SPECIAL_WORDS: ReadonlySet<string> = new Set([
  '',
  '~',
  '<<',
  ...['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n'].flatMap((w) => [
    w,
    w[0]?.toUpperCase() + w.slice(1),
    w.toUpperCase(),
  ]),
  ...['.nan', '.NaN', '.NAN', '.inf', '.Inf', '.INF'],
  ...['+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF'],
]);

/** go-yaml tries a plain scalar as a number or timestamp when it starts with one of these. */
const NUMERIC_START = /^[0-9+\-.]/;

/** True when go-yaml might read this string, written plain, as something other than a string. */
export function goYamlMayNotReadAsString(s: string): boolean {
  return SPECIAL_WORDS.has(s) || NUMERIC_START.test(s);
}

/**
 * Characters go-yaml cannot read raw: those its reader refuses anywhere in a file, quoted or
 * not ("control characters are not allowed": DEL, the C1 controls, U+FFFE, U+FFFF), and
 * those it reads as a line break, which a scalar then folds into a space (NEL, U+2028,
 * U+2029). The `yaml` package writes them raw, even inside double quotes, so a Secret whose
 * plaintext metadata held one (an annotation value is any string) made a file that
 * `sops --decrypt` could not read, or read back changed.
 */
const GO_YAML_UNREADABLE = /[\u007f-\u009f\u2028\u2029\ufffe\uffff]/g;

/**
 * Double-quotes every single-line string scalar (keys and values) go-yaml might misread,
 * and every string holding a character go-yaml cannot read raw (escaped by
 * {@link stringifyLikeSops}; only a double-quoted scalar can carry an escape).
 */
export function quoteAmbiguousStrings(doc: Document): void {
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string') return;
      GO_YAML_UNREADABLE.lastIndex = 0;
      if (
        GO_YAML_UNREADABLE.test(node.value) ||
        (!node.value.includes('\n') && goYamlMayNotReadAsString(node.value))
      ) {
        node.type = 'QUOTE_DOUBLE';
      }
    },
  });
}

/** `\x7F`, `\uFFFE`: YAML's double-quoted escapes for what go-yaml cannot read raw. */
function escapeUnreadable(text: string): string {
  return text.replace(GO_YAML_UNREADABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).toUpperCase().padStart(2, '0')}`
      : `\\u${code.toString(16).toUpperCase()}`;
  });
}

/**
 * The text of a document, laid out as sops lays out its own files (four-space
 * indent, sequences indented under their key) so that editing the file with
 * `sops` later produces a small diff; no line folding, which would make values
 * span lines.
 */
export function stringifyLikeSops(doc: Document): string {
  // After quoteAmbiguousStrings, such characters stand only inside double-quoted scalars.
  return escapeUnreadable(doc.toString({ indent: 4, indentSeq: true, lineWidth: 0 }));
}
