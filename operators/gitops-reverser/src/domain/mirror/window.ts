/**
 * The commit window (`commit.window`): how long changes are gathered before one commit is
 * made, as a Go duration (`0s` commits every change on its own, `30s`, `5m`, `1h30m`).
 * Bounded, because a window longer than a day would keep changes out of Git for longer
 * than anyone would look for them.
 */
import { parseDurationMs, parseDurationNs } from '@operators/kit';

/** The longest commit window: 24 hours. */
export const MAX_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The longest commit window in nanoseconds, compared exactly (no float rounding at the bound). */
const MAX_WINDOW_NS = BigInt(MAX_WINDOW_MS) * 1_000_000n;

/**
 * The window in milliseconds (a fraction of a millisecond kept), or undefined when `text`
 * is not a Go duration in units h, m, s, ms or lies outside `0s`..`24h` (both included).
 */
export function parseWindowMs(text: string): number | undefined {
  const ns = parseDurationNs(text);
  if (ns === undefined || ns > MAX_WINDOW_NS) return undefined;
  return parseDurationMs(text);
}
