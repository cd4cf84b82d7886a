/**
 * The sample list `npm run up` serves: a few thousand entries shaped like a real
 * scanner list, in the benchmarking range 198.18.0.0/15 and the documentation range
 * 2001:db8::/32 so that nobody real is ever named. It shows every rule: contiguous /24s
 * that merge into /22s, duplicates, lone addresses, host bits, comments in both styles,
 * CRLF, and malformed lines that are refused, never guessed.
 */
import { random32 } from './random32.ts';

/** A deterministic generator of [0, 1), so the sample is the same on every run. */
function random(seed: number): () => number {
  const next = random32(seed);
  return () => next() / 4294967296;
}

export function sampleList(seed = 6): string {
  const next = random(seed);
  const lines: string[] = [
    '# exoledge sample blocklist (benchmarking and documentation ranges only)',
    '; the ; comment style works too',
    '',
  ];
  // Runs of four contiguous /24s: each run merges into one /22.
  for (let run = 0; run < 60; run++) {
    const base = 4 * run;
    for (let i = 0; i < 4; i++) lines.push(`198.18.${base + i}.0/24 ; run ${run}`);
  }
  // Lone addresses in the other half, some twice.
  for (let i = 0; i < 6000; i++) {
    const third = Math.floor(next() * 256);
    const fourth = Math.floor(next() * 256);
    lines.push(`198.19.${third}.${fourth}`);
    if (i % 50 === 0) lines.push(`198.19.${third}.${fourth}\r`);
  }
  lines.push('198.18.250.77/24   # host bits set: read as 198.18.250.0/24, and reported');
  // IPv6: /64s and lone addresses.
  for (let i = 0; i < 300; i++) lines.push(`2001:db8:${(i * 7).toString(16)}:${i.toString(16)}::/64`);
  for (let i = 0; i < 100; i++) lines.push(`2001:db8:ffff::${(i * 3 + 1).toString(16)}`);
  // Refused, never read as another address.
  lines.push('198.18.3', '010.0.0.1', '198.18.0.1:8080', '198.18.0.0/33', 'proxy.example.com');
  return `${lines.join('\n')}\n`;
}
