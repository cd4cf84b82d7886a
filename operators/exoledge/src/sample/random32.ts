/**
 * mulberry32: a seeded stream of 32-bit unsigned integers, so the same seed makes the
 * same sample list (`npm run up`) and the same benchmark lists on every run. Not for
 * anything secret.
 */
export function random32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}
