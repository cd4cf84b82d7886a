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

/** Writes the decimal digits of 0 <= n <= 255 at `pos` and returns the position after them. */
function writeDecimal(out: Uint8Array, pos: number, n: number): number {
  let p = pos;
  if (n >= 100) {
    out[p++] = 0x30 + ((n / 100) | 0);
    out[p++] = 0x30 + (((n / 10) | 0) % 10);
  } else if (n >= 10) {
    out[p++] = 0x30 + ((n / 10) | 0);
  }
  out[p++] = 0x30 + (n % 10);
  return p;
}

/** Writes `a.b.c.d/len` at `pos` in `out` and returns the position after it; no string per line. */
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
