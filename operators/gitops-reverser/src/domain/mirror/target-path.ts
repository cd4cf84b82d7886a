/**
 * The folder of the repository a target mirrors into, and which targets may share a branch.
 * Two targets whose folders overlap on one branch would sweep each other's files away, so
 * only the older of the two is allowed to write; the newer one is told which target is in
 * its way.
 */

/** The target path that means the repository root. */
export const REPOSITORY_ROOT = '.';

/** Git's own folder: a target there would write into the repository's internals. */
const GIT_DIR = '.git';

/** The last C0 control character and DEL: control characters have no place in a folder name. */
const LAST_C0 = 0x1f;
const DEL = 0x7f;

const hasControlCharacter = (p: string): boolean =>
  Array.from(p).some((ch) => {
    const c = ch.codePointAt(0) ?? 0;
    return c <= LAST_C0 || c === DEL;
  });

/** A verdict on a target path: accepted, or refused with the reason in words. */
export type PathCheck = { readonly ok: true } | { readonly ok: false; readonly message: string };

/**
 * Whether `p` is a folder of the repository in canonical form: `.` (the root), or folder
 * names joined by `/`, relative to the root, with no empty, `.` or `..` segment and no
 * trailing `/`. Also refused, because each would write somewhere unexpected: a `\`
 * (a separator on Windows checkouts), control characters, and the `.git` folder.
 */
export function validateTargetPath(p: string): PathCheck {
  if (p === '') return { ok: false, message: 'path must not be empty (use "." for the repository root)' };
  if (p === REPOSITORY_ROOT) return { ok: true };
  if (p.startsWith('/'))
    return { ok: false, message: 'path must be relative to the repository root (no leading "/")' };
  if (p.endsWith('/')) return { ok: false, message: 'path must not end with "/"' };
  if (p.includes('\\')) return { ok: false, message: 'path must separate folders with "/", not "\\"' };
  if (hasControlCharacter(p)) return { ok: false, message: 'path must not contain control characters' };
  for (const segment of p.split('/')) {
    if (segment === '') return { ok: false, message: 'path must not contain an empty segment ("//")' };
    if (segment === '..')
      return { ok: false, message: 'path must not contain ".." (it would leave the repository)' };
    if (segment === '.')
      return { ok: false, message: 'path must not contain a "." segment ("." alone means the root)' };
    if (segment.toLowerCase() === GIT_DIR) return { ok: false, message: 'path must not be inside ".git"' };
  }
  return { ok: true };
}

/** The folder names of a valid target path; none for the root. */
export const pathSegments = (p: string): string[] => (p === REPOSITORY_ROOT ? [] : p.split('/'));

/**
 * Whether two valid target paths share files: the same folder, or one inside the other
 * (by whole folder names: `team-a` and `team-a2` are siblings). The root overlaps
 * everything.
 */
export function pathsOverlap(a: string, b: string): boolean {
  const sa = pathSegments(a);
  const sb = pathSegments(b);
  const n = Math.min(sa.length, sb.length);
  for (let i = 0; i < n; i++) if (sa[i] !== sb[i]) return false;
  return true;
}

/** One target as the overlap check sees it. */
export interface TargetPlacement {
  /** Identifies the target in the answer (for example `namespace/name`). */
  readonly key: string;
  /**
   * Targets compete only within one scope: the caller puts the provider and the branch
   * into it (for example `namespace/provider@branch`). Different scopes never overlap.
   */
  readonly scope: string;
  /** A valid target path. */
  readonly path: string;
  /** metadata.creationTimestamp (RFC 3339); one that does not parse counts as newest. */
  readonly createdAt: string;
  /** The tie-break after the creation time (the target's name). */
  readonly name: string;
}

/** Why a target may not write: the older target whose folder it overlaps. */
export interface OverlapLoss {
  readonly with: string;
}

const createdMs = (t: TargetPlacement): number => {
  const ms = Date.parse(t.createdAt);
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
};

/** Older first: creation time, then name, then key, so that the order is total. */
function olderFirst(a: TargetPlacement, b: TargetPlacement): number {
  const ta = createdMs(a);
  const tb = createdMs(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * The targets that may not write (GitPathAccepted=False), each with the oldest target of
 * its scope whose path overlaps its own. Of every overlapping pair the newer one loses,
 * also when the older one itself lost to a third: that way a target that writes never
 * starts losing because another target appeared (a new target is always the newest) or
 * disappeared. The answer does not depend on the order of `targets`.
 */
export function overlapLosers(targets: readonly TargetPlacement[]): Map<string, OverlapLoss> {
  const byScope = new Map<string, TargetPlacement[]>();
  for (const t of targets) {
    const list = byScope.get(t.scope);
    if (list) list.push(t);
    else byScope.set(t.scope, [t]);
  }
  const losers = new Map<string, OverlapLoss>();
  for (const list of byScope.values()) {
    list.sort(olderFirst);
    for (let i = 1; i < list.length; i++) {
      const t = list[i]!;
      const older = list.slice(0, i).find((o) => pathsOverlap(o.path, t.path));
      if (older) losers.set(t.key, { with: older.key });
    }
  }
  return losers;
}
