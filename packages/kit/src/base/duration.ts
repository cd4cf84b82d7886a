/**
 * Go durations (`5m`, `1h30m`, `300s`, `1500ms`, `1.5h`), read as Go reads them: in whole
 * nanoseconds, with integer arithmetic (a float would make `0.07h` one second too long).
 * Only the units h, m, s and ms, unsigned: the dialect operators accept in CRD fields and
 * flags. Timeouts sent to a server in whole seconds are rounded up, so that `5m` and `300s`
 * are the same value when diffed and a timeout is never shortened.
 */
const UNIT_NS: Readonly<Record<string, bigint>> = {
  h: 3_600_000_000_000n,
  m: 60_000_000_000n,
  s: 1_000_000_000n,
  ms: 1_000_000n,
};
const PART = /(\d+)(?:\.(\d+))?(ms|h|m|s)/y;

/** Nanoseconds, or undefined when `text` is not a duration. */
export function parseDurationNs(text: string): bigint | undefined {
  if (text === '0') return 0n;
  if (text === '') return undefined;
  PART.lastIndex = 0;
  let total = 0n;
  while (PART.lastIndex < text.length) {
    const at = PART.lastIndex;
    const m = PART.exec(text);
    if (!m || m.index !== at) return undefined;
    const unit = UNIT_NS[m[3] ?? ''] ?? 0n;
    const frac = m[2] ?? '';
    // Go truncates the fraction below a nanosecond.
    total += BigInt(m[1] ?? '0') * unit + (frac ? (BigInt(frac) * unit) / 10n ** BigInt(frac.length) : 0n);
  }
  return total;
}

/** Milliseconds (fractions of a millisecond kept), or undefined. */
export function parseDurationMs(text: string): number | undefined {
  const ns = parseDurationNs(text);
  return ns === undefined ? undefined : Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;
}

/** Whole seconds, rounded up (a timeout is never shortened), or undefined. */
export function durationSeconds(text: string): number | undefined {
  const ns = parseDurationNs(text);
  return ns === undefined ? undefined : Number((ns + 999_999_999n) / 1_000_000_000n);
}
