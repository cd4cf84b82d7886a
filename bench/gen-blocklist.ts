/**
 * Seeded generator of the blocklists the exoledge benchmark reads: a 3-million-line IPv4
 * list shaped like the proxy and scanner lists exoledge meets (busy hosting /16s, runs of
 * consecutive /24s and addresses, random addresses, prefixes with host bits set,
 * duplicates, comments, blank lines, CRLF, a few malformed lines), and a 200,000-line IPv6
 * list. The same seed always writes the same bytes, so two runs measure the same input.
 *
 * Next to each list it writes `<name>.meta.json`: the line numbers of the malformed lines
 * it wrote on purpose. The benchmark uses them to check that our parser refuses exactly
 * those lines, and to build the malformed-free copy it feeds `iprange` for the output
 * cross-check (iprange reads `1.2.3` as 1.2.0.3 and `010.0.0.1` as 8.0.0.1, which is
 * precisely what we refuse to do).
 *
 * Two shapes. `dense` (the default) is the one above, where merging pays: 3M lines give
 * a few hundred thousand prefixes. `sparse` is what real proxy lists mostly are, lone
 * addresses that barely merge: most IPv4 lines are distinct /32s (3M lines give about
 * 1.8M prefixes), most IPv6 lines distinct addresses. There the cost is in sorting and
 * writing, not in merging. Files: `ipv4.txt`/`ipv6.txt` and `ipv4-sparse.txt`/`ipv6-sparse.txt`.
 *
 * Neither shape holds an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`): those read as IPv4,
 * and the IPv6 lists measure IPv6 (the benchmark checks that none reads as IPv4).
 *
 * Run alone: `node bench/gen-blocklist.ts [--shape dense|sparse] [--out DIR] [--seed N]
 * [--ipv4-lines N] [--ipv6-lines N]`.
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

/** `dense`: merging pays; `sparse`: lone addresses that barely merge. */
export type Shape = 'dense' | 'sparse';

export interface GenerateOptions {
  readonly outDir: string;
  /** Default `dense`. */
  readonly shape?: Shape;
  readonly seed: number;
  readonly ipv4Lines: number;
  readonly ipv6Lines: number;
}

export const DEFAULT_GENERATE: Omit<GenerateOptions, 'outDir'> = {
  seed: 20_240_306,
  ipv4Lines: 3_000_000,
  ipv6Lines: 200_000,
};

/** What the generator wrote into one list, for the benchmark's checks. */
export interface ListMeta {
  readonly file: string;
  readonly lines: number;
  readonly malformedLines: readonly number[];
}

export interface Generated {
  readonly ipv4: ListMeta;
  readonly ipv6: ListMeta;
}

/** sfc32: small, fast, and good enough to shape test data; seeded so runs repeat. */
function rng(seed: number): () => number {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = seed >>> 0;
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 16; i++) next();
  return next;
}

/** Buffers lines and writes them in large blocks: three million small writes would dominate the run. */
class LineWriter {
  readonly #fd: number;
  #chunk: string[] = [];
  #size = 0;
  lines = 0;

  constructor(path: string) {
    this.#fd = openSync(path, 'w');
  }

  /** Writes one line (its terminator included in `text`) and returns its 1-based number. */
  write(text: string): number {
    this.#chunk.push(text);
    this.#size += text.length;
    if (this.#size > 1 << 20) this.flush();
    this.lines++;
    return this.lines;
  }

  flush(): void {
    writeSync(this.#fd, this.#chunk.join(''));
    this.#chunk = [];
    this.#size = 0;
  }

  close(): void {
    this.flush();
    closeSync(this.#fd);
  }
}

function ipv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/**
 * Malformed IPv4 lines of the kinds real lists carry. Deliberately absent: lines with
 * letters or `ip:port`, which send iprange to its DNS resolver and cost it a fixed second
 * per run; that would flatter us, not measure us. Those forms are covered by the tests.
 */
const MALFORMED_IPV4: readonly ((r: () => number) => string)[] = [
  (r) => `${1 + Math.floor(r() * 223)}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}`,
  (r) => `0${10 + Math.floor(r() * 90)}.${Math.floor(r() * 256)}.0.${Math.floor(r() * 256)}`,
  (r) => `${256 + Math.floor(r() * 700)}.${Math.floor(r() * 256)}.1.1`,
  (r) => `${ipv4(Math.floor(r() * 2 ** 32))}/${33 + Math.floor(r() * 30)}`,
  (r) => `${ipv4(Math.floor(r() * 2 ** 32))}.${Math.floor(r() * 256)}`,
  (r) => `${1 + Math.floor(r() * 223)}..${Math.floor(r() * 256)}.${Math.floor(r() * 256)}`,
  (r) => `${ipv4(Math.floor(r() * 2 ** 32))}/`,
];

function generateIpv4(path: string, lines: number, r: () => number): ListMeta {
  const out = new LineWriter(path);
  const malformed: number[] = [];
  // Hosting ranges: a few hundred /16s hold most of a proxy list, some far busier than others.
  const busy = Array.from({ length: 400 }, () => (1 + Math.floor(r() * 222)) * 256 + Math.floor(r() * 256));
  const busyAddress = (): number =>
    busy[Math.floor(busy.length * r() * r())]! * 65536 + Math.floor(r() * 65536);
  // Blocklist prefixes are mostly small hosting blocks; a /16 or wider is rare.
  const prefixLength = (): number => {
    const q = r();
    return q < 0.7
      ? 24 + Math.floor(r() * 6)
      : q < 0.98
        ? 20 + Math.floor(r() * 4)
        : 16 + Math.floor(r() * 4);
  };
  const eol = (): string => (r() < 0.01 ? '\r\n' : '\n');
  let recent: string[] = [];

  out.write('# FireHOL-style header: proxies seen in the last 30 days\n');
  out.write('# Source: generated by bench/gen-blocklist.ts (seeded)\n');
  out.write('#\n');
  while (out.lines < lines) {
    const p = r();
    if (p < 0.4) {
      const a = ipv4(busyAddress());
      recent.push(a);
      out.write(a + eol());
    } else if (p < 0.46) {
      // A run of consecutive addresses: what a scanner farm looks like.
      const start = busyAddress();
      const n = 2 + Math.floor(r() * 62);
      for (let i = 0; i < n && out.lines < lines; i++) out.write(ipv4(start + i) + '\n');
    } else if (p < 0.52) {
      // A run of /24s, some annotated as Spamhaus DROP is: `1.10.16.0/20 ; SBL256894`.
      const start = (busyAddress() >>> 8) << 8;
      const n = 1 + Math.floor(r() * 12);
      for (let i = 0; i < n && out.lines < lines; i++) {
        const note = r() < 0.2 ? ` ; SBL${100000 + Math.floor(r() * 900000)}` : '';
        out.write(`${ipv4(start + i * 256)}/24${note}${eol()}`);
      }
    } else if (p < 0.82) {
      const a = ipv4((1 + Math.floor(r() * 223)) * 2 ** 24 + Math.floor(r() * 2 ** 24));
      recent.push(a);
      out.write(a + eol());
    } else if (p < 0.85) {
      // Host bits set: `1.2.3.77/24` means 1.2.3.0/24.
      out.write(`${ipv4(busyAddress())}/${prefixLength()}\n`);
    } else if (p < 0.88) {
      const len = prefixLength();
      const a = (1 + Math.floor(r() * 223)) * 2 ** 24 + Math.floor(r() * 2 ** 24);
      const net = Math.floor(a / 2 ** (32 - len)) * 2 ** (32 - len);
      out.write(`${ipv4(net)}/${len}\n`);
    } else if (p < 0.925) {
      const a = recent[Math.floor(r() * recent.length)];
      if (a !== undefined) out.write(a + '\n');
    } else if (p < 0.955) {
      out.write(`# ${Math.floor(r() * 1e6)} entries from feed ${Math.floor(r() * 40)}\n`);
    } else if (p < 0.97) {
      out.write(r() < 0.5 ? '\n' : '   \t\n');
    } else if (p < 0.985) {
      out.write(`  ${ipv4(busyAddress())}\t \n`);
    } else if (p < 0.999) {
      out.write(`${ipv4(busyAddress())} # seen ${Math.floor(r() * 100)} times\n`);
    } else {
      const make = MALFORMED_IPV4[Math.floor(r() * MALFORMED_IPV4.length)]!;
      malformed.push(out.write(make(r) + '\n'));
    }
    if (recent.length > 4096) recent = recent.slice(2048);
  }
  out.close();
  return { file: path, lines: out.lines, malformedLines: malformed };
}

function group(n: number, r: () => number): string {
  const s = n.toString(16);
  // Some lists write groups with leading zeros or in upper case; both are valid RFC 4291 text.
  if (r() < 0.03) return s.padStart(4, '0');
  return s;
}

/** An IPv6 address from eight groups, written in the full, uncompressed form or compressed. */
function ipv6(groups: readonly number[], r: () => number): string {
  const full = groups.map((g) => group(g, r)).join(':');
  const text = r() < 0.1 ? full : compress(groups);
  return r() < 0.03 ? text.toUpperCase() : text;
}

function compress(groups: readonly number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

const MALFORMED_IPV6: readonly ((r: () => number) => string)[] = [
  () => '2001:db8:::1',
  (r) => `2001:db8::${Math.floor(r() * 65536).toString(16)}::1`,
  (r) => `${(0x10000 + Math.floor(r() * 0xf0000)).toString(16)}::1`,
  (r) => `2001:db8::${Math.floor(r() * 65536).toString(16)}/129`,
  () => 'fe80::1%eth0',
  () => '1:2:3:4:5:6:7:8:9',
  () => '2001:db8::g',
];

function generateIpv6(path: string, lines: number, r: () => number): ListMeta {
  const out = new LineWriter(path);
  const malformed: number[] = [];
  const sites = Array.from({ length: 300 }, () => [
    0x2000 + Math.floor(r() * 0x1000),
    Math.floor(r() * 65536),
    Math.floor(r() * 65536),
  ]);
  const site = (): number[] => [...sites[Math.floor(sites.length * r() * r())]!];
  const rand16 = (): number => Math.floor(r() * 65536);
  out.write('# IPv6 addresses and networks seen scanning\n');
  while (out.lines < lines) {
    const p = r();
    if (p < 0.45) {
      const g = [...site(), rand16(), rand16(), 0, 0, rand16()];
      if (r() < 0.5) g[5] = rand16();
      out.write(ipv6(g, r) + '\n');
    } else if (p < 0.75) {
      // Whole /64s: an IPv6 host usually holds one, so lists often block the /64.
      out.write(`${ipv6([...site(), rand16(), 0, 0, 0, 0], r)}/64\n`);
    } else if (p < 0.82) {
      const g = [...site(), rand16() & 0xfff0, 0, 0, 0, 0];
      const n = 1 + Math.floor(r() * 16);
      for (let i = 0; i < n && out.lines < lines; i++) {
        g[3] = (g[3]! + 1) & 0xffff;
        out.write(`${ipv6(g, r)}/64\n`);
      }
    } else if (p < 0.86) {
      // Whole networks blocked elsewhere than the busy sites, which would swallow them.
      out.write(`${ipv6([0x2000 + Math.floor(r() * 0x1000), rand16(), rand16(), 0, 0, 0, 0, 0], r)}/48\n`);
    } else if (p < 0.89) {
      // Host bits set in a prefix.
      out.write(`${ipv6([...site(), rand16(), rand16(), 0, 0, 1], r)}/56\n`);
    } else if (p < 0.9) {
      // The embedded dotted form, outside ::ffff:0:0/96 (which would read as IPv4).
      out.write(`::fffe:${ipv4(Math.floor(r() * 2 ** 32))}\n`);
    } else if (p < 0.93) {
      out.write(
        `${ipv6([0x2000 + Math.floor(r() * 0x1000), rand16(), rand16(), rand16(), rand16(), rand16(), rand16(), rand16()], r)}\n`,
      );
    } else if (p < 0.96) {
      out.write(`# network ${Math.floor(r() * 1e6)}\n`);
    } else if (p < 0.98) {
      out.write('\n');
    } else if (p < 0.999) {
      out.write(`${ipv6([...site(), rand16(), 0, 0, 0, 0], r)}/64 ; AS${Math.floor(r() * 400000)}\r\n`);
    } else {
      const make = MALFORMED_IPV6[Math.floor(r() * MALFORMED_IPV6.length)]!;
      malformed.push(out.write(make(r) + '\n'));
    }
  }
  out.close();
  return { file: path, lines: out.lines, malformedLines: malformed };
}

/**
 * The sparse IPv4 shape: lone addresses spread over a few thousand /16s, so that few
 * are neighbours; a quarter of the lines repeat a recent one (feeds overlap), one in
 * twenty names the other half of a recent address's /31 (the only merging there is).
 */
function generateSparseIpv4(path: string, lines: number, r: () => number): ListMeta {
  const out = new LineWriter(path);
  const malformed: number[] = [];
  const pool = Array.from({ length: 2000 }, () => (1 + Math.floor(r() * 222)) * 256 + Math.floor(r() * 256));
  const pooled = (): number => pool[Math.floor(r() * pool.length)]! * 65536 + Math.floor(r() * 65536);
  const recent = new Uint32Array(4096);
  let recentCount = 0;
  const remember = (a: number): number => {
    recent[recentCount++ & 4095] = a;
    return a;
  };
  const fromRecent = (): number => recent[Math.floor(r() * Math.min(recentCount, 4096))]!;
  out.write('# proxies seen in the last 7 days, one address per line\n');
  while (out.lines < lines) {
    const p = r();
    if (p < 0.565 || recentCount === 0) {
      out.write(`${ipv4(remember(pooled()))}\n`);
    } else if (p < 0.85) {
      out.write(`${ipv4(fromRecent())}\n`);
    } else if (p < 0.9) {
      out.write(`${ipv4((fromRecent() ^ 1) >>> 0)}\n`);
    } else if (p < 0.96) {
      out.write(`${ipv4(remember((1 + Math.floor(r() * 223)) * 2 ** 24 + Math.floor(r() * 2 ** 24)))}\n`);
    } else if (p < 0.97) {
      out.write(`${ipv4((pooled() >>> 8) << 8)}/24\n`);
    } else if (p < 0.98) {
      out.write(`${ipv4(pooled())} # seen ${Math.floor(r() * 100)} times\n`);
    } else if (p < 0.99) {
      out.write(`# ${Math.floor(r() * 1e6)} entries from feed ${Math.floor(r() * 40)}\n`);
    } else if (p < 0.9995) {
      out.write('\n');
    } else {
      const make = MALFORMED_IPV4[Math.floor(r() * MALFORMED_IPV4.length)]!;
      malformed.push(out.write(make(r) + '\n'));
    }
  }
  out.close();
  return { file: path, lines: out.lines, malformedLines: malformed };
}

/**
 * The sparse IPv6 shape: lone addresses with random interface identifiers under a few
 * hundred /48s (nothing merges), some repeated, some /64s, written in every valid way.
 */
function generateSparseIpv6(path: string, lines: number, r: () => number): ListMeta {
  const out = new LineWriter(path);
  const malformed: number[] = [];
  const sites = Array.from({ length: 300 }, () => [
    0x2000 + Math.floor(r() * 0x1000),
    Math.floor(r() * 65536),
    Math.floor(r() * 65536),
  ]);
  const rand16 = (): number => Math.floor(r() * 65536);
  const site = (): number[] => [...sites[Math.floor(r() * sites.length)]!];
  const recent: string[] = [];
  out.write('# IPv6 addresses seen scanning\n');
  while (out.lines < lines) {
    const p = r();
    if (p < 0.7 || recent.length === 0) {
      const g = [...site(), rand16(), rand16(), rand16(), rand16(), rand16()];
      if (r() < 0.2) g[5] = 0;
      const text = ipv6(g, r);
      if (recent.length < 4096) recent.push(text);
      else recent[Math.floor(r() * 4096)] = text;
      out.write(`${text}\n`);
    } else if (p < 0.85) {
      out.write(`${recent[Math.floor(r() * recent.length)]}\n`);
    } else if (p < 0.95) {
      out.write(`${ipv6([...site(), rand16(), 0, 0, 0, 0], r)}/64\n`);
    } else if (p < 0.98) {
      out.write(`# network ${Math.floor(r() * 1e6)}\n`);
    } else if (p < 0.999) {
      out.write('\n');
    } else {
      const make = MALFORMED_IPV6[Math.floor(r() * MALFORMED_IPV6.length)]!;
      malformed.push(out.write(make(r) + '\n'));
    }
  }
  out.close();
  return { file: path, lines: out.lines, malformedLines: malformed };
}

/** The files of a shape: `ipv4` and `ipv6` for dense (the names the first bench used), `-sparse` after them. */
export function listName(family: 'ipv4' | 'ipv6', shape: Shape): string {
  return shape === 'dense' ? family : `${family}-sparse`;
}

/** Writes the shape's two lists and their `.meta.json` into `outDir`. */
export function generate(options: GenerateOptions): Generated {
  mkdirSync(options.outDir, { recursive: true });
  const shape = options.shape ?? 'dense';
  const r = rng(options.seed);
  const path = (family: 'ipv4' | 'ipv6'): string => join(options.outDir, `${listName(family, shape)}.txt`);
  const ipv4Meta =
    shape === 'dense'
      ? generateIpv4(path('ipv4'), options.ipv4Lines, r)
      : generateSparseIpv4(path('ipv4'), options.ipv4Lines, r);
  const ipv6Meta =
    shape === 'dense'
      ? generateIpv6(path('ipv6'), options.ipv6Lines, r)
      : generateSparseIpv6(path('ipv6'), options.ipv6Lines, r);
  for (const [family, meta] of [
    ['ipv4', ipv4Meta],
    ['ipv6', ipv6Meta],
  ] as const) {
    writeFileSync(join(options.outDir, `${listName(family, shape)}.meta.json`), JSON.stringify(meta));
  }
  return { ipv4: ipv4Meta, ipv6: ipv6Meta };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: join(import.meta.dirname, 'out') },
      shape: { type: 'string', default: 'dense' },
      seed: { type: 'string', default: String(DEFAULT_GENERATE.seed) },
      'ipv4-lines': { type: 'string', default: String(DEFAULT_GENERATE.ipv4Lines) },
      'ipv6-lines': { type: 'string', default: String(DEFAULT_GENERATE.ipv6Lines) },
    },
  });
  if (values.shape !== 'dense' && values.shape !== 'sparse') {
    process.stderr.write(`--shape is dense or sparse, not "${values.shape}"\n`);
    process.exit(2);
  }
  const started = performance.now();
  const g = generate({
    outDir: values.out,
    shape: values.shape,
    seed: Number(values.seed),
    ipv4Lines: Number(values['ipv4-lines']),
    ipv6Lines: Number(values['ipv6-lines']),
  });
  process.stderr.write(
    `wrote ${g.ipv4.file} (${g.ipv4.lines} lines, ${g.ipv4.malformedLines.length} malformed) and ` +
      `${g.ipv6.file} (${g.ipv6.lines} lines, ${g.ipv6.malformedLines.length} malformed) ` +
      `in ${Math.round(performance.now() - started)} ms\n`,
  );
}
