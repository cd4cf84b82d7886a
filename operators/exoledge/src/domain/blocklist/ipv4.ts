/**
 * IPv4 arithmetic on unsigned 32-bit integers held in JavaScript numbers. Bitwise
 * operators work on signed 32-bit values, so every masked result goes through `>>> 0`;
 * sums and block ends may reach 2^32, which a double holds exactly.
 */

/** `BLOCK_SIZE_V4[len]` is the number of addresses in a /len: 2^(32 - len). */
export const BLOCK_SIZE_V4: Float64Array = Float64Array.from({ length: 33 }, (_, len) => 2 ** (32 - len));

/** `MASK_V4[len]` is the netmask of a /len as an unsigned integer. */
export const MASK_V4: Uint32Array = Uint32Array.from({ length: 33 }, (_, len) =>
  len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0,
);

export function formatIpv4(address: number): string {
  return `${address >>> 24}.${(address >>> 16) & 255}.${(address >>> 8) & 255}.${address & 255}`;
}

/** The longest canonical IPv4 line: `255.255.255.255/32\n`. */
export const MAX_IPV4_LINE = 19;

/**
 * How far `writeIpv4Prefix` may write past the end of its line: it writes three digits
 * for every number and moves on by as many as the number has, the next write covering
 * the rest. A buffer for lines needs this much room after the last one.
 */
export const IPV4_WRITE_SLACK = 2;

/** `DECIMAL[4n..4n+2]`: the decimal digits of n (0-255), left-aligned; `DECIMAL[4n+3]`: how many. */
const DECIMAL = new Uint8Array(256 * 4);
for (let n = 0; n < 256; n++) {
  const digits = String(n);
  for (let i = 0; i < digits.length; i++) DECIMAL[4 * n + i] = digits.charCodeAt(i);
  DECIMAL[4 * n + 3] = digits.length;
}

/** Writes the digits of 0 <= n <= 255 at `pos` (three bytes, see `IPV4_WRITE_SLACK`); returns the position after them. */
function writeDecimal(out: Uint8Array, pos: number, n: number): number {
  const d = 4 * n;
  out[pos] = DECIMAL[d]!;
  out[pos + 1] = DECIMAL[d + 1]!;
  out[pos + 2] = DECIMAL[d + 2]!;
  return pos + DECIMAL[d + 3]!;
}

/**
 * Writes `a.b.c.d/len` at `pos` in `out` and returns the position after it; no string
 * per line, no division: writing 1.8 million lines is a visible part of a run.
 */
export function writeIpv4Prefix(out: Uint8Array, pos: number, address: number, length: number): number {
  let p = writeDecimal(out, pos, address >>> 24);
  out[p++] = 0x2e;
  p = writeDecimal(out, p, (address >>> 16) & 255);
  out[p++] = 0x2e;
  p = writeDecimal(out, p, (address >>> 8) & 255);
  out[p++] = 0x2e;
  p = writeDecimal(out, p, address & 255);
  out[p++] = 0x2f;
  return writeDecimal(out, p, length);
}
