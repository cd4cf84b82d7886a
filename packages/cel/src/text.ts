/**
 * Strings as cel-go sees them: sequences of Unicode code points.
 *
 * JavaScript strings are UTF-16; cel-go indexes `[]rune(s)`. Every index, length and
 * offset in the string library goes through these helpers, which take a fast path when
 * the string has no surrogate pairs (then both counts agree).
 */

const SURROGATE = /[\uD800-\uDFFF]/;

export function hasSurrogates(s: string): boolean {
  return SURROGATE.test(s);
}

/** The code points of `s`, each as a string. */
export function runes(s: string): string[] {
  return Array.from(s);
}

export function runeCount(s: string): number {
  if (!hasSurrogates(s)) return s.length;
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Go's unicode.IsSpace, which strings.TrimSpace uses (JavaScript's trim differs on U+0085 and U+FEFF). */
export function isGoSpace(cp: number): boolean {
  switch (cp) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

/** Lone surrogates (invalid UTF-8 once encoded) replaced by U+FFFD, as Go's strings.ToValidUTF8 does. */
export function toValidUnicode(s: string): string {
  return s.toWellFormed();
}
