/**
 * Which terdut-server release the stand-in plays. The releases differ, for the operator,
 * in one route: `GET /api/me` exists from v0.10.2 (contract §2.5, §5); older servers
 * answer it like any unknown route, Go's router's plain-text `404 page not found`.
 * The default is the DESIGN's default image (§4.1: `tag: v0.9.3`), so that a test that
 * does not choose a version runs against the oldest server the operator supports.
 */

export const SERVER_VERSIONS = ['0.9.3', '0.10.2'] as const;
export type ServerVersion = (typeof SERVER_VERSIONS)[number];

/** The DESIGN's default image tag, without its `v`. */
export const DEFAULT_SERVER_VERSION: ServerVersion = '0.9.3';

/** Whether `version` has what came in `since` (numeric, part by part: 0.10 > 0.9). */
export function atLeast(version: string, since: string): boolean {
  const a = version.split('.').map(Number);
  const b = since.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}
