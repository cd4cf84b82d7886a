/**
 * Branch allow-lists as globs with exactly the semantics of Go's `path.Match`, the glob
 * of Kubernetes tooling written in Go, so that a pattern means what it means there:
 *
 * - `*` matches any run of characters other than `/` (so `feature/*` matches
 *   `feature/login` but not `feature/a/b`, and `*` alone matches no branch with a `/`);
 * - `?` matches one character other than `/`;
 * - `[abc]`, `[a-z]`, `[^a-z]` are classes (negated with `^` only: `[!a]` is the class of
 *   `!` and `a`, as in Go); a class may match `/`;
 * - `\` makes the next character literal, inside or outside a class.
 *
 * A malformed pattern (an unclosed or empty class, a `-` or `]` where a class character is
 * due, a trailing `\`) matches nothing. This is a port of Go's algorithm rather than a
 * translation to a regular expression, so that it also agrees with Go where the two differ
 * (a class that matches `/` after a `*`). It works on characters (code points) where Go
 * works on UTF-8 bytes; for valid text the answers are the same.
 */

/** Code points of the pattern syntax. */
const STAR = 0x2a;
const QUESTION = 0x3f;
const BACKSLASH = 0x5c;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const CARET = 0x5e;
const DASH = 0x2d;
const SLASH = 0x2f;

/** One chunk against the name at one position: the position after it, no match, or bad syntax. */
type ChunkResult =
  | { readonly kind: 'match'; readonly rest: number }
  | { readonly kind: 'no' }
  | { readonly kind: 'bad' };

const NO: ChunkResult = { kind: 'no' };
const BAD: ChunkResult = { kind: 'bad' };

/** A run of stars (maybe none) and the chunk after it, up to the next star outside a class. */
interface Chunk {
  readonly star: boolean;
  readonly start: number;
  readonly end: number;
}

/** Go's scanChunk. */
function scanChunk(p: readonly number[], from: number): Chunk {
  let i = from;
  let star = false;
  while (i < p.length && p[i] === STAR) {
    i++;
    star = true;
  }
  const start = i;
  let inRange = false;
  for (; i < p.length; i++) {
    const c = p[i];
    if (c === BACKSLASH) {
      // A trailing backslash is reported by matchChunk.
      if (i + 1 < p.length) i++;
    } else if (c === OPEN) inRange = true;
    else if (c === CLOSE) inRange = false;
    else if (c === STAR && !inRange) break;
  }
  return { star, start, end: i };
}

/** Go's getEsc: one class character (maybe escaped), which must not end the chunk. */
function getEsc(p: readonly number[], from: number, end: number): { r: number; next: number } | undefined {
  let i = from;
  if (i >= end || p[i] === DASH || p[i] === CLOSE) return undefined;
  if (p[i] === BACKSLASH) {
    i++;
    if (i >= end) return undefined;
  }
  const r = p[i]!;
  i++;
  if (i >= end) return undefined;
  return { r, next: i };
}

/**
 * Go's matchChunk: the chunk `p[start, end)` against `s` from `at`. After a mismatch it
 * goes on reading the chunk, so that bad syntax is reported whatever the name.
 */
function matchChunk(
  p: readonly number[],
  start: number,
  end: number,
  s: readonly number[],
  at: number,
): ChunkResult {
  let failed = false;
  let i = start;
  let si = at;
  while (i < end) {
    failed ||= si >= s.length;
    const c = p[i];
    if (c === OPEN) {
      let r = -1;
      if (!failed) r = s[si++]!;
      i++;
      let negated = false;
      if (i < end && p[i] === CARET) {
        negated = true;
        i++;
      }
      let match = false;
      let ranges = 0;
      for (;;) {
        if (i < end && p[i] === CLOSE && ranges > 0) {
          i++;
          break;
        }
        const lo = getEsc(p, i, end);
        if (!lo) return BAD;
        i = lo.next;
        let hi = lo.r;
        if (p[i] === DASH) {
          const h = getEsc(p, i + 1, end);
          if (!h) return BAD;
          hi = h.r;
          i = h.next;
        }
        match ||= lo.r <= r && r <= hi;
        ranges++;
      }
      failed ||= match === negated;
    } else if (c === QUESTION) {
      if (!failed) failed = s[si++] === SLASH;
      i++;
    } else {
      if (c === BACKSLASH) {
        i++;
        if (i >= end) return BAD;
      }
      if (!failed) failed = p[i] !== s[si++];
      i++;
    }
  }
  return failed ? NO : { kind: 'match', rest: si };
}

const codePoints = (text: string): number[] => Array.from(text, (ch) => ch.codePointAt(0)!);

/** Whether `pattern` is well-formed (a malformed one matches nothing). */
export function isValidGlob(pattern: string): boolean {
  const p = codePoints(pattern);
  for (let i = 0; i < p.length; ) {
    const chunk = scanChunk(p, i);
    if (matchChunk(p, chunk.start, chunk.end, [], 0).kind === 'bad') return false;
    i = chunk.end;
  }
  return true;
}

/** Go's Match on valid patterns (validity is checked first by the caller). */
function goMatch(p: readonly number[], s: readonly number[]): boolean {
  let pi = 0;
  let si = 0;
  pattern: while (pi < p.length) {
    const { star, start, end } = scanChunk(p, pi);
    pi = end;
    // A trailing star matches the rest of the name unless it has a slash.
    if (star && start === end) return !s.slice(si).includes(SLASH);
    const here = matchChunk(p, start, end, s, si);
    // The last chunk must use up the name; otherwise a later position may still do.
    if (here.kind === 'match' && (here.rest === s.length || pi < p.length)) {
      si = here.rest;
      continue;
    }
    if (star) {
      // Let the star take one more character at a time, never a slash.
      for (let k = si; k < s.length && s[k] !== SLASH; k++) {
        const later = matchChunk(p, start, end, s, k + 1);
        if (later.kind !== 'match') continue;
        if (pi === p.length && later.rest < s.length) continue;
        si = later.rest;
        continue pattern;
      }
    }
    return false;
  }
  return si === s.length;
}

/** Whether `name` matches the glob `pattern` (Go `path.Match`; false for a malformed pattern). */
export function matchGlob(pattern: string, name: string): boolean {
  if (!isValidGlob(pattern)) return false;
  return goMatch(codePoints(pattern), codePoints(name));
}

/** Whether `branch` matches any of `globs`; an empty list allows no branch. */
export const branchAllowed = (branch: string, globs: readonly string[]): boolean =>
  globs.some((g) => matchGlob(g, branch));
